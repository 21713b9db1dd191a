"""The masked LM: loading it and its prediction head (:mod:`.models`), its own draws (:mod:`.mlm_draws`) and
PLL scoring (:mod:`.scoring`). Its energies are :mod:`infill.energies`."""

from __future__ import annotations

import os

DEFAULT_MODEL = "bert-base-uncased"
SCORE_WINDOW = 128
"""Tokens of text in each masked copy of a text longer than them (:func:`infill.lm.scoring.score`'s ``window``;
the model's maximum where that is fewer). A text of at most this many tokens is scored whole. On the dev MLM a
long text's token costs 5x fewer CPU seconds than at BERT's 510, its texts' PLL per token moves by 5% and their
order by it as little as the model's own noise moves it (``eval/score-window-minilm/``)."""
MIN_SCORE_WINDOW = 16
"""The least ``window`` scoring takes."""


def default_model() -> str:
    """``$INFILL_MODEL`` if set, else ``bert-base-uncased``."""
    return os.environ.get("INFILL_MODEL") or DEFAULT_MODEL
