"""Choosing the reported fillings of token blanks, in small stages: candidates -> distinct -> score -> pick.

Each stage is a function that returns its result and changes nothing it was given. The candidates are the
chains' final states, or with ``top`` and ``decode="visited"`` every state visited after burn-in, or with
``decode="diverse"`` every state the run scored: those, the chains' starts and the proposals a kernel scored
(a rejected proposal was scored too). They are deduplicated once, on tensors; the PLL is computed only for
distinct candidates whose energy the run did not compute (plain ``gibbs`` never does), at most
:data:`RESCORE_COPIES` masked copies per pass, and with ``top`` on the PLL alone only for those that may be
among the best: the terms the cache of conditionals holds bound a candidate's PLL from above (the others are
at most 0), so one bounded below the ``top``-th PLL found is left unscored (NaN). ``top`` keeps the best
distinct ones (ties to the smaller category indices, so the choice never depends on the chains' order), with
``decode="diverse"`` chosen by :func:`spread` among the plan's pool of the best (:class:`~.policy.Keep`; every
candidate where the run names a ``diversity``) at the plan's diversity: nats, or a share of those candidates'
range. With chains in a lower precision the plan's finalists of those are re-scored in float32 and ranked by it.
With include words, a filling that lacks one is never chosen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ..constraints import Include, WeightedSum
from ..energies.base import evaluate, one_hot
from ..energies.budget import BudgetSpent
from ..energies.masked_lm import MaskedLMEnergy
from ..errors import InfillError
from ..text.blanks import quote
from ..text.repeats import Repeats

RESCORE_COPIES = 512  # masked copies per forward pass when re-scoring candidates
BOUND_SLACK = 1e-4
"""Rounding allowed for when a bound rules a candidate out (a bound sums fewer terms, in another order)."""
DIVERSE_MARGIN = 1.0
"""``decode="diverse"``: candidates within this many nats of the best one not yet kept are comparable (the
run's ``diversity`` where it sets one)."""


@dataclass(frozen=True)
class Chosen:
    """The candidates ``rows (N, d)`` (row ``r`` from chain ``r % chains``, the visited states first) with their
    ``values (N,)`` of the target at temperature 1 (NaN where never computed), the indices ``order`` of the
    reported ones, best first, their float32 PLLs ``exact`` where the chains ran in a lower precision (else
    None), and the number of distinct ``candidates``."""

    rows: Tensor
    values: Tensor
    order: Tensor
    exact: Optional[Tensor]
    candidates: int


def choose(batch, bar=None, avoid: Optional[Repeats] = None) -> Chosen:
    """The reported fillings of ``batch``'s token blanks (module docstring); ``bar`` (tqdm-like) counts the
    re-scoring passes; with ``decode="diverse"`` the fillings that repeat a content word or double a word
    (``avoid``, :mod:`infill.text.repeats`) are kept only where too few others are left."""
    rows, values = candidates(batch)
    include = _include(batch.target)
    if batch.plan.keep.top is None:
        return _every_chain(batch, rows, values, include, bar)
    unique, inverse, first = distinct(rows)
    held = None if include is None else holds(include, unique)
    scored = score(batch, unique, values[first], held, bar)
    best, exact = pick(batch, unique, scored, held, avoid)
    order = first[best]
    _check_include(batch, include, order)
    return Chosen(rows, scored[inverse], order, exact, len(unique))


def candidates(batch) -> tuple[Tensor, Tensor]:
    """The states ``(N, d)`` ``top`` may choose from, the visited states first, with their values ``(N,)`` at
    temperature 1 (NaN where the run did not compute them)."""
    keep, trace = batch.plan.keep, batch.trace
    if trace is None:
        values = torch.full((len(batch.x),), math.nan) if batch.energies is None else batch.energies
        return batch.x.cpu(), values.cpu()
    states, values = trace.candidates(keep.decode, keep.top)
    if keep.top is not None and keep.decode == "diverse":
        scored = [(states, values), (batch.starts[None], torch.full_like(values[:1], math.nan))]
        if trace.proposals is not None:
            proposed = trace.proposal_energies[trace.burn_in :] * trace.temperature
            scored.append((trace.proposals[trace.burn_in :], proposed))
        states, values = (torch.cat([part[i].to(states.device) for part in scored]) for i in (0, 1))
    return states.flatten(0, 1).cpu(), values.flatten().cpu()


def distinct(rows: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The distinct ``rows`` (sorted), each row's index among them, and each distinct row's first index."""
    unique, inverse = torch.unique(rows, dim=0, return_inverse=True)
    first = torch.full((len(unique),), len(rows)).scatter_reduce(0, inverse, torch.arange(len(rows)), "amin")
    return unique, inverse, first


def score(batch, unique: Tensor, values: Tensor, held: Optional[Tensor], bar) -> Tensor:
    """``values`` of the distinct states ``unique`` with the missing ones computed where they may be kept (a
    new tensor): on the PLL alone those that may be among the pool :func:`pick` ranks, else every one that
    holds the include words, while the budget lasts (the float32 finalists' share held back)."""
    keep, energy, target = batch.plan.keep, batch.energy, batch.target
    values = values.clone()
    pool = _pool(keep, len(unique), batch.float32_pll is None)
    with energy.meter.holding(batch.plan.spend.rescoring):
        if target is energy:
            _fill_top(energy, unique, values, pool * (1 if batch.float32_pll is None else keep.finalists), bar)
        else:
            _fill_missing(target, unique, values, bar, energy.category_ids.device, held)
    return values


def pick(
    batch, unique: Tensor, values: Tensor, held: Optional[Tensor], avoid: Optional[Repeats] = None
) -> tuple[Tensor, Optional[Tensor]]:
    """Indices into ``unique`` of the ``top`` fillings kept, best first, and their float32 PLLs (None where the
    chains ran in float32): the best by ``values``, scored ones only, holding the include words; the finalists
    re-ranked in float32; with ``decode="diverse"`` spread over the pool, those that repeat a content word or
    double a word (``avoid``) last (with a ``share``, the pool is the best of the others, where there are
    enough)."""
    keep = batch.plan.keep
    best = torch.sort(-values, stable=True).indices  # unique rows are sorted: ties go to the smaller indices
    best = best[~values[best].isnan()]  # a state left unscored (the budget, or an include word it lacks) is out
    if held is not None:
        best = best[held[best]]
    ranked, exact, pool = values[best], None, _pool(keep, len(unique), batch.float32_pll is None)
    if batch.float32_pll is not None and batch.target is batch.energy:
        best = best[: keep.finalists * pool]
        ranked, by = torch.sort(plls_of(batch.float32_pll, unique[best]), descending=True, stable=True)
        best = best[by]
    if keep.decode == "diverse" and len(best):
        fresh = None if avoid is None else ~avoid.of(unique[best if keep.share is not None else best[:pool]])
        if fresh is not None and keep.share is not None:  # the pool: the best fresh candidates, the others after
            order = torch.cat([fresh.nonzero().flatten(), (~fresh).nonzero().flatten()])
            best, ranked, fresh = best[order], ranked[order], fresh[order]
        margin = _margin(keep, ranked[:pool])
        kept = spread(unique[best[:pool]], ranked[:pool], keep.top, margin, None if fresh is None else fresh[:pool])
        best, ranked = best[:pool][kept], ranked[:pool][kept]
    if batch.float32_pll is not None and batch.target is batch.energy:
        exact = ranked[: keep.top]
    return best[: keep.top], exact


def _margin(keep, ranked: Tensor) -> float:
    """How far below the best one left a candidate is comparable: the ``diversity`` named, or ``share`` of the
    range of the candidates chosen among (``ranked``), or :data:`DIVERSE_MARGIN`."""
    if keep.diversity is not None:
        return keep.diversity
    return DIVERSE_MARGIN if keep.share is None else keep.share * float(ranked.max() - ranked.min())


def _every_chain(batch, rows: Tensor, values: Tensor, include: Optional[Include], bar) -> Chosen:
    """Without ``top``: every chain's final state that holds the include words, scored where the run did not
    (in float32 at once where the chains ran in a lower precision and the target is the PLL)."""
    energy, exact = batch.energy, batch.float32_pll
    held = None if include is None else holds(include, rows)
    order = torch.arange(len(rows)) if held is None else torch.arange(len(rows))[held]
    scorer = exact if exact is not None and batch.target is energy else batch.target
    values = values.clone()
    with energy.meter.holding(batch.plan.spend.rescoring):
        _fill_missing(scorer, rows, values, bar, energy.category_ids.device, held)
    _check_include(batch, include, order)
    return Chosen(rows, values, order, values[order] if scorer is exact else None, len(rows))


def _pool(keep, distinct_rows: int, chains_in_float32: bool) -> int:
    """How many of the best candidates ``top`` chooses among under ``keep`` (a plan's
    :class:`~.policy.Keep`; every one where it says so, or where a ``diversity`` is named and the chains ran in
    float32)."""
    if keep.decode == "diverse" and keep.every:
        return max(keep.top, distinct_rows)
    return max(keep.ranked, distinct_rows) if keep.diversity is not None and chains_in_float32 else keep.ranked


def _include(target) -> Optional[Include]:
    return target.entries.get(Include.name) if isinstance(target, WeightedSum) else None


def holds(include: Include, rows: Tensor) -> Tensor:
    """Which of the states ``rows (N, d)`` hold every word of ``include`` (a bool mask ``(N,)``)."""
    return (include.members[rows].amax(1) > 0).all(-1)


def _check_include(batch, include: Optional[Include], order: Tensor) -> None:
    if include is not None and not len(order):
        limit = batch.plan.spend.limit
        spent = "steps" if limit is None else f"budget of {limit} encoder sequences"
        raise InfillError(
            f"no filling the run found holds every include word of {quote(batch.template.text)}: raise its {spent}"
        )


def spread(
    rows: Tensor, values: Tensor, k: int, margin: float = DIVERSE_MARGIN, fresh: Optional[Tensor] = None
) -> Tensor:
    """Indices of ``k`` of the candidates ``rows (m, d)``, ranked best first by ``values (m,)``, chosen for
    quality and diversity: the best, then each time, among the candidates within ``margin`` of the best one
    left, the one whose nearest kept filling differs from it in the most blanks (ties to the better). So no two
    kept fillings differ in one blank while a comparable candidate differs from every kept one in more. Where
    ``fresh (m,)`` is given, the others come only after every fresh one is kept, best first."""
    if fresh is not None and not fresh.all():
        inside, outside = fresh.nonzero().flatten(), (~fresh).nonzero().flatten()
        kept = inside[spread(rows[inside], values[inside], k, margin)] if len(inside) else inside
        return torch.cat([kept, outside[: k - len(kept)]])
    # on the host at once, the values compared as float32 tensors compare
    rows, value, floor = rows.numpy(force=True), values.tolist(), (values - margin).tolist()
    left, kept = list(range(1, len(rows))), [0]
    while left and len(kept) < k:
        comparable = [i for i in left if value[i] >= floor[left[0]]] or left[:1]
        nearest = (rows[comparable, None] != rows[None, kept]).sum(-1).min(1)
        kept.append(comparable[int(nearest.argmax())])
        left.remove(kept[-1])
    return torch.tensor(kept, dtype=torch.long)


def _fill_missing(
    energy, rows: Tensor, values: Tensor, bar, device: torch.device, wanted: Optional[Tensor] = None
) -> None:
    """Compute in place the NaN ``values`` of ``rows (N, d)`` (distinct states; only where ``wanted (N,)`` if
    given), in passes of at most :data:`RESCORE_COPIES` masked copies, while the budget lasts."""
    missing = (values.isnan() if wanted is None else values.isnan() & wanted).nonzero().flatten()
    if not len(missing):
        return
    parts = missing.split(max(1, RESCORE_COPIES // rows.shape[1]))
    if bar is not None:
        bar.total += len(parts)
    for part in parts:
        if isinstance(energy, MaskedLMEnergy):
            scored = _score(lambda r: plls_of(energy, r), rows, values, part)
        else:
            scored = _score(
                lambda r: evaluate(energy, one_hot(r.to(device), energy.num_categories)).cpu(), rows, values, part
            )
        if bar is not None:
            bar.update()
        if not scored:
            return


def _fill_top(energy: MaskedLMEnergy, rows: Tensor, values: Tensor, k: int, bar) -> None:
    """Compute in place the NaN ``values`` of the distinct states ``rows (N, d)`` that may be among the ``k``
    best, highest bound first, until every other one is bounded below the ``k``-th value computed, or the
    budget is spent."""
    device = energy.category_ids.device
    while True:
        missing = values.isnan().nonzero().flatten()
        known = values[~values.isnan()]
        kth = known.topk(k).values[-1].item() if len(known) >= k else -math.inf
        bound = energy.bound(rows[missing].to(device))
        open_ = bound >= kth - BOUND_SLACK
        if not open_.any():
            return
        part = missing[open_][bound[open_].argsort(descending=True, stable=True)][: energy.pass_sequences]
        if bar is not None:
            bar.total += 1
        scored = _score(lambda r: plls_of(energy, r), rows, values, part)
        if bar is not None:
            bar.update()
        if not scored:
            return


def _score(values_of, rows: Tensor, values: Tensor, part: Tensor) -> bool:
    """``values[part] = values_of(rows[part])``, the part halved (its first half kept) where the energy's meter
    refuses it; False where not even one state fits in the budget."""
    while True:
        try:
            values[part] = values_of(rows[part])
            return True
        except BudgetSpent:
            if len(part) == 1:
                return False
            part = part[: len(part) // 2]


def plls_of(energy: MaskedLMEnergy, rows: Tensor) -> Tensor:
    """The energies ``(N,)`` (on the host) of the states ``rows (N, d)``."""
    return energy.of_indices(rows.to(energy.category_ids.device)).cpu()
