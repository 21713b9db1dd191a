"""Fillings under constraints: energies that are weighted sums of terms (the PLL, include words, closeness to
a source, a user's callable or sequence classifier), and rewrite mode's calibrated closeness.
See ``docs/constraints.md``."""

from .rewrite import calibrate_closeness, check_change
from .terms import ClassifierTerm, Closeness, Include, SequenceClassifier
from .weighted_sum import INCLUDE_WEIGHT, WeightedSum, constrained_energy
from .words import include_pieces, include_term, source_categories

__all__ = [
    "INCLUDE_WEIGHT",
    "ClassifierTerm",
    "Closeness",
    "Include",
    "SequenceClassifier",
    "WeightedSum",
    "calibrate_closeness",
    "check_change",
    "constrained_energy",
    "include_pieces",
    "include_term",
    "source_categories",
]
