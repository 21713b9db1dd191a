"""Stages 2 and 3 of a run (:mod:`~.infiller`): each prepared template's plan run by its kind's module, then its
fillings chosen, one template at a time, in order.

Templates share their first encoder pass, with the floats each gets alone, :data:`PACK` templates at a time
(:func:`first_passes`); then each runs alone from its own generator seeded with the request's seed, with its own
energy, cache and budget (:func:`run_batch`), and its fillings are chosen (:func:`~.postprocess.postprocess`).
``loaded`` is the :class:`~.infiller.Infiller` whose model, tokenizer and settings a run uses (:class:`Loaded`).
"""

from __future__ import annotations

import secrets
import sys
import time
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Protocol, Sequence

import torch
from torch import Tensor, nn

from ..energies.budget import BudgetSpent, Meter
from ..energies.conditionals import ConditionalCache
from ..energies.masked_lm import MaskedLMEnergy, pass_sequences
from ..errors import InfillError
from ..lm import packed
from ..lm.models import category_head
from ..text.blanks import quote
from ..text.template import Template
from .policy import KINDS, Plan, budget_spent
from .postprocess import Batch, postprocess
from .prepare import Prepared
from .results import InfillResult
from .runs import Context, execute

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

PACK = 256
"""Templates whose first passes share encoder passes (:func:`first_passes`): more find more of one length;
their logits are held until their runs."""


class Loaded(Protocol):
    """What a run reads of the :class:`~.infiller.Infiller` that loaded the model (``loaded`` below)."""

    model: nn.Module
    chain_model: nn.Module
    tokenizer: PreTrainedTokenizerBase
    model_name: str
    device: torch.device
    chunk_size: Optional[int]
    cache_mib: int

    def lower_precision(self) -> bool: ...


def stream(
    loaded: Loaded,
    prepared: Prepared,
    progress: bool = False,
    on_step: Optional[Callable[[int, int], None]] = None,
    terms: Sequence[tuple] = (),
    rewrite: Optional[tuple[Tensor, float]] = None,
) -> Iterator[tuple[int, InfillResult]]:
    """``(index, result)`` of every template of ``prepared``, in order (:meth:`~.infiller.Infiller.stream`)."""
    prepared = prepared.resolved(bool(terms) or rewrite is not None, loaded.lower_precision())
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

        for window in first_passes(loaded, prepared):
            for index, first in window:
                generator = torch.Generator(loaded.device).manual_seed(seed)
                batch = run_batch(loaded, prepared, index, generator, stepped, terms, rewrite, first)
                yield index, _chosen(loaded, batch, seed, bar)


def _chosen(loaded: Loaded, batch: Batch, seed: int, bar) -> InfillResult:
    """``batch``'s fillings chosen (:func:`~.postprocess.postprocess`); a budget spent there refused in one line."""
    try:
        return postprocess(batch, loaded.tokenizer, loaded.model_name, seed, bar)
    except BudgetSpent:
        raise budget_spent(batch.plan, f"while choosing the fillings of {quote(batch.template.text)}") from None


def run_batch(
    loaded: Loaded,
    prepared: Prepared,
    index: int,
    generator: torch.Generator,
    callback: Optional[Callable] = None,
    terms: Sequence[tuple] = (),
    rewrite: Optional[tuple[Tensor, float]] = None,
    first: Optional[Tensor] = None,
    excluded: Optional[Tensor] = None,
) -> Batch:
    """Stage 2 for template ``index``: its plan run by its kind's module (:mod:`~infill.pipeline.runs`);
    ``callback(t, state, info)`` after every step. A budget caps the encoder sequences through a
    :class:`~infill.energies.budget.Meter` shared by the run's energies. ``first``: the template's
    all-masked logits from a shared pass (:func:`first_passes`), which its energy takes as its first.
    ``excluded``: bool ``(d, K)``, the categories each blank's one-pass draws may not take
    (:meth:`~infill.energies.masked_lm.MaskedLMEnergy.exclude`; refused for any other kind of run)."""
    template, plan = prepared.templates[index], prepared.plans[index]
    if excluded is not None and not KINDS[plan.kind].excludes:
        raise InfillError(f"only a one-pass order's draws can exclude a blank's words, not {plan.settings.method}")
    meter = Meter(plan.spend.limit)

    def energy(model: nn.Module) -> MaskedLMEnergy:
        """The PLL energy of the template on ``model``, charged to ``meter``, its first pass ``first``."""
        pll = MaskedLMEnergy(
            model,
            template.input_ids,
            template.blank_positions,
            prepared.categories,
            loaded.tokenizer.mask_token_id,
            chunk_size=loaded.chunk_size,
            cache=ConditionalCache(loaded.cache_mib << 20),
            meter=meter,
            mask_repeats=plan.settings.mask_repeats,
            first=first,
        )
        if excluded is not None:
            pll.exclude(excluded)
        return pll

    context = Context(
        template=template,
        prepared=prepared,
        model=loaded.model,
        chain_model=loaded.chain_model,
        tokenizer=loaded.tokenizer,
        energy=energy,
        meter=meter,
        generator=generator,
        callback=callback,
        terms=terms,
        rewrite=rewrite,
        start=time.perf_counter(),
    )
    return execute(plan, context)


def first_passes(loaded: Loaded, prepared: Prepared) -> Iterator[list[tuple[int, Optional[Tensor]]]]:
    """Windows of :data:`PACK` templates, each template's index with its all-masked logits ``(d, K)`` (None
    where it takes none), computed for the window in shared passes (:func:`infill.lm.packed.all_masked_logits`):
    for token blanks whose run reads that sequence first, the one-pass methods (chains compute their starts'
    first pass alone)."""
    for start in range(0, len(prepared.templates), PACK):
        window = range(start, min(start + PACK, len(prepared.templates)))
        models_of = {index: _first_model(loaded, prepared.templates[index], prepared.plans[index]) for index in window}
        firsts: dict[int, Tensor] = {}
        for model in {id(m): m for m in models_of.values() if m is not None}.values():
            head = category_head(model, prepared.categories.to(loaded.device))
            at = [index for index in window if models_of[index] is model]
            if head is None:
                continue
            sequences = [
                (
                    prepared.templates[i].input_ids.to(loaded.device),
                    prepared.templates[i].blank_positions.to(loaded.device),
                )
                for i in at
            ]
            logits = packed.all_masked_logits(model, head, sequences, loaded.tokenizer.mask_token_id, pass_rows(loaded))
            firsts.update(zip(at, logits))
        yield [(index, firsts.get(index)) for index in window]


def _first_model(loaded: Loaded, template: Template, plan: Plan) -> Optional[nn.Module]:
    """The model whose all-masked pass ``plan`` takes from a shared pass on ``template`` (None: it takes none)."""
    return loaded.model if plan.shares_first and template.fixed and loaded.cache_mib else None


def pass_rows(loaded: Loaded) -> int:
    """Sequences a shared pass holds at most: as the energies' passes without gradient."""
    return pass_sequences(loaded.device, loaded.chunk_size)
