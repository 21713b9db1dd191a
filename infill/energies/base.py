"""The energy contract.

An energy is any callable ``energy(x) -> Tensor[B]`` taking a one-hot float tensor ``x`` of shape
``(B, d, K)`` (``B`` chains, ``d`` categorical variables with ``K`` categories each; a binary variable
is the case ``K = 2``) and returning the unnormalised log-probability of each state, differentiable in
``x`` where gradients are used. An energy may also offer abilities (:mod:`~infill.energies.abilities`), e.g.
``conditional_logits(x_idx, i)``: logits of its own proposal for variable ``i`` given the others (used by
Gibbs on a masked LM).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from .abilities import HasConditionals, HasValueAndGrad

Energy = Callable[[Tensor], Tensor]
__all__ = ["Energy", "HasConditionals", "evaluate", "one_hot", "value_and_grad"]


def one_hot(x_idx: Tensor, num_categories: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Category indices ``(B, d)`` -> one-hot ``(B, d, K)`` float tensor."""
    return torch.nn.functional.one_hot(x_idx, num_categories).to(dtype)


def value_and_grad(energy: Energy, x: Tensor) -> tuple[Tensor, Tensor]:
    """Energy values ``(B,)`` and their gradient ``(B, d, K)`` with respect to the one-hot ``x``.

    An energy with its own ``value_and_grad`` method (e.g. one that chunks to save memory) supplies them.
    Chains are independent, so the gradient of the sum is each chain's own gradient.
    """
    if isinstance(energy, HasValueAndGrad):
        return energy.value_and_grad(x)
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        values = energy(x)
        (grad,) = torch.autograd.grad(values.sum(), x)
    return values.detach(), grad.detach()


def evaluate(energy: Energy, x: Tensor) -> Tensor:
    """Energy values ``(B,)`` without building a graph."""
    with torch.no_grad():
        return energy(x).detach()
