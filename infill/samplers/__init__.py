"""Samplers by name: ``make_sampler("dmala", step_size=0.5)``."""
from __future__ import annotations

import dataclasses

from ..errors import InfillError
from .base import Sampler, State, StepInfo, Trace, Tuning, sample_categorical
from .registry import SAMPLERS, register
from .runner import run_annealed

# Importing the modules registers their samplers.
from . import auxiliary_gaussian, presets  # noqa: E402,F401


def make_sampler(name: str, **hyperparameters) -> Sampler:
    """The sampler registered as ``name`` with the given hyperparameters (others at their defaults)."""
    if name not in SAMPLERS:
        raise InfillError(f"unknown sampler {name!r}; choose from {', '.join(sorted(SAMPLERS))}")
    cls = SAMPLERS[name]
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(hyperparameters) - known)
    if unknown:
        options = ", ".join(sorted(known)) or "none"
        raise InfillError(f"sampler {name!r} has no option {unknown[0]!r} (its options: {options})")
    try:
        return cls(**hyperparameters)
    except InfillError:
        raise
    except (TypeError, ValueError) as exc:  # e.g. step_size = "x"
        raise InfillError(f"bad option for sampler {name!r}: {exc}") from None


def sampler_options(name: str) -> dict:
    """Hyperparameter names of sampler ``name`` with their defaults."""
    return {f.name: f.default for f in dataclasses.fields(SAMPLERS[name])}


__all__ = ["SAMPLERS", "Sampler", "State", "StepInfo", "Trace", "Tuning", "make_sampler", "register",
           "run_annealed", "sample_categorical", "sampler_options"]
