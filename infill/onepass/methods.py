"""The one-pass methods' entries in the one registry (:mod:`infill.lm.registry`), and :func:`methods`, every
method a user can name: the MCMC samplers (``chains``, :class:`infill.samplers.registry.Chains`) and the one-pass
methods (:data:`ONE_PASS`), each with its name, its kind of run, its options with their defaults, the run
settings it refuses, what one draw of it costs and what it draws.

A one-pass method draws (or searches for) fillings without chains, so it takes no ``steps``, chain ``init`` or
``anneal_from``; ``argmax`` draws the most likely token at each blank, so it takes no ``temperature`` either; the
product search finds the ``top`` most likely fillings, so it takes neither ``temperature`` nor ``num_samples``.
A new method of draws is one :func:`register` call of its :class:`OnePass` entry with its ``draw`` function
(``docs/own-sampler.md``); a new kind of run is a branch in :func:`infill.pipeline.runs.draws.draw`. Nothing here
imports torch at module level: the configuration reads the names and what each takes before a model loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..lm.registry import CHAIN_SETTINGS, KINDS, METHODS, ONE_PASS, Method, register

__all__ = ["CHAIN_SETTINGS", "KINDS", "ONE_PASS", "Method", "OnePass", "methods", "register"]


@dataclass(frozen=True)
class OnePass(Method):
    """A one-pass method: ``kind`` is ``one-pass`` (draws from the masked LM), ``particles`` (:mod:`.particles`)
    or ``search`` (:mod:`.product_search`). A method of draws has ``draw(energy, n, generator, temperature) ->
    (n, d)`` category indices and ``passes(d)``, the forward passes one draw takes on ``d`` blank tokens (the
    first, with every blank masked, shared by the draws); without them it is the order of its name in
    :func:`infill.lm.mlm_draws.draw`."""

    draw: Optional[Callable] = None
    passes: Optional[Callable[[int], int]] = None

    def __post_init__(self):
        if (self.draw is None) != (self.passes is None) or (self.draw is not None and self.kind != "one-pass"):
            raise ValueError("a one-pass method of its own draws: give its draw and passes")

    def settings(self, options: dict):
        """The method's hyperparameters checked (the particles' :class:`~.particles.SMC`; None: it has none)."""
        if self.kind != "particles":
            return None
        from .particles import SMC

        return SMC(**options)

    def options(self) -> dict:
        """The method's options with their defaults (no one-pass method's but the particles')."""
        from ..samplers import options_of

        settings = self.settings({})
        return {} if settings is None else options_of(settings)

    def cost(self, options: dict, d: int) -> int:
        """Encoder sequences one more distinct draw (or particle) costs on ``d`` blank tokens, re-ranked by PLL:
        an order's passes less the first, which every draw shares, and its ``d`` masked copies (at least 1); a
        particle's :meth:`~.particles.SMC.passes`; the search's filling its ``d`` masked copies at most."""
        if self.kind == "particles":
            return self.settings(options).passes(d)
        if self.kind == "search":
            return d
        return max(1, self.forwards(options, d) - 1 + d)

    def forwards(self, options: dict, d: int) -> int:
        """The forward passes one draw takes on ``d`` blank tokens (the particles': their order's; the search:
        its first pass and a read at each blank)."""
        from ..lm.mlm_draws import ORDERS

        if self.kind == "search":
            return d + 1
        if self.passes is not None:
            return self.passes(d)
        return ORDERS[self.settings(options).order if self.kind == "particles" else self.name].forwards(d)

    def draws(self, energy, n: int, generator, temperature: float):
        """``n`` draws ``(n, d)`` of a method of draws on ``energy``'s blanks."""
        if self.draw is not None:
            return self.draw(energy, n, generator, temperature)
        from ..lm.mlm_draws import draw

        return draw(energy, self.name, n, generator, temperature)


BUILT_IN = (
    OnePass("independent"),
    OnePass("argmax", greedy=True, untaken=(*CHAIN_SETTINGS, "temperature")),
    OnePass("left-to-right"),
    OnePass("random-order"),
    OnePass("confident-first"),
    OnePass("smc", kind="particles"),
    OnePass(
        "product-search",
        kind="search",
        untaken=(*CHAIN_SETTINGS, "temperature", "num_samples"),
        needs_top=True,
    ),
)
"""The package's one-pass methods, registered in the order ``infill samplers`` lists them."""
for method in BUILT_IN:
    register(method)


def methods() -> dict[str, Method]:
    """Every method by name, in :data:`KINDS` order, the samplers by name (importing them imports torch)."""
    from .. import samplers  # noqa: F401 (registers them)

    return {
        **{name: METHODS[name] for name in sorted(METHODS) if METHODS[name].kind == KINDS[0]},
        **{m.name: m for kind in KINDS[1:] for m in ONE_PASS.values() if m.kind == kind},
    }
