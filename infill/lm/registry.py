"""The one registry of every method a user can name (:data:`METHODS`), filled by the one :func:`register`.

The MCMC samplers register a ``chains`` entry each (:class:`infill.samplers.registry.Chains`, through the
``@register`` class decorator of :mod:`infill.samplers`); :mod:`infill.onepass.methods` registers the one-pass
orders, ``smc`` and ``product-search`` (:class:`infill.onepass.methods.OnePass`). Each entry holds the method's
name, its kind of run, the run settings it refuses and, by its kind, its options, cost and what it draws.
:data:`SAMPLERS` and :data:`ONE_PASS` are read-only views of it by kind.

It lives with the masked LM, below the samplers that register into it, and imports nothing: the configuration
reads the one-pass methods before torch loads (the samplers' entries appear once :mod:`infill.samplers` is
imported).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Iterator, Optional

CHAIN_SETTINGS = ("steps", "init", "anneal_from")
"""The run settings of chains, which no one-pass method takes."""

KINDS = ("chains", "one-pass", "particles", "search")
"""The kinds of method, in the order ``infill samplers`` lists them."""

RESERVED = ("auto",)
"""Names no entry takes: :data:`infill.pipeline.config.AUTO`, which picks a method by the blanks."""

BUILT_IN_SAMPLERS = (
    "avg",
    "pavg",
    "dula",
    "dmala",
    "ncg",
    "una",
    "mana",
    "dlmc",
    "dlmcf",
    "gwg",
    "pas",
    "lb",
    "gibbs",
    "gibbs-mh",
    "block-mh",
    "mlm-independence",
)
"""The MCMC samplers that importing :mod:`infill.samplers` registers, in that order (a test holds the two equal):
named here, so that a sampler's name is known, and an unknown one refused, before torch loads
(:func:`sampler_names`)."""

SPAN_METHODS = ("rjmcmc", "per-length")
"""How word blanks are filled (``--span-method``, :mod:`infill.spans`): reversible-jump MH that changes lengths, or
chains pinned at every combination of the blanks' lengths, the best chosen by the same energy."""


@dataclass(frozen=True)
class Method:
    """A method: ``kind`` one of :data:`KINDS`; ``untaken`` the run settings it refuses; ``needs_top`` where it
    looks for the best fillings rather than sampling; ``greedy`` where it takes each blank's most likely tokens
    (on one blank token the ``top`` most likely, the exact best; on more, one filling)."""

    name: str
    kind: str = "one-pass"
    untaken: tuple[str, ...] = CHAIN_SETTINGS
    needs_top: bool = False
    greedy: bool = False

    def options(self) -> dict:
        """The method's options with their defaults (none here; each kind's entry says its own)."""
        return {}


METHODS: dict[str, Method] = {}
"""Every method registered, by name, in the order registered."""


def register(method: Method) -> Method:
    """Add ``method`` under a name no method has; it then works wherever a method's name does
    (``Infiller.sample(sampler=...)``, ``infill sample --sampler`` once its module is imported, ``infill
    samplers``)."""
    if method.name in METHODS or method.name in RESERVED:
        raise ValueError(f"a method named {method.name!r} exists")
    METHODS[method.name] = method
    return method


class View(Mapping):
    """The entries of :data:`METHODS` of some ``kinds``, by name in the order registered, read-only and always
    current (``attribute``: each entry's attribute of that name instead)."""

    def __init__(self, kinds: tuple[str, ...], attribute: Optional[str] = None):
        self.kinds = kinds
        self.attribute = attribute

    def __getitem__(self, name: str):
        method = METHODS[name]
        if method.kind not in self.kinds:
            raise KeyError(name)
        return method if self.attribute is None else getattr(method, self.attribute)

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, method in METHODS.items() if method.kind in self.kinds])

    def __len__(self) -> int:
        return sum(method.kind in self.kinds for method in METHODS.values())

    def __repr__(self) -> str:
        return f"View({dict(self)!r})"


SAMPLERS = View(KINDS[:1], "sampler")
"""The MCMC samplers' classes by name."""
ONE_PASS = View(KINDS[1:])
"""The one-pass methods (one-pass orders, particles, search) by name, in the order registered."""


def sampler_names() -> list[str]:
    """Every MCMC sampler's name, sorted: the package's (:data:`BUILT_IN_SAMPLERS`, imported or not) and any
    registered since (``docs/own-sampler.md``). Imports nothing."""
    return sorted({*BUILT_IN_SAMPLERS, *SAMPLERS})
