"""Score sources: what a kernel caches about the current state besides its energy.

A score table ``(B, d, K)`` estimates, for every variable ``i`` and category ``k``, the change of the energy
when ``x_i`` is set to ``k`` (up to a constant per variable):

- ``GRADIENT``: the gradient of the energy at the one-hot ``x``, its first-order (Taylor) estimate; one
  value-and-gradient evaluation per state.
- ``DIFFERENCES``: the exact differences ``U(x with x_i := k) - U(x)`` (Newton's series to first order;
  zero at the current categories); no gradient, one batch of ``1 + d (K - 1)`` values per state, or
  ``d (K - 1)`` where the state's own value is already known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torch import Tensor

from ..energies.base import Energy, one_hot, value_and_grad
from .neighbours import differences, neighbour_values


@dataclass(frozen=True)
class ScoreSource:
    """How to evaluate a state's energy and scores: by ``exact`` differences or by the gradient."""

    exact: bool

    def evaluate(self, energy: Energy, x_idx: Tensor, k: int, value: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        """Energy ``(B,)`` and scores ``(B, d, K)`` of ``x_idx``; ``value``, where known, saves an evaluation
        of exact differences."""
        if not self.exact:
            return value_and_grad(energy, one_hot(x_idx, k))
        own, table = neighbour_values(energy, x_idx, k, include_self=value is None)
        value = own if value is None else value
        return value, differences(value, table, x_idx)

    def evaluations(self, d: int, k: int, value_known: bool = False) -> int:
        """Evaluations per chain that :meth:`evaluate` spends."""
        if not self.exact:
            return 1
        return d * (k - 1) + (0 if value_known else 1)


GRADIENT = ScoreSource(exact=False)
DIFFERENCES = ScoreSource(exact=True)
