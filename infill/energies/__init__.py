"""Energies: callables mapping one-hot ``(B, d, K)`` states to log-probabilities ``(B,)``."""

from .base import Energy, HasConditionals, evaluate, one_hot, value_and_grad
from .masked_lm import MaskedLMEnergy
from .toy import PottsEnergy

__all__ = ["Energy", "HasConditionals", "MaskedLMEnergy", "PottsEnergy", "evaluate", "one_hot", "value_and_grad"]
