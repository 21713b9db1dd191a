"""The name -> sampler (or kernel) class registry."""

from __future__ import annotations

SAMPLERS: dict[str, type] = {}


def register(cls):
    """Class decorator: register a sampler or kernel dataclass under its ``name``."""
    SAMPLERS[cls.name] = cls
    return cls
