"""The locally balanced single-change kernel: GWG, LB and PAS are presets of it.

One MH step walks a path ``x = x_0 -> x_1 -> ... -> x_R = y`` of ``R`` single-variable changes. Each move
draws a (variable, category) pair ``(i, b)``, ``b != x_r[i]``, with probability

    q(x_{r+1} | x_r) ∝ g(exp(scores(x)[i, b] - scores(x)[i, x_r[i]]))

for a balancing function ``g`` (:mod:`.balancing`) and the scores of the start ``x`` (the gradient, or exact
neighbour differences: :mod:`.scores`) for all ``R`` moves, so the forward path needs no new evaluation. The
path is an auxiliary variable (Sun et al., ICLR 2022): the MH ratio is

    pi(y) prod_r q~(x_{r-1} | x_r) / (pi(x) prod_r q(x_r | x_{r-1}))

with ``q~`` the same move distribution built from the scores at ``y``, walked back along the reversed path:
one evaluation per MH step, at ``y`` (cached for the next step).

``path_length`` is the mean of ``R``: each step draws ``R = 1 + Poisson(path_length - 1)``, the same for all
chains. A fixed ``R`` would not do: on binary variables every path of even length changes an even number of
bits, so the parity of the state would never change (a reducible chain). A state-independent mixture of exact
kernels is exact, and the mean is tuned continuously (:mod:`.adaptive`). ``R = 1`` always is Gibbs-with-
Gradients (Grathwohl et al., 2021) with the gradient and Zanella's locally balanced sampler with exact
differences; with exact differences and ``R = 1`` the proposal's value is known (it is a neighbour), so a step
costs ``d (K - 1)`` evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

import torch

from ..energies.base import Energy
from ..errors import InfillError
from .adaptive import PathLength
from .balancing import balancing_function, single_change_log_proposal
from .base import Sampler, State, StepInfo, mh_transition, sample_categorical
from .scores import GRADIENT, ScoreSource


@dataclass(frozen=True)
class SingleChange(Sampler):
    """On average ``path_length`` score-informed single-variable moves per MH step, balanced by ``balancing``."""

    path_length: float = 1.0
    balancing: str = "sqrt"
    tuned: ClassVar[str] = "path_length"
    adaptation: ClassVar[PathLength] = PathLength()
    score_source: ClassVar[ScoreSource] = GRADIENT

    def __post_init__(self):
        if not self.path_length >= 1:
            raise InfillError(f"path_length must be at least 1, got {self.path_length}")
        balancing_function(self.balancing)

    def path_steps(self, path_length: float, generator: Optional[torch.Generator], device) -> int:
        """``R = 1 + Poisson(path_length - 1)`` (no draw where the mean is 1)."""
        if path_length <= 1:
            return 1
        extra = torch.full((), path_length - 1.0, dtype=torch.float64, device=device)
        return 1 + int(torch.poisson(extra, generator=generator).item())

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        x, k, value = state.x, state.num_categories, self.path_length
        rows = torch.arange(x.shape[0], device=x.device)
        g = balancing_function(self.balancing)
        steps = self.path_steps(value, generator, x.device)
        path, changed, log_q_fwd = [x], [], torch.zeros(x.shape[0], dtype=state.scores.dtype, device=x.device)
        for _ in range(steps):
            log_q = single_change_log_proposal(path[-1], state.scores, g)
            choice = sample_categorical(log_q, generator)
            log_q_fwd = log_q_fwd + log_q[rows, choice]
            nxt = path[-1].clone()
            nxt[rows, choice // k] = choice % k
            path.append(nxt)
            changed.append(choice // k)
        y = path[-1]
        known = None
        if steps == 1 and self.score_source.exact:  # a neighbour: its value is in the table
            known = state.energy + state.scores[rows, changed[0], y[rows, changed[0]]]
        y_energy, y_scores = self.score_source.evaluate(energy, y, k, known)
        log_q_rev = torch.zeros_like(log_q_fwd)
        for r in range(steps, 0, -1):
            i = changed[r - 1]
            log_q = single_change_log_proposal(path[r], y_scores, g)
            log_q_rev = log_q_rev + log_q[rows, i * k + path[r - 1][rows, i]]
        evaluations = self.score_source.evaluations(x.shape[1], k, value_known=known is not None)
        return mh_transition(state, y, y_energy, y_scores, log_q_fwd, log_q_rev, evaluations, generator)
