"""Rewrite's text: a sentence made a template whose every one-token word is a blank, and the variants spliced back
in the user's own words and capitals."""

from __future__ import annotations

import dataclasses
import re

import torch

from ..constraints import check_change, source_categories
from ..errors import InfillError
from ..text.blanks import quote
from ..text.template import Template
from ..text.vocabulary import spelled
from .config import RunConfig
from .policy import for_rewrite
from .results import InfillResult

WORD = re.compile(r"(?<![\w'’])\w+(?![\w'’])")  # a word that rewrite may change


def rewrite_template(text: str, tokenizer) -> tuple[str, list[str], list[int]]:
    """``text`` with every word the tokenizer spells as one word-start token made a ``[MASK]`` blank, those
    words as written, and their tokens (the source filling); other words (several pieces, or glued to an
    apostrophe) stay text."""
    if not isinstance(text, str) or not text.strip():
        raise InfillError(f"rewrite takes a sentence, got {text!r}")
    if "[MASK" in text.upper():
        raise InfillError(
            f"rewrite takes plain text, every word of it a blank; {quote(text)} has a [MASK]: "
            "use `infill sample` for a template"
        )
    pieces, words, source, at = [], [], [], 0
    matches = list(WORD.finditer(text))
    for m, ids in zip(matches, spelled(tokenizer, [m.group() for m in matches])):
        if len(ids) == 1:
            pieces += [text[at : m.start()], "[MASK]"]
            words.append(m.group())
            source.append(ids[0])
            at = m.end()
    if not source:
        raise InfillError(f"no word of {quote(text)} is one token for this model: nothing to rewrite")
    return "".join(pieces) + text[at:], words, source


def in_source_words(result: InfillResult, template: Template, words: list[str], source: list[int]) -> InfillResult:
    """``result`` with each sample's kept words the user's own, and a changed word given the source word's
    capital."""
    blanks, samples = template.blank_positions, []
    for sample in result.samples:
        tokens = torch.tensor(sample.token_ids)[blanks].tolist()
        fills = [
            word if token == kept else (fill[:1].upper() + fill[1:] if word[:1].isupper() else fill)
            for word, kept, token, fill in zip(words, source, tokens, sample.fills)
        ]
        samples.append(dataclasses.replace(sample, text=template.splice(fills), fills=fills))
    return dataclasses.replace(result, samples=samples)


def rewrite(infiller, text: str, change: float, config: RunConfig, **run) -> InfillResult:
    """:meth:`~infill.pipeline.infiller.Infiller.rewrite` of ``text`` under ``config`` on ``infiller``, ``run``
    the keywords of its :meth:`~infill.pipeline.infiller.Infiller.stream` (``terms``, ``progress``, ``on_step``)."""
    check_change(change)
    template, words, source = rewrite_template(text, infiller.tokenizer)
    for_rewrite(config)
    prepared = infiller.prepare([template], config, constrained=True)
    categories = source_categories(prepared.categories, torch.tensor(source))
    result = next(infiller.stream(prepared, rewrite=(categories, change), **run))[1]
    return in_source_words(result, prepared.templates[0], words, source)
