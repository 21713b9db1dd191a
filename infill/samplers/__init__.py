"""Samplers by name: ``make_sampler("dmala", step_size=0.5)``, run by ``sample(sampler, energy, x0, steps)``.

Every sampler is an ``init``/``step`` pair (:class:`.base.Sampler`); one that is tuned comes wrapped in its
default adaptation (:class:`.adaptive.Adapted`, itself a sampler), whose options are the sampler's
hyperparameters too.
"""

from __future__ import annotations

import dataclasses

from ..errors import InfillError
from .adaptive import Adapted, StepSize
from .base import Adaptation, Sampler, State, StepInfo, Trace, Tuning, option_fields, options_of, sample_categorical
from .driver import FIELDS, sample
from .registry import SAMPLERS, register
from .runner import run_annealed

# Importing the modules registers their samplers, in this order (after the base modules).
from . import auxiliary_gaussian, mlm_block, presets  # noqa: E402, F401


def sampler_options(name: str) -> dict:
    """Hyperparameter names of sampler ``name`` with their defaults."""
    cls = SAMPLERS[name]
    options = {f.name: f.default for f in option_fields(cls)}
    return options if cls.adaptation is None else {**options, **options_of(cls.adaptation)}


def make_sampler(name: str, **hyperparameters) -> Sampler:
    """The sampler registered as ``name`` with the given hyperparameters (others at their defaults)."""
    if name not in SAMPLERS:
        raise InfillError(f"unknown sampler {name!r}; choose from {', '.join(sorted(SAMPLERS))}")
    cls = SAMPLERS[name]
    known = sampler_options(name)
    unknown = sorted(set(hyperparameters) - set(known))
    if unknown:
        options = ", ".join(sorted(known)) or "none"
        raise InfillError(f"sampler {name!r} has no option {unknown[0]!r} (its options: {options})")
    own = {f.name for f in option_fields(cls)}
    try:
        sampler = cls(**{k: v for k, v in hyperparameters.items() if k in own})
        if cls.adaptation is not None:
            tuning = {k: v for k, v in hyperparameters.items() if k not in own}
            sampler = Adapted(sampler, dataclasses.replace(cls.adaptation, **tuning))
        return sampler
    except InfillError:
        raise
    except (TypeError, ValueError) as exc:  # e.g. step_size = "x"
        raise InfillError(f"bad option for sampler {name!r}: {exc}") from None


__all__ = [
    "FIELDS",
    "SAMPLERS",
    "Adaptation",
    "Adapted",
    "Sampler",
    "State",
    "StepInfo",
    "StepSize",
    "Trace",
    "Tuning",
    "make_sampler",
    "register",
    "run_annealed",
    "sample",
    "sample_categorical",
    "sampler_options",
]
