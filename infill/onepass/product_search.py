"""The best fillings of a template by exact search over a product of per-blank candidate sets.

The PLL of a filling needs, for each blank ``j``, the sequence with blank ``j`` masked and the others filled,
and that sequence is shared by every filling that agrees off ``j``. Over a product ``S_1 x ... x S_d`` of
candidate sets the PLL of every filling therefore costs ``sum_j prod_{i != j} |S_i|`` sequences (:func:`cost`),
however many fillings the product holds, each read through the energy's cache of conditionals.

1. The first pass (every blank masked) ranks each blank's tokens. The sets grow from the top of those ranks,
   each time by the most likely token not yet in any set whose addition fits the round's share of the budget,
   so a peaked blank keeps few values (:func:`grow`).
2. Every filling of the product is scored exactly.
3. The conditionals at the best fillings found (blank ``j`` masked, the others as in that filling: sequences
   the product already paid) propose tokens not yet in the sets; they join the same way while the budget
   lasts, and the product is scored again (only new sequences cost). A round that adds nothing, or leaves the
   best fillings as they were, ends the search.

With the repeat-masked PLL (``energy.mask_repeats``) a filling that holds one token at two blanks needs other
sequences (both blanks masked at once): the best of those by the plain PLL are scored through the energy while
the budget lasts, the rest are left out. The search takes no temperature: it looks for the most likely
fillings. The energy must offer ``blank_logits``, ``first_pass`` and a ``meter`` with a limit
(:class:`~infill.energies.masked_lm.MaskedLMEnergy`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from ..energies.budget import BudgetSpent

EXPLORE = 0.5
"""The share of the budget (after the first pass) the first product may cost; each refresh round may then cost
half of what is left (all of it where half buys no token)."""
REFRESH_FROM = 5
"""The best fillings whose conditionals propose each refresh round's tokens."""
MAX_FILLINGS = 1 << 16
"""The most fillings a product may hold: what choosing the kept ones reads stays small, and so does what a huge
budget buys (the search ends there)."""
MAX_VALUES = 256
"""The most values one blank's set may hold."""
PASS = 512
"""Contexts read at once."""


def cost(sizes: list[int]) -> int:
    """Sequences that score every filling of a product of sets of ``sizes``: ``sum_j prod_{i != j} sizes[i]``."""
    return sum(math.prod(sizes[:j] + sizes[j + 1 :]) for j in range(len(sizes)))


def grow(sets: list[list[int]], offers: list[list[tuple[float, int]]], allowance: int) -> int:
    """Add to ``sets`` (in place) the offered tokens, ``offers[j]`` ``(score, token)`` pairs best first, highest
    score first across the blanks, while what the product costs grows by at most ``allowance`` sequences and it
    holds at most :data:`MAX_FILLINGS`, each set at most :data:`MAX_VALUES`; returns how many were added."""
    sizes, added, used = [len(s) for s in sets], 0, 0
    heads = [0] * len(sets)
    open_ = set(range(len(sets)))
    while open_:
        j = max((j for j in open_ if heads[j] < len(offers[j])), key=lambda j: offers[j][heads[j]][0], default=None)
        if j is None:
            break
        token = offers[j][heads[j]][1]
        heads[j] += 1
        if token in sets[j]:
            continue
        grown = sizes[:j] + [sizes[j] + 1] + sizes[j + 1 :]
        extra = cost(grown) - cost(sizes)
        if used + extra > allowance or math.prod(grown) > MAX_FILLINGS or grown[j] > MAX_VALUES:
            open_.discard(j)  # a larger set of j costs more still
            continue
        sets[j].append(token)
        sizes, used, added = grown, used + extra, added + 1
    return added


def grid(sizes: list[int]) -> np.ndarray:
    """Every index tuple of a product of ``sizes``, row-major, ``(prod(sizes), len(sizes))`` (a host array)."""
    return np.indices(sizes).reshape(len(sizes), -1).T if sizes else np.zeros((1, 0), dtype=np.int64)


def product_scores(energy, sets: list[list[int]]) -> Tensor:
    """The PLL of every filling of the product of ``sets`` (category indices per blank): ``(|S_1|, ..., |S_d|)``,
    one read of the masked LM per blank and context of the other blanks, every blank's reads in shared passes."""
    d = len(sets)
    sizes = [len(s) for s in sets]
    rows, blanks = [], []
    for j in range(d):
        others = [i for i in range(d) if i != j]
        index = grid([sizes[i] for i in others])
        x = np.zeros((len(index), d), dtype=np.int64)
        for c, i in enumerate(others):
            x[:, i] = np.array(sets[i])[index[:, c]]
        rows.append(x)
        blanks.append(np.full(len(x), j))
    log_p = _log_p(energy, np.concatenate(rows), np.concatenate(blanks)).split([len(x) for x in rows])
    total = torch.zeros(sizes, dtype=torch.float64)
    for j in range(d):
        terms = log_p[j][:, sets[j]].double()
        total += terms.view(*[m for i, m in enumerate(sizes) if i != j], sizes[j]).movedim(-1, j)
    return total


def _log_p(energy, x: np.ndarray, blank: np.ndarray) -> Tensor:
    """``log p(. | blank[n] masked, the others as in x[n])`` ``(N, K)`` for the host arrays ``x (N, d)`` and
    ``blank (N,)``, float32 on the host, read :data:`PASS` rows at a time."""
    out, device = [], energy.category_ids.device
    for start in range(0, len(x), PASS):
        rows, at = x[start : start + PASS], blank[start : start + PASS, None]
        masked = np.arange(x.shape[1]) == at
        logits = energy.blank_logits(*(torch.as_tensor(a, device=device) for a in (rows, masked, at)))[:, 0]
        out.append(torch.log_softmax(logits.float(), -1).cpu())
    return torch.cat(out)


def _offers(energy, sets: list[list[int]], best: np.ndarray, width: int) -> list[list[tuple[float, int]]]:
    """Tokens not in ``sets`` proposed by the conditionals at the fillings ``best (R, d)`` (a host array): per
    blank, its ``width`` most likely under each filling's conditional there, by their best log-probability, best
    first."""
    d, offers = len(sets), []
    every = _log_p(energy, np.tile(best, (d, 1)), np.arange(d).repeat(len(best))).split(len(best))
    for j, log_p in enumerate(every):  # one read of every blank's conditionals
        log_p[:, sets[j]] = -math.inf
        values, tokens = log_p.topk(min(width, log_p.shape[1]), -1)
        found: dict[int, float] = {}
        for value, token in zip(values.flatten().tolist(), tokens.flatten().tolist()):
            if value > found.get(token, -math.inf):
                found[token] = value
        offers.append(sorted(((v, t) for t, v in found.items() if v > -math.inf), reverse=True))
    return offers


def search(energy, explore: float = EXPLORE) -> tuple[Tensor, Tensor]:
    """The fillings ``(N, d)`` of the last product scored, with their PLLs ``(N,)`` (module docstring), within
    ``energy.meter``'s limit."""
    meter = energy.meter
    first = torch.log_softmax(energy.first_pass().float(), -1).cpu()  # (d, K)
    ranked_values, ranked = first.sort(-1, descending=True)
    sets = [[token] for token in ranked[:, 0].tolist()]
    width = min(first.shape[1], 1 + (meter.limit - meter.spent))  # no blank can take more tokens than that
    offers = [list(zip(*pair)) for pair in zip(ranked_values[:, 1:width].tolist(), ranked[:, 1:width].tolist())]
    grow(sets, offers, int(explore * (meter.limit - meter.spent)))
    scores = product_scores(energy, sets)
    best = _best(sets, scores, REFRESH_FROM)
    while True:
        tried = [list(s) for s in sets]
        try:  # BudgetSpent: the cache let go of sequences the product had paid
            offers, left = _offers(energy, sets, best, width), meter.limit - meter.spent
            if not grow(tried, offers, left // 2) and not grow(tried, offers, left):
                break
            scores, sets = product_scores(energy, tried), tried
        except BudgetSpent:
            break
        best, before = _best(sets, scores, REFRESH_FROM), best
        if np.array_equal(best, before):  # the round found no better filling: its tokens would propose again
            break
    x = torch.as_tensor(_fillings(sets), device=energy.category_ids.device)
    return _repeats_scored(energy, x, scores.flatten()) if energy.mask_repeats else (x, scores.flatten().float())


def _fillings(sets: list[list[int]]) -> np.ndarray:
    """Every filling of the product of ``sets``, row-major as :func:`product_scores` lays them out (a host
    array)."""
    index = grid([len(s) for s in sets])
    return np.stack([np.array(s, dtype=np.int64)[index[:, j]] for j, s in enumerate(sets)], 1)


def _best(sets: list[list[int]], scores: Tensor, n: int) -> np.ndarray:
    """The ``n`` fillings ``(n, d)`` of highest score (their indices into the product, not the whole product), a
    host array."""
    index = np.unravel_index(scores.flatten().topk(min(n, scores.numel())).indices.numpy(), scores.shape)
    return np.stack([np.array(s, dtype=np.int64)[i] for s, i in zip(sets, index)], 1)


def _repeats_scored(energy, x: Tensor, pll: Tensor) -> tuple[Tensor, Tensor]:
    """``x`` with their repeat-masked PLLs: equal to the plain PLL where no two blanks hold one token; the
    fillings that repeat one are scored by the energy, best plain PLL first, while the budget lasts, and the
    others left out."""
    repeats = (energy.copies(x).sum((1, 2)) > x.shape[1]).cpu()  # a term that masks more than its own blank
    values = pll.float().clone()
    keep = ~repeats
    for part in repeats.nonzero()[:, 0][pll[repeats].argsort(descending=True)].split(16):
        if not len(part):
            break
        try:
            values[part] = energy.of_indices(x[part.to(x.device)]).float().cpu()
        except BudgetSpent:
            break
        keep[part] = True
    return x[keep.to(x.device)], values[keep]
