"""What each template runs: the one place where ``auto`` and the budget are resolved.

:func:`resolve` turns the request's :class:`~.config.RunConfig` and one template into a :class:`Plan`: the kind of
run (:data:`KINDS`), the method's settings with ``auto`` resolved (:func:`for_blanks`, :func:`for_words`), its
sampler built and checked against the blanks, the budget split (:class:`Spend`) and what choosing keeps
(:class:`Keep`). Every budget refusal is raised here: before any model work (:func:`checked_budget`), or, where a
run's cache kept less than planned, by the stage that ran out through :func:`budget_spent` (the configuration
checks the budget's value alone). The stages after it read the plan and decide nothing of their own. Nothing
here imports torch at module level, so the CLI resolves runs before it loads a model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from ..errors import InfillError
from ..onepass.methods import ONE_PASS
from .config import (
    AUTO,
    AUTO_BUDGET_PER_BLANK,
    AUTO_CHAIN_BLANKS,
    AUTO_CHAINS,
    AUTO_ORDER,
    AUTO_PARTICLES,
    AUTO_SEARCH,
    AUTO_SEARCH_VALUES,
    AUTO_TARGET,
    INIT,
    SAMPLES,
    STEPS,
    RunConfig,
    auto_share,
)

KINDS = ("one-pass", "search", "particles", "chains", "spans")
"""The kinds of run: the masked LM's draws in one pass (an order), the product search, particles (``smc``), MCMC
chains over token blanks, the span sampler's chains over word blanks."""


@dataclass(frozen=True)
class Keep:
    """What choosing keeps: the ``top`` best distinct fillings (None: every chain's final state, or every draw),
    taken as ``decode`` says; where it is ``diverse``, chosen among the best :data:`~.choose.DIVERSE_POOL` x
    ``top`` candidates (among ``every`` one the run scored, where it says so), spread at ``diversity`` nats or
    at ``share`` of their PLL range (:func:`~.config.auto_share`)."""

    top: Optional[int] = None
    decode: Optional[str] = None
    diversity: Optional[float] = None
    share: Optional[float] = None
    every: bool = False


@dataclass(frozen=True)
class Spend:
    """The budget split: at most ``limit`` encoder sequences in all (None: no cap), of which chains leave
    ``scoring`` for the PLLs of the fillings kept, and ``float32`` for their float32 PLLs where the chains run in
    a lower precision; one-pass draws go on in rounds while the rest buys at least ``least_round`` draws and the
    last round brought at least that many new fillings."""

    limit: Optional[int] = None
    scoring: int = 0
    float32: int = 0
    least_round: int = 1


@dataclass(frozen=True)
class Plan:
    """One template's run: its ``kind`` (:data:`KINDS`), the method's settings ``config`` (``auto`` resolved; its
    ``top`` and ``budget`` are None: they live in ``keep`` and ``spend``), its ``sampler`` (chains only)."""

    kind: str
    config: RunConfig
    keep: Keep
    spend: Spend
    sampler: Any = None

    @property
    def steps(self) -> int:
        """The most steps the run takes (0 for one-pass draws), for progress."""
        return self.config.steps if self.kind in ("chains", "spans") else 0


def resolve(config: RunConfig, template, constrained: bool = False, lower_precision: bool = False) -> Plan:
    """The plan of ``template`` under ``config``; ``constrained`` where the energy has terms beside the PLL
    (include words, closeness, a classifier, a user's term); ``lower_precision`` where chains run in a lower
    precision than float32 (choosing re-scores in float32). Raises :class:`InfillError` with one line."""
    if not template.fixed:
        words = for_words(config)
        return _plan("spans", words, spend=Spend(words.budget))
    d = template.num_blanks
    resolved = for_blanks(config, d, constrained)
    sampler = make_sampler(resolved)
    if sampler is None:
        kind = resolved.one_pass.kind
        spread = config.method == AUTO and kind != "one-pass" and resolved.diversity is None
        share = auto_share(d) if spread else None
        # particles kept as the top few, one run a round: a round of fewer than top, or one after a round that
        # brought fewer new fillings, adds a few candidates at a whole round's host work; where rounds split into
        # independent runs (run_size), every run counts
        one_run = kind == "particles" and not resolved.options.get("run_size")
        least_round = resolved.top if one_run and resolved.top else 1
        spend = Spend(resolved.budget, least_round=least_round)
        return _plan(kind, resolved, spend=spend, share=share, every=spread and kind == "particles")
    sampler.check_variables(d)
    float32 = _float32_cost(resolved, d, constrained) if lower_precision else 0
    least = least_budget(resolved, d) + float32
    if resolved.budget is not None and resolved.budget < least:
        raise InfillError(
            f"a budget of {resolved.budget} encoder sequences is too small for {resolved.num_samples} "
            f"{resolved.method} chains on {d} blank tokens in a lower precision, re-scored in float32: at least "
            f"{least}"
        )
    return _plan(
        "chains", resolved, sampler, Spend(resolved.budget, d * (resolved.top or resolved.num_samples), float32)
    )


def _float32_cost(config: RunConfig, d: int, constrained: bool) -> int:
    """The most encoder sequences the float32 PLLs take, beyond the ``d * (top or num_samples)`` that scoring the
    fillings takes, where chains of ``d`` blank tokens run in a lower precision: with ``top`` on the PLL alone the
    finalists' (:data:`~.choose.FINALISTS`); with terms the reported fillings'; none without either (the
    fillings' PLLs are computed in float32 at once)."""
    from .choose import DIVERSE_POOL, FINALISTS

    if constrained:
        return d * (config.top or config.num_samples)
    return 0 if config.top is None else d * FINALISTS * config.top * (DIVERSE_POOL if config.decode == "diverse" else 1)


def _plan(
    kind: str,
    resolved: RunConfig,
    sampler: Any = None,
    spend: Spend = Spend(),
    share: Optional[float] = None,
    every: bool = False,
) -> Plan:
    """``resolved`` split into the method's settings, what choosing keeps (among ``every`` candidate where it
    says so, spread at ``share`` of their range where given) and the budget ``spend``."""
    diverse = resolved.decode == "diverse"
    keep = Keep(resolved.top, resolved.decode, resolved.diversity, share if diverse else None, every and diverse)
    return Plan(kind, replace(resolved, top=None, budget=None), keep, spend, sampler)


def make_sampler(config: RunConfig):
    """``config``'s sampler (None for a one-pass method, and for ``auto`` before :func:`for_blanks`)."""
    if config.is_baseline or config.method == AUTO:
        return None
    from ..samplers import make_sampler as build

    return build(config.method, **config.options)


def for_blanks(config: RunConfig, d: int, constrained: bool = False) -> RunConfig:
    """``config`` for a template of ``d`` blank tokens: ``auto`` resolved, and a one-pass method's first round
    of draws set by the budget (what it surely buys, :meth:`~infill.onepass.methods.OnePass.cost` each, the shared first
    pass one sequence; the pipeline draws more while the budget lasts).

    ``auto``: with one blank token (and no terms) the PLL is the masked LM's one conditional, so one pass is
    exact: ``argmax``'s ``top`` most likely tokens, or without ``top`` independent draws; with terms, chains
    whatever ``d`` (one-pass draws never see a term); else :func:`_auto`. A budget too small for the request is
    refused (:func:`least_budget`)."""
    if config.method == AUTO:
        if config.anneal_from is not None:
            raise InfillError(
                f"{AUTO} picks its own run on token blanks, which is not annealed: drop --anneal-from or name a sampler"
            )
        if d == 1 and not constrained:
            exact = (
                one_pass(
                    config,
                    "independent",
                    decode="visited",
                    num_samples=config.num_samples or AUTO_CHAINS["num_samples"],
                )
                if config.top is None
                else one_pass(config, "argmax", num_samples=config.top, decode="visited")
            )
            return checked_budget(exact, d)
        config = _auto(config, d, constrained)
    method = config.one_pass
    if method is not None and method.needs_top:
        if config.top is None:
            raise InfillError(f"{method.name} looks for the best fillings, it does not sample: give --top K")
        config = replace(config, budget=config.budget or AUTO_BUDGET_PER_BLANK * d)
    if (
        method is not None
        and config.budget is not None
        and method.kind != "search"
        and not (method.name == "argmax" and d == 1)
    ):
        config = replace(config, num_samples=first_round(config.method, config.options, config.budget, d))
    return checked_budget(config, d)


def first_round(method: str, options: dict, budget: int, d: int) -> int:
    """The draws (or particles) of a one-pass method's first round on ``d`` blank tokens: what ``budget`` surely
    buys, :meth:`~infill.onepass.methods.OnePass.cost` each and the shared first pass one sequence (at least one)."""
    from ..onepass.methods import ONE_PASS

    return max(1, (budget - 1) // ONE_PASS[method].cost(options, d))


def _auto(config: RunConfig, d: int, constrained: bool) -> RunConfig:
    """``auto`` on ``d > 1`` blank tokens, on the :data:`AUTO_TARGET` (unless ``target`` is named): with terms
    chains; with ``top`` the product search while its first product fits (:func:`searchable`), particles above,
    their fillings kept for quality and diversity at :func:`~.config.auto_share` of their range (:func:`resolve`) unless
    ``diversity`` is named, and where that share is the whole range run as independent runs of the first round's
    particles over ``top``; without ``top`` chains up to :data:`AUTO_CHAIN_BLANKS` blank tokens, one-pass draws
    above (every draw a sample, as many as asked)."""
    auto, config = (
        config,
        replace(
            config,
            init=config.init or AUTO_CHAINS["init"],
            steps=config.steps or AUTO_CHAINS["steps"],
            num_samples=config.num_samples or AUTO_CHAINS["num_samples"],
            budget=config.budget or AUTO_BUDGET_PER_BLANK * d,
            target=config.target or AUTO_TARGET,
        ),
    )
    if constrained or (auto.top is None and d <= AUTO_CHAIN_BLANKS):
        return replace(config, method=AUTO_CHAINS["method"], decode=auto.decode or "diverse")
    if auto.top is None:
        return one_pass(
            config,
            AUTO_ORDER,
            budget=auto.budget,
            decode=auto.decode or ("diverse" if auto.diversity is not None else "visited"),
        )
    search = searchable(d, config.budget)
    method = AUTO_SEARCH if search else AUTO_PARTICLES["method"]
    options = {} if search else AUTO_PARTICLES["options"]
    if not search and auto_share(d) == 1.0:  # the keep rule spreads no further: runs whose candidates differ more
        options = {**options, "run_size": max(1, first_round(method, options, config.budget, d) // auto.top)}
    return one_pass(config, method, options=options, decode=auto.decode or "diverse")


def one_pass(config: RunConfig, method: str, **changes) -> RunConfig:
    """``config`` resolved to the one-pass ``method``, without the settings it does not take (``auto``'s chain
    settings and the like: :attr:`~infill.onepass.methods.OnePass.untaken`)."""
    return replace(config, method=method, **dict.fromkeys(ONE_PASS[method].untaken), **changes)


def searchable(d: int, budget: int, values: float = AUTO_SEARCH_VALUES) -> bool:
    """``auto``'s rule: whether ``budget`` encoder sequences buy the product search's first product of ``values``
    tokens for each of ``d`` blanks (``d * v ** (d - 1)`` sequences) within the share the search gives it. As
    ``d`` grows at a fixed budget, or at a fixed budget per blank, the product outgrows it: once false, false for
    every larger ``d``."""
    from ..onepass.product_search import EXPLORE

    return d * values ** (d - 1) <= EXPLORE * (budget - 1)


def for_words(config: RunConfig) -> RunConfig:
    """``config`` for a template with word blanks: the span sampler (``auto``; a named sampler or diverse
    decoding is refused in one line) with the named methods' chains and steps; annealing goes down to the span
    temperature."""
    if config.target is not None:
        raise InfillError(
            "--target sets the energy over token blanks; word blanks are scored by the span sampler's "
            "own: drop --target, or use token blanks"
        )
    if config.method != AUTO or config.decode == "diverse":
        named = f"--sampler {config.method}" if config.method != AUTO else "--decode diverse"
        raise InfillError(
            f"this template has word blanks, which the span sampler fills (--span-method): drop "
            f"{named}, or use token blanks"
        )
    config = replace(
        config,
        num_samples=config.num_samples or SAMPLES,
        steps=config.steps or STEPS,
        init=config.init or INIT,
        decode=config.decode or "visited",
    )
    config.check_annealing(config.span_temperature)
    return config


def least_budget(config: RunConfig, d: int) -> int:
    """The fewest encoder sequences that surely buy ``config``'s run of ``d`` blank tokens, whatever the cache
    spares: for a one-pass method its first pass and ``top`` draws, each with its later passes and its PLL's
    ``d`` masked copies; for chains their starts and the PLL of the ``top`` fillings kept (every chain's
    without ``top``). A budget that buys drawn starts but no step returns the starts re-ranked; uniform starts
    have nothing to return, so there one step is counted as a gradient sampler's (a value and gradient at the
    start and at the proposal)."""
    from ..lm.mlm_draws import encoder_sequences

    if config.is_baseline:
        return 1 + (config.top or 1) * config.one_pass.cost(config.options, d)
    n = config.num_samples
    starts = encoder_sequences(config.init, d, n) if config.init != "uniform" else 4 * n * d
    return starts + d * (config.top or n)


def for_rewrite(config: RunConfig) -> None:
    """Refuse, in one line, a ``rewrite`` of ``config`` with no MCMC sampler (it runs chains from the sentence) or
    with a budget (the chains that calibrate its closeness are not counted)."""
    if config.is_baseline or config.method == AUTO:
        raise InfillError(f"rewrite needs an MCMC sampler, not {config.method!r}")
    if config.budget is not None:
        raise InfillError(
            "rewrite runs chains of its own to calibrate the closeness, which a budget does not cover: drop --budget"
        )


def budget_spent(plan: Plan, stage: str) -> InfillError:
    """The one-line refusal a run stage raises where ``plan``'s budget ran out ``stage`` (``"before a step of
    ..."``, ``"while choosing ..."``)."""
    return InfillError(f"a budget of {plan.spend.limit} encoder sequences ran out {stage}: raise --budget")


def checked_budget(config: RunConfig, d: int) -> RunConfig:
    """``config`` for ``d`` blank tokens, refused in one line where its budget is below :func:`least_budget`
    (one above :data:`~.config.MAX_BUDGET` is refused whatever ``d``, by the configuration's own check)."""
    if config.budget is None:
        return config
    least = least_budget(config, d)
    if config.budget < least:
        what = (
            f"{config.num_samples} {config.method} chains from {config.init} draws"
            if not config.is_baseline
            else f"{config.top or 1} {config.method} draws"
        )
        raise InfillError(
            f"a budget of {config.budget} encoder sequences is too small for {what} on {d} blank "
            f"tokens: at least {least}"
        )
    return config
