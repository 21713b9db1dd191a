"""Deterministic baselines: LEAD and the budgeted greedy maximisation of F (Lin & Bilmes 2010)."""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from .objective import SummaryObjective


def lead(objective: SummaryObjective) -> Tensor:
    """LEAD: the longest prefix of whole sentences within the budget (may be empty). Returns ``(N,)`` 0/1."""
    within = torch.cumsum(objective.costs, 0) <= objective.budget.limit + 1e-6
    return torch.cumprod(within.long(), 0).float()


def greedy(objective: SummaryObjective, scale: float = 0.3) -> Tensor:
    """Budgeted greedy with cost scaling (Lin & Bilmes 2010, Algorithm 1).

    Repeatedly take the sentence ``k`` that still fits with the largest ``(F(G + k) - F(G)) / c_k**scale``
    and add it, while that gain is positive (a sentence that adds nothing is never taken). Finally
    return the better of the greedy set and the best single sentence that fits. Each round costs
    ``O(N^2)`` (:meth:`SummaryObjective.gains`). Returns ``(N,)`` 0/1.
    """
    n = len(objective)
    costs = objective.costs
    chosen = torch.zeros(n)
    left = objective.budget.limit + 1e-6
    tolerance = 1e-6 * objective.f1
    while True:
        fits = (costs <= left) & (chosen == 0)
        if not fits.any():
            break
        gains = objective.gains(chosen)
        score = (gains / costs.clamp_min(1e-9) ** scale).masked_fill(~fits, -float("inf"))
        k = int(score.argmax())
        if float(gains[k]) <= tolerance:
            break
        chosen[k] = 1.0
        left -= float(costs[k])
    fits = costs <= objective.budget.limit + 1e-6
    singles = objective.gains(torch.zeros(n)).masked_fill(~fits, -float("inf"))
    best = int(singles.argmax())
    if fits.any() and float(singles[best]) > float(objective.value(chosen[None])) + tolerance:
        return torch.nn.functional.one_hot(torch.tensor(best), n).float()
    return chosen


def brute_force(objective: SummaryObjective, max_sentences: int = 16) -> Tensor:
    """The feasible selection of largest F by enumeration (tests and tiny documents only)."""
    n = len(objective)
    if n > max_sentences:
        raise ValueError(f"brute force over {n} sentences is too large")
    masks = torch.tensor(list(itertools.product((0.0, 1.0), repeat=n)))
    values = objective.value(masks).masked_fill(~objective.feasible(masks), -float("inf"))
    return masks[int(values.argmax())]
