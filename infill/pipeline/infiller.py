"""The Python API: ``Infiller(model).sample(template)`` fills the blanks of a template by MCMC.

A run goes through three stages, as the Hugging Face fill-mask pipeline does, whatever its blanks:

1. :func:`prepare` (the tokenizer only, no model): parse the templates, build the categories a blank may
   take, resolve each template's run once (:mod:`~infill.pipeline.policy`: ``auto``, the budget, the
   sampler); the CLI calls it before it loads the model;
2. :meth:`Infiller.run_batch`, one template's run, its chains one batch, the kernel chosen by the blanks: for token
   blanks chain starts and the sampler's chains, or the masked LM's own draws, -> a
   :class:`~infill.samplers.Trace` of category indices; for word blanks the span sampler (a sampler of the same
   contract, run by the same driver) -> a :class:`~infill.samplers.Trace` of packed fills;
3. :func:`infill.pipeline.postprocess.postprocess`: candidates (for token blanks one deduplication on tensors,
   energies only where missing), ``top``, marginals, text.

Compute is counted as sequences through the encoder (``encoder_sequences``): every masked copy of every
forward pass, and each copy again for a backward pass (see :class:`~infill.energies.masked_lm.MaskedLMEnergy`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import secrets
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence, Union

import torch
from torch import Tensor, nn

from ..constraints import (
    Include,
    calibrate_closeness,
    check_change,
    constrained_energy,
    include_pieces,
    include_term,
    source_categories,
)
from ..energies.budget import BudgetSpent, Meter
from ..energies.conditionals import CACHE_MIB, ConditionalCache
from ..energies.masked_lm import PASS_SEQUENCES, MaskedLMEnergy
from ..errors import InfillError, positive_integer
from ..lm import default_model, mlm_draws, models, packed, scoring
from ..lm.models import category_head
from ..lm.side_by_side import side_by_side
from ..samplers import run_annealed
from ..spans import MAX_PIECES, span_run
from ..text.blanks import quote
from ..text.template import Template, parse
from ..text.vocabulary import sampleable_token_ids, spelled, word_piece_ids
from . import one_pass
from .choose import float32_cost
from .config import AUTO, REWRITE_SAMPLER, RunConfig
from .policy import Run, least_budget, resolve
from .postprocess import Batch, postprocess
from .results import InfillResult

RESCORE_PER_BLANK = 0.1
"""With a budget, chains that compute no energies (plain ``gibbs``) keep back, for choosing the fillings, this
share per blank token of the ``d`` masked copies of every distinct state they visited (at most all ``d``): the
cached terms and ``top``'s bound spare the rest (measured on the tuning templates)."""
WORD = re.compile(r"(?<![\w'’])\w+(?![\w'’])")  # a word that rewrite may change
PACK = 256
"""Templates whose first passes share encoder passes (:meth:`Infiller._first_passes`): more find more of one
length; their logits are held until their runs."""
SIDE_BY_SIDE = 4
"""On the CPU, the most templates of one length whose runs go side by side, pooling their encoder passes
(:func:`infill.lm.side_by_side.side_by_side`); each holds its own cache meanwhile."""
OnStep = Callable[[int, int], None]
"""``on_step(done, total)``, called after every sampler step of a run; an exception raised in it ends the run."""


@dataclass(frozen=True)
class Prepared:
    """Templates checked against one configuration: the stage before any model work. ``runs`` are what each
    template runs (:func:`~infill.pipeline.policy.resolve`: ``auto`` resolved, the sampler built), resolved for
    an energy with terms where ``constrained``; ``categories`` are the tokens token blanks may take, ``pieces``
    those word blanks may take (None without word blanks); ``include`` is the include term of ``config.include``
    for templates of token blanks, ``span_include`` the words' forms as pieces for templates with word blanks
    (None without words)."""

    templates: tuple[Template, ...]
    config: RunConfig
    categories: Tensor
    runs: tuple[Run, ...]
    constrained: bool = False
    include: Optional[Include] = None
    pieces: Optional[Tensor] = None
    span_include: Optional[list] = None

    def with_terms(self) -> "Prepared":
        """These templates resolved for an energy with terms (a user's, or rewrite's closeness)."""
        if self.constrained:
            return self
        return dataclasses.replace(self, runs=_resolve(self.templates, self.config, True), constrained=True)


def prepare(texts: Sequence[str], config: RunConfig, tokenizer, max_length: int, constrained: bool = False) -> Prepared:
    """Parse ``texts``, build the categories and resolve each template's run (``constrained``: an energy with
    terms beside the PLL and the include words): every check that needs no model. Raises :class:`InfillError`
    with one line."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise InfillError(f"templates must be a list of strings, got {type(texts).__name__}")
    templates = []
    for text in texts:
        if not isinstance(text, str):
            raise InfillError(f"a template must be a string, got {type(text).__name__}")
        templates.append(parse(text, tokenizer, max_length, config.blank_unit))
    categories = sampleable_token_ids(tokenizer, config.allow_subwords, config.forbid, config.allow_punctuation)
    if config.include and config.is_baseline:
        raise InfillError(
            f"{config.method} draws from the masked LM alone and cannot hold include words: use auto or an MCMC sampler"
        )
    constrained = constrained or bool(config.include)
    runs = _resolve(templates, config, constrained)
    pieces, spans, fixed = None, None, [t for t in templates if t.fixed]
    if len(fixed) < len(templates):
        words = [t for t in templates if not t.fixed]
        pieces = word_piece_ids(tokenizer, config.forbid, config.allow_punctuation)
        if config.include:
            spans = include_pieces(
                tokenizer,
                pieces,
                config.include,
                min(sum(b.max for b in t.blanks) for t in words),
                MAX_PIECES,
                config.forbid,
            )
    include = None
    if config.include and fixed:
        include = include_term(tokenizer, categories, config.include, min(t.num_blanks for t in fixed), config.forbid)
    return Prepared(tuple(templates), config, categories, runs, constrained, include, pieces, spans)


def _resolve(templates: Sequence[Template], config: RunConfig, constrained: bool) -> tuple[Run, ...]:
    """Each template's run (:func:`~infill.pipeline.policy.resolve`), a refusal naming its template."""
    runs = []
    for template in templates:
        try:
            runs.append(resolve(config, template, constrained))
        except InfillError as exc:
            raise InfillError(f"{exc} (template {quote(template.text)})") from None
    return tuple(runs)


class Infiller:
    """A masked LM loaded once, sampling fillings of templates.

    ``model`` is a hub id or local path (default ``$INFILL_MODEL`` or ``bert-base-uncased``), or a loaded
    masked-LM module together with its ``tokenizer`` (a tokenizer given with a name is used as the model's).
    ``dtype`` is ``None`` (float32), ``"bfloat16"``, ``"float16"``, ``"auto"`` or a torch dtype: the precision of
    the chains on token blanks (:func:`infill.lm.models.chain_dtype`; ``"auto"``: bfloat16 where the device has it
    natively). The reported fillings are chosen and scored in float32, as are word blanks, ``score`` and
    ``rank``: a model given in float32 keeps a copy in the chains' dtype beside it. ``chunk_size`` caps the
    masked copies per forward/backward pass of the energy's gradient (``None``: all chains x blanks in one
    pass), trading nothing but peak memory.
    ``cache_mib`` caps each run's cache of conditionals (:mod:`infill.energies.conditionals`; 0 keeps nothing);
    a run's cache is its own, never shared with another call.
    """

    def __init__(
        self,
        model: Union[str, nn.Module, None] = None,
        device: Union[str, torch.device] = "cpu",
        dtype: Union[str, torch.dtype, None] = None,
        tokenizer=None,
        chunk_size: Optional[int] = None,
        cache_mib: int = CACHE_MIB,
    ):
        self.chunk_size = None if chunk_size is None else positive_integer("chunk_size", chunk_size)
        self.cache_mib = positive_integer("cache_mib", cache_mib, minimum=0)
        if isinstance(model, nn.Module):
            if tokenizer is None:
                raise InfillError("pass the tokenizer along with a model object")
            self.model_name = model.config.name_or_path or type(model).__name__
            self.model, self.tokenizer = model.to(models.resolve_device(device)).eval(), tokenizer
        else:
            self.model_name = model or default_model()
            self.model, self.tokenizer = models.load(self.model_name, device, None, tokenizer)
        self.device = self.model.get_input_embeddings().weight.device
        chains = self.model.dtype if dtype is None else models.chain_dtype(dtype, self.device)
        self.chain_model = self.model if chains == self.model.dtype else copy.deepcopy(self.model).to(chains)
        self.max_length = models.max_length(self.tokenizer, self.model.config)

    def parse(self, template: str) -> Template:
        if not isinstance(template, str):
            raise InfillError(f"a template must be a string, got {type(template).__name__}")
        return parse(template, self.tokenizer, self.max_length)

    def category_ids(
        self, allow_subwords: bool = False, forbid: Sequence[str] = (), allow_punctuation: bool = False
    ) -> Tensor:
        """Token ids a blank may take; see :func:`infill.text.vocabulary.sampleable_token_ids`."""
        return sampleable_token_ids(self.tokenizer, allow_subwords, tuple(forbid), allow_punctuation)

    def score(self, texts: Sequence[str], mode: str = "pll") -> list:
        """The PLL of whole sentences (or PLL-word-l2r, ``mode="word-l2r"``) with per-token scores; see
        :func:`infill.lm.scoring.score`."""
        return scoring.score(self.model, self.tokenizer, texts, mode, **self._copies())

    def rank(self, template: str, options: Sequence[str], mode: str = "pll") -> list:
        """The given fills of a one-blank template, best first by the filled sentence's score; see
        :func:`infill.lm.scoring.rank`."""
        return scoring.rank(self.model, self.tokenizer, template, options, mode, **self._copies())

    def _copies(self) -> dict:
        return {} if self.chunk_size is None else {"max_copies": self.chunk_size}

    def prepare(self, templates: Sequence[str], config: RunConfig, constrained: bool = False) -> Prepared:
        """:func:`prepare` with this model's tokenizer."""
        return prepare(templates, config, self.tokenizer, self.max_length, constrained)

    def sample(
        self,
        template: str,
        sampler: str = RunConfig.method,
        num_samples: Optional[int] = None,
        steps: Optional[int] = None,
        top: Optional[int] = None,
        seed: Optional[int] = None,
        *,
        terms: Sequence[tuple] = (),
        progress: bool = False,
        on_step: Optional[OnStep] = None,
        **options,
    ) -> InfillResult:
        """Fill ``template`` with ``num_samples`` chains of ``steps`` steps of ``sampler`` (or draws of a
        baseline method: ``independent``, ``left-to-right``, ``random-order``, ``confident-first``, ``argmax``;
        by default ``auto``, which picks by the number of blanks and spends ``budget`` encoder sequences:
        :data:`~infill.pipeline.config.AUTO`); every other setting of
        :class:`~infill.pipeline.config.RunConfig` (``init``, ``temperature``, ``anneal_from``, ``decode``,
        ``budget``, ``allow_subwords``, ``forbid``, ``include``...) and the sampler's hyperparameters
        (``step_size=...``) are keywords.

        Chains start from ``init`` (draws from the masked LM, or uniform tokens) and target
        ``exp(U / temperature)``, optionally annealed from ``anneal_from`` during the first half of the
        steps. ``U`` is the PLL, plus ``20 x include`` where words must appear (``include=["word"]``), plus
        the user's ``terms``: ``(weight, term)`` pairs, a term a callable on one-hot ``x (B, d, K)`` or an
        :class:`infill.constraints.SequenceClassifier` (see ``docs/constraints.md``). Without ``top`` each
        chain's final state is a sample; ``top=k`` keeps the ``k`` distinct fillings of highest ``U`` among
        the states visited after burn-in (``decode="visited"``), among the final states (``decode="final"``,
        the papers' protocol), or among every state the run scored, kept for quality and diversity
        (``decode="diverse"``). A sample's ``energy`` is its PLL; with terms, ``terms`` holds each term's value.
        Every draw comes from a ``torch.Generator`` seeded with ``seed`` (a random seed when None, reported in
        the diagnostics). ``progress`` shows a tqdm bar on stderr after 2 s; ``on_step(done, total)`` is called
        after every step.
        """
        return self.sample_many(
            [template],
            sampler,
            num_samples,
            steps,
            top,
            seed,
            terms=terms,
            progress=progress,
            on_step=on_step,
            **options,
        )[0]

    def sample_many(
        self,
        templates: Sequence[str],
        sampler: str = RunConfig.method,
        num_samples: Optional[int] = None,
        steps: Optional[int] = None,
        top: Optional[int] = None,
        seed: Optional[int] = None,
        *,
        terms: Sequence[tuple] = (),
        progress: bool = False,
        on_step: Optional[OnStep] = None,
        **options,
    ) -> list[InfillResult]:
        """:meth:`sample` for a list of templates, in their order."""
        config = RunConfig.create(method=sampler, num_samples=num_samples, steps=steps, top=top, seed=seed, **options)
        return self.run(templates, config, progress=progress, on_step=on_step, terms=terms)

    def rewrite(
        self,
        text: str,
        change: float = 0.5,
        sampler: str = REWRITE_SAMPLER,
        num_samples: Optional[int] = None,
        steps: Optional[int] = None,
        top: Optional[int] = None,
        seed: Optional[int] = None,
        *,
        terms: Sequence[tuple] = (),
        progress: bool = False,
        on_step: Optional[OnStep] = None,
        **options,
    ) -> InfillResult:
        """Diverse variants of a whole sentence: every word the model spells as one token is a blank, the
        chains start from ``text`` itself, and a closeness term, its weight calibrated by short runs of the
        chains (:func:`infill.constraints.calibrate_closeness`), keeps the expected fraction of changed words
        near ``change``; the run goes on from where those left the chains. Other arguments as :meth:`sample`;
        ``init`` is the source."""
        check_change(change)
        template, words, source = rewrite_template(text, self.tokenizer)
        config = RunConfig.create(method=sampler, num_samples=num_samples, steps=steps, top=top, seed=seed, **options)
        if config.is_baseline or config.method == AUTO:
            raise InfillError(f"rewrite needs an MCMC sampler, not {config.method!r}")
        if config.budget is not None:
            raise InfillError(
                "rewrite runs chains of its own to calibrate the closeness, which a budget does not "
                "cover: drop --budget"
            )
        prepared = self.prepare([template], config, constrained=True)
        categories = source_categories(prepared.categories, torch.tensor(source))
        runs = self.stream(prepared, progress=progress, on_step=on_step, terms=terms, rewrite=(categories, change))
        result = next(runs)[1]
        blanks = prepared.templates[0].blank_positions
        samples = []
        for sample in result.samples:  # a word kept is the user's own; a changed one takes the source's capital
            fills = [
                word if token == kept else (fill[:1].upper() + fill[1:] if word[:1].isupper() else fill)
                for word, kept, token, fill in zip(
                    words, source, torch.tensor(sample.token_ids)[blanks].tolist(), sample.fills
                )
            ]
            samples.append(dataclasses.replace(sample, text=prepared.templates[0].splice(fills), fills=fills))
        return dataclasses.replace(result, samples=samples)

    def run(
        self,
        templates: Union[Sequence[str], Prepared],
        config: Optional[RunConfig] = None,
        progress: bool = False,
        on_step: Optional[OnStep] = None,
        terms: Sequence[tuple] = (),
    ) -> list[InfillResult]:
        """Every result of :meth:`stream`, in the templates' order."""
        return [result for _, result in self.stream(templates, config, progress, on_step, terms)]

    def stream(
        self,
        templates: Union[Sequence[str], Prepared],
        config: Optional[RunConfig] = None,
        progress: bool = False,
        on_step: Optional[OnStep] = None,
        terms: Sequence[tuple] = (),
        rewrite: Optional[tuple[Tensor, float]] = None,
    ) -> Iterator[tuple[int, InfillResult]]:
        """Fill every template as ``config`` says (or run what :meth:`prepare` returned), yielding
        ``(index, result)`` in the templates' order. Each template is a run of its own, all its chains one
        batch, drawing from its own generator seeded with the request's seed, with its own cache and budget.
        Runs share encoder passes, with the floats each gets alone: the first pass of :data:`PACK` templates at
        a time (:meth:`_first_passes`), and on the CPU every pass without gradient of up to
        :data:`SIDE_BY_SIDE` templates of one length, run side by side
        (:func:`~infill.lm.side_by_side.side_by_side`). A template gets the same samples whatever it is
        requested with (exactly :meth:`sample`'s). ``rewrite`` is ``(source, change)`` of :meth:`rewrite`."""
        prepared = templates if isinstance(templates, Prepared) else self.prepare(templates, config)
        if terms or rewrite is not None:
            prepared = prepared.with_terms()
        config = prepared.config
        if terms and config.is_baseline:
            raise InfillError(
                f"{config.method} draws from the masked LM alone and cannot see terms: use auto or an MCMC sampler"
            )
        seed = secrets.randbits(32) if config.seed is None else config.seed
        total = sum(run.steps for run in prepared.runs)
        taken = iter(range(1, total + 1))
        from tqdm.auto import tqdm

        with tqdm(
            total=total,
            disable=not progress,
            delay=2,
            file=sys.stderr,
            unit="step",
            desc=f"infill {config.method}",
            leave=False,
        ) as bar:

            def stepped(*_):
                bar.update()
                if on_step is not None:
                    on_step(next(taken), total)

            fill = functools.partial(self._fill, prepared, seed, stepped, terms, rewrite, bar)
            for window in self._first_passes(prepared, rewrite is None):
                yield from side_by_side(window, fill, self._side_by_side_key(prepared), SIDE_BY_SIDE, self._pass_rows())

    def _fill(
        self,
        prepared: Prepared,
        seed: int,
        stepped: Callable,
        terms: Sequence[tuple],
        rewrite: Optional[tuple[Tensor, float]],
        bar,
        index: int,
        first: Optional[Tensor],
    ) -> InfillResult:
        """Template ``index``'s result: its run (:meth:`run_batch`) from a generator seeded with ``seed``, then
        its fillings chosen (:func:`~.postprocess.postprocess`)."""
        generator = torch.Generator(self.device).manual_seed(seed)
        batch = self.run_batch(prepared, index, generator, stepped, terms, rewrite, first)
        try:
            return postprocess(batch, self.tokenizer, self.model_name, seed, bar)
        except BudgetSpent:
            raise InfillError(
                f"the budget of {batch.config.budget} encoder sequences ran out while choosing "
                f"the fillings of {quote(batch.template.text)}: raise --budget"
            ) from None

    def _side_by_side_key(self, prepared: Prepared) -> Callable[[tuple], Optional[int]]:
        """Which runs go side by side: on the CPU, token blanks' of one length (on another device, where no
        test shows that a row's floats do not depend on its pass mates, each runs alone)."""

        def length(item: tuple[int, Optional[Tensor]]) -> Optional[int]:
            template = prepared.templates[item[0]]
            return template.length if template.fixed and self.device.type == "cpu" else None

        return length

    def run_batch(
        self,
        prepared: Prepared,
        index: int,
        generator: torch.Generator,
        callback: Optional[Callable] = None,
        terms: Sequence[tuple] = (),
        rewrite: Optional[tuple[Tensor, float]] = None,
        first: Optional[Tensor] = None,
    ) -> Batch:
        """Stage 2 for template ``index``; ``callback(t, state, info)`` after every step. The kernel follows the
        run: token blanks run the batched chains (or the masked LM's draws for a one-pass method), a template
        with word blanks the span sampler. A budget caps the encoder sequences through a
        :class:`~infill.energies.budget.Meter` shared by the run's energies. ``first``: the template's
        all-masked logits from a shared pass (:meth:`_first_passes`), which its energy takes as its first."""
        start = time.perf_counter()
        template, run = prepared.templates[index], prepared.runs[index]
        meter = Meter(run.config.budget)
        if not template.fixed:
            return self._run_spans(prepared, template, run.config, meter, generator, callback, start)
        if run.sampler is None:
            return self._draw(prepared, template, run.config, meter, generator, start, first)
        return self._run_chains(prepared, template, run, meter, generator, callback, terms, rewrite, start, first)

    def _first_passes(self, prepared: Prepared, drawn_starts: bool) -> Iterator[list[tuple[int, Optional[Tensor]]]]:
        """Windows of :data:`PACK` templates, each template's index with its all-masked logits ``(d, K)`` (None
        where it takes none), computed for the window in shared passes (:func:`infill.lm.packed.all_masked_logits`):
        for token blanks whose run reads that sequence first: the one-pass methods, and chains from drawn starts
        (``drawn_starts``: not rewrite's)."""
        for start in range(0, len(prepared.templates), PACK):
            window = range(start, min(start + PACK, len(prepared.templates)))
            models_of = {
                index: self._first_model(prepared.templates[index], prepared.runs[index], drawn_starts)
                for index in window
            }
            firsts: dict[int, Tensor] = {}
            for model in {id(m): m for m in models_of.values() if m is not None}.values():
                head = category_head(model, prepared.categories.to(self.device))
                at = [index for index in window if models_of[index] is model]
                if head is None:
                    continue
                logits = packed.all_masked_logits(
                    model,
                    head,
                    [
                        (
                            prepared.templates[i].input_ids.to(self.device),
                            prepared.templates[i].blank_positions.to(self.device),
                        )
                        for i in at
                    ],
                    self.tokenizer.mask_token_id,
                    self._pass_rows(),
                )
                firsts.update(zip(at, logits))
            yield [(index, firsts.get(index)) for index in window]

    def _first_model(self, template: Template, run: Run, drawn_starts: bool) -> Optional[nn.Module]:
        """The model whose all-masked pass ``run`` reads first on ``template`` (None: it reads none first)."""
        if not template.fixed or self.cache_mib == 0:
            return None
        if run.sampler is None:
            return self.model
        return self.chain_model if drawn_starts and run.config.init != "uniform" else None

    def _pass_rows(self) -> int:
        """Sequences a shared pass holds at most: as the energies' passes without gradient."""
        return min(PASS_SEQUENCES.get(self.device.type, PASS_SEQUENCES["cuda"]), self.chunk_size or 1 << 62)

    def _energy(
        self,
        model: nn.Module,
        template: Template,
        prepared: Prepared,
        meter: Meter,
        config: RunConfig,
        first: Optional[Tensor] = None,
    ) -> MaskedLMEnergy:
        energy = MaskedLMEnergy(
            model,
            template.input_ids,
            template.blank_positions,
            prepared.categories,
            self.tokenizer.mask_token_id,
            self.chunk_size,
            ConditionalCache(self.cache_mib << 20),
            meter,
            config.mask_repeats,
        )
        if first is not None:
            energy.take_pass(first)
        return energy

    def _draw(
        self,
        prepared: Prepared,
        template: Template,
        config: RunConfig,
        meter: Meter,
        generator: torch.Generator,
        start: float,
        first: Optional[Tensor],
    ) -> Batch:
        """A one-pass method's draws (:func:`~.one_pass.draw`) on the float32 model (the chains' precision does
        not apply)."""
        pll = self._energy(self.model, template, prepared, meter, config, first)
        x, values = one_pass.draw(pll, config, generator)
        return Batch(
            template=template,
            config=dataclasses.replace(config, num_samples=len(x)),
            start=start,
            energy=pll,
            target=pll,
            x=x,
            starts=x,
            energies=values,
        )

    def _run_chains(
        self,
        prepared: Prepared,
        template: Template,
        run: Run,
        meter: Meter,
        generator: torch.Generator,
        callback: Optional[Callable],
        terms: Sequence[tuple],
        rewrite: Optional[tuple[Tensor, float]],
        start: float,
        first: Optional[Tensor],
    ) -> Batch:
        """The sampler's chains, all one batch. With a budget they may spend it less what choosing ``top``
        fillings takes (:func:`~infill.pipeline.policy.least_budget`; with chains in a lower precision, the
        float32 PLLs too: :func:`~infill.pipeline.choose.float32_cost`), and stop early as
        :data:`RESCORE_PER_BLANK` says; choosing them spends the rest."""
        config, sampler, d = run.config, run.sampler, template.num_blanks
        pll = self._energy(self.chain_model, template, prepared, meter, config, first)
        float32 = (
            None if self.chain_model is self.model else self._energy(self.model, template, prepared, meter, config)
        )
        target = pll if prepared.include is None and not terms else constrained_energy(pll, terms, prepared.include)
        held_back = 0 if float32 is None else float32_cost(config, d, target is not pll)  # choosing takes it
        if config.budget is not None and config.budget < least_budget(config, d) + held_back:
            raise InfillError(
                f"a budget of {config.budget} encoder sequences is too small for {config.num_samples} "
                f"{config.method} chains in {self.chain_model.dtype} on {d} blank tokens, re-scored in "
                f"float32: at least {least_budget(config, d) + held_back}"
            )
        target, x = _chain_starts(config, sampler, pll, target, rewrite, generator)
        stop = None if config.budget is None else _budget_stop(config, d, x, meter, held_back)
        batch = dict(template=template, start=start, energy=pll, target=target, starts=x, float32=float32)
        try:
            with meter.holding(d * (config.top or config.num_samples) + held_back):  # what choosing takes
                trace = run_annealed(sampler, target, x, config.annealing_schedule(), generator, callback, stop)
        except BudgetSpent:  # the starts took what the chains could spend: they are the candidates
            if config.init not in mlm_draws.ORDERS + ("independent",):
                raise InfillError(
                    f"a budget of {config.budget} encoder sequences buys no step of {config.method} "
                    f"from {config.init} starts on {d} blank tokens: raise --budget"
                ) from None
            return Batch(config=dataclasses.replace(config, method=config.init), x=x, **batch)
        if config.budget is not None and len(trace.samples) < config.steps:
            config = dataclasses.replace(config, steps=len(trace.samples))
        return Batch(config=config, x=trace.final_state.x, trace=trace, sampler=sampler, **batch)

    def _run_spans(
        self,
        prepared: Prepared,
        template: Template,
        config: RunConfig,
        meter: Meter,
        generator: torch.Generator,
        callback: Optional[Callable],
        start: float,
    ) -> Batch:
        """The span sampler's chains for a template with word blanks (:func:`infill.spans.span_run`:
        reversible-jump MH, or ``span_method="per-length"``: chains pinned at every combination of lengths), run
        by :func:`~infill.samplers.run_annealed` at the span temperature (annealed from ``anneal_from``), every
        encoder pass charged to ``meter``."""
        schedule = dataclasses.replace(config, temperature=config.span_temperature).annealing_schedule()
        try:
            run = span_run(
                self.model,
                self.tokenizer,
                template,
                prepared.pieces,
                config.num_samples,
                generator,
                schedule[0][0],
                config.init,
                config.span_method,
                include=prepared.span_include or (),
                meter=meter,
            )
            trace = run_annealed(run.sampler, run.target, run.x0, schedule, generator, callback)
        except BudgetSpent:
            raise InfillError(
                f"a budget of {config.budget} encoder sequences buys no step of the span sampler "
                f"({config.num_samples} chains) on {quote(template.text)}: raise --budget"
            ) from None
        if len(trace.samples) < schedule[-1][1]:  # the budget stopped the chains
            config = dataclasses.replace(config, steps=len(trace.samples))
        return Batch(
            template=template,
            config=config,
            start=start,
            energy=run.energy,
            target=run.target,
            x=trace.final_state.x,
            starts=run.x0,
            trace=trace,
            sampler=run.sampler,
        )


def rewrite_template(text: str, tokenizer) -> tuple[str, list[str], list[int]]:
    """``text`` with every word the tokenizer spells as one word-start token made a ``[MASK]`` blank, those
    words as written, and their tokens (the source filling); other words (several pieces, or glued to an
    apostrophe) stay text."""
    if not isinstance(text, str) or not text.strip():
        raise InfillError(f"rewrite takes a sentence, got {text!r}")
    if "[MASK" in text.upper():
        raise InfillError(
            f"rewrite takes plain text, every word of it a blank; {quote(text)} has a [MASK]: "
            "use `infill sample` for a template"
        )
    pieces, words, source, at = [], [], [], 0
    matches = list(WORD.finditer(text))
    for m, ids in zip(matches, spelled(tokenizer, [m.group() for m in matches])):
        if len(ids) == 1:
            pieces += [text[at : m.start()], "[MASK]"]
            words.append(m.group())
            source.append(ids[0])
            at = m.end()
    if not source:
        raise InfillError(f"no word of {quote(text)} is one token for this model: nothing to rewrite")
    return "".join(pieces) + text[at:], words, source


def _chain_starts(
    config: RunConfig,
    sampler,
    pll: MaskedLMEnergy,
    target,
    rewrite: Optional[tuple[Tensor, float]],
    generator: torch.Generator,
) -> tuple:
    """The target and the chains' starts: draws from the masked LM (at ``anneal_from`` where the run is
    annealed), or for rewrite the state the closeness's calibration left the chains in, with the calibrated
    target."""
    if rewrite is None:
        temperature = config.anneal_from or config.token_temperature
        return target, mlm_draws.draw(pll, config.init, config.num_samples, generator, temperature)
    source, change = rewrite[0].to(pll.category_ids.device), rewrite[1]  # the chains go on from the calibration's
    return calibrate_closeness(
        target,
        source,
        change,
        sampler,
        chains=config.num_samples,
        steps=max(4, config.steps // 2),
        generator=generator,
        with_state=True,
    )


def _budget_stop(config: RunConfig, d: int, x: Tensor, meter: Meter, held_back: int) -> Callable:
    """``stop(state)`` for chains with a budget: true once the budget, less what choosing the fillings will take,
    is spent (the distinct states visited, where they are still to score: :data:`RESCORE_PER_BLANK`)."""
    seen = set(map(tuple, x.tolist()))

    def stop(state) -> bool:
        if state.energy.isnan().any():  # the states visited are still to score
            seen.update(map(tuple, state.x.tolist()))
            keep = len(seen) * d * min(1.0, RESCORE_PER_BLANK * d)
        else:
            keep = d * (config.top or 1)
        return meter.spent + keep + held_back >= config.budget

    return stop
