"""The factorised-proposal kernel: every variable proposed in parallel from a score table, then (optionally)
one Metropolis-Hastings test with the reverse proposal built from the scores at the proposal.

A preset picks the score source (the gradient, or exact neighbour differences: :mod:`.scores`), the
per-variable proposal ``log_proposal(x, scores, value) -> (B, d, K)`` (discrete Langevin, DLMC, ...),
whether the MH test is applied (``adjusted``) and the default of its tuned argument ``step_size``
(:mod:`.adaptive`). One
evaluation of the proposal's energy and scores per step (the current state's are cached).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

import torch
from torch import Tensor

from ..energies.base import Energy
from ..errors import InfillError
from .adaptive import StepSize
from .base import Adaptation, Sampler, State, StepInfo, mh_transition, sample_categorical
from .scores import GRADIENT, ScoreSource


def gather_sum(log_q: Tensor, x: Tensor) -> Tensor:
    """``sum_i log_q[b, i, x[b, i]]``: the log-probability ``(B,)`` of the joint proposal ``x``."""
    return log_q.gather(2, x.unsqueeze(-1)).sum((1, 2))


@dataclass(frozen=True)
class Factorised(Sampler):
    """Factorised proposal from scores with step ``step_size``, MH-tested where ``adjusted``."""

    step_size: float = 1.0
    adjusted: ClassVar[bool] = True
    tuned: ClassVar[str] = "step_size"
    adaptation: ClassVar[Adaptation] = StepSize()
    score_source: ClassVar[ScoreSource] = GRADIENT

    def __post_init__(self):
        if not self.step_size > 0:
            raise InfillError(f"step_size must be positive, got {self.step_size}")

    def log_proposal(self, x: Tensor, scores: Tensor, value: float) -> Tensor:
        raise NotImplementedError

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        x, k, value = state.x, state.num_categories, self.step_size
        log_fwd = self.log_proposal(x, state.scores, value)
        y = sample_categorical(log_fwd, generator)
        y_energy, y_scores = self.score_source.evaluate(energy, y, k)
        log_rev = self.log_proposal(y, y_scores, value)
        return mh_transition(
            state,
            y,
            y_energy,
            y_scores,
            gather_sum(log_fwd, y),
            gather_sum(log_rev, x),
            self.score_source.evaluations(x.shape[1], k),
            generator,
            self.adjusted,
        )
