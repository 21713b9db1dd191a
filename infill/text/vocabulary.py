"""Which vocabulary tokens a blank may take, told from the tokenizer's own behaviour.

A token is a *word start* when the tokenizer, given its text as a word after a space (``"a " + text``),
produces exactly that token: BERT's ``cat`` (not ``##cat``), RoBERTa's ``Ġcat`` (not ``cat``), XLM-R's
``▁cat`` (not ``cat``). A token is a *continuation piece* when, decoded after the word ``a``, it joins that
word without a space: BERT's ``##cat``, RoBERTa's ``cat``, XLM-R's ``cat`` (a word of several pieces is a
word start followed by continuation pieces: ``so ##uven ##ir``). No family's marker is written here, so a
new tokenizer style needs no new code.

A blank takes *words* by default: tokens whose text has a letter or a digit. Punctuation, quote marks and
other symbols only with ``allow_punctuation``.

Interface:

- :func:`sampleable_token_ids` ``(tokenizer, allow_subwords=False, forbid=(), allow_punctuation=False)``:
  the sorted ids a token blank may take (word starts; with ``allow_subwords`` any ordinary token).
- :func:`word_piece_ids` ``(tokenizer, forbid=(), allow_punctuation=False)``: the sorted ids a word blank
  may take: word starts and continuation pieces.
- :func:`piece_kinds` ``(tokenizer, ids) -> (starts, continuations)``: boolean masks over ``ids``.
- :func:`token_words`, :func:`continuation_pieces`, :func:`lowercases`: what these are computed from;
  :func:`casefolded_words` the ordinary tokens by their casefolded text, :func:`token_forms` a word's among them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

import torch
from torch import Tensor

from ..errors import InfillError

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


@lru_cache(maxsize=8)
def continuation_pieces(tokenizer) -> dict[int, str]:
    """Id -> text of every continuation piece: an ordinary token, not a word start, that decoded after the
    word-start ``a`` joins it without a space (``a`` + ``##uven`` -> ``"auven"``: text ``"uven"``). Pieces
    that cannot be whole characters (partial UTF-8 bytes) are left out, and so are pieces with capitals
    when the tokenizer lowercases its input (it never produces them)."""
    texts, word_starts = token_words(tokenizer)
    a = word_start_a(tokenizer)
    prefix = tokenizer.decode([a], clean_up_tokenization_spaces=False)
    ids = [i for i in texts if i not in word_starts]
    joined = tokenizer.batch_decode([[a, i] for i in ids], clean_up_tokenization_spaces=False)
    pieces = {
        i: text[len(prefix) :]
        for i, text in zip(ids, joined)
        if text.startswith(prefix) and text[len(prefix) :].strip() == text[len(prefix) :] != ""
    }
    lower = lowercases(tokenizer)
    return {i: text for i, text in pieces.items() if "\ufffd" not in text and not (lower and text != text.lower())}


@lru_cache(maxsize=8)
def word_start_a(tokenizer) -> int:
    """The id of the word ``a`` after a space (BERT ``a``, RoBERTa ``Ġa``, XLM-R ``▁a``): the probe word."""
    return tokenizer("x a", add_special_tokens=False)["input_ids"][-1]


@lru_cache(maxsize=8)
def lowercases(tokenizer) -> bool:
    """Whether the tokenizer lowercases its input (an uncased model: bert-base-uncased, ALBERT)."""
    return tokenizer.tokenize("Hello World") == tokenizer.tokenize("hello world")


def spelled(tokenizer, words: Iterable[str]) -> list[list[int]]:
    """The ids of each of ``words`` as a word of running text, after a space (``souvenir``: ``so ##uven ##ir``,
    ``Ġsouven ir``, ``▁so u ve n ir``), in one call of the tokenizer."""
    probe, *encoded = tokenizer(["a", *(f"a {word}" for word in words)], add_special_tokens=False)["input_ids"]
    return [ids[len(probe) :] for ids in encoded]


def _encode(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of ``texts`` without special tokens; by the Rust tokenizer directly where there is one."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return tokenizer(texts, add_special_tokens=False)["input_ids"]
    return [encoding.ids for encoding in backend.encode_batch(texts, add_special_tokens=False)]


@lru_cache(maxsize=16)
def word_tokens(tokenizer, pieces: bool) -> frozenset[int]:
    """The ordinary tokens whose text (of :func:`token_words`; a continuation piece's of
    :func:`continuation_pieces` where ``pieces``) has a letter or a digit; computed once per tokenizer."""
    texts = token_words(tokenizer)[0] | (continuation_pieces(tokenizer) if pieces else {})
    return frozenset(i for i, text in texts.items() if _is_word(text))


def _is_word(text: str) -> bool:
    """Whether a token's text has a letter or a digit (``cat``, ``40``, ``'s``; not ``,`` ``"`` ``$``)."""
    return any(c.isalnum() for c in text)


def sampleable_token_ids(
    tokenizer, allow_subwords: bool = False, forbid: Iterable[str] = (), allow_punctuation: bool = False
) -> Tensor:
    """Sorted ids of the tokens a token blank may take: the word starts of :func:`token_words` (with
    ``allow_subwords``, every ordinary token, continuation pieces included) whose text has a letter or digit
    (any, with ``allow_punctuation``), minus every form of each ``forbid`` word (``the``, ``Ġthe``,
    ``▁The``...: tokens whose text equals the word's, ignoring case; ``","`` forbids the comma). A forbidden
    word must be a single token of the vocabulary that a blank could take (punctuation only with
    ``allow_punctuation``), else :class:`InfillError`."""
    texts, word_starts = token_words(tokenizer)
    allowed = set(texts) if allow_subwords else set(word_starts)
    return _sorted(_kept(tokenizer, allowed, texts, forbid, allow_punctuation))


def word_piece_ids(tokenizer, forbid: Iterable[str] = (), allow_punctuation: bool = False) -> Tensor:
    """Sorted ids of the tokens a word blank may take: word starts and continuation pieces whose text has a
    letter or digit (any, with ``allow_punctuation``), minus every form of each ``forbid`` word (``the``,
    ``Ġthe``, ``▁The``, the piece ``##the``...: tokens whose text equals the word's, ignoring case; ``","``
    forbids the comma). A forbidden word must be a single token of the vocabulary that a blank could take
    (punctuation only with ``allow_punctuation``), else :class:`InfillError`."""
    texts, word_starts = token_words(tokenizer)
    pieces = continuation_pieces(tokenizer)
    return _sorted(
        _kept(tokenizer, set(word_starts) | set(pieces), texts | pieces, forbid, allow_punctuation, pieces=True)
    )


def piece_kinds(tokenizer, ids: Tensor) -> tuple[Tensor, Tensor]:
    """``(starts, continuations)``: boolean masks over ``ids`` (e.g. a blank's category ids) of the word
    starts and of the continuation pieces. A token is at most one of the two."""
    word_starts, pieces = token_words(tokenizer)[1], continuation_pieces(tokenizer)
    listed = ids.tolist()
    return (
        torch.tensor([i in word_starts for i in listed], dtype=torch.bool),
        torch.tensor([i in pieces for i in listed], dtype=torch.bool),
    )


def _kept(
    tokenizer,
    allowed: set[int],
    texts: dict[int, str],
    forbid: Iterable[str],
    allow_punctuation: bool,
    pieces: bool = False,
) -> set[int]:
    """``allowed`` without punctuation (unless ``allow_punctuation``) and without the forms of ``forbid``:
    the tokens whose ``texts`` equal the word's, ignoring case."""
    words = word_tokens(tokenizer, pieces)
    if not allow_punctuation:
        allowed = allowed & words
    for word in forbid:  # a word no blank could take is refused: forbidding it would silently do nothing
        forms = word_forms(tokenizer, word, texts)
        if not forms:
            count = len(tokenizer.tokenize(word))
            why = (
                f"it is {count} tokens for this model, not one"
                if count > 1
                else "it is no word of this model's vocabulary, so a blank never takes it"
            )
            raise InfillError(f"cannot forbid {word!r}: {why}")
        if not allow_punctuation and not forms & words:
            raise InfillError(
                f"cannot forbid {word!r}: a blank never takes punctuation unless allow_punctuation is set"
            )
        allowed -= forms
    return allowed


def word_key(tokenizer, word: str) -> str:
    """The text a token must have to be a form of ``word`` (ignoring case), as the tokenizer normalises it."""
    return tokenizer.decode(tokenizer(word, add_special_tokens=False)["input_ids"]).strip().casefold()


def word_forms(tokenizer, word: str, texts: dict[int, str]) -> set[int]:
    """The forms of ``word`` among ``texts`` (id -> text): the ids whose text is the word's, ignoring case."""
    key = word_key(tokenizer, word)
    return {i for i, text in texts.items() if text.casefold() == key}


@lru_cache(maxsize=8)
def casefolded_words(tokenizer) -> dict[str, frozenset[int]]:
    """The ordinary tokens of :func:`token_words` by their casefolded text: a word's forms (:func:`word_forms` over
    every ordinary token) looked up, not searched for."""
    out: dict[str, set[int]] = {}
    for i, text in token_words(tokenizer)[0].items():
        out.setdefault(text.casefold(), set()).add(i)
    return {text: frozenset(ids) for text, ids in out.items()}


def token_forms(tokenizer, word: str) -> frozenset[int]:
    """The ordinary tokens that are a form of ``word`` (:func:`word_forms` over every one), looked up in
    :func:`casefolded_words`."""
    return casefolded_words(tokenizer).get(word_key(tokenizer, word), frozenset())


def _sorted(ids: set[int]) -> Tensor:
    return torch.tensor(sorted(ids), dtype=torch.long)
