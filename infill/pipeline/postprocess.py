"""Stage 3 of a run, for every kind of blank: from the sample stage's :class:`Batch` to each template's
:class:`~infill.pipeline.results.InfillResult`. One builder turns a template's chosen fillings (token ids per
blank) into samples with their text, diagnostics and marginals; how the fillings are chosen and the run
described follows the plan's kind (:data:`CHOICES`).

Token blanks (the batched kernel): :func:`~.choose.choose` keeps them (candidates -> distinct -> score ->
pick); the report adds the marginals of the states visited and the trace with the visited states' values as
scored. Only the reported states are turned into text.

Word blanks (the span sampler, :mod:`infill.spans`): the candidates are the chains' final states, or with
``top`` every state visited (the final ones with ``decode="final"``); their energies are the span energy's
(named in the diagnostics: the filled sentence's score, which compares fillings of different lengths),
computed during the run.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import torch
from torch import Tensor

from ..constraints import WeightedSum
from ..energies.base import one_hot
from ..energies.masked_lm import MaskedLMEnergy
from ..lm import mlm_draws
from ..samplers import Sampler, Trace
from ..spans import MaskedLMSpanEnergy, SpanInclude, best
from ..text.repeats import repeats
from ..text.template import Template, blank_pieces, detokenize, fill_pieces
from .choose import Chosen, choose, plls_of
from .policy import Plan
from .results import Diagnostics, InfillResult, Sample

MARGINAL_FILLS = 10  # fills listed per blank in the marginals


@dataclass(frozen=True)
class Batch:
    """What the sample stage produced for ``template``, ``start`` being when the run began, whatever its blanks:
    the ``energy`` that scores the candidates (the PLL; the span energy for word blanks), the ``target`` the
    chains sampled (the energy, or a :class:`~infill.constraints.WeightedSum` with it; with include words on
    word blanks a :class:`~infill.spans.SpanInclude`), the final states or draws ``x`` and the chains' first
    states ``starts`` (the draws themselves for a one-pass method; for word blanks packed fills).

    ``trace`` and ``sampler`` are those of the chains (None for one-pass draws); ``float32_pll`` is the PLL on the
    float32 model where the chains ran in a lower precision (the reported fillings are chosen and their energies
    computed by it); ``energies`` the PLLs of one-pass draws where the run computed them."""

    template: Template
    plan: Plan
    method: str
    chains: int
    steps: int
    start: float
    energy: Union[MaskedLMEnergy, MaskedLMSpanEnergy]
    target: Union[MaskedLMEnergy, WeightedSum, MaskedLMSpanEnergy, SpanInclude]
    x: Tensor
    starts: Tensor
    trace: Optional[Trace] = None
    sampler: Optional[Sampler] = None
    float32_pll: Optional[MaskedLMEnergy] = None
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
    choices, _ = CHOICES[batch.plan.kind]
    choice = choices(batch, tokenizer, bar)
    samples = []
    for pieces, ids, content, energy, chain, terms in choice.fillings:
        text, fills = fill_pieces(template, tokenizer, pieces)
        samples.append(Sample(text, fills, tokenizer.convert_ids_to_tokens(content), ids, energy, chain, terms))
    return InfillResult(
        template.text, samples, _diagnostics(batch, choice, model_name, seed), choice.trace, choice.marginals
    )


def _token_choices(batch: Batch, tokenizer, bar) -> Choice:
    """The template of a run of token blanks: the fillings :func:`~.choose.choose` keeps, reported with the
    marginals of the states visited and the trace, the visited states' values as re-scored."""
    avoid = (
        repeats(tokenizer, batch.energy.category_ids, batch.template)
        if batch.plan.keep.decode == "diverse" and batch.plan.keep.top is not None
        else None
    )
    chosen = choose(batch, bar, avoid)
    energy = batch.energy
    counted = [energy] if batch.float32_pll is None else [energy, batch.float32_pll]
    return Choice(
        _token_fillings(batch, chosen),
        marginals(batch.template, tokenizer, energy, _visited(batch, chosen)),
        _rescored(batch, chosen),
        chosen.candidates,
        sum(e.sequences for e in counted),
        sum(e.cache_hits for e in counted),
    )


def _token_fillings(batch: Batch, chosen: Chosen) -> list[tuple]:
    """The chosen fillings as :class:`Choice` lists them, with their PLLs (in float32 where the chains ran in a
    lower precision) and, where the target has terms, each term's value."""
    template, energy, target = batch.template, batch.energy, batch.target
    reported = chosen.rows[chosen.order].to(energy.category_ids.device)
    terms = (
        None
        if target is energy
        else {name: v.tolist() for name, v in target.terms(one_hot(reported, energy.num_categories)).items()}
    )
    plls = chosen.values[chosen.order].tolist() if terms is None else terms["pll"]
    if chosen.exact is not None:
        plls = chosen.exact.tolist()
    elif batch.float32_pll is not None:
        plls = plls_of(batch.float32_pll, reported).tolist()
        if terms is not None:
            terms["pll"] = plls
    chains = batch.chains
    return [
        (
            blank_pieces(template, ids),
            ids.tolist(),
            ids[template.content].tolist(),
            plls[k],
            r % chains,
            None if terms is None else {name: v[k] for name, v in terms.items()},
        )
        for k, (r, ids) in enumerate(zip(chosen.order.tolist(), energy.token_ids(reported).cpu()))
    ]


def _from_visited(batch: Batch) -> bool:
    """Whether the candidates began with the states the chains visited after burn-in."""
    return batch.trace is not None and batch.plan.keep.top is not None and batch.plan.keep.decode != "final"


def _rescored(batch: Batch, chosen: Chosen) -> Optional[Trace]:
    """The run's trace, with the values of the states visited as they were scored where the candidates began
    with them (a new trace; the run's is left as it was)."""
    trace = batch.trace
    if not _from_visited(batch):
        return trace
    energies = trace.energies.clone()
    visited = energies[trace.burn_in :]
    visited[:] = (chosen.values[: visited.numel()] / trace.temperature).view(-1, batch.chains).to(energies.device)
    return dataclasses.replace(trace, energies=energies)


def _visited(batch: Batch, chosen: Chosen) -> Tensor:
    """The states ``(N, d)`` the marginals count: those visited after burn-in (a one-pass method's draws)."""
    trace = batch.trace
    if _from_visited(batch):
        return chosen.rows[: trace.samples[trace.burn_in :].shape[0] * batch.chains]
    return (batch.x[None] if trace is None else trace.samples[trace.burn_in :]).flatten(0, 1).cpu()


def _span_choices(batch: Batch, tokenizer, bar) -> Choice:
    """The template of a run of word blanks: the chains' final states, or with ``top`` the best distinct
    states visited (or final, ``decode="final"``) by the span energy the run computed
    (:func:`infill.spans.best`); marginals over the fills (as spliced) of every state visited."""
    template, keep, trace, energy, target = batch.template, batch.plan.keep, batch.trace, batch.energy, batch.target
    rows, values, chains = best(trace, keep.top, keep.decode)
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
    marginals = [
        [{"fill": fill, "frequency": round(n / len(visited), 4)} for fill, n in c.most_common(MARGINAL_FILLS)]
        for c in counts
    ]
    return Choice(fillings, marginals, None, len(torch.unique(states, dim=0)), energy.meter.spent)


def marginals(template: Template, tokenizer, energy: MaskedLMEnergy, states: Tensor) -> list[list[dict]]:
    """For each written blank, its most frequent fills over ``states (N, d)`` with their frequencies."""
    out, total = [], states.shape[0]
    states, categories = states.numpy(force=True), energy.category_ids.numpy(force=True)  # counted on the host
    for start, n in template.spans:
        fills, counts = np.unique(states[:, start : start + n], axis=0, return_counts=True)
        top = np.argsort(-counts, kind="stable")[:MARGINAL_FILLS]
        ids = categories[fills[top]].tolist()
        out.append(
            [
                {"fill": detokenize(tokenizer, i), "frequency": round(c / total, 4)}
                for i, c in zip(ids, counts[top].tolist())
            ]
        )
    return out


def _diagnostics(batch: Batch, choice: Choice, model_name: str, seed: int) -> Diagnostics:
    _, described = CHOICES[batch.plan.kind]
    return Diagnostics(
        **described(batch, choice.trace),
        model=model_name,
        num_samples=batch.chains,
        seed=seed,
        decode=batch.plan.keep.decode,
        encoder_sequences=choice.encoder_sequences,
        cache_hits=choice.cache_hits,
        candidates=choice.candidates,
        budget=batch.plan.spend.limit,
        seconds=time.perf_counter() - batch.start,
    )


def _span_run(batch: Batch, _trace: Optional[Trace]) -> dict:
    """The diagnostics of a run of the span sampler (word blanks)."""
    config, trace = batch.plan.settings, batch.trace
    return dict(
        sampler=config.span_method,
        hyperparameters={},
        steps=batch.steps,
        init=config.init,
        temperature=config.span_temperature,
        acceptance_rate=trace.acceptance_rate,
        mean_hops=None,
        tuned=None,
        burn_in=0,
        evaluations=trace.evaluations,
        forwards=0,
        energy=batch.target.name,
    )


def _token_run(batch: Batch, trace: Optional[Trace]) -> dict:
    """The diagnostics of a run over token blanks: chains (``trace``; None where the budget bought only their
    starts) or one pass."""
    config, d = batch.plan.settings, batch.template.num_blanks
    return dict(
        sampler=batch.method,
        hyperparameters={} if batch.sampler is None else batch.sampler.hyperparameters(),
        steps=batch.steps,
        init="-" if trace is None else config.init,
        temperature=config.token_temperature,
        acceptance_rate=None if trace is None else trace.acceptance_rate,
        mean_hops=None if trace is None else trace.mean_hops,
        tuned=None if trace is None or trace.tuning is None else trace.tuning.to_dict(),
        burn_in=0 if trace is None else batch.steps - trace.samples.shape[0] + trace.burn_in,
        evaluations=0 if trace is None else trace.evaluations,
        forwards=mlm_draws.ORDERS[config.init].forwards(d)
        if config.one_pass is None
        else config.one_pass.forwards(config.options, d),
    )


CHOICES = {
    "spans": (_span_choices, _span_run),
    **dict.fromkeys(("one-pass", "search", "particles", "chains"), (_token_choices, _token_run)),
}
"""Each kind's (:data:`~.policy.KINDS`) ``choices(batch, tokenizer, bar)``, how its fillings are chosen, and
``described(batch, trace)``, its run's diagnostics."""
