"""The documented path of :class:`~infill.pipeline.config.RunConfig` (``from infill.config import RunConfig``)."""

from .pipeline.config import RunConfig

__all__ = ["RunConfig"]
