"""The one driver of every sampler: ``sample(sampler, energy, x0, steps)`` runs the ``init``/``step`` pair
(:class:`~.base.Sampler`) into a :class:`~.base.Trace` that keeps only the ``fields`` asked for.

A sampler wrapped in its adaptation (:class:`~.adaptive.Adapted`) runs in two phases: the warmup, its first
``burn_in`` steps, each with the kernel of the settings tuned so far, then sampling with the fixed kernel of the
tuned settings (moved only by a schedule fixed in advance), so the trace after ``burn_in`` is an exact chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import torch
from torch import Tensor

from ..energies.base import Energy
from ..energies.budget import BudgetSpent
from ..energies.tempered import Tempered
from ..errors import InfillError
from .adaptive import Adapted
from .base import Sampler, State, StepInfo, Trace, Tuning

FIELDS = ("samples", "energies", "accepted", "hops", "proposals")
"""What a trace can keep of every step (``proposals`` with their energies, where the kernel reports them)."""

Callback = Callable[[int, State, StepInfo], None]


@dataclass
class Steps:
    """The steps a run has taken: the ``fields`` kept of each, the evaluations spent, and whether it ended early
    (``stop(state)`` said so after a step, or the energy's meter refused one:
    :class:`~infill.energies.budget.BudgetSpent`)."""

    fields: tuple
    evaluations: int
    callback: Optional[Callback] = None
    stop: Optional[Callable[[State], bool]] = None
    taken: int = 0
    ended: bool = False
    kept: dict = field(default_factory=dict)

    def take(
        self, kernel: Sampler, energy: Energy, state: State, generator: Optional[torch.Generator]
    ) -> tuple[State, Optional[StepInfo]]:
        """One step of ``kernel`` from ``state``, recorded; ``(state, None)`` where the meter refused it (the
        exception goes on if no step was taken)."""
        try:
            new, info = kernel.step(energy, state, generator)
        except BudgetSpent:
            if not self.taken:
                raise
            self.ended = True
            return state, None
        self.taken += 1
        self.evaluations += info.evaluations
        values = {
            "samples": new.x,
            "energies": new.energy,
            "accepted": info.accepted,
            "hops": info.hops,
            "proposals": info.proposal,
            "proposal_energies": info.proposal_energy,
        }
        for name in self.fields + (("proposal_energies",) if "proposals" in self.fields else ()):
            self.kept.setdefault(name, []).append(values[name])
        if self.callback is not None:
            self.callback(self.taken - 1, new, info)
        self.ended = self.stop is not None and self.stop(new)
        return new, info

    def stacked(self, name: str) -> Optional[Tensor]:
        values = self.kept.get(name)
        return None if values is None or any(v is None for v in values) else torch.stack(values)


def warmup(
    adapted: Adapted, energy: Energy, state: State, steps: int, generator: Optional[torch.Generator], taken: Steps
) -> tuple[State, Tuning]:
    """The warmup of a run of ``steps`` steps: the adaptation's first ``burn_in`` steps (fewer where the run
    ends), each with the kernel of the settings tuned so far. Returns the state and the tuning reached."""
    tuning = adapted.adaptation.init(adapted.start_value(), steps)
    while taken.taken < min(tuning.burn_in, steps) and not taken.ended:
        new, info = taken.take(adapted.kernel(tuning), energy, state, generator)
        if info is not None:
            tuning = adapted.adaptation.update(tuning, state, new, info)
        state = new
    return state, tuning


def sample(
    sampler: Union[Sampler, Adapted],
    energy: Energy,
    x0: Tensor,
    steps: int,
    generator: Optional[torch.Generator] = None,
    fields: tuple = FIELDS,
    callback: Optional[Callback] = None,
    stop: Optional[Callable[[State], bool]] = None,
) -> Trace:
    """Run ``steps`` steps of ``sampler`` from ``x0 (B, d)``, or fewer where ``stop(state)`` says so after a
    step, or where the energy's meter refuses a step's pass (the run ends at the state before that step, and
    the exception goes on if no step was taken); ``callback(t, state, info)`` after each (e.g. progress).
    The trace keeps of each step the ``fields`` (of :data:`FIELDS`) asked for."""
    if steps <= 0:
        raise InfillError(f"steps must be positive, got {steps}")
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise InfillError(f"a trace has no field {unknown[0]!r}; choose from {', '.join(FIELDS)}")
    adapted = sampler if isinstance(sampler, Adapted) else None
    kernel = sampler if adapted is None else adapted.sampler
    state = kernel.init(energy, x0)
    taken = Steps(
        tuple(fields), kernel.init_evaluations(energy, state.x.shape[1], state.num_categories), callback, stop
    )
    tuning = None
    if adapted is not None:
        state, tuning = warmup(adapted, energy, state, steps, generator, taken)
        kernel = adapted.kernel(tuning)
    burn_in = taken.taken
    while taken.taken < steps and not taken.ended:
        state, info = taken.take(kernel, energy, state, generator)
        if tuning is not None and info is not None:
            scheduled = adapted.adaptation.schedule(tuning)
            kernel = kernel if scheduled.value == tuning.value else adapted.kernel(scheduled)
            tuning = scheduled
    return Trace(
        samples=taken.stacked("samples"),
        energies=taken.stacked("energies"),
        accepted=taken.stacked("accepted"),
        hops=taken.stacked("hops"),
        evaluations=taken.evaluations,
        final_state=state,
        steps=taken.taken,
        burn_in=burn_in,
        proposals=taken.stacked("proposals"),
        proposal_energies=taken.stacked("proposal_energies"),
        temperature=energy.temperature if isinstance(energy, Tempered) else 1.0,
        tuning=tuning,
    )
