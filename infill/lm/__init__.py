"""The masked LM: loading it and its prediction head (:mod:`.models`), its own draws (:mod:`.mlm_draws`) and
PLL scoring (:mod:`.scoring`). Its energies are :mod:`infill.energies`."""

from __future__ import annotations

import os

DEFAULT_MODEL = "bert-base-uncased"
SCORE_WINDOW = 128
"""Tokens of text in each masked copy of a text longer than them (:func:`infill.lm.scoring.score`'s ``window``;
the model's maximum where that is fewer). A text of at most this many tokens is scored whole."""
MIN_SCORE_WINDOW = 16
"""The least ``window`` scoring takes."""


def default_model() -> str:
    """``$INFILL_MODEL`` if set, else ``bert-base-uncased``."""
    return os.environ.get("INFILL_MODEL") or DEFAULT_MODEL
