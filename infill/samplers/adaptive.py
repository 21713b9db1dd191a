"""Adaptation during a warmup apart from sampling: a wrapper around a sampler that does not know it is tuned.

A sampler steps with its own hyperparameters; :meth:`~.base.Sampler.fixed` gives the sampler with the tuned ones
(a step size, PAS's path length, PAVG's preconditioner) set to new values. An adaptation is an init/update/final
triple over a record of the tuning (:class:`~.base.Tuning`):

- ``init(value, steps) -> Tuning``: the record at the start of a run of ``steps`` steps (None: unknown),
  ``value`` the kernel's tuned hyperparameter;
- ``update(tuning, before, after, info) -> Tuning``: the record after the warmup step ``before -> after``
  (``info`` its :class:`~.base.StepInfo`), one more step counted;
- ``final(tuning) -> tuple``: the tuned settings the record stands for, the arguments of ``fixed``;
- ``schedule(tuning) -> Tuning``: the record one sampling step after the warmup, one more step counted. It
  never sees the chains: only a schedule fixed in advance may move the value (:class:`DecayingStepSize`).

:class:`Adapted` pairs a sampler with its adaptation and is a sampler itself (the same ``init``/``step`` pair),
its record carried in its states (``State.tuning``): its first ``burn_in`` steps, the warmup, each step with
the kernel of the settings tuned so far, the later ones with the fixed kernel of the final settings, so the
trace after the warmup is an exact chain. The driver (:func:`.driver.sample`) runs it as any sampler, telling
it the run's length (:meth:`Adapted.for_run`). A new adaptation is any object with these methods
(:class:`~.base.Adaptation`: a frozen dataclass whose fields are its options, checked in ``__post_init__``); a
sampler names its default one in its ``adaptation`` class attribute, and the options of both are the
sampler's hyperparameters.

:class:`StepSize`, the default: a run adapts during its first half (``adapt_steps=None``; ``0`` never
adapts). The criterion sees stay-put acceptances: it is the mean Metropolis-Hastings acceptance probability
of the proposals that *move* (change at least one variable), driven toward ``target_accept`` (0.574, the
optimal acceptance of Langevin-type proposals) by the Robbins-Monro recursion on ``log value``

    log v_{t+1} = log v_t + 2 (a_t - target_accept) / (t + 1)^0.6.

A too-small step proposes to stay put: those proposals are accepted but do not count, so ``a_t`` is low
only where real moves are rejected. Scales far off are found fast: a step at which no chain proposes a move
is doubled, one at which every move is rejected (``a_t < 0.01``) halved.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar, Optional

import torch
from torch import Tensor

from ..energies.base import Energy
from ..errors import InfillError
from .base import Adaptation, Sampler, State, StepInfo, Tuning, options_of

GAIN, GAIN_DECAY = 2.0, 0.6  # Robbins-Monro gains 2 (t + 1)^-0.6: sum diverges, sum of squares converges


def moving_acceptance(info: StepInfo) -> Optional[float]:
    """Mean acceptance probability of the proposals that change something (None where none does)."""
    moved = info.proposed_hops > 0
    if not moved.any():
        return None
    return info.accept_prob[moved].float().mean().item()


@dataclass(frozen=True)
class StepSize:
    """Robbins-Monro adaptation of one positive kernel argument toward ``target_accept`` acceptance of moving
    proposals during the first ``adapt_steps`` steps (None: half the run), kept at or above ``minimum``."""

    adapt_steps: Optional[int] = None
    target_accept: float = 0.574
    minimum: ClassVar[float] = 0.0

    def __post_init__(self):
        if self.adapt_steps is not None and (
            isinstance(self.adapt_steps, bool) or not isinstance(self.adapt_steps, int) or self.adapt_steps < 0
        ):
            raise InfillError(f"adapt_steps must be 0 or more (or None: half the run), got {self.adapt_steps!r}")
        if not 0 < self.target_accept < 1:
            raise InfillError(f"target_accept must lie strictly between 0 and 1, got {self.target_accept}")

    def init(self, value: float, steps: Optional[int]) -> Tuning:
        adapt = self.adapt_steps if self.adapt_steps is not None else (steps or 0) // 2
        return Tuning(float(value), adapt, adapt)

    def update(self, tuning: Tuning, before: State, after: State, info: StepInfo) -> Tuning:
        t, value = tuning.steps, tuning.value
        if t < tuning.adapt_steps:
            rate = moving_acceptance(info)
            if rate is None or rate < 0.01:
                step = math.log(2) if rate is None else -math.log(2)
            else:
                step = GAIN * (rate - self.target_accept) / (t + 1) ** GAIN_DECAY
            value = max(value * math.exp(step), self.minimum)
        return dataclasses.replace(tuning, value=value, steps=t + 1)

    def final(self, tuning: Tuning) -> tuple:
        return (tuning.value,)

    def schedule(self, tuning: Tuning) -> Tuning:
        return dataclasses.replace(tuning, steps=tuning.steps + 1)


@dataclass(frozen=True)
class PathLength(StepSize):
    """:class:`StepSize` for a mean path length, which stays at least 1."""

    minimum: ClassVar[float] = 1.0


@dataclass(frozen=True)
class DecayingStepSize(StepSize):
    """:class:`StepSize`, then with ``decay < 1`` the value multiplied by ``decay`` after every step, down to
    ``min_step_size`` (a schedule: each step's kernel is exact)."""

    decay: float = 1.0
    min_step_size: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        if not 0 < self.decay <= 1:
            raise InfillError(f"decay must be in (0, 1], got {self.decay}")
        if not self.min_step_size >= 0:
            raise InfillError(f"min_step_size must be 0 or more, got {self.min_step_size}")
        if self.decay < 1 and not self.min_step_size > 0:
            raise InfillError(f"a decaying step size (decay {self.decay}) needs a positive min_step_size")

    def init(self, value: float, steps: Optional[int]) -> Tuning:
        if self.min_step_size > value:
            raise InfillError(f"min_step_size must be in [0, step_size], got {self.min_step_size}")
        return super().init(value, steps)

    def update(self, tuning: Tuning, before: State, after: State, info: StepInfo) -> Tuning:
        return self.decayed(super().update(tuning, before, after, info))

    def schedule(self, tuning: Tuning) -> Tuning:
        return self.decayed(super().schedule(tuning))

    def decayed(self, tuning: Tuning) -> Tuning:
        if self.decay < 1:
            tuning = dataclasses.replace(tuning, value=max(tuning.value * self.decay, self.min_step_size))
        return tuning


@dataclass(frozen=True)
class Adapted(Sampler):
    """``sampler`` tuned by ``adaptation`` during a warmup (module docstring; None: the sampler's default), for a
    run of ``steps`` steps (None: unknown, an adaptation sized by the run never adapts; the driver sets it)."""

    sampler: Sampler
    adaptation: Optional[Adaptation] = None
    steps: Optional[int] = None

    def __post_init__(self):
        if self.adaptation is None:
            object.__setattr__(self, "adaptation", self.sampler.adaptation)  # frozen: set once, on creation
        self.adaptation.init(self.start_value(), None)  # refuses a start the adaptation cannot use

    @property
    def name(self) -> str:
        return self.sampler.name

    def start_value(self) -> float:
        """The tuned hyperparameter's value the adaptation starts from."""
        return getattr(self.sampler, self.sampler.tuned)

    def for_run(self, steps: int) -> "Adapted":
        return dataclasses.replace(self, steps=steps)

    def check_variables(self, d: int) -> None:
        self.sampler.check_variables(d)

    def init(self, energy: Energy, x0: Tensor) -> State:
        state = self.sampler.init(energy, x0)
        return dataclasses.replace(state, tuning=self.adaptation.init(self.start_value(), self.steps))

    def init_evaluations(self, energy: Energy, d: int, k: int) -> int:
        return self.sampler.init_evaluations(energy, d, k)

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        """One step with the kernel of ``state.tuning``, then the record updated (the warmup) or scheduled."""
        tuning = state.tuning
        new, info = self.kernel(tuning).step(energy, state, generator)
        if tuning.steps < tuning.burn_in:
            tuning = self.adaptation.update(tuning, state, new, info)
        else:
            tuning = self.adaptation.schedule(tuning)
        return dataclasses.replace(new, tuning=tuning), info

    def kernel(self, tuning: Tuning) -> Sampler:
        """The sampler with the settings ``tuning`` stands for."""
        return self.sampler.fixed(*self.adaptation.final(tuning))

    def hyperparameters(self) -> dict:
        return {**options_of(self.sampler), **options_of(self.adaptation)}
