"""Discrete Langevin Monte Carlo, DLMC and DLMCf (Sun et al., AISTATS 2023).

Each variable ``i`` jumps as its own continuous-time Markov chain over the ``K`` categories for a time
``h`` (``step_size``), all variables in parallel. Its rates come from the locally balanced rate matrix
with the energy change estimated from the gradient at the current state ``x``:

    Q_ab = g(exp(grad[i, b] - grad[i, a]))  (a != b),   g a balancing function (:mod:`.balancing`).

Since ``g(t) = t g(1/t)``, ``Q`` is reversible with respect to ``nu_b ∝ exp(grad[i, b])``. From the current
category ``a`` the jump probabilities after time ``h`` are

- DLMC, the paper's interpolation (eq. 39): ``P_ab = nu_b (1 - exp(-h Q_ab / nu_b))`` for ``b != a`` and
  ``P_aa = 1 - sum_{b != a} P_ab = nu_a + sum_{b != a} nu_b exp(-h Q_ab / nu_b) >= nu_a``. For ``K = 2`` it
  is the exact solution ``exp(hQ)`` (eq. 37), ``Q_ab / nu_b = Q_ab + Q_ba``.
- DLMCf, forward Euler: ``P_ab = h Q_ab``, ``P_aa = 1 - h sum_b Q_ab``; where ``h sum_b Q_ab > 1`` the row
  is renormalised over the moves (the variable then always jumps).

The joint proposal is the product over variables; an MH test with the reverse proposal (gradient at the
proposal, cached for the next step) makes the chain exact: the factorised kernel (:mod:`.factorised`) with
this proposal. One value-and-gradient evaluation per step.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .balancing import balancing_function, log_rates


def _log_one_minus_exp_neg(log_r: Tensor) -> Tensor:
    """``log(1 - exp(-r))`` from ``log r``, accurate for tiny and huge ``r``."""
    r = log_r.exp()
    return torch.where(log_r < -20, log_r, torch.log(-torch.expm1(-r)))


def interpolated_log_proposal(x: Tensor, grad: Tensor, h: float, balancing: str) -> Tensor:
    """DLMC's per-variable log jump probabilities ``(B, d, K)`` (eq. 39, diagonal completing each row)."""
    log_nu = torch.log_softmax(grad, dim=-1)
    # log(h Q_ab / nu_b); -inf at b = a
    log_r = math.log(h) + log_rates(x, grad, balancing_function(balancing)) - log_nu
    moves = log_nu + _log_one_minus_exp_neg(log_r)
    stays = torch.logsumexp(log_nu - log_r.exp(), dim=-1, keepdim=True)  # nu_a + sum nu_b exp(-h Q_ab / nu_b)
    return moves.scatter(2, x.unsqueeze(-1), stays)


def euler_log_proposal(x: Tensor, grad: Tensor, h: float, balancing: str) -> Tensor:
    """DLMCf's per-variable log jump probabilities ``(B, d, K)``: ``I + hQ``, renormalised where it overshoots."""
    log_moves = math.log(h) + log_rates(x, grad, balancing_function(balancing))
    log_total = torch.logsumexp(log_moves, dim=-1, keepdim=True).clamp_max(0.0)
    moves = log_moves - torch.logsumexp(log_moves, dim=-1, keepdim=True) + log_total
    stays = torch.log(-torch.expm1(log_total))  # log(1 - min(h sum Q, 1))
    return moves.scatter(2, x.unsqueeze(-1), stays)
