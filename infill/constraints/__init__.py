"""Fillings under constraints: energies that are weighted sums of terms (the PLL, include words, closeness to
a source, a user's callable or sequence classifier), and rewrite mode's calibrated closeness.
See ``docs/constraints.md``."""
from .rewrite import calibrate_closeness
from .terms import Closeness, Include, SequenceClassifier
from .weighted_sum import WeightedSum
from .words import include_term, source_categories

__all__ = ["Closeness", "Include", "SequenceClassifier", "WeightedSum", "calibrate_closeness", "include_term",
           "source_categories"]
