"""An energy at temperature ``T``: the target ``exp(U / T)``."""
from __future__ import annotations

from torch import Tensor

from .base import value_and_grad


class Tempered:
    """``U(x) / temperature`` for any energy ``U``, with its gradient and (where ``U`` has them) its
    conditionals, a masked LM's ``blank_logits`` (with the template's ``input_ids``, ``num_blanks`` and
    ``category_ids`` the masked LM's draws read) or a span energy's proposal logits (:mod:`infill.spans`) scaled
    alike: ``T < 1`` sharpens the target toward high-energy states, ``T > 1`` flattens it. A kernel that proposes
    from the masked LM does so at every temperature."""

    def __init__(self, energy, temperature: float):
        self.energy, self.temperature = energy, float(temperature)
        self.num_categories = energy.num_categories
        if hasattr(energy, "conditional_logits"):  # only then: samplers tell energies apart by it
            self.conditional_logits = self._conditional_logits
        if hasattr(energy, "proposal_logits"):
            self.proposal_logits = self._proposal_logits
        if hasattr(energy, "blank_logits"):
            self.blank_logits = self._blank_logits
            self.input_ids, self.num_blanks, self.category_ids = energy.input_ids, energy.num_blanks, \
                energy.category_ids

    def __call__(self, x: Tensor) -> Tensor:
        return self.energy(x) / self.temperature

    def value_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        value, grad = value_and_grad(self.energy, x)
        return value / self.temperature, grad / self.temperature

    def _conditional_logits(self, x_idx: Tensor, i: Tensor) -> Tensor:
        return self.energy.conditional_logits(x_idx, i) / self.temperature

    def _blank_logits(self, *args) -> Tensor:
        return self.energy.blank_logits(*args) / self.temperature

    def _proposal_logits(self, *args) -> Tensor:
        return self.energy.proposal_logits(*args) / self.temperature
