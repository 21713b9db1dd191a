"""One annealed run in stages, shared by infilling and summaries."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence, Union

import torch
from torch import Tensor

from ..energies.base import Energy
from ..energies.tempered import Tempered
from ..errors import InfillError
from .base import Sampler, State, StepInfo, Trace
from .driver import FIELDS, sample

SamplerForStage = Union[Sampler, Callable[[Energy, Tensor], Sampler]]


def run_annealed(
    sampler: SamplerForStage,
    energy: Energy,
    x0: Tensor,
    schedule: Sequence[tuple[float, int]],
    generator: Optional[torch.Generator],
    callback: Optional[Callable[[int, State, StepInfo], None]] = None,
    stop: Optional[Callable[[State], bool]] = None,
    fields: tuple = FIELDS,
) -> Trace:
    """Run ``sampler`` through the ``(temperature, steps)`` stages of ``schedule``: each stage a fresh run on
    ``energy`` tempered by ``1 / temperature`` (the energy itself at temperature 1) from the previous stage's
    final state, ``x0`` for the first. ``sampler`` is a sampler, or a function of a stage's energy and start
    that builds the stage's sampler. Returns the last stage's trace with ``evaluations`` summed over all
    stages; ``callback(t, state, info)`` runs after every step, ``t`` counted over the whole schedule; ``stop(state)``
    after every step of a one-stage schedule ends the run where it says so; the trace keeps ``fields``
    (:func:`~.driver.sample`)."""
    if stop is not None and len(schedule) > 1:
        raise InfillError("a run that stops early (a budget) cannot be annealed")
    if not schedule:
        raise InfillError("an annealing schedule needs at least one (temperature, steps) stage")
    x, evaluations, done, trace = x0, 0, 0, None
    for temperature, steps in schedule:
        target = energy if temperature == 1 else Tempered(energy, temperature)
        stage_sampler = sampler if isinstance(sampler, Sampler) else sampler(target, x)
        offset = done
        stage_callback = None if callback is None else (lambda t, state, info: callback(offset + t, state, info))
        trace = sample(stage_sampler, target, x, steps, generator, fields, stage_callback, stop)
        x, evaluations, done = trace.final_state.x, evaluations + trace.evaluations, done + steps
    return dataclasses.replace(trace, evaluations=evaluations)
