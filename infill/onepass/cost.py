"""What one draw of a one-pass method costs: encoder sequences (re-scored by PLL) and forward passes."""

from __future__ import annotations

from ..lm import mlm_draws
from . import product_search
from .particles import METHOD as PARTICLES
from .particles import SMC


def draw_cost(method: str, options: dict, d: int) -> int:
    """Encoder sequences one more distinct draw (or particle) of ``method`` with ``options`` costs on ``d`` blank
    tokens, re-ranked by PLL (:func:`infill.lm.mlm_draws.draw_cost`; the particles: :meth:`SMC.passes`)."""
    if method == PARTICLES:
        return SMC(**options).passes(d)
    if method == product_search.METHOD:  # a filling's d masked copies, at most
        return d
    return mlm_draws.draw_cost(method, d)


def forwards(method: str, options: dict, d: int) -> int:
    """The forward passes one draw of ``method`` with ``options`` takes on ``d`` blank tokens (the particles':
    their order's; the product search: its first pass and a read at each blank)."""
    if method == product_search.METHOD:
        return d + 1
    return mlm_draws.FORWARDS[SMC(**options).order if method == PARTICLES else method](d)
