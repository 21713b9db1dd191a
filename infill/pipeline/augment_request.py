"""What an augment call asks (:mod:`.augment`), checked without torch: the command line refuses bad arguments, and
``infill augment --out`` locks OUT, before torch is imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..augmentation import words
from ..augmentation.actions import ACTIONS
from ..augmentation.terms import check_terms
from ..errors import check, positive_integer
from ..onepass.methods import ONE_PASS

METHOD = "independent"
"""Augment's default fill: every blank drawn from the masked LM's pass with all of a template's blanks masked
(its draws cost no further pass, so many are drawn and the most likely kept)."""


@dataclass(frozen=True)
class Request:
    """What an augment call asks of every sentence: ``n`` variants, ``change`` of its words (within ``min_words``
    and ``max_words``) chosen by ``seed``, the ``compiled`` protect patterns kept, each change an ``action``."""

    n: int
    change: float
    seed: int
    compiled: tuple
    min_words: int = 1
    max_words: Optional[int] = None
    action: str = "substitute"


def check_request(n, change, seed, min_words, max_words, sampler, action: str = "substitute", pll=True) -> None:
    """Refuse bad arguments in one line (before a model loads)."""
    positive_integer("n", n)
    check(isinstance(pll, bool), f"pll must be true or false, got {pll!r}")
    check(action in ACTIONS, f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    words.check_share(change, min_words, max_words)
    check(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0, f"seed must be >= 0, got {seed!r}")
    draws = [name for name, m in ONE_PASS.items() if m.kind == "one-pass" and m.draw is None]  # the orders
    check(
        sampler in draws,
        f"augment fills with one-pass draws: sampler must be one of {', '.join(draws)}, got {sampler!r}",
    )


def check_options(n, change, seed, options: dict) -> None:
    """:func:`check_request` and :func:`~infill.augmentation.terms.check_terms` on augment's keyword ``options``
    (each default where it is absent)."""
    get, action = options.get, options.get("action", "substitute")
    limits = (get("min_words", 1), get("max_words"))
    check_request(n, change, seed, *limits, get("sampler", METHOD), action, get("pll", True))
    check_terms(get("keep_close", 0.0), get("classifier"), get("label"), action)
