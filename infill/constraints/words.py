"""Include words as category sets, with a one-line error for a request no filling can meet."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from ..errors import InfillError
from ..text.vocabulary import spelled, token_forms, token_words, word_key
from .terms import Include


def distinct_words(tokenizer, words: Sequence[str], forbid: Sequence[str] = ()) -> list[str]:
    """``words`` once each (ignoring case, as the tokenizer normalises them), refused with one line where
    one is not a word or is also forbidden."""
    if isinstance(words, str) or not all(isinstance(w, str) and w.strip() for w in words):
        raise InfillError(f"include takes a list of words, got {words!r}")
    forbidden = {word_key(tokenizer, w) for w in forbid}
    keys = {}
    for word in words:
        key = word_key(tokenizer, word)
        if key in forbidden:
            raise InfillError(f"cannot include {word!r}: it is also forbidden")
        keys.setdefault(key, word)
    return list(keys.values())


def include_term(
    tokenizer, category_ids: Tensor, words: Sequence[str], num_blanks: int, forbid: Sequence[str] = ()
) -> Include:
    """The :class:`~.terms.Include` term for ``words``: each word's forms are the tokens among ``category_ids``
    whose text equals it, ignoring case (``cat``, ``Cat``, ``Ġcat``...). Checked before any sampling: a word
    must be one token a blank may take, must not also be forbidden, and the distinct words must fit in the
    ``num_blanks`` blanks (one word per blank token)."""
    index = {int(t): c for c, t in enumerate(category_ids.tolist())}
    forms = []
    for word in distinct_words(tokenizer, words, forbid):
        tokens = token_forms(tokenizer, word)
        if not tokens:
            pieces = len(tokenizer.tokenize(word))
            raise InfillError(
                f"cannot include {word!r}: it is {pieces} tokens for this model, not one "
                "(a word of several pieces needs word blanks)"
            )
        categories = sorted(index[t] for t in tokens if t in index)
        if not categories:
            raise InfillError(
                f"cannot include {word!r}: no blank may take it (not a word start of the "
                "vocabulary); allow subwords to include it"
            )
        forms.append(categories)
    if len(forms) > num_blanks:
        raise InfillError(
            f"cannot include {len(forms)} words in {num_blanks} blank"
            f"{'s' * (num_blanks != 1)}: give at most {num_blanks} words or add blanks"
        )
    return Include(forms, len(category_ids))


def include_pieces(
    tokenizer, piece_ids: Tensor, words: Sequence[str], capacity: int, max_pieces: int, forbid: Sequence[str] = ()
) -> list[list[tuple[int, ...]]]:
    """Per distinct word, its forms for word blanks: the piece sequences of the word as written, lowercased
    and capitalised, as category indices among the sorted ``piece_ids``. Checked before any sampling: each
    form is a word start and its continuation pieces (at most ``max_pieces``) that word blanks may take, no
    word is also forbidden, and the words fit in ``capacity`` words."""
    _, word_starts = token_words(tokenizer)
    index = {int(t): c for c, t in enumerate(piece_ids.tolist())}
    out = []
    for word in map(str.strip, distinct_words(tokenizer, words, forbid)):
        spellings = spelled(tokenizer, dict.fromkeys((word, word.lower(), word.capitalize())))
        forms = {
            tuple(index[i] for i in ids)
            for ids in spellings
            if 0 < len(ids) <= max_pieces
            and ids[0] in word_starts
            and all(i in index for i in ids)
            and not any(i in word_starts for i in ids[1:])
        }
        if not forms and min(map(len, spellings)) > max_pieces:
            raise InfillError(
                f"cannot include {word!r}: it is {min(map(len, spellings))} pieces for this model, "
                f"more than the {max_pieces} a word of a blank may take"
            )
        if not forms:
            raise InfillError(
                f"cannot include {word!r}: no word blank may take it (not one word of the "
                "vocabulary's pieces, or punctuation)"
            )
        out.append(sorted(forms))
    if len(out) > capacity:
        raise InfillError(
            f"cannot include {len(out)} words in blanks of at most {capacity} word"
            f"{'s' * (capacity != 1)}: give fewer words or wider blanks"
        )
    return out


def source_categories(category_ids: Tensor, token_ids: Tensor) -> Tensor:
    """Category indices of the tokens ``token_ids (..., d)`` (a source filling) among the sorted
    ``category_ids`` (as :func:`~infill.text.vocabulary.sampleable_token_ids` gives them), refused with one line
    where a token is not one a blank may take."""
    ids = category_ids.to(token_ids.device)
    position = torch.searchsorted(ids, token_ids).clamp_max(len(ids) - 1)
    if not (ids[position] == token_ids).all():
        raise InfillError("the source holds a token no blank may take (a subword piece or a forbidden word)")
    return position
