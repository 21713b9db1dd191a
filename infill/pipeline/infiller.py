"""The Python API: ``Infiller(model).sample(template)`` fills the blanks of a template by MCMC.

A run goes through three stages, as the Hugging Face fill-mask pipeline does, whatever its blanks:

1. :func:`~.prepare.prepare` (the tokenizer only, no model): parse the templates, build the categories a blank
   may take, resolve each template's plan once (:mod:`~infill.pipeline.policy`: ``auto``, the budget, the
   sampler, what choosing keeps); the CLI calls it before it loads the model;
2. :meth:`Infiller.run_batch`, one template's plan run by its kind's module (:mod:`~infill.pipeline.runs`), its
   chains or draws one batch -> a :class:`~infill.pipeline.postprocess.Batch`;
3. :func:`infill.pipeline.postprocess.postprocess`: candidates (for token blanks one deduplication on tensors,
   energies only where missing), ``top``, marginals, text.

Compute is counted as sequences through the encoder (``encoder_sequences``): every masked copy of every
forward pass, and each copy again for a backward pass (see :class:`~infill.energies.masked_lm.MaskedLMEnergy`).
"""

from __future__ import annotations

import copy
import functools
import secrets
import sys
import time
from typing import Callable, Iterator, Optional, Sequence, Union

import torch
from torch import Tensor, nn

from ..constraints import check_change, source_categories
from ..energies.budget import BudgetSpent, Meter
from ..energies.conditionals import CACHE_MIB, ConditionalCache
from ..energies.masked_lm import PASS_SEQUENCES, MaskedLMEnergy
from ..errors import InfillError, positive_integer
from ..lm import default_model, models, packed, scoring
from ..lm.models import category_head
from ..text.blanks import quote
from ..text.template import Template, parse
from ..text.vocabulary import sampleable_token_ids
from .config import AUTO, REWRITE_SAMPLER, RunConfig
from .policy import Plan
from .postprocess import Batch, postprocess
from .prepare import Prepared, prepare
from .results import InfillResult
from .rewrite import in_source_words, rewrite_template
from .runs import Context, execute

PACK = 256
"""Templates whose first passes share encoder passes (:meth:`Infiller._first_passes`): more find more of one
length; their logits are held until their runs."""
OnStep = Callable[[int, int], None]
"""``on_step(done, total)``, called after every sampler step of a run; an exception raised in it ends the run."""


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
        """:func:`prepare` with this model's tokenizer and the chains' precision."""
        return prepare(templates, config, self.tokenizer, self.max_length, constrained, self._lower_precision())

    def _lower_precision(self) -> bool:
        return self.chain_model is not self.model

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
        return in_source_words(next(runs)[1], prepared.templates[0], words, source)

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
        Runs share their first encoder pass, with the floats each gets alone, :data:`PACK` templates at a time
        (:meth:`_first_passes`); then each runs alone, in order. A template gets the same samples whatever it is
        requested with (exactly :meth:`sample`'s). ``rewrite`` is ``(source, change)`` of :meth:`rewrite`."""
        prepared = templates if isinstance(templates, Prepared) else self.prepare(templates, config)
        prepared = prepared.resolved(bool(terms) or rewrite is not None, self._lower_precision())
        config = prepared.config
        if terms and config.is_baseline:
            raise InfillError(
                f"{config.method} draws from the masked LM alone and cannot see terms: use auto or an MCMC sampler"
            )
        seed = secrets.randbits(32) if config.seed is None else config.seed
        total = sum(plan.steps for plan in prepared.plans)
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
                for index, first in window:
                    yield index, fill(index, first)

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
                f"the budget of {batch.plan.spend.limit} encoder sequences ran out while choosing "
                f"the fillings of {quote(batch.template.text)}: raise --budget"
            ) from None

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
        """Stage 2 for template ``index``: its plan run by its kind's module (:mod:`~infill.pipeline.runs`);
        ``callback(t, state, info)`` after every step. A budget caps the encoder sequences through a
        :class:`~infill.energies.budget.Meter` shared by the run's energies. ``first``: the template's
        all-masked logits from a shared pass (:meth:`_first_passes`), which its energy takes as its first."""
        template, plan = prepared.templates[index], prepared.plans[index]
        meter = Meter(plan.spend.limit)
        context = Context(
            template=template,
            prepared=prepared,
            model=self.model,
            chain_model=self.chain_model,
            tokenizer=self.tokenizer,
            energy=functools.partial(self._energy, template=template, prepared=prepared, meter=meter, plan=plan),
            meter=meter,
            generator=generator,
            callback=callback,
            terms=terms,
            rewrite=rewrite,
            start=time.perf_counter(),
            first=first,
        )
        return execute(plan, context)

    def _first_passes(self, prepared: Prepared, drawn_starts: bool) -> Iterator[list[tuple[int, Optional[Tensor]]]]:
        """Windows of :data:`PACK` templates, each template's index with its all-masked logits ``(d, K)`` (None
        where it takes none), computed for the window in shared passes (:func:`infill.lm.packed.all_masked_logits`):
        for token blanks whose run reads that sequence first: the one-pass methods, and chains from drawn starts
        (``drawn_starts``: not rewrite's)."""
        for start in range(0, len(prepared.templates), PACK):
            window = range(start, min(start + PACK, len(prepared.templates)))
            models_of = {
                index: self._first_model(prepared.templates[index], prepared.plans[index], drawn_starts)
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

    def _first_model(self, template: Template, plan: Plan, drawn_starts: bool) -> Optional[nn.Module]:
        """The model whose all-masked pass ``plan`` reads first on ``template`` (None: it reads none first)."""
        if not template.fixed or self.cache_mib == 0:
            return None
        if plan.kind != "chains":
            return self.model
        return self.chain_model if drawn_starts and plan.config.init != "uniform" else None

    def _pass_rows(self) -> int:
        """Sequences a shared pass holds at most: as the energies' passes without gradient."""
        return min(PASS_SEQUENCES.get(self.device.type, PASS_SEQUENCES["cuda"]), self.chunk_size or 1 << 62)

    def _energy(
        self,
        model: nn.Module,
        first: Optional[Tensor] = None,
        *,
        template: Template,
        prepared: Prepared,
        meter: Meter,
        plan: Plan,
    ) -> MaskedLMEnergy:
        """The PLL energy of ``template`` on ``model`` charged to ``meter``, taking ``first`` as its first pass."""
        energy = MaskedLMEnergy(
            model,
            template.input_ids,
            template.blank_positions,
            prepared.categories,
            self.tokenizer.mask_token_id,
            self.chunk_size,
            ConditionalCache(self.cache_mib << 20),
            meter,
            plan.config.mask_repeats,
        )
        if first is not None:
            energy.take_pass(first)
        return energy
