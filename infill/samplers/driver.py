"""The one driver of every sampler: ``sample(sampler, energy, x0, steps)`` runs the ``init``/``step`` pair
(:class:`~.base.Sampler`) into a :class:`~.base.Trace` that keeps only the ``fields`` asked for.

A sampler wrapped in its adaptation (:class:`~.adaptive.Adapted`) is run the same way; its states carry the
tuning, from which the trace takes ``tuning`` and ``burn_in`` (the warmup's steps, after which the chain is
exact).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
from torch import Tensor

from ..energies.base import Energy
from ..energies.budget import BudgetSpent
from ..energies.tempered import Tempered
from ..errors import InfillError
from .base import Sampler, State, StepInfo, Trace

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
        self, sampler: Sampler, energy: Energy, state: State, generator: Optional[torch.Generator]
    ) -> tuple[State, Optional[StepInfo]]:
        """One step of ``sampler`` from ``state``, recorded; ``(state, None)`` where the meter refused it (the
        exception goes on if no step was taken)."""
        try:
            new, info = sampler.step(energy, state, generator)
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


def sample(
    sampler: Sampler,
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
    sampler = sampler.for_run(steps)
    state = sampler.init(energy, x0)
    taken = Steps(
        tuple(fields), sampler.init_evaluations(energy, state.x.shape[1], state.num_categories), callback, stop
    )
    while taken.taken < steps and not taken.ended:
        state, _ = taken.take(sampler, energy, state, generator)
    tuning = state.tuning
    return Trace(
        samples=taken.stacked("samples"),
        energies=taken.stacked("energies"),
        accepted=taken.stacked("accepted"),
        hops=taken.stacked("hops"),
        evaluations=taken.evaluations,
        final_state=state,
        steps=taken.taken,
        burn_in=0 if tuning is None else min(tuning.burn_in, taken.taken),
        proposals=taken.stacked("proposals"),
        proposal_energies=taken.stacked("proposal_energies"),
        temperature=energy.temperature if isinstance(energy, Tempered) else 1.0,
        tuning=tuning,
    )
