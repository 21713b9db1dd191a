"""The Python API: ``Infiller(model).sample(template)`` fills the blanks of a template by MCMC.

Text -> :func:`infill.template.parse` -> :class:`~infill.energies.masked_lm.MaskedLMEnergy` -> sampler
-> :class:`~infill.samplers.Trace` -> :class:`~infill.results.InfillResult` (detokenized text).
"""
from __future__ import annotations

import dataclasses
import math
import secrets
import sys
import time
from typing import Optional, Sequence, Union

import torch
from torch import Tensor, nn

from . import mlm_draws, models
from .config import RunConfig, default_model
from .energies.base import evaluate, one_hot
from .energies.masked_lm import MaskedLMEnergy
from .energies.tempered import Tempered
from .errors import InfillError
from .results import Diagnostics, InfillResult, Sample, top_distinct
from .samplers import State, Trace
from .template import Template, fill, parse
from .vocabulary import sampleable_token_ids

MAX_SEQUENCES = 512  # chains x blank tokens per batched sampler run in sample_many


class Infiller:
    """A masked LM loaded once, sampling fillings of templates.

    ``model`` is a hub id or local path (default ``$INFILL_MODEL`` or ``bert-base-uncased``), or a loaded
    masked-LM module together with its ``tokenizer``. ``dtype`` is ``None`` (float32), ``"bfloat16"``,
    ``"float16"``, ``"auto"`` or a torch dtype. ``chunk_size`` caps the masked copies per forward/backward
    pass of the energy's gradient (``None``: all chains x blanks in one pass), trading nothing but peak memory.
    """

    def __init__(self, model: Union[str, nn.Module, None] = None, device: Union[str, torch.device] = "cpu",
                 dtype: Union[str, torch.dtype, None] = None, tokenizer=None, chunk_size: Optional[int] = None):
        if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
                                       or chunk_size < 1):
            raise InfillError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        self.chunk_size = chunk_size
        if isinstance(model, nn.Module):
            if tokenizer is None:
                raise InfillError("pass the tokenizer along with a model object")
            self.model_name = model.config.name_or_path or type(model).__name__
            self.model, self.tokenizer = model.to(models.resolve_device(device)).eval(), tokenizer
        else:
            self.model_name = model or default_model()
            self.model, self.tokenizer = models.load(self.model_name, device, dtype)
        self.device = self.model.get_input_embeddings().weight.device
        self.max_length = min(self.tokenizer.model_max_length, self.model.config.max_position_embeddings)
        self._categories: dict[tuple, Tensor] = {}

    def parse(self, template: str) -> Template:
        if not isinstance(template, str):
            raise InfillError(f"a template must be a string, got {type(template).__name__}")
        return parse(template, self.tokenizer, self.max_length)

    def category_ids(self, allow_subwords: bool = False, forbid: Sequence[str] = ()) -> Tensor:
        """Token ids a blank may take (cached per option set); see :func:`infill.vocabulary.sampleable_token_ids`."""
        key = (bool(allow_subwords), tuple(forbid))
        if key not in self._categories:
            self._categories[key] = sampleable_token_ids(self.tokenizer, *key)
        return self._categories[key]

    def sample(self, template: str, sampler: str = RunConfig.method, num_samples: int = RunConfig.num_samples,
               steps: int = RunConfig.steps, top: Optional[int] = None, seed: Optional[int] = None, *,
               init: str = RunConfig.init, temperature: float = RunConfig.temperature,
               anneal_from: Optional[float] = None, decode: str = RunConfig.decode, allow_subwords: bool = False,
               forbid: Sequence[str] = (), progress: bool = False, **sampler_options) -> InfillResult:
        """Fill ``template`` with ``num_samples`` chains of ``steps`` steps of ``sampler`` (or draws of a
        baseline method: ``independent``, ``left-to-right``, ``argmax``); see :class:`~infill.config.RunConfig`.

        Chains start from ``init`` (draws from the masked LM, or uniform tokens) and target
        ``exp(PLL / temperature)``, optionally annealed from ``anneal_from`` during the first half of the
        steps. Without ``top`` each chain's final state is a sample; ``top=k`` keeps
        the ``k`` distinct fillings of highest energy among the states visited after burn-in
        (``decode="visited"``) or among the final states (``decode="final"``, the papers' protocol).
        Every draw comes from a ``torch.Generator`` seeded with ``seed`` (a random seed when None,
        reported in the diagnostics). ``sampler_options`` are the sampler's hyperparameters
        (``step_size=...``); ``progress`` shows a tqdm bar on stderr after 2 s.
        """
        return self.sample_many([template], sampler, num_samples, steps, top, seed, init=init,
                                temperature=temperature, anneal_from=anneal_from, decode=decode,
                                allow_subwords=allow_subwords, forbid=forbid, progress=progress,
                                **sampler_options)[0]

    def sample_many(self, templates: Sequence[str], sampler: str = RunConfig.method,
                    num_samples: int = RunConfig.num_samples, steps: int = RunConfig.steps,
                    top: Optional[int] = None, seed: Optional[int] = None, *, init: str = RunConfig.init,
                    temperature: float = RunConfig.temperature, anneal_from: Optional[float] = None,
                    decode: str = RunConfig.decode,
                    allow_subwords: bool = False, forbid: Sequence[str] = (), progress: bool = False,
                    max_sequences: int = MAX_SEQUENCES, **sampler_options) -> list[InfillResult]:
        """:meth:`sample` for a list of templates, in their order."""
        config = RunConfig.create(method=sampler, num_samples=num_samples, steps=steps, top=top, seed=seed,
                                  init=init, temperature=temperature, anneal_from=anneal_from, decode=decode,
                                  allow_subwords=allow_subwords, forbid=forbid, options=sampler_options)
        return self.run(templates, config, progress=progress, max_sequences=max_sequences)

    def run(self, templates: Sequence[str], config: RunConfig, progress: bool = False,
            max_sequences: int = MAX_SEQUENCES) -> list[InfillResult]:
        """Fill every template as ``config`` says. Templates with the same token length and number of blank
        tokens run as one batch of chains (at most ``max_sequences`` chains x blank tokens per run); one
        generator serves all runs in turn, so a template's samples depend on the templates batched with it
        (a single template gives exactly :meth:`sample`'s)."""
        if isinstance(templates, (str, bytes)) or not isinstance(templates, Sequence):
            raise InfillError(f"templates must be a list of strings, got {type(templates).__name__}")
        parsed = [self.parse(t) for t in templates]
        categories = self.category_ids(config.allow_subwords, config.forbid)
        seed = secrets.randbits(32) if config.seed is None else config.seed
        generator = torch.Generator(self.device).manual_seed(seed)
        sampler = config.make_sampler()
        for t in parsed if sampler is not None else ():
            sampler.check_variables(t.num_blanks)
        hyperparameters = {} if sampler is None else sampler.hyperparameters()
        batches = _batches(parsed, config.num_samples, max_sequences)
        results: list[Optional[InfillResult]] = [None] * len(parsed)
        from tqdm.auto import tqdm

        with tqdm(total=(0 if sampler is None else config.steps) * len(batches), disable=not progress, delay=2,
                  file=sys.stderr, unit="step", desc=f"infill {config.method}", leave=False) as bar:
            for batch in batches:
                group = [parsed[i] for i in batch]
                start = time.perf_counter()
                n = config.num_samples * len(batch)
                energy = self._energy(group, categories)
                if sampler is None:
                    x = mlm_draws.draw(energy, config.method, n, generator, config.temperature)
                    states, values, trace = x[None], torch.full((1, n), math.nan), None
                else:
                    x = mlm_draws.draw(energy, config.init, n, generator, config.anneal_from or config.temperature)
                    evaluations = 0
                    for temperature, steps in config.annealing_schedule():
                        target = energy if temperature == 1 else Tempered(energy, temperature)
                        trace = sampler.run(target, x, steps, generator, callback=lambda *_: bar.update())
                        x, evaluations = trace.final_state.x, evaluations + trace.evaluations
                    trace = dataclasses.replace(trace, evaluations=evaluations)
                    states, values = _candidates(trace, config)
                for g, i in enumerate(batch):
                    chains = slice(g * config.num_samples, (g + 1) * config.num_samples)
                    results[i] = self._result(group[g], categories, states[:, chains], values[:, chains].cpu(),
                                              None if trace is None else trace.select(chains), config,
                                              hyperparameters, seed, len(batch), start)
        return results

    def _energy(self, templates: list[Template], categories: Tensor) -> MaskedLMEnergy:
        ids = torch.stack([t.input_ids for t in templates])
        positions = torch.stack([t.blank_positions for t in templates])
        return MaskedLMEnergy(self.model, ids, positions, categories, self.tokenizer.mask_token_id, self.chunk_size)

    def _result(self, template: Template, categories: Tensor, states: Tensor, values: Tensor,
                trace: Optional[Trace], config: RunConfig, hyperparameters: dict, seed: int, batched: int,
                start: float) -> InfillResult:
        """The result of one template from its candidate ``states (S, chains, d)`` and their energies
        ``values (S, chains)`` at temperature 1 (NaN where the sampler did not compute them)."""
        rows = states.flatten(0, 1)  # (S * chains, d): step-major, so row r is chain r % chains
        values = values.flatten().clone()
        missing = values.isnan()
        evaluations = 0
        energy = self._energy([template], categories)
        if missing.any():
            unique, inverse = torch.unique(rows[missing], dim=0, return_inverse=True)
            values[missing] = _evaluate(energy, unique)[inverse].cpu()
            evaluations = math.ceil(len(unique) / states.shape[1])
        chains = states.shape[1]
        keys = [tuple(r) for r in rows.tolist()]
        order = range(len(keys)) if config.top is None else top_distinct(
            range(len(keys)), config.top, key=keys.__getitem__, energy=lambda r: values[r].item())
        token_ids = energy.token_ids(rows[list(order)]).cpu()
        samples = []
        for r, ids in zip(order, token_ids):
            text, fills = fill(template, self.tokenizer, ids)
            tokens = self.tokenizer.convert_ids_to_tokens(ids[template.content].tolist())
            samples.append(Sample(text, fills, tokens, ids.tolist(), values[r].item(), r % chains))
        d = template.num_blanks
        diagnostics = Diagnostics(
            sampler=config.method, hyperparameters=hyperparameters,
            model=self.model_name, steps=0 if trace is None else config.steps,
            num_samples=config.num_samples, seed=seed, init="-" if trace is None else config.init,
            temperature=config.temperature, decode=config.decode,
            acceptance_rate=None if trace is None else trace.acceptance_rate,
            mean_hops=None if trace is None else trace.mean_hops,
            tuned=None if trace is None else _tuned(trace.final_state),
            burn_in=0 if trace is None else config.steps - trace.samples.shape[0] + trace.burn_in,
            evaluations=evaluations + (0 if trace is None else trace.evaluations),
            forwards=mlm_draws.FORWARDS[config.method if trace is None else config.init](d),
            candidates=len(set(keys)), seconds=time.perf_counter() - start, batched_templates=batched)
        return InfillResult(template.text, samples, diagnostics, trace)


def _candidates(trace: Trace, config: RunConfig) -> tuple[Tensor, Tensor]:
    """The states ``(S, B, d)`` that ``top`` may choose from, with their energies ``(S, B)`` at temperature 1:
    the final states, or with ``top`` and ``decode="visited"`` every state visited after burn-in."""
    if config.top is None or config.decode == "final":
        states, values = trace.final_state.x[None], trace.final_state.energy[None]
    else:
        states, values = trace.samples[trace.burn_in:], trace.energies[trace.burn_in:]
    return states, values * config.temperature


def _tuned(state: State) -> Optional[dict]:
    """What the sampler tuned during burn-in, as JSON-ready values (None if it tunes nothing)."""
    return None if state.tuning is None else state.tuning.to_dict()


def _evaluate(energy: MaskedLMEnergy, x_idx: Tensor) -> Tensor:
    """Energies of the states ``x_idx (N, d)`` of one template, at most :data:`MAX_SEQUENCES` masked
    copies per forward pass."""
    rows = max(1, MAX_SEQUENCES // x_idx.shape[1])
    return torch.cat([evaluate(energy, one_hot(part, energy.num_categories)) for part in x_idx.split(rows)])


def _batches(templates: list[Template], chains: int, max_sequences: int) -> list[list[int]]:
    """Indices of templates grouped by (length, blank tokens), each group cut so a run has at most
    ``max_sequences`` chains x blank tokens (at least one template per run)."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(templates):
        groups.setdefault((t.length, t.num_blanks), []).append(i)
    batches = []
    for (_, d), members in groups.items():
        size = max(1, max_sequences // (chains * d))
        batches += [members[j:j + size] for j in range(0, len(members), size)]
    return batches
