"""Adaptation during burn-in: a wrapper around a kernel whose tuned value is an argument of its transition.

A :class:`Tuned` kernel implements ``transition(energy, state, generator, value)``: one step with the tuned
argument ``value`` (a step size, or PAS's path length). Its ``step`` passes ``state.tuning``'s value and
updates the tuning with :class:`Adaptation`.

By default a run adapts during its first half (``adapt_steps=None``; ``0`` never adapts). The criterion
sees stay-put acceptances: it is the mean Metropolis-Hastings acceptance probability of the proposals that
*move* (change at least one variable), driven toward ``target_accept`` (0.574, the optimal acceptance of
Langevin-type proposals) by the Robbins-Monro recursion on ``log value``

    log v_{t+1} = log v_t + 2 (a_t - target_accept) / (t + 1)^0.6.

A too-small step proposes to stay put: those proposals are accepted but do not count, so ``a_t`` is low
only where real moves are rejected. Scales far off are found fast: a step at which no chain proposes a move
is doubled, one at which every move is rejected (``a_t < 0.01``) halved. Afterwards the value is frozen, so
the chain from then on is a fixed MH kernel and targets the energy exactly.
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
from .base import Sampler, State, StepInfo, Tuning
from .scores import GRADIENT, ScoreSource

GAIN, GAIN_DECAY = 2.0, 0.6  # Robbins-Monro gains 2 (t + 1)^-0.6: sum diverges, sum of squares converges


def moving_acceptance(info: StepInfo) -> Optional[float]:
    """Mean acceptance probability of the proposals that change something (None where none does)."""
    moved = info.proposed_hops > 0
    if not moved.any():
        return None
    return info.accept_prob[moved].float().mean().item()


@dataclass(frozen=True)
class Adaptation:
    """Tunes ``Tuning.value`` toward ``target`` acceptance of moving proposals (module docstring), keeping it
    at or above ``minimum``; ``decay < 1`` multiplies it by ``decay`` every step down to ``floor`` (a schedule,
    each step's kernel exact)."""

    target: float
    minimum: float = 0.0
    decay: float = 1.0
    floor: float = 0.0

    def update(self, tuning: Tuning, info: StepInfo) -> Tuning:
        t, value = tuning.steps, tuning.value
        if t < tuning.adapt_steps:
            rate = moving_acceptance(info)
            if rate is None or rate < 0.01:
                step = math.log(2) if rate is None else -math.log(2)
            else:
                step = GAIN * (rate - self.target) / (t + 1) ** GAIN_DECAY
            value = max(value * math.exp(step), self.minimum)
        if self.decay < 1:
            value = max(value * self.decay, self.floor)
        return dataclasses.replace(tuning, value=value, steps=t + 1)


@dataclass
class Tuned(Sampler):
    """A kernel with a tuned argument, ``adapt_steps`` (None: the first half of the run; 0: none) and
    ``target_accept`` of :class:`Adaptation`, whose states cache the scores of ``score_source``. Subclasses
    give ``start_value()`` and ``transition``."""

    adapt_steps: Optional[int] = None
    target_accept: float = 0.574
    tuned_minimum: ClassVar[float] = 0.0
    score_source: ClassVar[ScoreSource] = GRADIENT

    def __post_init__(self):
        if self.adapt_steps is not None and (isinstance(self.adapt_steps, bool) or not isinstance(
                self.adapt_steps, int) or self.adapt_steps < 0):
            raise InfillError(f"adapt_steps must be 0 or more (or None: half the run), got {self.adapt_steps!r}")
        if not 0 < self.target_accept < 1:
            raise InfillError(f"target_accept must lie strictly between 0 and 1, got {self.target_accept}")

    def start_value(self) -> float:
        raise NotImplementedError

    def adaptation(self) -> Adaptation:
        return Adaptation(self.target_accept, self.tuned_minimum)

    def start(self, energy: Energy, x_idx: Tensor, k: int, steps: Optional[int]) -> State:
        value, scores = self.score_source.evaluate(energy, x_idx, k)
        return State(x_idx, value, scores, k, self.initial_tuning(steps))

    def init_evaluations(self, energy: Energy, d: int, k: int) -> int:
        return self.score_source.evaluations(d, k)

    def initial_tuning(self, steps: Optional[int]) -> Tuning:
        """The tuning at the start of a run of ``steps`` steps (unknown: no default adaptation)."""
        adapt = self.adapt_steps if self.adapt_steps is not None else (steps or 0) // 2
        return Tuning(float(self.start_value()), adapt, adapt)

    def transition(self, energy: Energy, state: State, generator: Optional[torch.Generator],
                   value: float) -> tuple[State, StepInfo]:
        raise NotImplementedError

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        tuning = state.tuning if state.tuning is not None else self.initial_tuning(None)
        new_state, info = self.transition(energy, state, generator, tuning.value)
        return dataclasses.replace(new_state, tuning=self.adaptation().update(tuning, info)), info
