"""The masked LM: loading it and its prediction head (:mod:`.models`), its own draws (:mod:`.mlm_draws`) and
PLL scoring (:mod:`.scoring`). Its energies are :mod:`infill.energies`."""

from __future__ import annotations

import os

DEFAULT_MODEL = "bert-base-uncased"


def default_model() -> str:
    """``$INFILL_MODEL`` if set, else ``bert-base-uncased``."""
    return os.environ.get("INFILL_MODEL") or DEFAULT_MODEL
