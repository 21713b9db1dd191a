"""Comparisons at equal compute: a baseline given as many encoder sequences as another run used.

Compute is counted in sequences passed through the encoder (``Diagnostics.encoder_sequences``): a
left-to-right draw costs one sequence per blank token, an independent draw one, and re-ranking by PLL
one masked copy per blank token of every distinct draw. The re-scoring counts distinct draws only, so a
run's cost is not linear in its number of draws: :func:`equal_sequences` finds the number by running.
:func:`matched` is the one runner every equal-compute driver (``infill eval``, scripts/) goes through.
"""
from __future__ import annotations

import statistics
from typing import Callable, NamedTuple, Optional, Sequence, TypeVar

from ..errors import InfillError

R = TypeVar("R")

SUFFIX = "@equal-sequences"
"""Names a row whose number of draws is set per template to match the default run's encoder sequences."""


def equal_sequences(run: Callable[[int], R], sequences: Callable[[R], int], budget: int, draw_cost: int,
                    minimum: int = 1, tries: int = 8) -> tuple[int, R, int]:
    """``(n, run(n), runs)``: the number of draws ``n >= minimum`` whose run passes ``budget`` encoder
    sequences within half of ``draw_cost`` (what one more distinct draw costs), the run itself, and how many runs
    the search took. ``run`` must be deterministic (seeded). The search starts at ``budget // draw_cost``
    and steps by the measured mean cost per draw from the closest run so far (by one draw where that lands
    on a measured ``n``); after ``tries`` runs, or when ``minimum`` draws exceed the budget, the closest."""
    if budget < 1 or draw_cost < 1:
        raise InfillError(f"a budget and a draw's cost in encoder sequences must be positive, got {budget}, "
                          f"{draw_cost}")
    measured: dict[int, tuple[int, R]] = {}
    n = max(minimum, budget // draw_cost)
    while n >= minimum and len(measured) < tries:
        result = run(n)
        cost = sequences(result)
        measured[n] = cost, result
        if 2 * abs(budget - cost) <= draw_cost or (n == minimum and cost > budget):
            break
        closest, (best, _) = min(measured.items(), key=lambda item: abs(budget - item[1][0]))
        n = max(minimum, closest + round((budget - best) * closest / best))
        while n in measured:
            n += 1 if budget > best else -1
    closest = min(measured, key=lambda k: abs(budget - measured[k][0]))
    return closest, measured[closest][1], len(measured)


def matched(run: Callable[[int], R], sequences: Callable[[R], int], budget: int, method: str, d: int,
            minimum: int = 1, tries: int = 8) -> tuple[R, dict]:
    """``run(n)`` for the ``n`` draws of the one-pass ``method`` (a key of ``infill.lm.mlm_draws.FORWARDS``) on
    ``d`` blanks that spend ``budget`` encoder sequences (:func:`equal_sequences`), and the match as a record:
    ``{"draws": n, "budget": budget, "budget_runs": runs}``; a draw costs
    :func:`infill.lm.mlm_draws.draw_cost`."""
    from ..lm.mlm_draws import draw_cost  # here, not at the top: the report reads this module without torch

    draws, result, runs = equal_sequences(run, sequences, budget, draw_cost(method, d), minimum, tries)
    return result, {"draws": draws, "budget": budget, "budget_runs": runs}


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
    return {"templates": len(pairs), "reference_wins": sum(a.pll > b.pll for a, b in pairs),
            "row_wins": sum(b.pll > a.pll for a, b in pairs),
            "reference_pll": statistics.fmean(a.pll for a, _ in pairs),
            "row_pll": statistics.fmean(b.pll for _, b in pairs),
            "sequences_ratio": statistics.fmean(sequences) if sequences else None,
            "time_ratio_median": statistics.median(times), "time_ratio_min": times[0], "time_ratio_max": times[-1]}


def describe(reference: str, row: str, c: dict, unit: str = "templates") -> list[str]:
    """A comparison from :func:`compare` as Markdown bullets (``unit``: what was compared one by one)."""
    ties = c["templates"] - c["reference_wins"] - c["row_wins"]
    sequences = "" if c["sequences_ratio"] is None else f"; {row} used {c['sequences_ratio']:.2f}x the sequences"
    return [f"- Mean PLL of the kept fillings higher for {reference} on {c['reference_wins']} of {c['templates']} "
            f"{unit}, for {row} on {c['row_wins']}, equal on {ties} (means {c['reference_pll']:.2f} against "
            f"{c['row_pll']:.2f}{sequences}).",
            f"- Wall time of {reference} over {row}'s: {c['time_ratio_median']:.2f}x (median over {unit}; range "
            f"{c['time_ratio_min']:.2f}-{c['time_ratio_max']:.2f})."]
