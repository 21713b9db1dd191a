"""Augment's actions, as nlpaug names them: where each one edits a sentence. A :class:`Site` a word: ``substitute``
replaces the word's core (an unprotected word the model spells as one token) with a blank's fill; ``insert`` puts
a blank's fill and a space before the word (where neither it nor the word before it is protected); ``delete``
removes the word with the space before it (an unprotected word with no punctuation of its own, not the first), no
blank drawn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

from .words import Word

ACTIONS = ("substitute", "insert", "delete")


@dataclass(frozen=True)
class Site:
    """``text[start:end]`` (``old``) becomes ``form`` with the blank's fill in place of ``{}`` (no ``{}``: no
    blank); the blank's draws are kept off the words ``avoid`` (the word it replaces; an insert's neighbours)."""

    start: int
    end: int
    form: str
    old: str
    avoid: tuple[str, ...] = ()

    @property
    def blank(self) -> bool:
        return "{}" in self.form


def sites(text: str, words: Sequence[Word], action: str, one_token: Collection[int]) -> dict[int, Site]:
    """Each word index ``action`` may edit, with its site (``one_token``: the unprotected words the model spells
    as one token)."""
    if action == "substitute":
        return {
            i: Site(words[i].core_start, words[i].core_end, "{}", words[i].core(text), (words[i].core(text),))
            for i in one_token
        }
    if action == "insert":
        return {
            i: Site(w.start, w.start, "{} ", "", (words[i - 1].core(text), w.core(text)))
            for i, w in enumerate(words)
            if i and not w.why + words[i - 1].why
        }
    return {
        i: Site(words[i - 1].end, w.end, "", text[words[i - 1].end : w.end])
        for i, w in enumerate(words)
        if i and not w.why and (w.start, w.end) == (w.core_start, w.core_end)
    }
