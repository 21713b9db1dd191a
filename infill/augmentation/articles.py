"""English articles that fit the word after them: a variant whose edit puts ``an`` before a consonant (``an
loss``) or ``a`` before a vowel (``a old``) is dropped, a masked LM's PLL rarely telling the two apart. The rule
reads the first letter and judges only where it is plain: not a word starting with ``h``, ``u`` or ``x`` (``an
hour``, ``a unit``, ``an x-ray``), ``one``/``once``/``eu`` (``a one``, ``a euro``) nor a capitalised acronym (``an
FBI agent``). (``inflect`` says it for every word but takes seconds to import.)"""

from __future__ import annotations

import re
from typing import Iterable

PAIR = re.compile(r"\b(an?)\s+([A-Za-z][A-Za-z'-]*)", re.IGNORECASE)
UNSURE = re.compile(r"[hux]|one|once|eu", re.IGNORECASE)


def fits(article: str, word: str) -> bool:
    """Whether ``article`` (``a`` or ``an``) may stand before ``word``."""
    if UNSURE.match(word) or word[:2].isupper():
        return True
    return (article.casefold() == "an") == (word[0].casefold() in "aeio")


def agree(text: str, spans: Iterable[tuple[int, int]]) -> bool:
    """Whether every article of ``text`` that touches one of the ``spans`` (a changed word's place: its span, or the
    point where a word was deleted) fits the word after it; the articles elsewhere are the user's."""
    spans = list(spans)
    for pair in PAIR.finditer(text):
        if any(pair.start() <= end and pair.end() >= start for start, end in spans):
            if not fits(pair.group(1), pair.group(2)):
                return False
    return True
