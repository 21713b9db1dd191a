"""Samplers by name: ``make_sampler("dmala", step_size=0.5)``, run by ``sample(sampler, energy, x0, steps)``.

Every sampler is an ``init``/``step`` pair (:class:`.base.Sampler`); one that is tuned comes wrapped in its
default adaptation (:class:`.adaptive.Adapted`, itself a sampler), whose options are the sampler's
hyperparameters too.
"""

from __future__ import annotations

from .adaptive import Adapted, StepSize
from .base import Adaptation, Sampler, State, StepInfo, Trace, Tuning, option_fields, options_of, sample_categorical
from .driver import FIELDS, sample
from .registry import SAMPLERS, make_sampler, register, sampler_options
from .runner import run_annealed

# Importing the modules registers their samplers, in this order (after the base modules).
from . import auxiliary_gaussian, mlm_block, presets  # noqa: E402, F401


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
    "option_fields",
    "options_of",
    "register",
    "run_annealed",
    "sample",
    "sample_categorical",
    "sampler_options",
]
