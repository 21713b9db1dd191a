"""``infill.augment``: :meth:`Infiller.augment <infill.pipeline.infiller.Infiller.augment>` without building an
``Infiller``: the model loaded on first use and kept for later calls."""

from __future__ import annotations

from typing import Optional, Sequence, Union

from ..augmentation.variants import Variants
from .augment_request import check_options

_LOADED: dict = {}
"""``infill.augment``'s models, one :class:`~infill.pipeline.infiller.Infiller` per model id and device."""


def augment_texts(
    texts: Union[str, Sequence[str]],
    n: int = 5,
    change: float = 0.15,
    model: Optional[str] = None,
    seed: int = 0,
    device: str = "cpu",
    **options,
) -> Union[Variants, list[Variants]]:
    """``infill.augment``: :meth:`Infiller.augment <infill.pipeline.infiller.Infiller.augment>` on ``model`` (a hub
    id or local path; default ``$INFILL_MODEL`` or ``bert-base-uncased``), loaded on first use and kept for later
    calls; ``options`` are that method's (``protect``, ``min_words``, ``max_words``, ``sampler``, ``pll``,
    ``keep_close``, ``classifier``, ``label``, ``action``), checked before the model loads."""
    from ..lm import default_model
    from .infiller import Infiller

    check_options(n, change, seed, options)
    key = (model or default_model(), str(device))
    if key not in _LOADED:
        _LOADED[key] = Infiller(key[0], device=device)
    return _LOADED[key].augment(texts, n, change, seed, **options)
