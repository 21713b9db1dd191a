"""Every method a user can name (:func:`methods`): the MCMC samplers (``chains``, registered by
:func:`infill.samplers.register`) and the one-pass methods (:data:`ONE_PASS`, registered by :func:`register`),
each an entry (:class:`Method`) with its name, its kind of run, its options with their defaults, the run settings
it refuses, what one draw of it costs and what it draws (a chain's sampler: :meth:`Method.make_sampler`).

A one-pass method draws (or searches for) fillings without chains, so it takes no ``steps``, chain ``init`` or
``anneal_from``; the product search looks for the most likely fillings, so it takes no ``temperature`` either.
A new method of draws is one :func:`register` call with its ``draw`` function (``docs/own-sampler.md``); a new
kind of run is a branch in :func:`infill.pipeline.one_pass.draw`. Nothing here imports torch at module level: the
configuration reads the names and what each takes before a model loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

CHAIN_SETTINGS = ("steps", "init", "anneal_from")
"""The run settings of chains, which no one-pass method takes."""


KINDS = ("chains", "one-pass", "particles", "search")
"""The kinds of method, in the order ``infill samplers`` lists them."""


@dataclass(frozen=True)
class Method:
    """A method: ``kind`` is ``chains`` (an MCMC ``sampler`` class, :mod:`infill.samplers`), ``one-pass`` (draws
    from the masked LM), ``particles`` (:mod:`.particles`) or ``search`` (:mod:`.product_search`); ``untaken`` the
    run settings it refuses; ``needs_top`` where it looks
    for the best fillings rather than sampling. A method of draws has ``draw(energy, n, generator, temperature)
    -> (n, d)`` category indices and ``passes(d)``, the forward passes one draw takes on ``d`` blank tokens (the
    first, with every blank masked, shared by the draws); without them it is the order of its name in
    :func:`infill.lm.mlm_draws.draw`."""

    name: str
    kind: str = "one-pass"
    untaken: tuple[str, ...] = CHAIN_SETTINGS
    needs_top: bool = False
    draw: Optional[Callable] = None
    passes: Optional[Callable[[int], int]] = None
    sampler: Optional[type] = None

    def make_sampler(self, **hyperparameters):
        """A chain method's sampler with the given hyperparameters (others at their defaults)."""
        from ..samplers import make_sampler

        return make_sampler(self.name, **hyperparameters)

    def settings(self, options: dict):
        """The method's hyperparameters checked (the particles' :class:`~.particles.SMC`; None: it has none)."""
        if self.kind != "particles":
            return None
        from .particles import SMC

        return SMC(**options)

    def options(self) -> dict:
        """The method's options with their defaults (a sampler's hyperparameters; no one-pass method's but the
        particles')."""
        from ..samplers import options_of, sampler_options

        if self.kind == "chains":
            return sampler_options(self.name)
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


ONE_PASS = {
    method.name: method
    for method in (
        Method("independent"),
        Method("argmax"),
        Method("left-to-right"),
        Method("random-order"),
        Method("confident-first"),
        Method("smc", kind="particles"),
        Method("product-search", kind="search", untaken=(*CHAIN_SETTINGS, "temperature"), needs_top=True),
    )
}
"""The one-pass methods by name, in the order ``infill samplers`` lists them."""

OnePass = Method  # the name the pipeline's callers use for a one-pass method's entry


def methods() -> dict[str, Method]:
    """Every method by name, in :data:`KINDS` order (the samplers by name; importing them imports torch)."""
    from ..samplers import SAMPLERS

    chains = {name: Method(name, "chains", untaken=(), sampler=SAMPLERS[name]) for name in sorted(SAMPLERS)}
    return {**chains, **{m.name: m for kind in KINDS[1:] for m in ONE_PASS.values() if m.kind == kind}}


def register(method: Method) -> Method:
    """Add a one-pass method of draws (``method.draw`` and ``method.passes`` given) under a name no method has;
    it then works wherever a method's name does (``Infiller.sample(sampler=...)``, ``infill sample --sampler``
    once the module is imported, ``infill samplers``)."""
    from ..samplers import SAMPLERS

    if method.name in ONE_PASS or method.name in SAMPLERS or method.name == "auto":
        raise ValueError(f"a method named {method.name!r} exists")
    if method.kind != "one-pass" or method.draw is None or method.passes is None:
        raise ValueError("a registered one-pass method draws: give its draw and passes")
    ONE_PASS[method.name] = method
    return method
