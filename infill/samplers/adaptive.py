"""Adaptation during burn-in: a wrapper around a kernel that takes its tuned value as an argument.

A :class:`Kernel` implements ``transition(energy, state, generator, *arguments)``: one step with the arguments
it is tuned by (a step size, PAS's path length, PAVG's preconditioner). It does not know it is tuned. An
adaptation is an init/update/final triple over a record of the tuning (:class:`~.base.Tuning`, kept in
``State.tuning``):

- ``init(value, steps) -> Tuning``: the record at the start of a run of ``steps`` steps (None: unknown),
  ``value`` the kernel's tuned hyperparameter;
- ``update(tuning, before, after, info) -> Tuning``: the record after the step ``before -> after``
  (``info`` its :class:`~.base.StepInfo`), one more step counted;
- ``final(tuning) -> tuple``: the kernel's arguments the record stands for. Once the window is over the
  record no longer changes them (or only by a schedule fixed in advance, as :class:`DecayingStepSize`'s),
  so from then on every step is an exact kernel.

:class:`Adapted` feeds ``final(state.tuning)`` to the kernel at every step and updates the record. A new
adaptation is any object with these three methods (a frozen dataclass whose fields are its options, checked
in ``__post_init__``); a kernel names its default one in its ``adaptation`` class attribute, and the options
of both are the sampler's hyperparameters.

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
from typing import ClassVar, Optional, Protocol

import torch
from torch import Tensor

from ..energies.base import Energy
from ..errors import InfillError
from .base import Sampler, State, StepInfo, Tuning, options_of
from .scores import GRADIENT, ScoreSource

GAIN, GAIN_DECAY = 2.0, 0.6  # Robbins-Monro gains 2 (t + 1)^-0.6: sum diverges, sum of squares converges


def moving_acceptance(info: StepInfo) -> Optional[float]:
    """Mean acceptance probability of the proposals that change something (None where none does)."""
    moved = info.proposed_hops > 0
    if not moved.any():
        return None
    return info.accept_prob[moved].float().mean().item()


class Adaptation(Protocol):
    """The init/update/final triple of an adaptation (module docstring)."""

    def init(self, value: float, steps: Optional[int]) -> Tuning: ...

    def update(self, tuning: Tuning, before: State, after: State, info: StepInfo) -> Tuning: ...

    def final(self, tuning: Tuning) -> tuple: ...


@dataclass(frozen=True)
class StepSize:
    """Robbins-Monro adaptation of one positive kernel argument toward ``target_accept`` acceptance of moving
    proposals during the first ``adapt_steps`` steps (None: half the run), kept at or above ``minimum``."""

    adapt_steps: Optional[int] = None
    target_accept: float = 0.574
    minimum: ClassVar[float] = 0.0

    def __post_init__(self):
        if self.adapt_steps is not None and (isinstance(self.adapt_steps, bool) or not isinstance(
                self.adapt_steps, int) or self.adapt_steps < 0):
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
        tuning = super().update(tuning, before, after, info)
        if self.decay < 1:
            tuning = dataclasses.replace(tuning, value=max(tuning.value * self.decay, self.min_step_size))
        return tuning


@dataclass
class Kernel:
    """A transition with tuned arguments, whose states cache the scores of ``score_source``: subclasses give
    ``transition``; ``tuned`` names the hyperparameter the adaptation starts from and ``adaptation`` is the
    default adaptation (its fields are options too)."""

    name: ClassVar[str] = ""
    tuned: ClassVar[str] = "step_size"
    adaptation: ClassVar[Adaptation] = StepSize()
    score_source: ClassVar[ScoreSource] = GRADIENT

    def check_variables(self, d: int) -> None:
        """Refuse, with one line, hyperparameters that do not fit ``d`` variables (before any sampling)."""

    def start(self, energy: Energy, x_idx: Tensor, k: int) -> State:
        value, scores = self.score_source.evaluate(energy, x_idx, k)
        return State(x_idx, value, scores, k)

    def init_evaluations(self, energy: Energy, d: int, k: int) -> int:
        return self.score_source.evaluations(d, k)

    def start_value(self) -> float:
        return getattr(self, self.tuned)

    def transition(self, energy: Energy, state: State, generator: Optional[torch.Generator],
                   *arguments) -> tuple[State, StepInfo]:
        raise NotImplementedError


@dataclass
class Adapted(Sampler):
    """The sampler of ``kernel`` tuned by ``adaptation`` (module docstring; None: the kernel's default)."""

    kernel: Kernel
    adaptation: Optional[Adaptation] = None

    def __post_init__(self):
        if self.adaptation is None:
            self.adaptation = self.kernel.adaptation
        self.adaptation.init(self.kernel.start_value(), None)  # refuses a start the adaptation cannot use

    @property
    def name(self) -> str:
        return self.kernel.name

    def check_variables(self, d: int) -> None:
        self.kernel.check_variables(d)

    def start(self, energy: Energy, x_idx: Tensor, k: int, steps: Optional[int]) -> State:
        state = self.kernel.start(energy, x_idx, k)
        return dataclasses.replace(state, tuning=self.adaptation.init(self.kernel.start_value(), steps))

    def init_evaluations(self, energy: Energy, d: int, k: int) -> int:
        return self.kernel.init_evaluations(energy, d, k)

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        tuning = state.tuning if state.tuning is not None else self.adaptation.init(self.kernel.start_value(), None)
        new_state, info = self.kernel.transition(energy, state, generator, *self.adaptation.final(tuning))
        return dataclasses.replace(new_state, tuning=self.adaptation.update(tuning, state, new_state, info)), info

    def hyperparameters(self) -> dict:
        return {**options_of(self.kernel), **options_of(self.adaptation)}
