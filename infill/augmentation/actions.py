"""Augment's actions, as nlpaug names them: where each one edits a sentence. A :class:`Site` a word: ``substitute``
replaces the word's core (an unprotected word the model spells as one token) with a blank's fill; ``insert`` puts
a blank's fill and a space before the word (where neither it nor the word before it is protected); ``delete``
removes the word with the space before it (an unprotected word with no punctuation of its own, not the first), no
blank drawn. A blank's fill is never a word beside it (``his car car``) nor, unless the word it replaces is one
letter, a lone letter (``to t``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

from .words import Word

ACTIONS = ("substitute", "insert", "delete")


@dataclass(frozen=True)
class Site:
    """``text[start:end]`` (``old``) becomes ``form`` with the blank's fill in place of ``{}`` (no ``{}``: no
    blank); the blank's draws are kept off the words ``avoid`` (the word it replaces and the words beside it) and,
    where ``old`` is not one letter, off lone letters (:attr:`letters`)."""

    start: int
    end: int
    form: str
    old: str
    avoid: tuple[str, ...] = ()

    @property
    def blank(self) -> bool:
        return "{}" in self.form

    @property
    def letters(self) -> bool:
        """Whether the blank may take a lone letter."""
        return len(self.old) == 1


def sites(text: str, words: Sequence[Word], action: str, one_token: Collection[int]) -> dict[int, Site]:
    """Each word index ``action`` may edit, with its site (``one_token``: the unprotected words the model spells
    as one token)."""
    cores = [w.core(text) for w in words]
    if action == "substitute":
        return {
            i: Site(words[i].core_start, words[i].core_end, "{}", cores[i], tuple(cores[max(i - 1, 0) : i + 2]))
            for i in one_token
        }
    if action == "insert":
        return {
            i: Site(w.start, w.start, "{} ", "", (cores[i - 1], cores[i]))
            for i, w in enumerate(words)
            if i and not w.why + words[i - 1].why
        }
    return {
        i: Site(words[i - 1].end, w.end, "", text[words[i - 1].end : w.end])
        for i, w in enumerate(words)
        if i and not w.why and (w.start, w.end) == (w.core_start, w.core_end)
    }
