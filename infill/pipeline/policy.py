"""What each template runs: the one place where ``auto`` and the budget are resolved.

:func:`resolve` turns the request's :class:`~.config.RunConfig` and one template into a :class:`Plan`, once and
without checking the request again: the kind of run (:data:`KINDS`, each saying what it does), the settings the
run reads (:class:`Settings`, ``auto`` resolved by :func:`for_blanks` or :func:`for_words`), its sampler built and
checked against the blanks, the budget split (:class:`Spend`, the one place for what the chains leave for
choosing) and what choosing keeps (:class:`Keep`, with the pools it ranks), and the goal ``top`` stands for
(:attr:`Plan.goal`). Every budget refusal is raised here: before any model work (:func:`resolve`, from
:func:`least_budget`), or where a run's cache kept less than planned, by the stage that ran out through
:func:`budget_spent`, which names it (the configuration checks the budget's value alone). The stages after it read
the plan and decide nothing of their own. Nothing here imports torch at module level, so the CLI resolves runs
before it loads a model.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Optional

from ..errors import InfillError
from ..onepass.methods import ONE_PASS
from .config import (
    AUTO_BUDGET_PER_BLANK,
    AUTO_CHAIN_BLANKS,
    AUTO_CHAINS,
    AUTO_EXACT,
    AUTO_ORDER,
    AUTO_PARTICLES,
    AUTO_SEARCH,
    AUTO_SEARCH_VALUES,
    AUTO_TARGET,
    INIT,
    SAMPLES,
    STEPS,
    MethodSettings,
    RunConfig,
    auto_share,
)

if TYPE_CHECKING:
    from ..samplers import Sampler


@dataclass(frozen=True)
class Kind:
    """A kind of run and what it does beside its ``execute`` (:mod:`.runs`; how its fillings are chosen and
    reported: :func:`~.postprocess.postprocess`): whether it steps chains (``steps``, counted for progress),
    whether its energy takes its all-masked pass from one the request's templates share (``shares_first``: the
    one-pass kinds, which read it first), and whether its draws may keep a blank off words (``excludes``)."""

    name: str
    steps: bool = False
    shares_first: bool = True
    excludes: bool = False


KINDS = {
    kind.name: kind
    for kind in (
        Kind("one-pass", excludes=True),
        Kind("search"),
        Kind("particles"),
        Kind("chains", steps=True, shares_first=False),
        Kind("spans", steps=True, shares_first=False),
    )
}
"""The kinds of run by name: the masked LM's draws in one pass (an order), the product search, particles
(``smc``), MCMC chains over token blanks, the span sampler's chains over word blanks."""

GOALS = ("best", "samples")
"""What a run is for (:attr:`Plan.goal`): the ``top`` best distinct fillings, or without ``top`` samples (every
chain's final state, every draw)."""
DIVERSE_POOL = 4
"""``decode="diverse"`` keeps ``top=k`` fillings among the ``DIVERSE_POOL * k`` best candidates
(:attr:`Keep.pool`)."""
FINALISTS = 2
"""With chains in a lower precision, ``top=k`` re-scores in float32 this many times the candidates it ranks and
keeps the ``k`` best of those (:attr:`Keep.finalists`)."""
RESCORE_PER_BLANK = 0.1
"""With a budget, chains that compute no energies (plain ``gibbs``) keep back, for choosing the fillings, this
share per blank token of the ``d`` masked copies of every distinct state they visited (at most all ``d``): the
cached terms and ``top``'s bound spare the rest (measured on the tuning templates)."""


@dataclass(frozen=True)
class Keep:
    """What choosing keeps: the ``top`` best distinct fillings (None: every chain's final state, or every draw),
    taken as ``decode`` says; where it is ``diverse``, chosen among the best ``pool`` x ``top`` candidates (among
    ``every`` one the run scored, where it says so), spread at ``diversity`` nats or at ``share`` of their PLL
    range (:func:`~.config.auto_share`); with chains in a lower precision, ``finalists`` x those re-scored in
    float32."""

    top: Optional[int] = None
    decode: Optional[str] = None
    diversity: Optional[float] = None
    share: Optional[float] = None
    every: bool = False
    pool: int = DIVERSE_POOL
    finalists: int = FINALISTS

    @property
    def ranked(self) -> int:
        """How many of the best candidates ``top`` chooses among: ``top``, ``pool`` times that where diverse."""
        return self.top * (self.pool if self.decode == "diverse" else 1)


@dataclass(frozen=True)
class Spend:
    """The budget split: at most ``limit`` encoder sequences in all (None: no cap). Chains of ``blanks`` blank
    tokens leave ``scoring`` for the PLLs of the fillings kept and ``rescoring`` for their float32 PLLs where they
    run in a lower precision (:meth:`for_chains`; :attr:`held`), and stop as :meth:`chains_done` says (``settled``:
    what choosing takes where the run scored every state); one-pass draws go on in rounds of what the rest buys
    (:meth:`next_round`) while that is at least ``least_round`` draws and the last round brought at least that many
    new fillings."""

    limit: Optional[int] = None
    scoring: int = 0
    rescoring: int = 0
    least_round: int = 1
    blanks: int = 0
    settled: int = 0

    @classmethod
    def for_chains(cls, resolved: Resolved, keep: Keep, d: int, constrained: bool, lower_precision: bool) -> Spend:
        """The split of chains of ``d`` blank tokens: scoring the fillings kept (:meth:`scored`), and where they
        run in a lower precision (``lower_precision``) the float32 PLLs beyond that: with terms (``constrained``)
        the reported fillings', else with ``top`` the finalists' of the candidates ``keep`` ranks; none without
        either (the fillings' PLLs are computed in float32 at once)."""
        scoring = cls.scored(d, keep.top, resolved.num_samples)
        rescoring = 0
        if lower_precision:
            rescoring = scoring if constrained else (0 if keep.top is None else d * keep.finalists * keep.ranked)
        return cls(resolved.budget, scoring, rescoring, blanks=d, settled=d * (keep.top or 1))

    @staticmethod
    def scored(d: int, top: Optional[int], chains: int) -> int:
        """Encoder sequences the PLLs of the fillings kept take: ``d`` masked copies each of the ``top`` kept, or
        of every chain's final state."""
        return d * (top or chains)

    @property
    def held(self) -> int:
        """What the chains may not spend: what choosing the fillings takes."""
        return self.scoring + self.rescoring

    def chains_done(self, spent: int, unscored: Optional[int]) -> bool:
        """Whether chains that spent ``spent`` encoder sequences stop: the budget, less what choosing will take,
        is spent (``unscored``: the distinct states visited where they are still to score, of whose masked
        copies :data:`RESCORE_PER_BLANK` a blank token; None: the run scored every state)."""
        d = self.blanks
        keep = self.settled if unscored is None else unscored * d * min(1.0, RESCORE_PER_BLANK * d)
        return spent + keep + self.rescoring >= self.limit

    def next_round(self, spent: int, cost: int) -> int:
        """The draws a one-pass method's next round takes: what the rest of the budget surely buys after
        ``spent``, ``cost`` each (:func:`_buys`)."""
        return _buys(self.limit - spent, cost)


def _buys(budget: int, cost: int) -> int:
    """The draws ``budget`` encoder sequences surely buy at ``cost`` each, the shared first pass one sequence."""
    return (budget - 1) // cost


@dataclass(frozen=True)
class Settings(MethodSettings):
    """What a run reads of its method, ``auto`` resolved: ``method`` with its ``options``, ``num_samples`` chains
    (or a first round of draws) of ``steps`` steps from ``init``, at ``temperature`` (annealed from
    ``anneal_from``) on the ``target``; word blanks by ``span_method``. Built once by :func:`resolve` from the
    checked request, unchecked itself."""

    method: str
    options: dict
    num_samples: Optional[int]
    steps: Optional[int]
    init: Optional[str]
    temperature: Optional[float]
    anneal_from: Optional[float]
    target: Optional[str]
    span_method: str


@dataclass(frozen=True)
class Resolved(Settings):
    """:class:`Settings` while they are resolved, with what they are resolved by: ``top``, the ``budget``,
    ``decode`` and ``diversity`` (which :func:`resolve` splits into :class:`Keep` and :class:`Spend`)."""

    top: Optional[int] = None
    budget: Optional[int] = None
    decode: Optional[str] = None
    diversity: Optional[float] = None

    @classmethod
    def of(cls, config: RunConfig) -> Resolved:
        """The request's settings, as they are."""
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls)})

    @property
    def settings(self) -> Settings:
        """What the run reads."""
        return Settings(**{f.name: getattr(self, f.name) for f in fields(Settings)})


@dataclass(frozen=True)
class Plan:
    """One template's run: its ``kind`` (a name of :data:`KINDS`), the ``settings`` it reads, what choosing keeps
    (``keep``) and the budget split (``spend``), where ``top`` and the budget live, and its ``sampler`` (chains
    only)."""

    kind: str
    settings: Settings
    keep: Keep
    spend: Spend
    sampler: Optional[Sampler] = None

    @property
    def goal(self) -> str:
        """What the run is for (:data:`GOALS`): ``"best"``, the ``top`` best distinct fillings, or ``"samples"``."""
        return GOALS[self.keep.top is None]

    @property
    def steps(self) -> int:
        """The most steps the run takes (0 for one-pass draws), for progress."""
        return self.settings.steps if KINDS[self.kind].steps else 0

    @property
    def shares_first(self) -> bool:
        """Whether the run's energy takes its all-masked pass from one the request's templates share."""
        return KINDS[self.kind].shares_first


def resolve(config: RunConfig, template, constrained: bool = False, lower_precision: bool = False) -> Plan:
    """The plan of ``template`` under ``config``; ``constrained`` where the energy has terms beside the PLL
    (include words, closeness, a classifier, a user's term); ``lower_precision`` where chains run in a lower
    precision than float32 (choosing re-scores in float32). Raises :class:`InfillError` with one line."""
    if not template.fixed:
        words = for_words(config)
        return Plan("spans", words.settings, _keep(words), Spend(words.budget))
    d = template.num_blanks
    resolved = for_blanks(config, d, constrained)
    if resolved.is_baseline:
        return _one_pass_plan(config, resolved, d)
    keep = _keep(resolved)
    spend = Spend.for_chains(resolved, keep, d, constrained, lower_precision)
    _check_budget(resolved, d, spend.rescoring)
    from ..samplers import make_sampler

    sampler = make_sampler(resolved.method, **resolved.options)
    sampler.check_variables(d)
    return Plan("chains", resolved.settings, keep, spend, sampler)


def _one_pass_plan(config: RunConfig, resolved: Resolved, d: int) -> Plan:
    """The plan of a one-pass method: ``auto``'s search and particles keep their fillings spread at
    :func:`~.config.auto_share` of their range (unless ``diversity`` is named), the particles' among every one."""
    _check_budget(resolved, d)
    kind = resolved.one_pass.kind
    spread = config.is_auto and kind != "one-pass" and resolved.diversity is None
    # particles kept as the top few, one run a round: a round of fewer than top, or one after a round that
    # brought fewer new fillings, adds a few candidates at a whole round's host work; where rounds split into
    # independent runs (run_size), every run counts
    one_run = kind == "particles" and not resolved.options.get("run_size")
    least_round = resolved.top if one_run and resolved.top else 1
    keep = _keep(resolved, auto_share(d) if spread else None, spread and kind == "particles")
    return Plan(kind, resolved.settings, keep, Spend(resolved.budget, least_round=least_round))


def _keep(resolved: Resolved, share: Optional[float] = None, every: bool = False) -> Keep:
    """What choosing keeps of ``resolved``: among ``every`` candidate where it says so, spread at ``share`` of
    their range where given (diverse decoding only)."""
    diverse = resolved.decode == "diverse"
    return Keep(
        resolved.top,
        resolved.decode,
        resolved.diversity,
        share if diverse else None,
        every and diverse,
        DIVERSE_POOL,
        FINALISTS,
    )


def for_blanks(config: RunConfig, d: int, constrained: bool = False) -> Resolved:
    """``config`` for a template of ``d`` blank tokens: ``auto`` resolved, and a one-pass method's first round
    of draws set by the budget (:func:`first_round`; the pipeline draws more while the budget lasts).

    ``auto``: with one blank token (and no terms) the PLL is the masked LM's one conditional, so one pass is
    exact (:data:`~.config.AUTO_EXACT`); with terms, chains whatever ``d`` (one-pass draws never see a term); else
    :func:`_auto`. :func:`resolve` checks the budget against the run (:func:`least_budget`)."""
    resolved = Resolved.of(config)
    if config.is_auto:
        if config.anneal_from is not None:
            raise InfillError(
                f"{config.method} picks its own run on token blanks, which is not annealed: drop --anneal-from or "
                "name a sampler"
            )
        if d == 1 and not constrained:
            return _exact(resolved)
        resolved = _auto(resolved, d, constrained)
    method = resolved.one_pass
    if method is not None and method.needs_top:
        if resolved.top is None:
            raise InfillError(f"{method.name} looks for the best fillings, it does not sample: give --top K")
        resolved = replace(resolved, budget=resolved.budget or AUTO_BUDGET_PER_BLANK * d)
    if method is not None and method.greedy and d > 1 and (resolved.top or 1) > 1:
        raise InfillError(
            f"{method.name} gives one filling on {d} blank tokens (each one's most likely token), not --top "
            f"{resolved.top}: drop --top, or name product-search for the {resolved.top} most likely fillings"
        )
    if (
        method is not None
        and resolved.budget is not None
        and method.kind != "search"
        and not (method.greedy and d == 1)
    ):
        resolved = _first_round(resolved, d, config.is_auto and method.kind == "particles")
    return resolved


def _exact(resolved: Resolved) -> Resolved:
    """``auto`` on one blank token without terms: :data:`~.config.AUTO_EXACT`'s ``top`` most likely tokens, or
    without ``top`` its independent draws."""
    if resolved.top is None:
        chains = resolved.num_samples or AUTO_CHAINS["num_samples"]
        return one_pass(resolved, AUTO_EXACT["samples"], decode="visited", num_samples=chains)
    return one_pass(resolved, AUTO_EXACT["best"], num_samples=resolved.top, decode="visited")


def _first_round(resolved: Resolved, d: int, auto_particles: bool) -> Resolved:
    """``resolved`` with its first round of draws (:func:`first_round`); ``auto``'s particles, where the keep rule
    spreads the fillings no further (:func:`~.config.auto_share` is 1), run as independent runs of that round's
    particles over ``top``, so each filling kept can come from a lineage of its own (no run size of its own)."""
    n = first_round(resolved.method, resolved.options, resolved.budget, d)
    options = resolved.options
    if auto_particles and auto_share(d) == 1.0 and "run_size" not in options:
        options = {**options, "run_size": max(1, n // resolved.top)}
    return replace(resolved, num_samples=n, options=options)


def first_round(method: str, options: dict, budget: int, d: int) -> int:
    """The draws (or particles) of a one-pass method's first round on ``d`` blank tokens: what ``budget`` surely
    buys, :meth:`~infill.onepass.methods.OnePass.cost` each and the shared first pass one sequence (at least one)."""
    return max(1, _buys(budget, ONE_PASS[method].cost(options, d)))


def _auto(request: Resolved, d: int, constrained: bool) -> Resolved:
    """``auto`` on ``d > 1`` blank tokens, on the :data:`AUTO_TARGET` (unless ``target`` is named): with terms
    chains; with ``top`` the product search while its first product fits (:func:`searchable`), particles above,
    their fillings kept for quality and diversity at :func:`~.config.auto_share` of their range (:func:`resolve`)
    unless ``diversity`` is named; without ``top`` chains up to :data:`AUTO_CHAIN_BLANKS` blank tokens, one-pass
    draws above (every draw a sample, as many as asked)."""
    resolved = replace(
        request,
        init=request.init or AUTO_CHAINS["init"],
        steps=request.steps or AUTO_CHAINS["steps"],
        num_samples=request.num_samples or AUTO_CHAINS["num_samples"],
        budget=request.budget or AUTO_BUDGET_PER_BLANK * d,
        target=request.target or AUTO_TARGET,
    )
    if constrained or (request.top is None and d <= AUTO_CHAIN_BLANKS):
        return replace(resolved, method=AUTO_CHAINS["method"], decode=request.decode or "diverse")
    if request.top is None:
        decode = request.decode or ("diverse" if request.diversity is not None else "visited")
        return one_pass(resolved, AUTO_ORDER, budget=request.budget, decode=decode)
    search = searchable(d, resolved.budget)
    method = AUTO_SEARCH if search else AUTO_PARTICLES["method"]
    options = {} if search else AUTO_PARTICLES["options"]
    return one_pass(resolved, method, options=options, decode=request.decode or "diverse")


def one_pass(resolved: Resolved, method: str, **changes) -> Resolved:
    """``resolved`` resolved to the one-pass ``method``, without the settings it does not take (``auto``'s chain
    settings and the like: :attr:`~infill.onepass.methods.OnePass.untaken`)."""
    return replace(resolved, method=method, **dict.fromkeys(ONE_PASS[method].untaken), **changes)


def searchable(d: int, budget: int, values: float = AUTO_SEARCH_VALUES) -> bool:
    """``auto``'s rule: whether ``budget`` encoder sequences buy the product search's first product of ``values``
    tokens for each of ``d`` blanks (``d * v ** (d - 1)`` sequences) within the share the search gives it. As
    ``d`` grows at a fixed budget, or at a fixed budget per blank, the product outgrows it: once false, false for
    every larger ``d``."""
    from ..onepass.product_search import EXPLORE

    return d * values ** (d - 1) <= EXPLORE * (budget - 1)


def for_words(config: RunConfig) -> Resolved:
    """``config`` for a template with word blanks: the span sampler (``auto``; a named sampler or diverse
    decoding is refused in one line) with the named methods' chains and steps; annealing goes down to the span
    temperature."""
    if config.target is not None:
        raise InfillError(
            "--target sets the energy over token blanks; word blanks are scored by the span sampler's "
            "own: drop --target, or use token blanks"
        )
    if not config.is_auto or config.decode == "diverse":
        named = f"--sampler {config.method}" if not config.is_auto else "--decode diverse"
        raise InfillError(
            f"this template has word blanks, which the span sampler fills (--span-method): drop "
            f"{named}, or use token blanks"
        )
    words = replace(
        Resolved.of(config),
        num_samples=config.num_samples or SAMPLES,
        steps=config.steps or STEPS,
        init=config.init or INIT,
        decode=config.decode or "visited",
    )
    words.check_annealing(words.span_temperature)
    return words


def least_budget(resolved: Resolved, d: int) -> int:
    """The fewest encoder sequences that surely buy ``resolved``'s run of ``d`` blank tokens, whatever the cache
    spares: for a one-pass method its first pass and ``top`` draws, each with its later passes and its PLL's
    ``d`` masked copies; for chains their starts and the PLL of the ``top`` fillings kept (every chain's
    without ``top``: :meth:`Spend.scored`). A budget that buys drawn starts but no step returns the starts
    re-ranked; uniform starts have nothing to return, so there one step is counted as a gradient sampler's (a
    value and gradient at the start and at the proposal)."""
    from ..lm.mlm_draws import encoder_sequences

    if resolved.is_baseline:
        return 1 + (resolved.top or 1) * resolved.one_pass.cost(resolved.options, d)
    n = resolved.num_samples
    starts = encoder_sequences(resolved.init, d, n) or 4 * n * d  # uniform starts: one gradient step
    return starts + Spend.scored(d, resolved.top, n)


def _check_budget(resolved: Resolved, d: int, rescoring: int = 0) -> None:
    """Refuse, in one line, a budget below :func:`least_budget`, or for chains in a lower precision below that and
    the float32 ``rescoring`` (one above :data:`~.config.MAX_BUDGET` is refused whatever ``d``, by the
    configuration's own check)."""
    if resolved.budget is None:
        return
    least = least_budget(resolved, d)
    if resolved.budget < least:
        what = (
            f"{resolved.num_samples} {resolved.method} chains from {resolved.init} draws"
            if not resolved.is_baseline
            else f"{resolved.top or 1} {resolved.method} draws"
        )
        raise InfillError(
            f"a budget of {resolved.budget} encoder sequences is too small for {what} on {d} blank "
            f"tokens: at least {least}"
        )
    if resolved.budget < least + rescoring:
        raise InfillError(
            f"a budget of {resolved.budget} encoder sequences is too small for {resolved.num_samples} "
            f"{resolved.method} chains on {d} blank tokens in a lower precision, re-scored in float32: at least "
            f"{least + rescoring}"
        )


def for_rewrite(config: RunConfig) -> None:
    """Refuse, in one line, a ``rewrite`` of ``config`` with no MCMC sampler (it runs chains from the sentence) or
    with a budget (the chains that calibrate its closeness are not counted)."""
    if config.is_baseline or config.is_auto:
        raise InfillError(f"rewrite needs an MCMC sampler, not {config.method!r}")
    if config.budget is not None:
        raise InfillError(
            "rewrite runs chains of its own to calibrate the closeness, which a budget does not cover: drop --budget"
        )


def budget_spent(plan: Plan, stage: str) -> InfillError:
    """The one-line refusal a run stage raises where ``plan``'s budget ran out ``stage`` (``"before a step of
    ..."``, ``"while choosing ..."``)."""
    return InfillError(f"a budget of {plan.spend.limit} encoder sequences ran out {stage}: raise --budget")
