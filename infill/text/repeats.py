"""Repeated content words and doubled words: what the diverse pick keeps out of the reported fillings while others
are left.

A *content word* is a whole-word token whose text has three letters or more, all letters, and is not an English
stop word (NLTK's list, from the ``stopwords`` package). A filling of token blanks *repeats* one where one content
word (ignoring case) fills two blanks, or a blank copies a content word the template holds outside the blanks
("the river of the river"): each copy masked in turn is predicted by the other, so the PLL pays a repetition
twice, while a reader keeps neither.

A filling *doubles* a word where, in the text a reader sees (the template's text with the fills spliced in, cut
into words and punctuation marks), a word a fill wrote is the same word (ignoring case) as the word beside it,
whether the template's or a fill's ("could not not be"), or as the word beyond an "and", "or" or comma ("pakistan
and pakistan"). Any word counts, function words included. Grammatical doubles ("had had", "that that", "more and
more") are kept last too: they are rare in running text, and a rule with exceptions would let the same words
through where they are errors. Two copies both of the template's own text are the user's, never a fill's double.

Interface: :func:`repeats` ``(tokenizer, categories, template) -> Repeats``; :meth:`Repeats.of` ``(rows) -> (N,)``
bool, which of the fillings ``rows (N, d)`` (indices into ``categories``) repeat a content word or double a word;
:func:`doubled` ``(parts, fills) -> bool`` on text: the template's text around its blanks and each blank's fill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable, Sequence

import torch
from torch import Tensor

from .template import Template, fill_text
from .vocabulary import continuation_pieces, token_words

LANGUAGE = "english"
NONE = -1  # the key of a token that is no content word
JOINERS = frozenset({"and", "or", ","})
"""A word doubles the word beyond one of these as it doubles the word beside it ("pakistan and pakistan")."""
WORDS = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
"""The text's words (with their inner apostrophes: "don't") and punctuation marks, one mark each."""


@dataclass(frozen=True)
class Doubles:
    """``parts``: the template's text around its blanks (one more than the blanks); ``spans``: each blank's
    ``(start, length)`` in a filling's row; ``text``: a blank's fill as text from its category indices."""

    parts: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    text: Callable[[tuple[int, ...]], str]

    def of(self, rows: Tensor) -> Tensor:
        """Which fillings ``rows (N, d)`` double a word (module docstring)."""
        return torch.tensor(
            [doubled(self.parts, [self.text(tuple(row[s : s + n])) for s, n in self.spans]) for row in rows.tolist()],
            dtype=torch.bool,
        )


@dataclass(frozen=True)
class Repeats:
    """``keys (K,)``: each category's content word as a number (:data:`NONE` where it is none), one number per
    word; ``echoes (K,)``: whether the category's word is a content word of the template's own text;
    ``doubles``: the template's doubled words."""

    keys: Tensor
    echoes: Tensor
    doubles: Doubles

    def of(self, rows: Tensor) -> Tensor:
        """Which fillings ``rows (N, d)`` repeat a content word or double a word (module docstring)."""
        rows = rows.cpu()
        keys = self.keys[rows].sort(-1).values
        twice = ((keys[:, 1:] == keys[:, :-1]) & (keys[:, 1:] != NONE)).any(-1)
        return twice | self.echoes[rows].any(-1) | self.doubles.of(rows)


def repeats(tokenizer, categories: Tensor, template: Template) -> Repeats:
    """The content words of ``categories`` (token ids) and those of ``template`` outside its blanks, and the
    template's text around its blanks."""
    words, ids = content_words(tokenizer), categories.tolist()
    numbers: dict[str, int] = {}
    keys = torch.tensor(
        [numbers.setdefault(words[i], len(numbers)) if i in words else NONE for i in ids], dtype=torch.long
    )
    own = _template_words(tokenizer, template, words)
    echoes = torch.tensor([words.get(i) in own for i in ids], dtype=torch.bool)
    text, blanks = template.text, template.blanks
    parts = tuple(text[a:b] for a, b in zip([0] + [b.end for b in blanks], [b.start for b in blanks] + [len(text)]))
    spelled = lru_cache(maxsize=None)(partial(fill_text, tokenizer))  # each distinct fill decoded once
    doubles = Doubles(parts, template.spans, lambda fill: spelled(tuple(ids[c] for c in fill)))
    return Repeats(keys, echoes, doubles)


def doubled(parts: Sequence[str], fills: Sequence[str]) -> bool:
    """Whether a word of ``fills`` (each blank's text) doubles a word, ``parts`` being the template's text around
    the blanks, one more than ``fills`` (module docstring)."""
    words: list[tuple[str, bool]] = []  # (word or mark, written by a fill)
    for k, part in enumerate(parts):
        words += [(w, False) for w in _words(part)]
        if k < len(fills):
            words += [(w, True) for w in _words(fills[k])]
    return any(
        (first or second) and word == other and word[0].isalnum() and (gap == 1 or words[i + 1][0] in JOINERS)
        for gap in (1, 2)
        for i, ((word, first), (other, second)) in enumerate(zip(words, words[gap:]))
    )


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    """The words and punctuation marks of ``text``, casefolded."""
    return tuple(WORDS.findall(text.casefold()))


@lru_cache(maxsize=8)
def content_words(tokenizer) -> dict[int, str]:
    """Id -> casefolded text of every word-start token that is a content word; computed once per tokenizer."""
    from stopwords import get_stopwords

    stop = frozenset(get_stopwords(LANGUAGE))
    texts, starts = token_words(tokenizer)
    return {
        i: texts[i].casefold()
        for i in starts
        if len(texts[i]) >= 3 and texts[i].isalpha() and texts[i].casefold() not in stop
    }


def _template_words(tokenizer, template: Template, words: dict[int, str]) -> set[str]:
    """The content words the template's text holds outside its blanks: whole words, one token each."""
    ids, blanks = template.input_ids.tolist(), set(template.blank_positions.tolist())
    pieces = continuation_pieces(tokenizer)
    return {
        words[i]
        for p, i in enumerate(ids)
        if i in words and p not in blanks and (p + 1 == len(ids) or ids[p + 1] not in pieces)
    }
