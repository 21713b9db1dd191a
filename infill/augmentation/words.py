"""Which words of a sentence augment may change, without a model: the sentence split into whitespace words (exact
characters and offsets), each word's alphabetic core (``dogs,`` -> ``dogs``: punctuation around it stays), the
words protected (numbers, URLs, e-mails, ids, the user's words and patterns) and each variant's choice of those to
change, drawn from a generator seeded by the seed and the sentence's text, so a sentence gets the same choices in
any batch at any position."""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from ..errors import InfillError, check, is_integer, is_number
from ..text.blanks import quote

SPACE_WORD = re.compile(r"\S+")
EDGE = re.compile(r"^[\W_]*(.*?)[\W_]*$", re.DOTALL)  # a word's core: its punctuation (and _) at both ends off
URL = re.compile(r"://|^(?:www\.)|^[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}(?:/\S*)?$", re.IGNORECASE)
LITERAL = re.compile(r"[\w' -]+")  # a protect item of words alone is a phrase, matched as words ignoring case
NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "billion trillion dozen".split()
)
"""English number words: numbers as much as digits are."""
SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
TITLES = frozenset("mr mrs ms dr prof st jr sr".split())
"""Abbreviations whose full stop ends no sentence (``Dr. Alice``: a name follows); with it, part of the name."""
TRIES = 8
"""Draws of a variant's choice of words before it may repeat an earlier variant's (:func:`choose`)."""


@dataclass(frozen=True)
class Word:
    """A whitespace word of the sentence: ``text[start:end]``, its core ``text[core_start:core_end]`` (what a
    change replaces) and ``why`` it is protected (``""``: it is not)."""

    start: int
    end: int
    core_start: int
    core_end: int
    why: str = ""

    def core(self, text: str) -> str:
        return text[self.core_start : self.core_end]


def split(text: str) -> list[Word]:
    """The whitespace words of ``text`` with their cores (a word of punctuation alone has an empty core)."""
    words = []
    for m in SPACE_WORD.finditer(text):
        core = EDGE.match(m.group())
        words.append(Word(m.start(), m.end(), m.start() + core.start(1), m.start() + core.end(1)))
    return words


def patterns(protect: Iterable[str]) -> tuple[re.Pattern, ...]:
    """The user's ``protect`` items compiled: an item of word characters, spaces, apostrophes and hyphens alone is
    a phrase matched as whole words ignoring case (``New York``); any other a regular expression, as written
    (``(?i)`` makes it ignore case). A bad expression is refused in one line."""
    if isinstance(protect, str) or not isinstance(protect, Iterable):
        raise InfillError(f"protect must be a list of words or regular expressions, got {protect!r}")
    compiled = []
    for item in protect:
        check(isinstance(item, str) and item.strip() != "", f"a protect item must be a non-empty string, got {item!r}")
        if LITERAL.fullmatch(item):
            compiled.append(re.compile(rf"(?<!\w){re.escape(item.strip())}(?!\w)", re.IGNORECASE))
            continue
        try:
            compiled.append(re.compile(item))
        except re.error as exc:
            raise InfillError(f"protect pattern {item!r} is not a regular expression: {exc}") from None
    return tuple(compiled)


def protection(text: str, word: Word, user: Sequence[tuple[int, int]], starts: bool = True) -> str:
    """Why ``word`` of ``text`` stays as written (``""``: it may change): a number (any digit, or a number word), a
    URL, an e-mail, an id (all capitals, 2 letters or more), a title with its full stop (``Dr.``), a name
    (Capitalised, not where a sentence starts), a word with no letters at its core or other than letters inside it
    (``don't``, ``well-known``), or a match of the user's patterns (``user``: their spans in ``text``); ``starts``:
    the word starts a sentence."""
    whole, core = text[word.start : word.end], word.core(text)
    if numeric(whole):
        return "number"
    if "@" in whole:
        return "e-mail"
    if URL.search(whole):
        return "url"
    if not core or not core.isalpha():
        return "not a word"
    if len(core) >= 2 and core.isupper():
        return "id"
    if whole.endswith(".") and core.casefold() in TITLES:
        return "title"
    if core[:1].isupper() and not starts:
        return "name"
    if any(start < word.end and word.start < end for start, end in user):
        return "protected"
    return ""


def numeric(word: str) -> bool:
    """Whether ``word`` is a number: it holds a digit, or its core is a number word."""
    return any(c.isdigit() for c in word) or EDGE.match(word).group(1).casefold() in NUMBER_WORDS


def _ends_sentence(word: str) -> bool:
    return bool(SENTENCE_END.search(word)) and word.rstrip(".").casefold() not in TITLES


def protected(text: str, compiled: Sequence[re.Pattern] = ()) -> list[Word]:
    """:func:`split`'s words of ``text``, each with why it is protected (:func:`protection`; a word starts a
    sentence where it is the first or the word before ends in ``.``, ``!`` or ``?``, a title's full stop aside)."""
    user = [m.span() for p in compiled for m in p.finditer(text) if m.end() > m.start()]
    found = split(text)
    starts = [True] + [_ends_sentence(text[w.start : w.end]) for w in found[:-1]]
    return [
        Word(w.start, w.end, w.core_start, w.core_end, protection(text, w, user, first))
        for w, first in zip(found, starts)
    ]


def checked(text: str, compiled: Sequence[re.Pattern] = ()) -> list[Word]:
    """:func:`protected`'s words of ``text``, a text augment cannot change refused in one line: not a string,
    empty, holding a ``[MASK]`` blank, or every word protected (what is checked without a model)."""
    check(isinstance(text, str), f"augment takes sentences (strings), got {type(text).__name__}")
    check(text.strip() != "", "the sentence is empty: give one with words to change")
    check("[MASK" not in text.upper(), f"augment takes plain text; {quote(text)} has a [MASK] blank")
    found = protected(text, compiled)
    check(any(not w.why for w in found), nothing_to_change(text))
    return found


def nothing_to_change(text: str, action: str = "substitute") -> str:
    """The refusal of a sentence without a word augment's ``action`` may change."""
    return f"nothing to change in {quote(text)}: every word is protected (numbers, names, URLs, e-mails, ids, " + (
        "protect) or several tokens for this model" if action == "substitute" else f"protect) or no place to {action}"
    )


def count(words: int, change: float, min_words: int, max_words: Optional[int]) -> int:
    """How many words to change: ``change x words`` rounded (half up), clipped to ``[min_words, max_words]``."""
    k = int(change * words + 0.5)
    k = max(k, min_words)
    return k if max_words is None else min(k, max_words)


def check_share(change, min_words, max_words) -> None:
    """Refuse, in one line, a change share outside (0, 1) or word bounds that are not ``1 <= min <= max``."""
    check(is_number(change, 0, 1, True, True), f"change must be a share strictly between 0 and 1, got {change!r}")
    check(is_integer(min_words, 1), f"min_words must be a positive integer, got {min_words!r}")
    if max_words is not None:
        check(is_integer(max_words, 1), f"max_words must be a positive integer, got {max_words!r}")
        check(min_words <= max_words, f"min_words ({min_words}) must be at most max_words ({max_words})")


def seed_of(seed: int, text: str) -> int:
    """A 63-bit seed from ``seed`` and ``text`` (SHA-256, the same in every process and batch)."""
    digest = hashlib.sha256(f"{seed}\0{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def choose(changeable: Sequence[int], k: int, seed: int, n: int = 1) -> list[tuple[int, ...]]:
    """``n`` choices (one a variant) of ``k`` of the ``changeable`` word indices (all of them where there are
    fewer), each in order, drawn by a generator seeded with ``seed`` (:func:`seed_of`): each choice takes the words
    the earlier ones used least, ties broken at random, none beside another (:func:`spread`), and draws again (up
    to :data:`TRIES` times, then beside one another as often) a set an earlier choice took, so the variants change
    different words while there are sets enough."""
    rng, used, out = random.Random(seed), dict.fromkeys(changeable, 0), []
    for _ in range(n):
        out.append(_fresh(rng, used, k, out))
        for i in out[-1]:
            used[i] += 1
    return out


def _fresh(rng: random.Random, used: dict[int, int], k: int, taken: list[tuple[int, ...]]) -> tuple[int, ...]:
    for pick in (spread, lambda order, k: order[:k]):
        for _ in range(TRIES):
            order = sorted(used, key=lambda i: (used[i], rng.random()))
            chosen = tuple(sorted(pick(order, k)))
            if chosen not in taken:
                return chosen
    return chosen


def spread(order: Sequence[int], k: int) -> list[int]:
    """``k`` of the word indices ``order`` (all where there are fewer), first in order those beside none taken
    before them, then the first of the others: blanks filled from one pass fit their neighbours, not each other."""
    taken: list[int] = []
    for i in order:
        if len(taken) < k and i - 1 not in taken and i + 1 not in taken:
            taken.append(i)
    return taken + [i for i in order if i not in taken][: k - len(taken)]
