"""Repeated content words: what the diverse pick keeps out of the reported fillings while others are left.

A *content word* is a whole-word token whose text has three letters or more, all letters, and is not an English
stop word (NLTK's list, from the ``stopwords`` package). A filling of token blanks *repeats* one where one content
word (ignoring case) fills two blanks, or a blank copies a content word the template holds outside the blanks
("the river of the river"): each copy masked in turn is predicted by the other, so the PLL pays a repetition
twice, while a reader keeps neither.

Interface: :func:`repeats` ``(tokenizer, categories, template) -> Repeats``; :meth:`Repeats.of` ``(rows) -> (N,)``
bool, which of the fillings ``rows (N, d)`` (indices into ``categories``) repeat one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from .template import Template
from .vocabulary import continuation_pieces, token_words

LANGUAGE = "english"
NONE = -1  # the key of a token that is no content word


@dataclass(frozen=True)
class Repeats:
    """``keys (K,)``: each category's content word as a number (:data:`NONE` where it is none), one number per
    word; ``echoes (K,)``: whether the category's word is a content word of the template's own text."""

    keys: Tensor
    echoes: Tensor

    def of(self, rows: Tensor) -> Tensor:
        """Which fillings ``rows (N, d)`` repeat a content word (module docstring)."""
        rows = rows.cpu()
        keys = self.keys[rows].sort(-1).values
        twice = ((keys[:, 1:] == keys[:, :-1]) & (keys[:, 1:] != NONE)).any(-1)
        return twice | self.echoes[rows].any(-1)


def repeats(tokenizer, categories: Tensor, template: Template) -> Repeats:
    """The content words of ``categories`` (token ids) and those of ``template`` outside its blanks."""
    words = content_words(tokenizer)
    numbers: dict[str, int] = {}
    keys = torch.tensor(
        [numbers.setdefault(words[i], len(numbers)) if i in words else NONE for i in categories.tolist()],
        dtype=torch.long,
    )
    own = _template_words(tokenizer, template, words)
    echoes = torch.tensor([words.get(i) in own for i in categories.tolist()], dtype=torch.bool)
    return Repeats(keys, echoes)


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
