"""Balancing functions for locally balanced proposals (Zanella 2020), in log space.

A balancing function ``g`` satisfies ``g(t) = t g(1/t)``; a proposal that weights a neighbour ``y`` of
``x`` by ``g(pi(y) / pi(x))`` is then locally balanced. Each function here takes ``log t`` (an energy
difference ``U(y) - U(x)``) and returns ``log g(t)``, so ``-inf`` stays ``-inf``.

- ``sqrt``:  ``g(t) = sqrt(t)``      -> ``0.5 * log t``
- ``ratio``: ``g(t) = t / (1 + t)``  -> ``logsigmoid(log t)`` (Barker's balancing)
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from ..errors import InfillError


def sqrt(log_t: Tensor) -> Tensor:
    """``log sqrt(t)``."""
    return 0.5 * log_t


def ratio(log_t: Tensor) -> Tensor:
    """``log (t / (1 + t))``."""
    return torch.nn.functional.logsigmoid(log_t)


BALANCING: dict[str, Callable[[Tensor], Tensor]] = {"sqrt": sqrt, "ratio": ratio}


def log_rates(x: Tensor, scores: Tensor, g: Callable[[Tensor], Tensor]) -> Tensor:
    """``log g(scores[i, k] - scores[i, x_i])`` for every variable ``i`` and category ``k``, ``(B, d, K)``,
    ``-inf`` at the current categories. ``scores`` are the energy's gradient (its first-order estimate of
    the change) or the exact energy differences of the neighbours."""
    current = scores.gather(2, x.unsqueeze(-1))
    return g(scores - current).scatter(2, x.unsqueeze(-1), float("-inf"))


def single_change_log_proposal(x: Tensor, scores: Tensor, g: Callable[[Tensor], Tensor]) -> Tensor:
    """Log-probabilities ``(B, d*K)`` of changing one variable ``i`` to category ``k != x_i``, in proportion to
    :func:`log_rates`; flat index ``i * K + k``."""
    return torch.log_softmax(log_rates(x, scores, g).flatten(1), dim=-1)


def balancing_function(name: str) -> Callable[[Tensor], Tensor]:
    """The balancing function called ``name`` (``sqrt`` or ``ratio``)."""
    try:
        return BALANCING[name]
    except KeyError:
        raise InfillError(f"unknown balancing function {name!r}; choose from {', '.join(BALANCING)}") from None
