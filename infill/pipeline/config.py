"""One validated run configuration, shared by the API, the CLI, JSONL template lines and eval protocols.

``RunConfig.create(**options)`` checks every value and raises :class:`InfillError` with one line naming the
option and the type it expects; unknown keys are taken as the method's hyperparameters and checked against
its defaults' types. Nothing here imports torch, so the CLI can validate before loading a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Optional

from ..errors import InfillError, finite_number, one_of, positive_integer
from ..lm.registry import SPAN_METHODS, sampler_names
from ..onepass.methods import ONE_PASS, OnePass
from ..text.blanks import UNITS

TARGETS = ("pll", "repeat-masked")
"""The energies over token blanks: the PLL, or the repeat-masked PLL, in which a blank's masked copy also masks
every other blank holding its token (:class:`~infill.energies.masked_lm.MaskedLMEnergy`)."""
INITS = ("uniform", "independent", "left-to-right", "confident-first", "random-order")
"""Chain starts: uniform tokens, or draws from the masked LM (see :mod:`infill.lm.mlm_draws`)."""
INIT = "left-to-right"
"""The chains' start unless ``init`` says (``auto``'s chains: :data:`AUTO_CHAINS`)."""
REWRITE_SAMPLER = "gibbs-mh"
"""Rewrite mode's default sampler: the one that reached a given PLL at a given change fraction with the
fewest encoder sequences in ``scripts/constraints.py`` (figures: ``eval/constraints-minilm/``)."""
DECODES = ("visited", "final", "diverse")
"""Where ``top`` takes its fillings from: every state visited after burn-in, the chains' final states, or
every state the run scored (the chains' starts, the visited states and the proposals a kernel scored)
chosen for quality and diversity (:func:`infill.pipeline.choose.spread`)."""
AUTO = "auto"
"""The method that picks by the number of blank tokens ``d`` (resolved in :mod:`.policy`): what beat the masked
LM's best one-pass order re-ranked by PLL at equal encoder sequences, on a check half of templates not tuned on
(``eval/default-minilm``, ``eval/particles-minilm``); its compute is ``budget`` (default
:data:`AUTO_BUDGET_PER_BLANK` x ``d``)."""
AUTO_CHAINS = {"method": "gibbs", "num_samples": 50, "init": "confident-first", "steps": 100}
"""``auto``'s chains: random-scan Gibbs from confident-first draws, stepping until the budget is spent; its
default chains and most steps (``num_samples`` and ``steps`` override them)."""
SAMPLES, STEPS = 25, 12
"""The default chains (or draws) and steps of a named method."""
AUTO_TARGET = "repeat-masked"
"""``auto``'s energy on more than one blank token (:data:`TARGETS`): the repeat-masked PLL, which kept fewer
repeated content words at as high a plain PLL (``eval/reader-minilm``)."""
AUTO_PARTICLES = {"method": "smc", "options": {"tilt": 1.5}}
"""``auto``'s particles: through the confident-first order weighted toward the target
(:mod:`infill.onepass.particles`), every particle and move a candidate; the tilt is one of the rule's three
constants (:data:`AUTO_SEARCH_VALUES`). Where the keep rule can spread the fillings no further (:func:`auto_share`
is 1: from 11 blank tokens) each round runs as independent runs of the first round's particles over ``top``
(``SMC.run_size``: ``top`` runs in the first round, or a few more where ``top`` leaves a large remainder), so
each filling kept can come from a lineage of its own: no run size of its own."""
AUTO_SEARCH = "product-search"
"""``auto``'s search with ``top`` on few blank tokens (:mod:`infill.onepass.product_search`)."""
AUTO_SEARCH_VALUES = 8.0
"""``auto``'s rule with ``top`` on more than one blank token (and no terms): the product search while the budget
buys its first product of this many tokens a blank (``d * v ** (d - 1)`` encoder sequences within the search's
first share, :data:`infill.onepass.product_search.EXPLORE`), :data:`AUTO_PARTICLES` above. One of the rule's three
constants, with :data:`AUTO_SPREAD` and the particles' tilt, chosen together on the calibration suite's tuning
half (2-16 blank tokens, 3 seeds, the dev MLM; ``eval/auto-rule-minilm``)."""
AUTO_SPREAD = 0.01
"""``auto`` with ``top`` keeps the search's or the particles' fillings spread (``decode="diverse"``) at a share of
the PLL range of the candidates it chooses among (the search's best, the particles' every one): this much a pair
of blank tokens (:func:`auto_share`), not nats of its own: a range each run sees, whatever the model or the
tokenizer."""


def auto_share(d: int) -> float:
    """The share of the candidates' PLL range ``auto`` keeps its fillings spread at on ``d`` blank tokens:
    :data:`AUTO_SPREAD` a pair of them, at most all of it."""
    return min(1.0, AUTO_SPREAD * d * (d - 1))


AUTO_CHAIN_BLANKS = 4
"""``auto`` without ``top`` (every chain's final state, or every draw, a sample): chains on templates of up to this
many blank tokens, :data:`AUTO_ORDER`'s draws in one pass above (``eval/default-minilm``)."""
AUTO_ORDER = "confident-first"
"""``auto``'s one-pass order above :data:`AUTO_CHAIN_BLANKS` blank tokens without ``top`` (every draw a sample)."""
AUTO_EXACT = {"samples": "independent", "best": "argmax"}
"""``auto`` on one blank token without terms, where the PLL is the masked LM's one conditional and one pass is
exact: independent draws (every draw a sample), or with ``top`` the ``top`` most likely tokens (``argmax``, whose
draws on one blank are those tokens, so a budget sets no rounds of them)."""
AUTO_BUDGET_PER_BLANK = 100
"""``auto``'s default budget: encoder sequences per blank token."""
MAX_DRAWS = 1 << 20
"""The most draws of a one-pass method per template: the draws and their deduplication stay within memory."""
MAX_BUDGET = MAX_DRAWS
"""The largest budget accepted, whatever the blanks and the method: a draw costs at least one encoder sequence,
so no budget accepted buys more than :data:`MAX_DRAWS` draws."""


def auto_rule() -> str:
    """:data:`AUTO_SEARCH_VALUES` in words, for the help."""
    return (
        f"with --top the product search while the budget buys a first product of {AUTO_SEARCH_VALUES:g} tokens a "
        f"blank, particles above, both kept spread at {AUTO_SPREAD:g} of the candidates' PLL range for each pair of "
        f"blank tokens; without --top chains up to {AUTO_CHAIN_BLANKS} blank tokens and {AUTO_ORDER} draws above"
    )


def check_hyperparameters(method: str, options: dict, defaults: dict) -> dict:
    """``options`` checked against ``defaults`` (name -> default value) of ``method``: known names, and
    values of the defaults' type (integers for integer options, finite numbers for float ones). A name
    that is no sampler's option at all is an unknown key."""
    checked = {}
    for key, value in options.items():
        if key not in defaults:
            from ..samplers import SAMPLERS, sampler_options

            if not any(key in sampler_options(name) for name in SAMPLERS):
                raise InfillError(f"unknown key {key!r}")
            known = ", ".join(sorted(defaults)) or "none"
            raise InfillError(f"{method!r} has no option {key!r} (its options: {known})")
        default = defaults[key]
        name = f"{method} option {key}"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise InfillError(f"{name} must be true or false, got {value!r}")
        elif isinstance(default, int):
            value = positive_integer(name, value, minimum=0)
        elif isinstance(default, float):
            value = finite_number(name, value)
        elif isinstance(default, str) and not isinstance(value, str):
            raise InfillError(f"{name} must be a string, got {value!r}")
        checked[key] = value
    return checked


MIN_TEMPERATURE = 1e-30
"""Below this, a model's float32 logits divided by the temperature overflow (``1e-39`` gave garbage)."""
SPAN_TEMPERATURE = 0.5
"""The default temperature of templates with word blanks (``[MASK*?]``): at 1 the span sampler's top 5 were
below left-to-right draws re-ranked at equal encoder sequences on most tasks; at 0.5 above them
(``eval/spans-minilm``)."""


def _setting(help: str, metavar: Optional[str] = None, type: Optional[type] = None, default: Any = None, **flags):
    """A run setting (a field of :class:`RunConfig`) of ``default``, its ``metadata`` the CLI's ``help``, ``metavar``
    and argparse ``type``, and ``flags`` (``short``; see :func:`settings`)."""
    named = {"metavar": metavar, "type": type}
    return field(default=default, metadata={"help": help, **flags, **{k: v for k, v in named.items() if v}})


class MethodSettings:
    """What the request (:class:`RunConfig`) and a plan's resolved settings (:class:`~.policy.Settings`) derive
    from their fields ``method``, ``options``, ``steps``, ``temperature``, ``anneal_from`` and ``target``."""

    @property
    def token_temperature(self) -> float:
        """The temperature of templates with token blanks only: ``temperature``, by default 1."""
        return 1.0 if self.temperature is None else self.temperature

    @property
    def span_temperature(self) -> float:
        """The temperature of templates with word blanks: ``temperature``, by default :data:`SPAN_TEMPERATURE`."""
        return SPAN_TEMPERATURE if self.temperature is None else self.temperature

    @property
    def mask_repeats(self) -> bool:
        """Whether the energy over token blanks is the repeat-masked PLL."""
        return self.target == "repeat-masked"

    @property
    def one_pass(self) -> Optional[OnePass]:
        """The one-pass method named (None: a sampler or ``auto``)."""
        return ONE_PASS.get(self.method) if isinstance(self.method, str) else None

    @property
    def is_baseline(self) -> bool:
        """Whether the method is a one-pass method."""
        return self.one_pass is not None

    @property
    def is_auto(self) -> bool:
        """Whether the method is :data:`AUTO`, which picks a run by the blanks (:mod:`.policy`)."""
        return self.method == AUTO

    def check_annealing(self, temperature: float) -> None:
        """Refuse, in one line, an ``anneal_from`` that does not anneal down to ``temperature`` over at least 4
        steps of an MCMC sampler."""
        if self.anneal_from is None:
            return
        if self.anneal_from <= temperature:
            raise InfillError(f"anneal_from ({self.anneal_from}) must be above the temperature ({temperature:g})")
        if self.is_baseline or self.steps < 4:
            raise InfillError("anneal_from needs an MCMC sampler and at least 4 steps")

    def annealing_schedule(self) -> list[tuple[float, int]]:
        """``(temperature, steps)`` stages of the run: without ``anneal_from`` one stage; with it, the first
        half of the steps in up to 4 equal stages at temperatures spaced geometrically from ``anneal_from``
        toward ``temperature`` (each stage a fresh run from the last one's final state, so no cached
        energy is stale), then the rest at ``temperature``. Only the last stage's states are candidates."""
        if self.anneal_from is None:
            return [(self.token_temperature, self.steps)]
        stages = min(4, self.steps // 2)
        ratio = (self.token_temperature / self.anneal_from) ** (1 / stages)
        length = self.steps // 2 // stages
        return [(self.anneal_from * ratio**k, length) for k in range(stages)] + [
            (self.token_temperature, self.steps - stages * length)
        ]


@dataclass(frozen=True)
class RunConfig(MethodSettings):
    """How to fill a template. ``method`` is a sampler name (``infill samplers``) or a one-pass method
    (:data:`infill.onepass.methods.ONE_PASS`); ``num_samples`` chains (or draws) of ``steps`` steps from
    ``init``; the target is ``exp(U / temperature)`` (by default 1, and :data:`SPAN_TEMPERATURE` for templates
    with word blanks; one-pass methods temper the masked LM's softmax), after an optional annealing from
    ``anneal_from`` during the first half of the steps (see :meth:`annealing_schedule`); ``top=k`` keeps the
    ``k`` distinct fillings of highest energy, taken as ``decode`` says; ``options`` are the sampler's
    hyperparameters. The fields are the one list of run settings: the CLI's flags and the keys of JSON
    lines and protocols are read from them (:func:`settings`). A configuration is hashable."""

    method: str = field(
        default=AUTO,
        metadata={
            "help": f"{AUTO} ({auto_rule()}; with --include chains; it sets its own target, chains, "
            f"steps and budget), a sampler (see `infill samplers`) or a baseline: {', '.join(ONE_PASS)}",
            "flag": "--sampler",
            "key": "sampler",
            "metavar": "NAME",
        },
    )
    num_samples: Optional[int] = _setting(
        f"chains (or draws) per template (default {SAMPLES}; {AUTO}: {AUTO_CHAINS['num_samples']} chains on token "
        f"blanks, or with --top the draws its budget buys)",
        "N",
        int,
        short="-n",
    )
    steps: Optional[int] = _setting(
        f"MCMC steps per chain (default {STEPS}; {AUTO}: until its budget is spent, at most {AUTO_CHAINS['steps']})",
        "N",
        int,
    )
    top: Optional[int] = _setting("keep the K distinct fillings of highest energy", "K", int)
    seed: Optional[int] = _setting("random seed (same seed, same samples)", "N", int)
    init: Optional[str] = _setting(
        f"chain start: uniform, independent (all-masked MLM draws), {INIT} (the default), confident-first (most "
        "peaked blank first) or random-order"
    )
    temperature: Optional[float] = _setting(
        f"target exp(energy / T); T < 1 favours likely fillings (default 1, and {SPAN_TEMPERATURE:g} for templates "
        "with word blanks)",
        "T",
        float,
    )
    anneal_from: Optional[float] = _setting(
        "anneal from temperature T0 down to --temperature over the first half of the steps", "T0", float
    )
    decode: Optional[str] = _setting(
        f"where --top takes fillings from: visited (every state after burn-in), final (the chains' final states) or "
        f"diverse (every state the run scored, kept for quality and diversity, those that repeat a content word or "
        f"double a word last); default visited ({AUTO}: diverse for its chains)",
        "HOW",
    )
    diversity: Optional[float] = _setting(
        "with --decode diverse, how many nats below the best candidate not yet kept another may be and be kept for "
        "differing more from those kept (default 1, among the 4 x --top best; named, among every candidate; "
        f"{AUTO} with --top: as --sampler says; more: more diverse, lower PLL)",
        "NATS",
        float,
    )
    allow_subwords: bool = _setting("let token blanks take word-continuation pieces (##ing)", default=False)
    allow_punctuation: bool = _setting(
        "let blanks take punctuation and quote marks (by default a blank takes words: tokens with a letter or digit)",
        default=False,
    )
    blank_unit: str = _setting(
        "what [MASK] and [MASK*n] count: token (exactly n tokens) or word (n words of any pieces); [MASK*m-n] and "
        "[MASK*?] are always words",
        "UNIT",
        default="token",
    )
    forbid: tuple[str, ...] = _setting(
        "words the blanks may not take, comma-separated (repeatable; a lone , forbids the comma)", "WORDS", default=()
    )
    span_method: str = _setting(
        "how word blanks are filled: rjmcmc (lengths change during the run) or per-length (chains at every length, "
        "the best kept)",
        "NAME",
        default="rjmcmc",
    )
    include: tuple[str, ...] = _setting("a word that must appear in the filled blanks (repeatable)", "WORD", default=())
    target: Optional[str] = _setting(
        "the energy over token blanks: pll, or repeat-masked (a blank's masked copy also masks every other blank that "
        "holds its token, so a repeated word is not predicted by its own copy); default pll "
        f"({AUTO}: {AUTO_TARGET} on more than one blank token)",
        "NAME",
    )
    budget: Optional[int] = _setting(
        "the most encoder sequences a template may spend, choosing the fillings included: a one-pass method draws "
        f"until it is spent; chains stop when it is spent (or after --steps); at most {MAX_BUDGET}; auto's default: "
        f"{AUTO_BUDGET_PER_BLANK} per blank token",
        "N",
        int,
    )
    options: dict = field(default_factory=dict)

    @classmethod
    def create(cls, **values) -> "RunConfig":
        """A checked configuration: known keys are run settings, the rest the method's hyperparameters
        (``sampler`` is accepted for ``method``)."""
        if "sampler" in values:
            values["method"] = values.pop("sampler")
        names = {f.name for f in fields(cls)} - {"options"}
        options = dict(values.pop("options", None) or {})
        options.update({k: values.pop(k) for k in list(values) if k not in names})
        return cls(**values, options=options)

    def __post_init__(self):
        self._check_method_settings()
        chains = not self.is_auto and self.one_pass is None  # auto's are set by the blanks
        for name, default in (("num_samples", SAMPLES), ("steps", STEPS), ("init", INIT)):
            if getattr(self, name) is None and (chains or (name == "num_samples" and not self.is_auto)):
                object.__setattr__(self, name, default)
        for name in ("num_samples", "steps"):
            if getattr(self, name) is not None:
                positive_integer(name, getattr(self, name))
        if self.decode is None and not self.is_auto:  # auto's is set by the blanks
            object.__setattr__(self, "decode", "visited")
        self._check_decoding()
        self._check_budget_and_temperatures()
        self._check_vocabulary()
        self._check_method()

    def _check_decoding(self) -> None:
        if (
            self.top is not None
            and positive_integer("top", self.top) > (self.num_samples or self.top)
            and self.decode == "final"
        ):
            raise InfillError(
                f"top ({self.top}) cannot exceed num_samples ({self.num_samples}) with final-state decoding"
            )
        if self.seed is not None:
            positive_integer("seed", self.seed, minimum=0)
            if self.seed >= 2**63:
                raise InfillError(f"seed must be below 2**63, got {self.seed}")
        if self.init is not None:
            one_of("init", self.init, INITS)
        if self.target is not None:
            one_of("target", self.target, TARGETS)
        if self.decode is not None:
            one_of("decode", self.decode, DECODES)
        if self.diversity is not None:
            if finite_number("diversity", self.diversity) < 0:
                raise InfillError(f"diversity must be a number of nats >= 0, got {self.diversity!r}")
            if self.decode not in (None, "diverse"):
                raise InfillError(
                    f"diversity sets how --decode diverse keeps fillings, not --decode {self.decode}: drop one"
                )

    def _check_budget_and_temperatures(self) -> None:
        """The budget, the temperature and annealing; ``auto``'s annealing is checked per kind of blank, where
        its run is resolved (:mod:`.policy`)."""
        if self.budget is not None:
            positive_integer("budget", self.budget)
            if self.budget > MAX_BUDGET:
                raise InfillError(f"budget must be at most {MAX_BUDGET} encoder sequences, got {self.budget}")
            if self.anneal_from is not None:
                raise InfillError(
                    "a budget stops the chains when it is spent, so it cannot be annealed: drop "
                    "--anneal-from or --budget"
                )
        if self.temperature is not None and finite_number("temperature", self.temperature) <= 0:
            raise InfillError(f"temperature must be positive, got {self.temperature!r}")
        if self.temperature is not None and self.temperature < MIN_TEMPERATURE:
            raise InfillError(
                f"temperature must be at least {MIN_TEMPERATURE:g}, got {self.temperature!r}: "
                "below that the model's logits divided by it overflow"
            )
        if self.anneal_from is not None:
            finite_number("anneal_from", self.anneal_from)
            if not self.is_auto:
                self.check_annealing(self.token_temperature)

    def _check_vocabulary(self) -> None:
        for name in ("allow_subwords", "allow_punctuation"):
            if not isinstance(getattr(self, name), bool):
                raise InfillError(f"{name} must be true or false, got {getattr(self, name)!r}")
        one_of("blank_unit", self.blank_unit, UNITS)
        one_of("span_method", self.span_method, SPAN_METHODS)
        for name in ("forbid", "include"):
            words = getattr(self, name)
            if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) and w.strip() for w in words):
                raise InfillError(f"{name} must be a list of words, got {words!r}")
            object.__setattr__(self, name, tuple(words))

    def _check_method_settings(self) -> None:
        """Refuse, in one line, a chain setting (or a temperature) given to a one-pass method that does not take
        it (:attr:`~infill.onepass.methods.OnePass.untaken`)."""
        if self.one_pass is None:
            return
        given = [name for name in self.one_pass.untaken if getattr(self, name) is not None]
        if given:
            raise InfillError(
                f"{self.method} is a one-pass method: it takes no {' or '.join(given)}; drop it or name a sampler"
            )

    def _check_method(self) -> None:
        """The method's name, from the registry's names before torch loads (an unknown one costs no import), and
        its hyperparameters; without torch, which the samplers need, only its options' numbers: nothing can run,
        and a sampler's options are checked where it is built."""
        for key, value in self.options.items():  # checked before the sampler registry (torch) is imported
            if isinstance(value, float):
                finite_number(f"{self.method} option {key}", value)
        samplers = sampler_names()
        if not isinstance(self.method, str) or self.method not in (*samplers, *ONE_PASS, AUTO):
            raise InfillError(
                f"unknown sampler {self.method!r}; choose from {AUTO}, "
                f"{', '.join(samplers)} or a baseline: {', '.join(ONE_PASS)}"
            )
        try:
            from ..samplers import sampler_options
        except ModuleNotFoundError as exc:
            if exc.name != "torch":
                raise
            return
        if self.one_pass is not None:
            defaults = self.one_pass.options()
        else:
            defaults = {} if self.is_auto else sampler_options(self.method)
        object.__setattr__(self, "options", check_hyperparameters(self.method, self.options, defaults))

    def __hash__(self) -> int:
        return hash(tuple(_hashable(getattr(self, f.name)) for f in fields(self)))

    def signature(self) -> dict:
        """The settings that reproduce a run (everything but ``top``), for diagnostics and reports."""
        return {
            "method": self.method,
            "num_samples": self.num_samples,
            "steps": self.steps,
            "init": self.init,
            "temperature": self.token_temperature,
            "anneal_from": self.anneal_from,
            "decode": self.decode,
            "seed": self.seed,
            "options": self.options,
            **({"include": list(self.include)} if self.include else {}),
            **({"target": self.target} if self.target not in (None, "pll") else {}),
            **({"budget": self.budget} if self.budget is not None else {}),
            **({"diversity": self.diversity} if self.diversity is not None else {}),
            **(
                {"blank_unit": self.blank_unit, "span_temperature": self.span_temperature}
                if self.blank_unit != "token"
                else {}
            ),
        }


def _hashable(value: Any) -> Any:
    """``value`` with its lists and dicts made tuples, for hashing."""
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def settings() -> list:
    """The run settings as dataclass fields, each with ``metadata``: ``help``, the CLI ``flag`` (default
    ``--name-with-dashes``), ``short``, and argparse ``type``/``metavar``; ``key`` is the name in JSON lines
    and protocols (default the field's name)."""
    return [f for f in fields(RunConfig) if f.name != "options"]


def flag(name: str) -> str:
    """The CLI flag of the run setting ``name``: its metadata's ``flag``, else ``--name-with-dashes``."""
    return RunConfig.__dataclass_fields__[name].metadata.get("flag") or "--" + name.replace("_", "-")
