"""Augment a dataset's batches: one callable for ``datasets.Dataset.map(batched=True)`` and for Ray Data's
``map_batches`` (a worker a model, loaded on its first batch).

    ds.map(AugmentBatches(model="bert-base-uncased", n=5), batched=True, batch_size=64)
    ray_ds.map_batches(AugmentBatches, fn_constructor_kwargs={"n": 5}, concurrency=2, batch_size=64)

A sentence gets the same variants whatever batch, shard or worker it lands in (:func:`~.augment.augment`'s seeds
are the sentence's own), so the result of a cluster run is the one-process result.
"""

from __future__ import annotations

from typing import Mapping, Optional

from .augment_request import check_options


class AugmentBatches:
    """A batch (a mapping of columns, ``column`` the sentences) in, the batch out with ``variants`` (each
    sentence's variant texts, best first), ``edits`` (each variant's edits as dicts: spans in the source and the
    variant, old and new text) and ``shortfall`` (how many fewer than ``n`` each sentence has). The other
    arguments are :func:`infill.augment`'s."""

    def __init__(
        self,
        model: Optional[str] = None,
        n: int = 5,
        change: float = 0.15,
        seed: int = 0,
        column: str = "text",
        device: str = "cpu",
        **options,
    ):
        check_options(n, change, seed, options)
        self.column, self.model, self.device = column, model, device
        self.n, self.change, self.seed, self.options = n, change, seed, options

    def __call__(self, batch: Mapping) -> dict:
        from .augment_texts import augment_texts

        texts = [str(text) for text in batch[self.column]]
        found = augment_texts(texts, self.n, self.change, self.model, self.seed, self.device, **self.options)
        return {
            **batch,
            "variants": [[v.text for v in variants] for variants in found],
            "edits": [[[e.to_dict() for e in v.edits] for v in variants] for variants in found],
            "shortfall": [variants.shortfall for variants in found],
        }
