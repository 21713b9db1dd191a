"""What each endpoint runs: a request body checked as the CLI and the Python API check it, into a function
``run(infiller, step, extras)`` that the queue's worker calls.

- ``sample``: ``template`` plus run options (a JSON line of ``infill sample``);
- ``rewrite``: ``text``, ``change`` plus run options (``infill rewrite``: gibbs-mh, top 5 by default; each
  variant with its ``source_bleu``, as ``infill rewrite --json`` gives it);
- ``score``: ``texts`` and ``mode`` (``infill score``);
- ``rank``: ``template`` with one blank, ``options`` and ``mode`` (``infill rank``);
- ``augment``: ``texts`` (or one ``text``), ``n``, ``change``, ``seed``, ``protect``, ``min_words``,
  ``max_words``, ``sampler``, ``action``, ``keep_close``, ``pll`` (``infill augment --json``: one record a
  sentence, run :data:`AUGMENT_CHUNK` sentences at a time, so progress, cancel and the time limit act between
  them); no ``classifier``: a server loads no model a request names.

Everything that needs no tokenizer is checked here, before the run queues (the template's syntax, every
run option); the rest is checked by the :class:`~infill.Infiller` method in the worker. Either way a bad
input is one :class:`InfillError` line. ``extras`` adds what only the page shows: the chains' ``trace``
and, per span blank, the ``lengths`` of its fills.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable

import torch

from ..augmentation.words import patterns
from ..constraints.rewrite import check_change, source_bleu
from ..errors import InfillError
from ..lm.scoring import check_mode, splice
from ..pipeline.augment import SentenceError
from ..pipeline.augment_request import METHOD, check_options
from ..pipeline.config import REWRITE_SAMPLER, RunConfig
from ..text.blanks import scan

MAX_SAMPLES = 256  # chains of one request: more could exhaust the server's memory before the time limit bites
MAX_TEXTS = 256  # sentences or options of one score, rank or augment request
REWRITE_DEFAULTS = {"sampler": REWRITE_SAMPLER, "change": 0.5, "top": 5}
"""What ``infill rewrite`` uses where a request says nothing."""
MAX_VARIANTS = 64  # variants of one sentence: a short sentence draws up to 24 per variant asked for
AUGMENT_DEFAULTS = {
    "n": 5,
    "change": 0.15,
    "seed": 0,
    "protect": [],
    "min_words": 1,
    "max_words": None,
    "sampler": METHOD,
    "action": "substitute",
    "keep_close": 0.0,
    "pll": True,
}
"""What ``infill augment`` uses where a request says nothing."""
AUGMENT_CHUNK = 8  # sentences per batched run (a sentence gets the same variants in any batch)
TRACE_POINTS = 200  # steps kept per chain in a trace sent to the page
Run = Callable[[Any, Callable[[int, int], None], bool], dict]


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float made None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def trace_payload(trace) -> dict:
    """Per chain, the energy (None where the run did not compute it) and the acceptance rate so far, at
    every ``stride``-th step so that at most :data:`TRACE_POINTS` remain."""
    steps = trace.energies.shape[0]
    stride = max(1, math.ceil(steps / TRACE_POINTS))
    energies = trace.energies[::stride].T.float().tolist()
    rate = trace.accepted.float().cumsum(0) / torch.arange(1, steps + 1)[:, None]  # running acceptance rate
    accepted = rate[::stride].T.tolist()
    return {"stride": stride, "burn_in": trace.burn_in, "energies": finite(energies), "accepted": accepted}


def span_lengths(blanks, samples: list[dict]) -> list:
    """Per written blank, for a span (``[MASK*m-n]``, ``[MASK*?]``) the share of ``samples`` whose fill has
    each number of words (every length from m to n listed), None for a blank of fixed length."""
    out = []
    for k, blank in enumerate(blanks):
        if blank.min == blank.max or not samples:
            out.append(None)
            continue
        counts = Counter(len(sample["fills"][k].split()) for sample in samples)
        lengths = range(min(blank.min, *counts), max(blank.max, *counts) + 1)
        out.append([{"words": n, "share": round(counts[n] / len(samples), 4)} for n in lengths])
    return out


def result_payload(result, blanks, extras: bool) -> dict:
    """The fields of ``infill sample --json`` (``template``, ``samples``, ``diagnostics``, ``marginals``);
    with ``extras``, the ``trace`` and, given the template's written ``blanks``, the span ``lengths`` too."""
    payload = result.to_dict()
    if extras and result.trace is not None:
        payload["trace"] = trace_payload(result.trace)
    if extras and blanks is not None:
        payload["lengths"] = span_lengths(blanks, payload["samples"])
    return finite(payload)


def _body(data: Any, needs: str, example: str) -> dict:
    """The request's fields, ``-`` in keys read as ``_`` (as JSON lines allow)."""
    if not isinstance(data, dict):
        raise InfillError(f'the body must be a JSON object with a "{needs}" field, e.g. {example}')
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def _string(fields: dict, name: str, example: str) -> str:
    value = fields.pop(name, None)
    if not isinstance(value, str):
        raise InfillError(f'the body needs a "{name}" string, e.g. {example}')
    return value


def _config(options: dict) -> RunConfig:
    try:
        config = RunConfig.create(**options)
    except InfillError:
        raise
    except (TypeError, ValueError) as exc:  # e.g. "options" that is not an object
        raise InfillError(f"bad run options: {exc}") from None
    if (config.num_samples or 0) > MAX_SAMPLES:
        raise InfillError(f"this server takes at most {MAX_SAMPLES} samples per request, got {config.num_samples}")
    return config


def _texts(value: Any, what: str, example: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InfillError(f"{what} must be a list of strings, e.g. {example}")
    if not value:
        raise InfillError(f"give at least one of the {what}")
    if len(value) > MAX_TEXTS:
        raise InfillError(f"this server takes at most {MAX_TEXTS} {what} per request, got {len(value)}")
    return value


def _mode(fields: dict, known: tuple[str, ...]) -> str:
    mode = check_mode(fields.pop("mode", "pll"))
    if fields:
        raise InfillError(f"unknown key {next(iter(fields))!r} (this request takes {', '.join(known)})")
    return mode


def _tokens(score) -> list[dict]:
    return [{"token": token, "score": value} for token, value in score.tokens]


def sample(data: Any) -> Run:
    example = '{"template": "The [MASK] sat."}'
    options = _body(data, "template", example)
    template = _string(options, "template", example)
    blanks = scan(template, options.get("blank_unit", RunConfig.blank_unit))
    config = _config(options)

    def run(infiller, step, extras):
        return result_payload(infiller.run([template], config, on_step=step)[0], blanks, extras)

    return run


def rewrite(data: Any) -> Run:
    example = '{"text": "The old man walked to the market.", "change": 0.3}'
    options = _body(data, "text", example)
    text = _string(options, "text", example)
    change = check_change(options.pop("change", REWRITE_DEFAULTS["change"]))
    if "method" in options:
        options["sampler"] = options.pop("method")
    options = {"sampler": REWRITE_DEFAULTS["sampler"], "top": REWRITE_DEFAULTS["top"], **options}
    config = _config(options)
    if config.is_baseline:
        raise InfillError(f"rewrite needs an MCMC sampler, not the baseline {config.method!r}")
    if not text.strip():
        raise InfillError("give a sentence to rewrite")

    def run(infiller, step, extras):
        payload = result_payload(infiller.rewrite(text, change, on_step=step, **options), None, extras)
        scores, signature = source_bleu([sample["text"] for sample in payload["samples"]], text)
        for sample, bleu in zip(payload["samples"], scores):
            sample["source_bleu"] = bleu
        return {**payload, "source_bleu_signature": signature}

    return run


def score(data: Any) -> Run:
    example = '{"texts": ["the cat sat on the mat ."]}'
    fields = _body(data, "texts", example)
    texts = _texts(fields.pop("texts", None), "texts", example)
    mode = _mode(fields, ("texts", "mode"))
    for n, text in enumerate(texts, 1):
        if not text.strip():
            raise InfillError(f"sentence {n} is empty")

    def run(infiller, step, extras):
        return {
            "scores": [
                {"text": text, "score": s.total, "mode": mode, "tokens": _tokens(s)}
                for text, s in zip(texts, infiller.score(texts, mode))
            ]
        }

    return run


def rank(data: Any) -> Run:
    example = '{"template": "the [MASK] played a song .", "options": ["pianist", "violinist"]}'
    fields = _body(data, "template", example)
    template = _string(fields, "template", example)
    options = _texts(fields.pop("options", None), "options", example)
    mode = _mode(fields, ("template", "options", "mode"))
    splice(template, options)  # one blank, no empty option

    def run(infiller, step, extras):
        return {
            "ranked": [
                {"option": r.option, "text": r.text, "score": r.score.total, "mode": mode, "tokens": _tokens(r.score)}
                for r in infiller.rank(template, options, mode)
            ]
        }

    return run


def _augment_texts(fields: dict, example: str) -> list[str]:
    """The body's ``texts``, or its ``text`` as a list of one; every one with words."""
    if "text" in fields:
        if "texts" in fields:
            raise InfillError('give "text" (one sentence) or "texts" (a list), not both')
        fields["texts"] = [_string(fields, "text", example)]
    texts = _texts(fields.pop("texts", None), "texts", example)
    for n, text in enumerate(texts, 1):
        if not text.strip():
            raise InfillError(f"sentence {n} is empty")
    return texts


def augment(data: Any) -> Run:
    example = '{"texts": ["The old man walked slowly to the market."], "n": 5}'
    fields = _body(data, "texts", example)
    texts = _augment_texts(fields, example)
    options = {name: fields.pop(name, default) for name, default in AUGMENT_DEFAULTS.items()}
    if "classifier" in fields or "label" in fields:
        raise InfillError(
            "this server loads no classifier: use infill augment --classifier or Infiller.augment(classifier=...)"
        )
    if fields:
        known = ", ".join(options)
        raise InfillError(f"unknown key {next(iter(fields))!r} (this request takes texts or text, {known})")
    check_options(options["n"], options["change"], options["seed"], options)
    if options["n"] > MAX_VARIANTS:
        raise InfillError(f"this server takes at most {MAX_VARIANTS} variants per sentence, got {options['n']}")
    patterns(options["protect"])

    def run(infiller, step, extras):
        found = []
        for start in range(0, len(texts), AUGMENT_CHUNK):
            step(start, len(texts))
            try:
                found += infiller.augment(texts[start : start + AUGMENT_CHUNK], **options)
            except SentenceError as exc:  # numbered within its chunk
                raise InfillError(f"sentence {start + exc.index + 1}: {exc.reason}") from None
        return {"augmented": [finite(variants.to_dict()) for variants in found]}

    return run


TASKS: dict[str, Callable[[Any], Run]] = {
    "sample": sample,
    "rewrite": rewrite,
    "score": score,
    "rank": rank,
    "augment": augment,
}
