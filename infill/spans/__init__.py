"""Blanks of any length: fills whose length the sampler chooses (issue 19).

- :mod:`.fills`: variable-length fills batched over chains (:class:`Fills`) and the valid ones
  (:class:`SpanSpace`: units per blank, words of a word-start piece and continuation pieces);
- :mod:`.kernel`: the exact reversible-jump MH kernel (insert, delete, replace; CGMH's ratios) and the
  energy contract it needs (:class:`SpanEnergy`).
"""
from .fills import EMPTY, MASK, Fills, SpanSpace
from .kernel import MOVES, SpanEnergy, SpanKernel, SpanState, SpanStepInfo

__all__ = ["EMPTY", "MASK", "MOVES", "Fills", "SpanEnergy", "SpanKernel", "SpanSpace", "SpanState", "SpanStepInfo"]
