"""Templates: text with blanks -> token ids, blank positions, and back to text.

``[MASK]`` is a blank of one token; ``[MASK*3]`` is a blank of three consecutive tokens (its fill is the
three decoded together, e.g. ``"ice cream shop"``). A blank is a whole word (or words): it must not be
glued to a letter or digit on either side (``un[MASK]``, ``[MASK]ing`` are refused), and text glued to
its left (``"[MASK]"``, ``([MASK])``) is accepted only where the tokenizer starts a new word after it
(WordPiece does; byte-level BPE and SentencePiece do not): the tokenizer must give the word "a" put in
the blank a token of its own. The text around the blanks goes through the model's tokenizer, with each
run of spaces or line breaks made one space: an uncased model lowercases it and strips accents,
characters outside the vocabulary become ``[UNK]`` (kept visible in the output), and punctuation becomes
separate tokens. The sequence is the tokenizer's for the text with a word in each blank token, that
word's token replaced by the mask token: the bare space pieces (``Ġ``, ``▁``) that some tokenizers put
next to a mask token, and that a word would absorb, are dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from .errors import InfillError

BLANK = re.compile(r"\[MASK(?:\s*\*\s*(\d+))?\]")


@dataclass(frozen=True)
class Template:
    """A tokenized template: ``input_ids (L,)`` with special tokens, the flat ``blank_positions (d,)``
    of all blank tokens, ``spans`` (start, length) into ``blank_positions`` for each written blank, and
    ``content`` (the positions that are text or blanks, i.e. not ``[CLS]``/``[SEP]``)."""

    text: str
    input_ids: Tensor
    blank_positions: Tensor
    spans: tuple[tuple[int, int], ...]
    content: Tensor

    @property
    def length(self) -> int:
        return len(self.input_ids)

    @property
    def num_blanks(self) -> int:
        """Number of blank tokens ``d`` (``[MASK*3]`` counts three)."""
        return len(self.blank_positions)


def parse(text: str, tokenizer, max_length: int) -> Template:
    """Tokenize ``text``; raises :class:`InfillError` for a template without blanks, of blanks only,
    with a malformed or empty blank (``[MASK*0]``), a blank glued to a word, a special token written out
    (``[CLS]``, ``<s>``), or longer than ``max_length`` tokens."""
    counts = [int(m.group(1) or 1) for m in BLANK.finditer(text)]
    rest = BLANK.sub(" ", text)
    if "[MASK" in rest.upper():
        raise InfillError(f"malformed blank in {text!r}; write [MASK] or [MASK*N]")
    if not counts:
        raise InfillError(f"template has no [MASK] blank: {text!r}")
    if min(counts) < 1:
        raise InfillError(f"a blank must have at least one token, got [MASK*0] in {text!r}")
    if not rest.strip():
        raise InfillError(f"template is only blanks; give some context around them: {text!r}")
    if tokenizer.mask_token is None:
        raise InfillError("this model's tokenizer has no mask token; use a masked language model")
    if sum(counts) > max_length:
        raise InfillError(f"template has {sum(counts)} blank tokens, more than the model's maximum of {max_length}")
    special = next((token for token in tokenizer.all_special_tokens  # [UNK] is text the vocabulary lacks
                    if token in rest and token != tokenizer.unk_token), None)
    if special:
        raise InfillError(f"template contains the special token {special!r} outside a blank: {text!r}; "
                          "write plain text around the [MASK] blanks")
    for m in BLANK.finditer(text):
        if _glued(text, m):
            raise InfillError(f"blank {m.group()} is glued to {_glued(text, m)!r} in {text!r}; a blank fills whole "
                              "words: put a space between them")
    spaced = " ".join(text.split())  # a run of spaces is one space (byte-level BPE would keep a token for it)
    masked, probed = (tokenizer(BLANK.sub(lambda m: " ".join([word] * int(m.group(1) or 1)), spaced),
                                verbose=False)["input_ids"] for word in (tokenizer.mask_token, "a"))
    ids = _align(masked, probed, tokenizer, text)
    if len(ids) > max_length:
        raise InfillError(f"template is {len(ids)} tokens, longer than the model's maximum of {max_length}")
    input_ids = torch.tensor(ids, dtype=torch.long)
    blank_positions = (input_ids == tokenizer.mask_token_id).nonzero().flatten()
    special = set(tokenizer.all_special_ids) - {tokenizer.mask_token_id, tokenizer.unk_token_id}
    content = torch.tensor([p for p, i in enumerate(ids) if i not in special], dtype=torch.long)
    starts = [sum(counts[:j]) for j in range(len(counts))]
    return Template(text, input_ids, blank_positions, tuple(zip(starts, counts)), content)


def _glued(text: str, m: re.Match) -> str:
    """The letter or digit a blank is glued to (``un[MASK]``, ``[MASK]ing``), or ``""``."""
    around = text[m.start() - 1:m.start()] + text[m.end():m.end() + 1]
    return next((c for c in around if c.isalnum()), "")


def _align(masked: list[int], probed: list[int], tokenizer, text: str) -> list[int]:
    """``masked`` (the tokenizer's ids of the template with mask tokens) made to agree token for token with
    ``probed`` (its ids with the word "a" in each blank), by dropping the bare space pieces (``Ġ``, ``▁``)
    next to a mask token; raises :class:`InfillError` where a blank's word would not be a token of its own."""
    mask = tokenizer.mask_token_id
    word_start = tokenizer("x a", add_special_tokens=False)["input_ids"][-1]  # the word-initial "a"
    first = tokenizer("a")["input_ids"]  # "a" opening the text, after the special tokens
    out, j = [], 0
    for n, i in enumerate(masked):
        fits = j < len(probed) and (probed[j] == word_start or probed[:j + 1] == first[:j + 1])
        if (i == mask and fits) or (j < len(probed) and i == probed[j] != mask):
            out.append(i)
            j += 1
        elif mask not in masked[max(n - 1, 0):n + 2] or tokenizer.decode([i]).strip():
            break
    else:
        if j == len(probed):
            return out
    raise InfillError(f"a blank of {text!r} is glued to the text next to it: the tokenizer would not keep a word "
                      "there whole; put a space between the blank and that text")


@lru_cache(maxsize=8)
def _spaces_punctuation(tokenizer) -> bool:
    """Whether decoding puts spaces the text did not have around punctuation (WordPiece: ``"don ' t"``)."""
    return tokenizer.decode(tokenizer("don't", add_special_tokens=False)["input_ids"]) != "don't"


def detokenize(tokenizer, ids) -> str:
    """Text of token ids by the tokenizer's ``decode``; where decoding spaces out punctuation (WordPiece), with
    its clean-up of those spaces (``"don ' t"`` -> ``"don't"``, ``"sir ?"`` -> ``"sir?"``; brackets and quotes
    keep theirs). Byte-level BPE and SentencePiece decode the text exactly and get no clean-up."""
    return tokenizer.decode(list(ids), skip_special_tokens=False,
                            clean_up_tokenization_spaces=_spaces_punctuation(tokenizer)).strip()


def fill(template: Template, tokenizer, token_ids: Tensor) -> tuple[str, list[str]]:
    """The filled text and the decoded fill of each blank for a full sequence ``token_ids (L,)``."""
    text = detokenize(tokenizer, token_ids[template.content].tolist())
    blank_ids = token_ids[template.blank_positions].tolist()
    fills = [detokenize(tokenizer, blank_ids[start:start + n]) for start, n in template.spans]
    return text, fills
