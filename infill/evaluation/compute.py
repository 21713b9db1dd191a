"""Comparisons at equal compute: a baseline given as many encoder sequences as another run used.

Compute is counted in sequences passed through the encoder (``Diagnostics.encoder_sequences``), as a perfect
cache would charge it: a sequence that a pass, another draw or the PLL re-scoring already computed is not
paid again. A one-pass method given a budget draws until the budget is spent (``infill.pipeline``: rounds of
as many draws as the rest surely buys, each distinct draw scored as it comes), so one run at the reference's
sequences is the baseline at equal compute. :func:`matched` is the one runner every equal-compute driver
(``infill eval``, scripts/) goes through.
"""

from __future__ import annotations

import statistics
from typing import Callable, NamedTuple, Optional, Sequence, TypeVar

R = TypeVar("R")

SUFFIX = "@equal-sequences"
"""Names a row whose budget is set per template to the default run's encoder sequences."""


def matched(run: Callable[[int], R], budget: int, method: str, d: int, top: int = 1) -> tuple[R, dict]:
    """``run(b)`` for the one-pass ``method`` (or chains' start draws) on ``d`` blank tokens given ``b`` encoder
    sequences: ``budget``, or the least that buys ``top`` draws where ``budget`` is smaller (the baseline is never
    given less than it needs; :func:`infill.pipeline.policy.least_budget`), and the match as ``{"budget": b}``."""
    from ..onepass.methods import ONE_PASS, OnePass

    given = max(budget, 1 + top * (ONE_PASS.get(method) or OnePass(method)).cost({}, d))
    return run(given), {"budget": given}


class Measure(NamedTuple):
    """One run on one template: the mean PLL of its kept fillings, its wall seconds, its encoder sequences."""

    pll: float
    seconds: float
    sequences: Optional[int]


def compare(reference: Sequence[Measure], row: Sequence[Measure]) -> dict:
    """``reference`` against ``row``, template by template: on how many templates each has the higher mean
    PLL of its kept fillings (and the means), the mean ratio of encoder sequences (row over reference), and
    the ratio of wall times (reference over row: median and range)."""
    pairs = list(zip(reference, row, strict=True))
    times = sorted(a.seconds / b.seconds for a, b in pairs)
    sequences = [b.sequences / a.sequences for a, b in pairs if a.sequences and b.sequences is not None]
    return {
        "templates": len(pairs),
        "reference_wins": sum(a.pll > b.pll for a, b in pairs),
        "row_wins": sum(b.pll > a.pll for a, b in pairs),
        "reference_pll": statistics.fmean(a.pll for a, _ in pairs),
        "row_pll": statistics.fmean(b.pll for _, b in pairs),
        "sequences_ratio": statistics.fmean(sequences) if sequences else None,
        "time_ratio_median": statistics.median(times),
        "time_ratio_min": times[0],
        "time_ratio_max": times[-1],
    }


def describe(reference: str, row: str, c: dict, unit: str = "templates") -> list[str]:
    """A comparison from :func:`compare` as Markdown bullets (``unit``: what was compared one by one)."""
    ties = c["templates"] - c["reference_wins"] - c["row_wins"]
    sequences = "" if c["sequences_ratio"] is None else f"; {row} used {c['sequences_ratio']:.2f}x the sequences"
    return [
        f"- Mean PLL of the kept fillings higher for {reference} on {c['reference_wins']} of {c['templates']} "
        f"{unit}, for {row} on {c['row_wins']}, equal on {ties} (means {c['reference_pll']:.2f} against "
        f"{c['row_pll']:.2f}{sequences}).",
        f"- Wall time of {reference} over {row}'s: {c['time_ratio_median']:.2f}x (median over {unit}; range "
        f"{c['time_ratio_min']:.2f}-{c['time_ratio_max']:.2f}).",
    ]
