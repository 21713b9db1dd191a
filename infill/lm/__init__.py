"""The masked LM: loading it and its prediction head (:mod:`.models`), its own draws (:mod:`.mlm_draws`) and
PLL scoring (:mod:`.scoring`). Its energies are :mod:`infill.energies`."""

from __future__ import annotations

import os

DEFAULT_MODEL = "bert-base-uncased"
SCORE_WINDOW = 128
"""Tokens of text in each masked copy of a text longer than the model (:func:`infill.lm.scoring.score`'s
``window``; the model's maximum where that is fewer); a text the model takes is scored whole. Chosen for speed
on long texts at a small change of their scores (``eval/score-window-minilm/``)."""
MIN_SCORE_WINDOW = 16
"""The least ``window`` scoring takes."""


def default_model() -> str:
    """``$INFILL_MODEL`` if set, else ``bert-base-uncased``."""
    return os.environ.get("INFILL_MODEL") or DEFAULT_MODEL
