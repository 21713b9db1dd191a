"""What an energy may offer beyond its value, declared once.

Samplers ask an energy for an ability with ``isinstance(energy, HasBlankLogits)`` (and the like), and every
wrapper (:class:`~infill.energies.tempered.Tempered`, :class:`~infill.constraints.weighted_sum.WeightedSum`)
passes on each ability it can: :data:`SCALED` are values of the energy (or logits of its proposals) that a
temperature divides, :data:`KEPT` are facts of the state space that no wrapper changes.
"""

from __future__ import annotations

from typing import Optional, Protocol, runtime_checkable

from torch import Tensor


@runtime_checkable
class HasValueAndGrad(Protocol):
    """An energy with its own values and gradient (e.g. one that chunks to save memory)."""

    def value_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Values ``(B,)`` and their gradient ``(B, d, K)`` with respect to the one-hot ``x``."""


@runtime_checkable
class HasConditionals(Protocol):
    """An energy that proposes variable ``i`` from its own conditional (e.g. BERT's at a blank)."""

    def conditional_logits(self, x_idx: Tensor, i: Tensor) -> Tensor:
        """Logits ``(B, K)`` for variable ``i[b]`` of chain ``b`` given the other variables."""


@runtime_checkable
class HasBlankLogits(Protocol):
    """A masked LM: its logits at some blanks with others masked, on the template ``input_ids (L,)`` with
    ``num_blanks`` blanks whose categories are the tokens ``category_ids``."""

    input_ids: Tensor
    num_blanks: int
    category_ids: Tensor

    def blank_logits(self, x_idx: Tensor, masked: Tensor, read: Optional[Tensor] = None) -> Tensor:
        """Logits ``(B, S, K)`` at the blanks ``read (B, S)`` (every blank by default), ``masked (B, d)`` masked."""

    def first_pass(self) -> Tensor:
        """Logits ``(d, K)`` at every blank with every blank masked (read once and held)."""


@runtime_checkable
class HasProposalLogits(Protocol):
    """A span energy's proposal for a piece at ``slot`` of ``blank`` (:mod:`infill.spans`)."""

    def proposal_logits(self, fills, blank: Tensor, slot: Tensor) -> Tensor:
        """Logits ``(B, K)`` of the piece to put at ``slot`` of ``blank`` in each chain's fills."""


@runtime_checkable
class HasIndexedValues(Protocol):
    """An energy evaluated straight from category indices."""

    def of_indices(self, x_idx: Tensor) -> Tensor:
        """Values ``(B,)`` of the states ``x_idx (B, d)``."""


@runtime_checkable
class HasDifferences(Protocol):
    """An energy with the exact change of its value at every single-variable move."""

    def differences(self, x_idx: Tensor) -> Tensor:
        """``(B, d, K)``: the value with variable ``i`` set to category ``c``, less the value at ``x_idx``."""


SCALED = ("conditional_logits", "blank_logits", "first_pass", "proposal_logits", "of_indices", "differences")
"""Abilities whose outputs a temperature divides (``value_and_grad`` is divided too, value and gradient)."""
KEPT = ("num_categories", "num_blanks", "input_ids", "category_ids")
"""Facts of the state space a wrapper passes on unchanged."""
