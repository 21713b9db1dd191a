"""An energy at temperature ``T``: the target ``exp(U / T)``."""

from __future__ import annotations

from typing import Callable

from torch import Tensor

from .abilities import KEPT, SCALED
from .base import value_and_grad


class Tempered:
    """``U(x) / temperature`` for any energy ``U``, with its gradient and each of its other abilities
    (:mod:`~infill.energies.abilities`) that ``U`` offers, the model's logits and exact values scaled alike:
    ``T < 1`` sharpens the target toward high-energy states, ``T > 1`` flattens it. An ability ``U`` lacks
    stays absent, as samplers tell energies apart by it."""

    def __init__(self, energy, temperature: float):
        self.energy, self.temperature = energy, float(temperature)
        for name in KEPT:
            if hasattr(energy, name):
                setattr(self, name, getattr(energy, name))
        for name in SCALED:
            if hasattr(energy, name):
                setattr(self, name, self._scaled(getattr(energy, name)))

    def __call__(self, x: Tensor) -> Tensor:
        return self.energy(x) / self.temperature

    def value_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        value, grad = value_and_grad(self.energy, x)
        return value / self.temperature, grad / self.temperature

    def _scaled(self, ability: Callable[..., Tensor]) -> Callable[..., Tensor]:
        return lambda *args, **kwargs: ability(*args, **kwargs) / self.temperature
