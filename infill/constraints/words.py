"""Include words as category sets, with a one-line error for a request no filling can meet."""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from ..errors import InfillError
from ..vocabulary import token_words, word_forms, word_key
from .terms import Include


def include_term(tokenizer, category_ids: Tensor, words: Sequence[str], num_blanks: int,
                 forbid: Sequence[str] = ()) -> Include:
    """The :class:`~.terms.Include` term for ``words``: each word's forms are the tokens among ``category_ids``
    whose text equals it, ignoring case (``cat``, ``Cat``, ``Ġcat``...). Checked before any sampling: a word
    must be one token a blank may take, must not also be forbidden, and the distinct words must fit in the
    ``num_blanks`` blanks (one word per blank token)."""
    if isinstance(words, str) or not all(isinstance(w, str) and w.strip() for w in words):
        raise InfillError(f"include takes a list of words, got {words!r}")
    texts, _ = token_words(tokenizer)
    forbidden = {word_key(tokenizer, w) for w in forbid}
    index = {int(t): c for c, t in enumerate(category_ids.tolist())}
    keys, forms = [], []
    for word in words:
        key = word_key(tokenizer, word)
        if key in keys:
            continue
        if key in forbidden:
            raise InfillError(f"cannot include {word!r}: it is also forbidden")
        tokens = word_forms(tokenizer, word, texts)
        if not tokens:
            pieces = len(tokenizer.tokenize(word))
            raise InfillError(f"cannot include {word!r}: it is {pieces} tokens for this model, not one "
                              "(a word of several pieces needs word blanks)")
        categories = sorted(index[t] for t in tokens if t in index)
        if not categories:
            raise InfillError(f"cannot include {word!r}: no blank may take it (not a word start of the "
                              "vocabulary); allow subwords to include it")
        keys.append(key)
        forms.append(categories)
    if len(forms) > num_blanks:
        raise InfillError(f"cannot include {len(forms)} words in {num_blanks} blank"
                          f"{'s' * (num_blanks != 1)}: give at most {num_blanks} words or add blanks")
    return Include(forms, len(category_ids))


def source_categories(category_ids: Tensor, token_ids: Tensor) -> Tensor:
    """Category indices of the tokens ``token_ids (..., d)`` (a source filling) among the sorted
    ``category_ids`` (as :func:`~infill.vocabulary.sampleable_token_ids` gives them), refused with one line
    where a token is not one a blank may take."""
    ids = category_ids.to(token_ids.device)
    position = torch.searchsorted(ids, token_ids).clamp_max(len(ids) - 1)
    if not (ids[position] == token_ids).all():
        raise InfillError("the source holds a token no blank may take (a subword piece or a forbidden word)")
    return position
