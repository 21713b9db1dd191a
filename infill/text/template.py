"""Templates: text with blanks -> token ids around the blanks, and fills spliced back into the text.

Syntax (:func:`parse`):

- ``[MASK]``, ``[MASK*3]``: a blank of exactly 1 or 3 tokens (``blank_unit="token"``, the default), or of
  exactly 1 or 3 words of any number of pieces each (``blank_unit="word"``).
- ``[MASK*1-3]``: a span of 1 to 3 words, always a word blank; ``[MASK*0-2]`` may vanish; ``[MASK*?]`` is
  ``[MASK*1-4]``. At most 16 words. Spaces inside the brackets are allowed: ``[MASK * 2]``.

A blank is whole words: it must not be glued to a letter or digit on either side (``un[MASK]``,
``[MASK]ing`` are refused), and text glued to its left (``"[MASK]"``, ``([MASK])``) is accepted only where
the tokenizer starts a new word after it (WordPiece does; byte-level BPE and SentencePiece do not).

Interface:

- :func:`parse` ``(text, tokenizer, max_length, blank_unit="token") -> Template``.
- :class:`Template`: ``blanks`` (one :class:`Blank` per written blank: ``start``/``end`` character offsets
  in ``text``, ``unit`` ``"token"`` or ``"word"``, ``min``/``max`` counted in that unit); ``segments``,
  the token ids around the blanks (special tokens in the first and last): for fills of word-start and
  continuation pieces, ``torch.cat([seg0, fill0, seg1, ..., segN])`` is the tokenizer's own sequence of
  the filled text (a fill opening the text is a word after a space, as RoBERTa's ``add_prefix_space``
  has it). ``fixed`` is True when every blank is a token blank; ``input_ids``, ``blank_positions``
  (flat, of every blank token), ``spans`` ((start, length) into ``blank_positions``, one per blank) and
  ``content`` (positions that are not ``[CLS]``/``[SEP]``) are the sequence with each blank at ``min``
  mask tokens: a fixed template's only form; :meth:`Template.with_lengths` gives any other.
  :meth:`Template.sequence` joins segments and fills (token ids); :meth:`Template.splice` puts fills
  (text) into the user's text. ``mask_token_id`` is the tokenizer's; ``capitalize`` says whether fills
  opening a sentence get a capital (an uncased tokenizer, and capitals in the template's text).
- :func:`fill` ``(template, tokenizer, token_ids) -> (text, fills)`` for a whole sequence laid out as the
  template's ``input_ids``; :func:`fill_pieces` ``(template, tokenizer, pieces) -> (text, fills)`` for
  the token ids of each blank's fill. ``text`` is the template's text, character for character, with the
  fills spliced in; ``fills`` are as spliced. :func:`fill_text` ``(tokenizer, ids)``: one fill's text.

The token ids come from the model's tokenizer with each run of spaces or line breaks made one space:
an uncased model lowercases the text and strips accents there, and characters outside the vocabulary
become ``[UNK]``; the output text keeps the user's characters all the same. The sequence is the
tokenizer's for the text with a word in each blank token, that word's token replaced by the mask token:
the bare space pieces (``Ġ``, ``▁``) that some tokenizers put next to a mask token, and that a word would
absorb, are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate
from typing import Sequence

import torch
from torch import Tensor

from ..errors import InfillError
from .blanks import BLANK, Blank, quote, scan
from .vocabulary import lowercases, word_start_a

SENTENCE_START = re.compile(r"(?:^|[.!?][\"'’”)\]]*\s)\s*[\"'“‘(\[]*$")
CLOSING = tuple(".,;:!?)]}%")  # punctuation that takes no space before it


@dataclass(frozen=True)
class Template:
    """A parsed template (see the module docstring for each field)."""

    text: str
    input_ids: Tensor
    blank_positions: Tensor
    spans: tuple[tuple[int, int], ...]
    content: Tensor
    blanks: tuple[Blank, ...]
    segments: tuple[Tensor, ...]
    mask_token_id: int
    capitalize: bool  # fills at a sentence start get a capital: an uncased model, and capitals in the text

    @property
    def length(self) -> int:
        return len(self.input_ids)

    @property
    def num_blanks(self) -> int:
        """Number of blank tokens ``d`` (``[MASK*3]`` counts three)."""
        return len(self.blank_positions)

    @property
    def fixed(self) -> bool:
        """Whether every blank is a token blank: one sequence length, ``input_ids``."""
        return all(b.unit == "token" for b in self.blanks)

    def with_lengths(self, lengths: Sequence[int]) -> Template:
        """This template with ``lengths[k]`` mask tokens in blank ``k``: ``input_ids``, ``blank_positions``,
        ``spans`` and ``content`` laid out for them (blanks, segments and text unchanged)."""
        if len(lengths) != len(self.blanks):
            raise ValueError(f"{len(lengths)} lengths for {len(self.blanks)} blanks")
        parts, positions, spans, at = [self.segments[0]], [], [], len(self.segments[0])
        for n, segment in zip(lengths, self.segments[1:]):
            spans.append((len(positions), n))
            positions.extend(range(at, at + n))
            parts += [torch.full((n,), self.mask_token_id, dtype=torch.long), segment]
            at += n + len(segment)
        ids = torch.cat(parts)
        lead, trail = int(self.content[0]), self.length - 1 - int(self.content[-1])  # special tokens at the ends
        content = torch.arange(lead, len(ids) - trail)
        return replace(
            self,
            input_ids=ids,
            blank_positions=torch.tensor(positions, dtype=torch.long),
            spans=tuple(spans),
            content=content,
        )

    def sequence(self, pieces: Sequence[Sequence[int]]) -> Tensor:
        """The token ids ``(L,)`` of the template with ``pieces[k]`` (token ids, empty for a vanished span)
        in blank ``k``: ``torch.cat([seg0, pieces[0], seg1, ..., segN])``."""
        if len(pieces) != len(self.blanks):
            raise ValueError(f"{len(pieces)} fills for {len(self.blanks)} blanks")
        fills = [torch.as_tensor(p, dtype=torch.long).reshape(-1) for p in pieces]
        return torch.cat([self.segments[0]] + [part for f, s in zip(fills, self.segments[1:]) for part in (f, s)])

    def splice(self, fills: Sequence[str]) -> str:
        """The template's text, character for character, with ``fills[k]`` in place of blank ``k``. Where a
        fill is empty (a vanished span) the text keeps single spaces, and no space before punctuation
        that it did not have. With ``capitalize``, a fill opening a sentence (the text, or after ``.``,
        ``!`` or ``?`` and a space) gets a capital first letter."""
        return self._spliced(fills)[0]

    def _spliced(self, fills: Sequence[str]) -> tuple[str, list[str]]:
        """``(text, fills as spliced)``."""
        if len(fills) != len(self.blanks):
            raise ValueError(f"{len(fills)} fills for {len(self.blanks)} blanks")
        out, written = self.text[: self.blanks[0].start], []
        ends = [b.start for b in self.blanks[1:]] + [len(self.text)]
        for blank, fill, end in zip(self.blanks, fills, ends):
            fill, right = fill.strip(), self.text[blank.end : end]
            if fill and self.capitalize and SENTENCE_START.search(out):
                fill = fill[0].upper() + fill[1:]
            if not fill and right[:1].isspace() and (not out.strip() or out[-1].isspace() or out[-1] in "([{"):
                right = right.lstrip()
            elif not fill and out[-1:].isspace() and (not right or right.startswith(CLOSING)):
                out = out.rstrip()
            written.append(fill)
            out += fill + right
        return out, written


def parse(text: str, tokenizer, max_length: int, blank_unit: str = "token") -> Template:
    """Tokenize ``text`` (needs only the tokenizer); raises :class:`InfillError` for a template without
    blanks, of blanks only, with a malformed or empty blank (``[MASK*0]``, ``[MASK*3-1]``), a blank glued to
    a word, a special token written out (``[CLS]``, ``<s>``), or longer than ``max_length`` tokens with each
    blank at its fewest tokens. ``blank_unit`` says what ``[MASK]`` and ``[MASK*n]`` count: ``"token"`` or
    ``"word"``."""
    blanks = scan(text, blank_unit)
    rest = BLANK.sub(" ", text)
    _check_template(text, rest, blanks, tokenizer, max_length)
    slots = [b.max if b.unit == "token" else 1 for b in blanks]  # mask tokens standing for each blank
    ids = _token_ids(text, slots, tokenizer)
    capitalize = lowercases(tokenizer) and any(c.isupper() for c in rest)
    template = Template(
        text,
        torch.tensor(ids, dtype=torch.long),
        torch.empty(0, dtype=torch.long),
        (),
        _content(ids, tokenizer),
        blanks,
        _segments(ids, slots, tokenizer.mask_token_id),
        tokenizer.mask_token_id,
        capitalize,
    )
    template = template.with_lengths([b.min for b in blanks])
    if template.length > max_length:
        raise InfillError(f"template is {template.length} tokens, longer than the model's maximum of {max_length}")
    return template


def _check_template(text: str, rest: str, blanks: tuple[Blank, ...], tokenizer, max_length: int) -> None:
    """Refuse a tokenizer without a mask token, blanks that alone take more than ``max_length`` tokens, and
    a special token written out in ``rest`` (the text with each blank made a space)."""
    if tokenizer.mask_token is None:
        raise InfillError("this model's tokenizer has no mask token; use a masked language model")
    fewest = sum(b.min for b in blanks)
    if fewest > max_length:
        raise InfillError(
            f"template's blanks take at least {fewest} tokens, more than the model's maximum of {max_length}"
        )
    special = next(
        (
            token
            for token in tokenizer.all_special_tokens  # [UNK] is text the vocabulary lacks
            if token in rest and token != tokenizer.unk_token
        ),
        None,
    )
    if special:
        raise InfillError(
            f"template contains the special token {special!r} outside a blank: "
            f"{quote(text, rest.index(special))}; write plain text around the [MASK] blanks"
        )


def _token_ids(text: str, slots: list[int], tokenizer) -> list[int]:
    """The tokenizer's ids of ``text`` with ``slots[k]`` mask tokens in blank ``k`` (see :func:`_align`)."""
    spaced = " ".join(text.split())  # a run of spaces is one space (byte-level BPE would keep a token for it)
    masked, probed = (
        tokenizer(_words_in_blanks(spaced, slots, word), verbose=False)["input_ids"]
        for word in (tokenizer.mask_token, "a")
    )
    return _align(masked, probed, tokenizer, text)


def _segments(ids: list[int], slots: list[int], mask_token_id: int) -> tuple[Tensor, ...]:
    """The token ids around the blanks of ``ids``, whose blank ``k`` is ``slots[k]`` mask tokens."""
    positions = [p for p, i in enumerate(ids) if i == mask_token_id]
    ends = list(accumulate(slots))  # blank k's mask tokens are positions[ends[k] - slots[k]:ends[k]]
    bounds = [0] + [p for n, end in zip(slots, ends) for p in (positions[end - n], positions[end - 1] + 1)]
    return tuple(torch.tensor(ids[a:b], dtype=torch.long) for a, b in zip(bounds[::2], bounds[1::2] + [len(ids)]))


def _content(ids: list[int], tokenizer) -> Tensor:
    """The positions of ``ids`` that are not special tokens (the mask token and ``[UNK]`` are content)."""
    special = set(tokenizer.all_special_ids) - {tokenizer.mask_token_id, tokenizer.unk_token_id}
    return torch.tensor([p for p, i in enumerate(ids) if i not in special], dtype=torch.long)


def _words_in_blanks(text: str, slots: list[int], word: str) -> str:
    """``text`` with ``slots[k]`` copies of ``word`` in blank ``k``."""
    counts = iter(slots)
    return BLANK.sub(lambda m: " ".join([word] * next(counts)), text)


def _align(masked: list[int], probed: list[int], tokenizer, text: str) -> list[int]:
    """``masked`` (the tokenizer's ids of the template with mask tokens) made to agree token for token with
    ``probed`` (its ids with the word "a" in each blank), by dropping the bare space pieces (``Ġ``, ``▁``)
    next to a mask token; raises :class:`InfillError` where a blank's word would not be a token of its own."""
    mask = tokenizer.mask_token_id
    word_start = word_start_a(tokenizer)
    first = tokenizer("a")["input_ids"]  # "a" opening the text, after the special tokens
    out, j = [], 0
    for n, i in enumerate(masked):
        fits = j < len(probed) and (probed[j] == word_start or probed[: j + 1] == first[: j + 1])
        if (i == mask and fits) or (j < len(probed) and i == probed[j] != mask):
            out.append(i)
            j += 1
        elif mask not in masked[max(n - 1, 0) : n + 2] or tokenizer.decode([i]).strip():
            break
    else:
        if j == len(probed):
            return out
    raise InfillError(
        f"a blank of {quote(text)} is glued to the text next to it: the tokenizer would not keep a "
        "word there whole; put a space between the blank and that text"
    )


@lru_cache(maxsize=8)
def _spaces_punctuation(tokenizer) -> bool:
    """Whether decoding puts spaces the text did not have around punctuation (WordPiece: ``"don ' t"``)."""
    return tokenizer.decode(tokenizer("don't", add_special_tokens=False)["input_ids"]) != "don't"


def detokenize(tokenizer, ids) -> str:
    """Text of token ids by the tokenizer's ``decode``; where decoding spaces out punctuation (WordPiece), with
    its clean-up of those spaces (``"don ' t"`` -> ``"don't"``, ``"sir ?"`` -> ``"sir?"``; brackets and quotes
    keep theirs). Byte-level BPE and SentencePiece decode the text exactly and get no clean-up."""
    return tokenizer.decode(
        list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=_spaces_punctuation(tokenizer)
    ).strip()


def fill_text(tokenizer, ids: list[int]) -> str:
    """The text of one blank's fill, decoded after the word ``a`` so that a fill opening with a continuation
    piece (``##ing``, with ``allow_subwords``) reads as the piece's text, never its marker."""
    if not ids:
        return ""
    a = word_start_a(tokenizer)
    prefix, text = detokenize(tokenizer, [a]), detokenize(tokenizer, [a] + list(ids))
    return text[len(prefix) :].strip() if text.startswith(prefix) else detokenize(tokenizer, ids)


def fill_pieces(template: Template, tokenizer, pieces: Sequence[Sequence[int]]) -> tuple[str, list[str]]:
    """The filled text and each blank's fill (as spliced) for the token ids ``pieces[k]`` of blank ``k``'s
    fill (empty for a vanished span)."""
    return template._spliced([fill_text(tokenizer, list(p)) for p in pieces])


def blank_pieces(template: Template, token_ids: Tensor) -> list[list[int]]:
    """The token ids of each blank's fill in a whole sequence ``token_ids (L,)`` laid out as ``template.input_ids``."""
    blank_ids = token_ids[template.blank_positions].tolist()
    return [blank_ids[start : start + n] for start, n in template.spans]


def fill(template: Template, tokenizer, token_ids: Tensor) -> tuple[str, list[str]]:
    """The filled text and each blank's fill (as spliced) for a whole sequence ``token_ids (L,)`` laid out as
    ``template.input_ids``."""
    return fill_pieces(template, tokenizer, blank_pieces(template, token_ids))
