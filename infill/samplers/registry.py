"""The MCMC samplers' entries in the one registry (:mod:`infill.lm.registry`) and the one :func:`make_sampler`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import InfillError
from ..lm import registry
from ..lm.registry import SAMPLERS
from .adaptive import Adapted
from .base import Sampler, option_fields, options_of


@dataclass(frozen=True)
class Chains(registry.Method):
    """An MCMC sampler's entry: chains of its ``sampler`` class, which take every run setting."""

    kind: str = "chains"
    untaken: tuple[str, ...] = ()
    sampler: type = None

    def options(self) -> dict:
        """The sampler's hyperparameters with their defaults (its adaptation's too, where it is tuned)."""
        cls = self.sampler
        options = {f.name: f.default for f in option_fields(cls)}
        return options if cls.adaptation is None else {**options, **options_of(cls.adaptation)}


def register(cls):
    """Class decorator: register a sampler or kernel dataclass under its ``name``
    (:func:`infill.lm.registry.register`, a :class:`Chains` entry)."""
    registry.register(Chains(cls.name, sampler=cls))
    return cls


def sampler_options(name: str) -> dict:
    """Hyperparameter names of sampler ``name`` with their defaults."""
    return registry.METHODS[name].options()


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
