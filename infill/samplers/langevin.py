"""The discrete Langevin proposal (Zhang, Liu & Liu, ICML 2022) and NCG's form of it (Rhodes & Gutmann, 2022).

NCG proposes from ``q(x' | x) ∝ exp(1/2 grad f(x)^T (x' - x) - ||x' - x||^2 / (2 eps))`` in the paper's
encoding: a binary variable (``K = 2``) is one bit, so a flip costs ``||x' - x||^2 = 1``; a categorical
variable is one-hot, so a change costs 2. The discrete Langevin proposal writes the same on one-hot vectors
with step ``alpha``, a change costing ``1/alpha``; hence NCG(eps) is DMALA(alpha = 2 eps) for ``K = 2`` and
DMALA(alpha = eps) for ``K > 2``.
"""

from __future__ import annotations

import torch
from torch import Tensor


def langevin_log_proposal(x: Tensor, scores: Tensor, step_size: float | Tensor) -> Tensor:
    """Per-variable log-probabilities ``(B, d, K)`` of the discrete Langevin proposal at ``x``.

    ``logits[i, k] = 1/2 grad . (x' - x) - ||x' - x||^2 / (2 alpha)`` for ``x'`` = ``x`` with variable
    ``i`` set to ``k``; in one-hot form ``grad . (x' - x) = grad[i, k] - grad[i, x_i]`` and
    ``||x' - x||^2 = 2`` for a change, so the distance term is ``1/alpha`` (the paper's convention).
    DISCS writes ``1/(2 alpha)`` for it: its step size is half of ours. With exact differences as ``scores``
    it is the Newton proposal (Xiang et al., 2023). ``step_size`` may be a ``(d, 1)`` tensor of per-variable
    steps (the preconditioned proposal).
    """
    current = scores.gather(2, x.unsqueeze(-1))
    change = torch.ones_like(scores).scatter(2, x.unsqueeze(-1), 0.0)
    return torch.log_softmax((scores - current) / 2 - change / step_size, dim=-1)


def ncg_log_proposal(x: Tensor, scores: Tensor, eps: float) -> Tensor:
    """NCG's proposal with step ``eps``: the discrete Langevin proposal with ``alpha = 2 eps`` for binary
    variables and ``alpha = eps`` for categorical ones (module docstring)."""
    return langevin_log_proposal(x, scores, 2 * eps if scores.shape[-1] == 2 else eps)
