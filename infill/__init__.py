"""Text infilling by MCMC and particles over a masked LM's tokens: ``infill.Infiller(model).sample("The [MASK] sat.")``;
``infill.pipeline(model=...)`` is the joint fill-mask pipeline (:mod:`infill.pipeline.fill_mask`);
``infill.augment(texts, n=5)`` variants of sentences for training data (:mod:`infill.pipeline.augment`), and
``infill.AugmentBatches`` the same over a dataset's batches (``datasets``, Ray Data).

Each name is imported on first use, so ``import infill`` stays light.
"""

from __future__ import annotations

__all__ = ["AugmentBatches", "Infiller", "InfillResult", "augment", "pipeline"]


def __getattr__(name: str):
    if name == "Infiller":
        from .pipeline.infiller import Infiller

        return Infiller
    if name == "InfillResult":
        from .pipeline.results import InfillResult

        return InfillResult
    if name == "augment":
        from .pipeline.augment_texts import augment_texts

        return augment_texts
    if name == "AugmentBatches":
        from .pipeline.augment_batches import AugmentBatches

        return AugmentBatches
    if name == "pipeline":  # the package, callable (infill/pipeline/__init__.py)
        import importlib

        return importlib.import_module(".pipeline", __name__)
    raise AttributeError(f"module 'infill' has no attribute {name!r}")
