"""Text infilling by MCMC and particles over a masked LM's tokens: ``infill.Infiller(model).sample("The [MASK] sat.")``.

``Infiller`` and ``InfillResult`` are imported on first use, so ``import infill`` stays light.
"""

from __future__ import annotations

__all__ = ["Infiller", "InfillResult"]


def __getattr__(name: str):
    if name == "Infiller":
        from .pipeline.infiller import Infiller

        return Infiller
    if name == "InfillResult":
        from .pipeline.results import InfillResult

        return InfillResult
    raise AttributeError(f"module 'infill' has no attribute {name!r}")
