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

from .config import RunConfig
from .results import Diagnostics, InfillResult, Sample
from .spans import SpanTrace
from .template import Template, fill_pieces

MARGINAL_FILLS = 10


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
    visited = [(t, b) for t in range(steps) for b in range(chains)]
    pieces = {state: trace.pieces(*state) for state in visited}
    if config.top is None:
        chosen = [(steps - 1, b) for b in range(chains)]
    else:
        pool = visited if config.decode == "visited" else [(steps - 1, b) for b in range(chains)]
        best: dict[str, tuple[int, int]] = {}
        for state in pool:  # the first state of each distinct filling, then best first, ties by the filling
            best.setdefault(repr(pieces[state]), state)
        chosen = sorted(best.values(), key=lambda s: (-trace.energies[s].item(), pieces[s]))[:config.top]
    special = set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
    samples = []
    for state in chosen:
        text, fills = fill_pieces(template, tokenizer, pieces[state])
        ids = template.sequence(pieces[state]).tolist()
        tokens = tokenizer.convert_ids_to_tokens([i for i in ids if i not in special])
        samples.append(Sample(text, fills, tokens, ids, trace.energies[state].item(), state[1]))
    counts = [Counter() for _ in template.blanks]
    for state in visited:
        for k, fill in enumerate(fill_pieces(template, tokenizer, pieces[state])[1]):
            counts[k][fill] += 1
    marginals = [[{"fill": fill, "frequency": round(n / len(visited), 4)} for fill, n in c.most_common(MARGINAL_FILLS)]
                 for c in counts]
    diagnostics = Diagnostics(
        sampler=batch.method, hyperparameters={}, model=model_name, steps=config.steps,
        num_samples=config.num_samples, seed=seed, init=config.init, temperature=config.temperature,
        decode=config.decode, acceptance_rate=trace.accepted.float().mean().item(),
        mean_hops=None, tuned=None, burn_in=0, evaluations=steps, forwards=0,
        encoder_sequences=trace.encoder_sequences, candidates=len({repr(p) for p in pieces.values()}),
        seconds=time.perf_counter() - batch.start, batched_templates=1, energy=trace.energy_name)
    return InfillResult(template.text, samples, diagnostics, None, marginals)
