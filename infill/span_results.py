"""Stage 3 for templates with word blanks (``[MASK*m-n]``, ``[MASK*?]``, ``blank_unit="word"``): from a
:class:`~infill.spans.SpanTrace` to the template's :class:`~infill.results.InfillResult`.

The candidates are the chains' final states, or with ``top`` and ``decode="visited"`` every state visited;
their energies are the span energy's (named in the diagnostics: the filled sentence's score, which compares
fillings of different lengths), computed during the run. Fills are token ids per blank, spliced into the
template's text.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import torch

from .config import RunConfig
from .postprocess import MARGINAL_FILLS
from .results import Diagnostics, InfillResult, Sample
from .spans import SpanTrace
from .template import Template, fill_pieces


@dataclass(frozen=True)
class SpanBatch:
    """What stage 2 produced for one template with word blanks."""

    template: Template
    config: RunConfig
    trace: SpanTrace
    method: str
    start: float


def span_result(batch: SpanBatch, tokenizer, model_name: str, seed: int) -> InfillResult:
    """The result of ``batch``'s template (see the module docstring)."""
    config, trace, template = batch.config, batch.trace, batch.template
    steps, chains = trace.energies.shape
    if config.top is None:
        chosen = [(trace.energies[-1, b].item(), trace.pieces(steps - 1, b), b, steps - 1) for b in range(chains)]
    else:
        chosen = trace.top(config.top, final=config.decode == "final")
    special = set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
    samples = []
    for energy, pieces, chain, step in chosen:
        text, fills = fill_pieces(template, tokenizer, pieces)
        ids = template.sequence(pieces).tolist()
        tokens = tokenizer.convert_ids_to_tokens([i for i in ids if i not in special])
        terms = None
        if trace.include is not None:  # the energy stays the span energy; the include term is reported beside
            include = trace.include[step, chain].item()
            energy -= trace.include_weight * include
            terms = {"span": energy, "include": include}
        samples.append(Sample(text, fills, tokens, ids, energy, chain, terms))
    visited = [fill_pieces(template, tokenizer, trace.pieces(t, b))[1] for t in range(steps) for b in range(chains)]
    counts = [Counter(fills[k] for fills in visited) for k in range(len(template.blanks))]
    marginals = [[{"fill": fill, "frequency": round(n / len(visited), 4)} for fill, n in c.most_common(MARGINAL_FILLS)]
                 for c in counts]
    diagnostics = Diagnostics(
        sampler=batch.method, hyperparameters={}, model=model_name, steps=config.steps,
        num_samples=config.num_samples, seed=seed, init=config.init, temperature=config.span_temperature,
        decode=config.decode, acceptance_rate=trace.accepted.float().mean().item(),
        mean_hops=None, tuned=None, burn_in=0, evaluations=steps, forwards=0,
        encoder_sequences=trace.encoder_sequences, candidates=len(torch.unique(trace.tokens.flatten(0, 1).flatten(1), dim=0)),
        seconds=time.perf_counter() - batch.start, batched_templates=1, energy=trace.energy_name)
    return InfillResult(template.text, samples, diagnostics, None, marginals)
