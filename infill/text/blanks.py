"""Template syntax, checked without a tokenizer (and without torch): the written blanks of a text.

``[MASK]`` and ``[MASK*n]`` are blanks of exactly 1 or ``n`` units (tokens, or words with
``blank_unit="word"``); ``[MASK*m-n]`` is a span of ``m`` to ``n`` words (``0 <= m <= n <= 16``;
``m = 0`` lets it vanish) and ``[MASK*?]`` is ``[MASK*1-4]``. A blank fills whole words: it must not be
glued to a letter or digit (``un[MASK]``). :func:`scan` raises one line for every error it can find
from the text alone, so the CLI answers them before it loads anything (see :mod:`infill.text.template`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..errors import InfillError

BLANK = re.compile(r"\[MASK(?:\s*\*\s*(?:(\d+)(?:\s*-\s*(\d+))?|(\?)))?\]")
MAX_SPAN = 16  # words in a span [MASK*m-n]
ANY_LENGTH = (1, 4)  # [MASK*?]
QUOTED = 80  # characters of a template an error message quotes
UNITS = ("token", "word")


@dataclass(frozen=True)
class Blank:
    """A written blank: ``text[start:end]`` is ``[MASK...]``; it takes ``min`` to ``max`` tokens
    (``unit="token"``) or words of any pieces (``unit="word"``)."""

    start: int
    end: int
    unit: str
    min: int
    max: int


def scan(text: str, blank_unit: str = "token") -> tuple[Blank, ...]:
    """The written blanks of ``text``; raises :class:`InfillError` for a template without blanks, of
    blanks only, with a malformed, empty or inverted blank, or a blank glued to a word."""
    if blank_unit not in UNITS:
        raise InfillError(f"blank unit must be 'token' or 'word', got {blank_unit!r}")
    blanks = tuple(_blank(m, blank_unit, text) for m in BLANK.finditer(text))
    rest = BLANK.sub(" ", text)
    if "[MASK" in rest.upper():
        bad = re.search(r"\[MASK[^\]\[]*\]?", rest, re.IGNORECASE)
        raise InfillError(
            f"malformed blank {bad.group()!r} in {quote(text, bad.start())}; write [MASK], "
            "[MASK*N], [MASK*M-N] or [MASK*?]"
        )
    if not blanks:
        raise InfillError(f"template has no [MASK] blank: {quote(text)}")
    if not rest.strip():
        raise InfillError(f"template is only blanks; give some context around them: {quote(text)}")
    for b in blanks:
        if _glued(text, b):
            raise InfillError(
                f"blank {text[b.start : b.end]} is glued to {_glued(text, b)!r} in "
                f"{quote(text, b.start)}; a blank fills whole words: put a space between them"
            )
    return blanks


def _blank(m: re.Match, unit: str, text: str) -> Blank:
    """The :class:`Blank` of a written ``[MASK...]``; raises :class:`InfillError` for an empty or
    inverted one."""
    count, upper, any_length = m.groups()
    where = quote(text, m.start())
    if any_length or upper is not None:
        low, high = ANY_LENGTH if any_length else (int(count), int(upper))
        if low > high:
            raise InfillError(f"blank {m.group()} in {where}: a span [MASK*M-N] needs M <= N")
        if high == 0:
            raise InfillError(f"blank {m.group()} in {where}: a span must allow at least one word")
        if high > MAX_SPAN:
            raise InfillError(f"blank {m.group()} in {where}: a span has at most {MAX_SPAN} words")
        return Blank(m.start(), m.end(), "word", low, high)
    n = int(count or 1)
    if n < 1:
        raise InfillError(
            f"a blank must have at least one {unit}, got {m.group()} in {where}; write "
            "[MASK*0-N] for a span that may vanish"
        )
    return Blank(m.start(), m.end(), unit, n, n)


def quote(text: str, at: Optional[int] = None) -> str:
    """``text`` quoted, at most about :data:`QUOTED` characters: a long one is cut to the part around
    character ``at`` (the blank or token an error is about) or to its start, with ``...`` for the rest."""
    if len(text) <= QUOTED:
        return repr(text)
    start = 0 if at is None else max(0, min(at - QUOTED // 2, len(text) - QUOTED))
    return ("..." if start else "") + repr(text[start : start + QUOTED]) + ("..." if start + QUOTED < len(text) else "")


def _glued(text: str, blank: Blank) -> str:
    """The letter or digit a blank is glued to (``un[MASK]``, ``[MASK]ing``), or ``""``."""
    around = text[blank.start - 1 : blank.start] + text[blank.end : blank.end + 1]
    return next((c for c in around if c.isalnum()), "")
