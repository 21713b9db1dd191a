"""Which vocabulary tokens a blank may take, told from the tokenizer's own behaviour.

A token is a *word start* when the tokenizer, given its text as a word after a space (``"a " + text``),
produces exactly that token: BERT's ``cat`` (not ``##cat``), RoBERTa's ``Ġcat`` (not ``cat``), XLM-R's
``▁cat`` (not ``cat``). No family's marker is written here, so a new tokenizer style needs no new code.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

import torch

from .errors import InfillError

_RESERVED = re.compile(r"^\[.*\]$|^<.*>$")  # [unused12], [CLS], <s>, <mask>, <0x41>, ...


@lru_cache(maxsize=8)
def token_words(tokenizer) -> tuple[dict[int, str], frozenset[int]]:
    """``(texts, word_starts)``: the decoded text of every ordinary token (not special, reserved or blank)
    and the ids of the tokens that are word starts. Computed once per tokenizer (about 0.5 CPU-second for
    50,000 tokens)."""
    special = set(tokenizer.all_special_ids)
    ids = [i for token, i in tokenizer.get_vocab().items() if i not in special and not _RESERVED.match(token)]
    decoded = tokenizer.batch_decode([[i] for i in ids], clean_up_tokenization_spaces=False)
    texts = {i: text.strip() for i, text in zip(ids, decoded) if text.strip()}
    probe, *encoded = _encode(tokenizer, ["a"] + [f"a {text}" for text in texts.values()])
    return texts, frozenset(i for i, got in zip(texts, encoded) if got == probe + [i])


def _encode(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of ``texts`` without special tokens; by the Rust tokenizer directly where there is one (3x faster)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return tokenizer(texts, add_special_tokens=False)["input_ids"]
    return [encoding.ids for encoding in backend.encode_batch(texts, add_special_tokens=False)]


def sampleable_token_ids(tokenizer, allow_subwords: bool = False, forbid: Iterable[str] = ()) -> torch.Tensor:
    """Sorted ids of the tokens a blank may take: the word starts of :func:`token_words` (with
    ``allow_subwords``, every ordinary token, continuation pieces included), minus every form of each
    ``forbid`` word (``the``, ``Ġthe``, ``▁The``...: tokens whose text equals the word's, ignoring case).
    A forbidden word must be a single token of the vocabulary."""
    texts, word_starts = token_words(tokenizer)
    allowed = set(texts) if allow_subwords else set(word_starts)
    for word in forbid:
        key = tokenizer.decode(tokenizer(word, add_special_tokens=False)["input_ids"]).strip().casefold()
        forms = {i for i, text in texts.items() if text.casefold() == key}
        if not forms:
            pieces = len(tokenizer.tokenize(word))
            raise InfillError(f"cannot forbid {word!r}: it is {pieces} tokens for this model, not one")
        allowed -= forms
    return torch.tensor(sorted(allowed), dtype=torch.long)
