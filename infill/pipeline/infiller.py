"""The Python API: ``Infiller(model).sample(template)`` fills the blanks of a template.

A run goes through three stages, as the Hugging Face fill-mask pipeline does: :func:`~.prepare.prepare` (the
tokenizer only: the templates parsed, each one's plan resolved by :mod:`~infill.pipeline.policy`), the run of
each plan by its kind's module (:mod:`~.engine`, :mod:`~infill.pipeline.runs`), and
:mod:`~infill.pipeline.postprocess` (candidates, ``top``, text). Compute is counted as sequences through the
encoder (``encoder_sequences``; :class:`~infill.energies.masked_lm.MaskedLMEnergy`).
"""

from __future__ import annotations

import copy
from typing import Callable, Iterator, Optional, Sequence, Union

import torch
from torch import Tensor, nn

from ..energies.conditionals import CACHE_MIB
from ..errors import InfillError, positive_integer
from ..lm import default_model, models, scoring
from ..text.template import Template, parse
from ..text.vocabulary import sampleable_token_ids
from . import engine
from .config import REWRITE_SAMPLER, RunConfig
from .prepare import Prepared, prepare
from .results import InfillResult
from .rewrite import rewrite

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

    def score(self, texts: Sequence[str], mode: str = "pll", window: Optional[int] = scoring.WINDOW) -> list:
        """The PLL of whole sentences (or PLL-word-l2r, ``mode="word-l2r"``) with per-token scores; a text longer
        than the model each token in the ``window`` tokens centred on it (``None``: the model's maximum); see
        :func:`infill.lm.scoring.score`."""
        return scoring.score(self.model, self.tokenizer, texts, mode, window=window, **self._copies())

    def rank(
        self, template: str, options: Sequence[str], mode: str = "pll", window: Optional[int] = scoring.WINDOW
    ) -> list:
        """The given fills of a one-blank template, best first by the filled sentence's score; see
        :func:`infill.lm.scoring.rank`."""
        return scoring.rank(self.model, self.tokenizer, template, options, mode, window=window, **self._copies())

    def _copies(self) -> dict:
        return {} if self.chunk_size is None else {"max_copies": self.chunk_size}

    def prepare(self, templates: Sequence[str], config: RunConfig, constrained: bool = False) -> Prepared:
        """:func:`prepare` with this model's tokenizer and the chains' precision."""
        return prepare(templates, config, self.tokenizer, self.max_length, constrained, self.lower_precision())

    def lower_precision(self) -> bool:
        """Whether chains run in a lower precision than the model's float32."""
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
        config = RunConfig.create(method=sampler, num_samples=num_samples, steps=steps, top=top, seed=seed, **options)
        return rewrite(self, text, change, config, terms=terms, progress=progress, on_step=on_step)

    def augment(self, texts: Union[str, Sequence[str]], n: int = 5, change: float = 0.15, seed: int = 0, **options):
        """``n`` distinct variants of each sentence, ``change`` of its words changed: a string gives its
        :class:`~infill.augmentation.variants.Variants`, a list one per sentence, in order; a sentence gets the same
        variants for a ``seed`` in any batch. ``options``: ``protect``, ``min_words``, ``max_words``, ``sampler``,
        ``pll``, ``keep_close``, ``classifier``, ``label``, ``action`` (:func:`infill.pipeline.augment.augment`)."""
        from .augment import augment

        return augment(self, texts, n, change, seed, **options)

    def run(
        self, templates: Union[Sequence[str], Prepared], config: Optional[RunConfig] = None, **keywords
    ) -> list[InfillResult]:
        """Every result of :meth:`stream` (``keywords``: its own), in the templates' order."""
        return [result for _, result in self.stream(templates, config, **keywords)]

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
        ``(index, result)`` in the templates' order (:func:`~.engine.stream`). Each template is a run of its own,
        all its chains one batch, drawing from its own generator seeded with the request's seed, with its own
        cache and budget; runs share their first encoder pass, with the floats each gets alone. A template gets
        the same samples whatever it is requested with (exactly :meth:`sample`'s). ``rewrite`` is ``(source,
        change)`` of :meth:`rewrite`."""
        prepared = templates if isinstance(templates, Prepared) else self.prepare(templates, config)
        yield from engine.stream(self, prepared, progress, on_step, terms, rewrite)
