"""Stage 3 of a run, for every kind of blank: from the sample stage's :class:`Batch` to each template's
:class:`~infill.pipeline.results.InfillResult`. One builder turns a template's chosen fillings (token ids per
blank) into samples with their text, diagnostics and marginals; how the fillings are chosen follows the kernel
that ran.

Token blanks (the batched kernel): the candidates are the chains' final states, or with ``top`` and
``decode="visited"`` every state visited after burn-in, or with ``decode="diverse"`` every state the run
scored: those, the chains' starts and the proposals a kernel scored (a rejected proposal was scored too), the
kept ones chosen by :func:`spread` among the :data:`DIVERSE_POOL` x ``top`` best. They are deduplicated once,
on tensors; the PLL is computed only for distinct candidates whose energy the run did not compute (plain
``gibbs`` never does), at most :data:`RESCORE_COPIES` masked copies per pass, and with ``top`` on the PLL alone
only for those that may be among the best: the terms the cache of conditionals holds bound a candidate's PLL
from above (the others are at most 0), so one bounded below the ``top``-th PLL found is left unscored (NaN in
the trace). ``top`` keeps the best distinct ones (ties to the smaller category indices, so the choice never
depends on the chains' order). Only the reported states are turned into text.

Word blanks (the span sampler, :mod:`infill.spans`): the candidates are the chains' final states, or with
``top`` every state visited (the final ones with ``decode="final"``); their energies are the span energy's
(named in the diagnostics: the filled sentence's score, which compares fillings of different lengths),
computed during the run.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Union

import torch
from torch import Tensor

from ..constraints import Include, WeightedSum
from ..energies.base import evaluate, one_hot
from ..energies.budget import BudgetSpent
from ..energies.masked_lm import MaskedLMEnergy
from ..errors import InfillError
from ..lm import mlm_draws
from ..samplers import Sampler, Trace
from ..spans import MaskedLMSpanEnergy, SpanInclude, SpanSampler, best
from ..text.blanks import quote
from ..text.template import Template, blank_pieces, detokenize, fill_pieces
from .config import RunConfig
from .results import Diagnostics, InfillResult, Sample

RESCORE_COPIES = 512  # masked copies per forward pass when re-scoring candidates
MARGINAL_FILLS = 10  # fills listed per blank in the marginals
BOUND_SLACK = 1e-4
"""Rounding allowed for when a bound rules a candidate out (a bound sums fewer terms, in another order)."""
FINALISTS = 2
"""With chains in bfloat16, ``top=k`` re-scores the ``FINALISTS * k`` best candidates in float32 and keeps
the ``k`` best of those."""
DIVERSE_POOL = 4
"""``decode="diverse"`` keeps ``top=k`` fillings among the ``DIVERSE_POOL * k`` best candidates."""
DIVERSE_MARGIN = 1.0
"""``decode="diverse"``: candidates within this many nats of the best one not yet kept are comparable (the
run's ``diversity`` where it sets one)."""


@dataclass(frozen=True)
class Batch:
    """What the sample stage produced for ``template``, ``start`` being when the run began.

    Token blanks (the batched kernel): the run's PLL ``energy``, the ``target`` the chains sampled (the PLL, or
    a :class:`~infill.constraints.WeightedSum` with it), the ``trace`` of the sampler's chains (None for a
    one-pass method) and the final states or draws ``x (n, d)``. ``float32`` is the PLL on the float32 model
    where the chains ran in a lower precision: the reported fillings are chosen and their energies computed by
    it. ``starts`` are the chains' first states (the draws themselves for a one-pass method); ``energies`` the
    PLLs of a one-pass method's draws where the run computed them.

    Word blanks (the span sampler): the ``trace`` of packed fills, the ``sampler``
    (:class:`~infill.spans.SpanSampler`), the span ``energy`` and the ``target`` the chains sampled (with
    include words a :class:`~infill.spans.SpanInclude`), no other field."""

    template: Template
    config: RunConfig
    trace: Optional[Trace]
    start: float
    sampler: Optional[Sampler] = None
    energy: Union[MaskedLMEnergy, MaskedLMSpanEnergy, None] = None
    target: Union[MaskedLMEnergy, WeightedSum, MaskedLMSpanEnergy, SpanInclude, None] = None
    x: Optional[Tensor] = None
    float32: Optional[MaskedLMEnergy] = None
    starts: Optional[Tensor] = None
    energies: Optional[Tensor] = None


@dataclass(frozen=True)
class Choice:
    """One template's reported fillings, each ``(pieces, ids, content, energy, chain, terms)``: the token ids of
    each blank's fill, of the whole sequence and of its content (no ``[CLS]``/``[SEP]``); its ``marginals``,
    the ``trace`` the result keeps, and the counts the diagnostics report."""

    fillings: list[tuple]
    marginals: list[list[dict]]
    trace: Optional[Trace]
    candidates: int
    encoder_sequences: int
    cache_hits: int = 0


def postprocess(batch: Batch, tokenizer, model_name: str, seed: int, bar=None) -> InfillResult:
    """The result of the template of ``batch``, of either kind of blanks; ``bar`` (tqdm-like: ``total``,
    ``update``) counts re-scoring passes."""
    template = batch.template
    choice = (_span_choices if isinstance(batch.sampler, SpanSampler) else _token_choices)(batch, tokenizer, bar)
    samples = []
    for pieces, ids, content, energy, chain, terms in choice.fillings:
        text, fills = fill_pieces(template, tokenizer, pieces)
        samples.append(Sample(text, fills, tokenizer.convert_ids_to_tokens(content), ids, energy, chain, terms))
    return InfillResult(template.text, samples, _diagnostics(batch, choice, model_name, seed), choice.trace,
                        choice.marginals)


def _token_choices(batch: Batch, tokenizer, bar) -> Choice:
    """The template of a run of token blanks: candidates, one deduplication, ``top`` (module docstring). With
    include words, a filling that lacks one is never reported."""
    template, config, chains = batch.template, batch.config, batch.config.num_samples
    energy, target, exact, trace = batch.energy, batch.target, batch.float32, batch.trace
    include = target.entries.get(Include.name) if isinstance(target, WeightedSum) else None
    states, values = _candidates(batch.x, trace, config, batch.starts, batch.energies)
    rows, values = states.flatten(0, 1), values.flatten()  # row r is chain r % chains; values of the target
    d, meter = template.num_blanks, energy.meter
    held_back = 0 if exact is None else float32_cost(config, d, target is not energy)
    exact_values = None  # the float32 PLLs of the finalists, by distinct row
    if config.top is None:
        order, candidates = torch.arange(len(rows)), len(rows)
        held = None if include is None else _holds(include, rows)  # a state that lacks a word is never
        order = order if held is None else order[held]  # reported, so never scored
        scorer = exact if exact is not None and target is energy else target  # the reported PLLs, at once
        with meter.holding(held_back):
            _fill_missing(scorer, rows, values, bar, energy.category_ids.device, held)
        exact_values = values if scorer is exact else None
    else:
        unique, inverse = torch.unique(rows, dim=0, return_inverse=True)
        first = torch.full((len(unique),), len(rows)).scatter_reduce(0, inverse, torch.arange(len(rows)), "amin")
        unique_values = values[first]
        pool = config.top * (DIVERSE_POOL if config.decode == "diverse" else 1)
        if config.diversity is not None and exact is None:  # a diversity named reaches every candidate
            pool = max(pool, len(unique))
        held = None if include is None else _holds(include, unique)
        with meter.holding(held_back):
            if target is energy:
                _fill_top(energy, unique, unique_values, pool * (1 if exact is None else FINALISTS), bar)
            else:
                _fill_missing(target, unique, unique_values, bar, energy.category_ids.device, held)
        values = unique_values[inverse]
        best = torch.sort(-unique_values, stable=True).indices  # unique rows are sorted: ties go to the
        best = best[~unique_values[best].isnan()]  # smaller indices; a state left unscored (the budget, or an
        if held is not None:  # include word it lacks) is out
            best = best[held[best]]
        ranked = unique_values[best]
        if exact is not None and target is energy:
            best = best[:FINALISTS * pool]
            exact_values = torch.full_like(unique_values, math.nan)
            exact_values[best] = _values(exact, unique[best])
            ranked, by = torch.sort(exact_values[best], descending=True, stable=True)
            best = best[by]
        if config.decode == "diverse" and len(best):
            margin = DIVERSE_MARGIN if config.diversity is None else config.diversity
            best = best[:pool][spread(unique[best[:pool]], ranked[:pool], config.top, margin)]
        order, candidates = first[best[:config.top]], len(unique)
    if include is not None and not len(order):
        spent = "steps" if config.budget is None else f"budget of {config.budget} encoder sequences"
        raise InfillError(f"no filling the run found holds every include word of {quote(template.text)}: raise its "
                          f"{spent}")
    from_visited = trace is not None and config.top is not None and config.decode != "final"
    if from_visited:  # the visited states lead the candidates: their values go into the trace
        tempered = values[:trace.energies[trace.burn_in:].numel()] / config.token_temperature
        trace.energies[trace.burn_in:] = tempered.view(-1, chains).to(trace.energies.device)
    reported = rows[order].to(energy.category_ids.device)
    terms = None if target is energy else {name: v.tolist() for name, v in target.terms(
        one_hot(reported, energy.num_categories)).items()}
    plls = values[order].tolist() if terms is None else terms["pll"]
    if exact_values is not None:
        plls = exact_values[order if config.top is None else best[:config.top]].tolist()
    elif exact is not None:
        plls = _values(exact, reported).tolist()
        if terms is not None:
            terms["pll"] = plls
    fillings = [(blank_pieces(template, ids), ids.tolist(), ids[template.content].tolist(), plls[k], r % chains,
                 None if terms is None else {name: v[k] for name, v in terms.items()})
                for k, (r, ids) in enumerate(zip(order.tolist(), energy.token_ids(reported).cpu()))]
    if from_visited:
        visited = rows[:trace.samples[trace.burn_in:].shape[0] * chains]
    else:
        visited = (batch.x[None] if trace is None else trace.samples[trace.burn_in:]).flatten(0, 1).cpu()
    counted = [energy] if exact is None else [energy, exact]
    return Choice(fillings, marginals(template, tokenizer, energy, visited), trace, candidates,
                  sum(e.sequences for e in counted), sum(e.cache_hits for e in counted))


def float32_cost(config: RunConfig, d: int, constrained: bool) -> int:
    """The most encoder sequences the float32 PLLs take, beyond the ``d * (top or num_samples)`` that scoring the
    fillings takes, where the chains of a run of ``d`` blank tokens ran in a lower precision: with ``top`` on
    the PLL alone the finalists'; with terms the reported fillings'; none without either (the fillings' PLLs
    are computed in float32 at once)."""
    if constrained:
        return d * (config.top or config.num_samples)
    return 0 if config.top is None else d * FINALISTS * config.top * (DIVERSE_POOL if config.decode == "diverse" else 1)


def _holds(include: Include, rows: Tensor) -> Tensor:
    """Which of the states ``rows (N, d)`` hold every word of ``include`` (a bool mask ``(N,)``)."""
    return (include.members[rows].amax(1) > 0).all(-1)


def _span_choices(batch: Batch, tokenizer, bar) -> Choice:
    """The template of a run of word blanks: the chains' final states, or with ``top`` the best distinct
    states visited (or final, ``decode="final"``) by the span energy the run computed
    (:func:`infill.spans.best`); marginals over the fills (as spliced) of every state visited."""
    template, config, trace, energy, target = batch.template, batch.config, batch.trace, batch.energy, batch.target
    rows, values, chains = best(trace, config.top, config.decode)
    fills, energies, terms = batch.sampler.fills(rows), values.tolist(), [None] * len(rows)  # temperature 1
    if target is not energy:  # the energy stays the span energy; the include term is reported beside
        include = target.include(fills).tolist()
        energies = [e - target.weight * i for e, i in zip(energies, include)]
        terms = [{"span": e, "include": i} for e, i in zip(energies, include)]
    special = set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
    fillings = []
    for pieces, e, chain, term in zip(fills.pieces(energy.category_ids), energies, chains.tolist(), terms):
        ids = template.sequence(pieces).tolist()
        fillings.append((pieces, ids, [i for i in ids if i not in special], e, chain, term))
    states = trace.samples.flatten(0, 1).cpu()  # every state visited (of the last stage)
    visited = [fill_pieces(template, tokenizer, p)[1] for p in batch.sampler.fills(states).pieces(energy.category_ids)]
    counts = [Counter(fills[k] for fills in visited) for k in range(len(template.blanks))]
    marginals = [[{"fill": fill, "frequency": round(n / len(visited), 4)} for fill, n in c.most_common(MARGINAL_FILLS)]
                 for c in counts]
    return Choice(fillings, marginals, None, len(torch.unique(states, dim=0)), energy.meter.spent)


def _candidates(x: Tensor, trace: Optional[Trace], config: RunConfig, starts: Optional[Tensor],
                energies: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    """The states ``(S, chains, d)`` ``top`` may choose from, with their energies ``(S, chains)`` at
    temperature 1 (NaN where the run did not compute them); the visited states first."""
    if trace is None:
        return x[None].cpu(), torch.full((1, len(x)), math.nan) if energies is None else energies[None].cpu()
    if config.top is None or config.decode == "final":
        states, values = trace.final_state.x[None], trace.final_state.energy[None]
    else:
        states, values = trace.samples[trace.burn_in:], trace.energies[trace.burn_in:]
    if config.top is not None and config.decode == "diverse":
        scored = [(states, values), (starts[None], torch.full_like(values[:1], math.nan))]
        if trace.proposals is not None:
            scored.append((trace.proposals[trace.burn_in:], trace.proposal_energies[trace.burn_in:]))
        states, values = (torch.cat([part[i].to(states.device) for part in scored]) for i in (0, 1))
    return states.cpu(), (values * config.token_temperature).cpu()


def spread(rows: Tensor, values: Tensor, k: int, margin: float = DIVERSE_MARGIN) -> Tensor:
    """Indices of ``k`` of the candidates ``rows (m, d)``, ranked best first by ``values (m,)``, chosen for
    quality and diversity: the best, then each time, among the candidates within ``margin`` of the best one
    left, the one whose nearest kept filling differs from it in the most blanks (ties to the better). So no two
    kept fillings differ in one blank while a comparable candidate differs from every kept one in more."""
    left, kept = list(range(1, len(rows))), [0]
    while left and len(kept) < k:
        comparable = [i for i in left if values[i] >= values[left[0]] - margin] or left[:1]
        nearest = (rows[comparable, None] != rows[None, kept]).sum(-1).amin(1)
        kept.append(comparable[int(nearest.argmax())])
        left.remove(kept[-1])
    return torch.tensor(kept, dtype=torch.long)


def _fill_missing(energy, rows: Tensor, values: Tensor, bar, device: torch.device,
                  wanted: Optional[Tensor] = None) -> None:
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
            scored = _score(lambda r: _values(energy, r), rows, values, part)
        else:
            scored = _score(lambda r: evaluate(energy, one_hot(r.to(device), energy.num_categories)).cpu(), rows,
                            values, part)
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
        part = missing[open_][bound[open_].argsort(descending=True, stable=True)][:energy.pass_sequences]
        if bar is not None:
            bar.total += 1
        scored = _score(lambda r: _values(energy, r), rows, values, part)
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
            part = part[:len(part) // 2]


def _values(energy: MaskedLMEnergy, rows: Tensor) -> Tensor:
    """The energies ``(N,)`` (on the host) of the states ``rows (N, d)``."""
    return energy.of_indices(rows.to(energy.category_ids.device)).cpu()


def marginals(template: Template, tokenizer, energy: MaskedLMEnergy, states: Tensor) -> list[list[dict]]:
    """For each written blank, its most frequent fills over ``states (N, d)`` with their frequencies."""
    out = []
    for start, n in template.spans:
        fills, counts = torch.unique(states[:, start:start + n], dim=0, return_counts=True)
        top = counts.argsort(descending=True, stable=True)[:MARGINAL_FILLS]
        ids = energy.category_ids.cpu()[fills[top]].tolist()
        out.append([{"fill": detokenize(tokenizer, i), "frequency": round(c / len(states), 4)}
                    for i, c in zip(ids, counts[top].tolist())])
    return out


def _diagnostics(batch: Batch, choice: Choice, model_name: str, seed: int) -> Diagnostics:
    config, trace = batch.config, batch.trace
    if isinstance(batch.sampler, SpanSampler):
        run = dict(sampler=config.span_method, hyperparameters={}, steps=config.steps, init=config.init,
                   temperature=config.span_temperature, acceptance_rate=trace.acceptance_rate, mean_hops=None,
                   tuned=None, burn_in=0, evaluations=trace.evaluations, forwards=0, energy=batch.target.name)
    else:
        trace = choice.trace
        run = dict(
            sampler=config.method, hyperparameters={} if batch.sampler is None else batch.sampler.hyperparameters(),
            steps=0 if trace is None else config.steps, init="-" if trace is None else config.init,
            temperature=config.token_temperature, acceptance_rate=None if trace is None else trace.acceptance_rate,
            mean_hops=None if trace is None else trace.mean_hops,
            tuned=None if trace is None or trace.final_state.tuning is None else trace.final_state.tuning.to_dict(),
            burn_in=0 if trace is None else config.steps - trace.samples.shape[0] + trace.burn_in,
            evaluations=0 if trace is None else trace.evaluations,
            forwards=mlm_draws.FORWARDS["confident-first" if config.method == "smc" else
                                       config.method if trace is None else config.init](batch.template.num_blanks))
    return Diagnostics(**run, model=model_name, num_samples=config.num_samples, seed=seed, decode=config.decode,
                       encoder_sequences=choice.encoder_sequences, cache_hits=choice.cache_hits,
                       candidates=choice.candidates, budget=config.budget, seconds=time.perf_counter() - batch.start)
