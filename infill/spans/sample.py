"""A run of the span sampler on a template's blanks, lengths included: :func:`span_run` builds the sampler, the
energy and the chain starts (:class:`SpanRun`), which the samplers' driver runs (:func:`sample_spans` at one
temperature); :func:`best` chooses the states to report from the :class:`~infill.samplers.Trace`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import torch
from torch import Tensor, nn

from ..constraints.weighted_sum import INCLUDE_WEIGHT
from ..energies.budget import Meter
from ..energies.tempered import Tempered
from ..errors import InfillError, check, is_integer, one_of, positive_integer
from ..lm.mlm_draws import ORDERS
from ..lm.models import max_length
from ..lm.registry import SPAN_METHODS
from ..samplers import State, StepInfo, Trace, run_annealed, sample_categorical
from ..text.template import Template
from ..text.vocabulary import piece_kinds, token_words
from .fills import MASK, Fills, SpanSpace
from .include import Form, SpanInclude, plant
from .kernel import SpanEnergy, SpanSampler
from .mlm import MaskedLMSpanEnergy

INITS = ("left-to-right", "independent", "argmax", "uniform")
"""The orders of :data:`infill.lm.mlm_draws.ORDERS` that span chains start from (:func:`draw_starts`)."""
MAX_COMBINATIONS = 64  # length combinations the per-length method runs at once
MAX_PIECES = 4  # pieces a word of a word blank may take


def span_space(
    template: Template, tokenizer, categories: Tensor, chains: int, max_pieces: int = MAX_PIECES
) -> SpanSpace:
    """The fills ``template``'s blanks may take for ``chains`` chains over the token ids ``categories``: a word
    blank takes word starts and continuation pieces, at most ``max_pieces`` a word; a token blank takes any
    category as one unit where every blank is a token blank, else the word starts only."""
    starts, continuations = piece_kinds(tokenizer, categories.cpu())
    rows = []
    for blank in template.blanks:
        if blank.unit == "word":
            rows.append((starts | continuations, starts, max_pieces))
        else:
            rows.append((torch.ones_like(starts) if template.fixed else starts, torch.ones_like(starts), 1))
    bounds = torch.tensor([[b.min, b.max] for b in template.blanks])
    return SpanSpace(
        torch.stack([r[0] for r in rows]),
        torch.stack([r[1] for r in rows]),
        torch.tensor([r[2] for r in rows]),
        bounds[:, 0].expand(chains, -1).clone(),
        bounds[:, 1].expand(chains, -1).clone(),
    )


def span_energy(
    model: nn.Module, tokenizer, template: Template, categories: Tensor, space: SpanSpace, **options
) -> MaskedLMSpanEnergy:
    """The masked-LM span energy of ``template`` (``options``: ``scoring``, ``window``, ``word_bonus``,
    ``max_copies``, see :class:`MaskedLMSpanEnergy`)."""
    word_starts = token_words(tokenizer)[1]
    special = set(tokenizer.all_special_ids) - {tokenizer.mask_token_id, tokenizer.unk_token_id}
    text_starts = [torch.tensor([i in word_starts for i in s.tolist()], dtype=torch.bool) for s in template.segments]
    specials = [torch.tensor([i in special for i in s.tolist()], dtype=torch.bool) for s in template.segments]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.mask_token_id
    return MaskedLMSpanEnergy(
        model,
        template.segments,
        categories,
        piece_kinds(tokenizer, categories.cpu())[0],
        text_starts,
        specials,
        space.starts,
        tokenizer.mask_token_id,
        pad,
        **options,
    )


def start_lengths(space: SpanSpace) -> Tensor:
    """Units ``(B, J)`` to start each chain's blanks with: the chains take the combinations of the blanks'
    lengths in turn (chain ``b`` the ``b``-th, modulo their number; the first blank's length varies fastest),
    so that every length has its chains from the start."""
    span = space.high - space.low + 1
    stride = torch.cumprod(torch.cat([torch.ones_like(span[:, :1]), span[:, :-1]], 1), 1)
    chain = torch.arange(len(span), device=span.device)[:, None]
    return space.low + (chain // stride) % span


def draw_starts(
    energy: SpanEnergy,
    space: SpanSpace,
    lengths: Tensor,
    init: str,
    generator: Optional[torch.Generator],
    planted: Optional[Fills] = None,
) -> Fills:
    """Fills of one-piece units, ``lengths (B, J)`` of them (or the masks of ``planted``, whose other pieces
    stay): drawn uniformly (``uniform``) or from the masked LM's conditional at each position (one forward
    pass per position of the longest chain), given the earlier ones as drawn and the later ones masked
    (``left-to-right``) or every one masked (``independent``; ``argmax`` takes its most likely category),
    at the temperature of ``energy`` (:class:`~infill.energies.tempered.Tempered`)."""
    order = ORDERS[init]
    masked = fills = Fills.masks(lengths, space.width) if planted is None else planted
    lengths = fills.lengths
    b, j = lengths.shape
    chains = torch.arange(b)
    for blank in range(j):
        index = torch.full((b,), blank, dtype=torch.long)
        options = (space.allowed[blank] & space.starts[blank]).expand(b, -1)
        for slot in range(int(lengths[:, blank].max())):
            at = torch.full((b,), slot, dtype=torch.long)
            live = chains[masked.tokens[:, blank, slot] == MASK]
            if not len(live):  # planted pieces only
                continue
            if not order.forwards(1):
                logits = torch.zeros(len(live), energy.num_categories)
            else:
                context = masked if order.blanks is None else fills
                logits = energy.proposal_logits(context.select(live), index[live], at[live]).cpu()
            logits = logits.masked_fill(~options[live], float("-inf"))
            values = torch.zeros(b, dtype=torch.long)
            values[live] = sample_categorical(logits, generator) if order.sampled else logits.argmax(-1)
            fills = fills.put(index, at, values).where(masked.tokens[:, blank, slot] == MASK, fills)
    return fills


def length_combinations(space: SpanSpace, chains: int) -> Tensor:
    """Every combination of the blanks' units, ``(N, J)``, for the per-length method."""
    ranges = [range(int(lo), int(hi) + 1) for lo, hi in zip(space.low[0], space.high[0])]
    count = 1
    for r in ranges:
        count *= len(r)
    if count > MAX_COMBINATIONS:
        raise InfillError(
            f"the blanks' lengths make {count} combinations, more than the {MAX_COMBINATIONS} the "
            "per-length method runs; use method 'rjmcmc' or narrower spans"
        )
    return torch.tensor(list(itertools.product(*ranges)), dtype=torch.long).reshape(count, len(ranges))


@dataclass(frozen=True)
class SpanRun:
    """A run of the span sampler, ready for :func:`~infill.samplers.sample` or
    :func:`~infill.samplers.run_annealed`: the ``sampler`` (its space bound), the span ``energy``, the
    ``target`` the chains sample (the energy, or with include words a :class:`~.include.SpanInclude` of it) and
    the chain starts ``x0`` (fills packed, :meth:`Fills.pack`)."""

    sampler: SpanSampler
    energy: MaskedLMSpanEnergy
    target: Union[MaskedLMSpanEnergy, SpanInclude]
    x0: Tensor


def span_run(
    model: nn.Module,
    tokenizer,
    template: Template,
    categories: Tensor,
    chains: int,
    generator: Optional[torch.Generator] = None,
    temperature: float = 1.0,
    init: str = "left-to-right",
    method: str = "rjmcmc",
    max_pieces: int = MAX_PIECES,
    move_weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
    include: Sequence[Sequence[Form]] = (),
    include_weight: float = INCLUDE_WEIGHT,
    meter: Optional[Meter] = None,
    **energy_options,
) -> SpanRun:
    """The sampler, energy and chain starts (drawn at ``temperature``, charged to ``meter``) of ``template``'s
    blanks over the token ids ``categories`` (see the package docstring); ``energy_options`` go to
    :class:`MaskedLMSpanEnergy`. With ``include`` (per word, its forms as category indices), the target adds
    ``include_weight`` times the include term (:class:`~.include.SpanInclude`) and the chains start from fills
    that hold every word (:func:`plant`)."""
    check_options(method, init, chains, max_pieces)
    space = span_space(template, tokenizer, categories, chains, max_pieces)
    longest = sum(len(s) for s in template.segments) + int(space.capacity[0].sum())
    limit = max_length(tokenizer, model.config)
    if longest > limit:
        raise InfillError(
            f"the template's longest filling is {longest} tokens, more than the model's maximum of "
            f"{limit}; use shorter spans or fewer pieces per word"
        )
    if method == "per-length":
        pinned = length_combinations(space, chains).repeat_interleave(chains, 0)
        space = SpanSpace(space.allowed, space.starts, space.pieces, pinned, pinned)
    energy = target = span_energy(model, tokenizer, template, categories, space, meter=meter, **energy_options)
    initial, planted = start_lengths(space), None
    if include:
        target = SpanInclude(energy, [set(map(tuple, w)) for w in include], space.starts, include_weight)
        planted = plant(initial, space, include, generator)
    tempered = target if temperature == 1 else Tempered(target, temperature)
    fills = draw_starts(tempered, space, initial, init, generator, planted)
    return SpanRun(SpanSampler(space, move_weights), energy, target, fills.pack())


def check_options(method: str, init: str, chains: int, max_pieces: int) -> None:
    """Refuse, in one line, a span method, start or size that does not exist."""
    one_of("span method", method, SPAN_METHODS)
    check(init in INITS, f"span chains start from one of {', '.join(INITS)}, got {init!r}")
    positive_integer("chains", chains)
    check(is_integer(max_pieces, 1), f"a word takes at least one piece: max_pieces must be >= 1, got {max_pieces}")


def sample_spans(
    model: nn.Module,
    tokenizer,
    template: Template,
    categories: Tensor,
    chains: int,
    steps: int,
    generator: Optional[torch.Generator] = None,
    temperature: float = 1.0,
    on_step: Optional[Callable[[int, State, StepInfo], None]] = None,
    **options,
) -> tuple[SpanRun, Trace]:
    """:func:`span_run` (``options``) and its ``steps`` steps at ``temperature``, by
    :func:`~infill.samplers.run_annealed` (``on_step(t, state, info)`` after each)."""
    positive_integer("steps", steps)
    run = span_run(model, tokenizer, template, categories, chains, generator, temperature, **options)
    return run, run_annealed(run.sampler, run.target, run.x0, [(temperature, steps)], generator, on_step)


def best(trace: Trace, top: Optional[int], decode: str = "visited") -> tuple[Tensor, Tensor, Tensor]:
    """The states ``(N, W)`` to report, their energies ``(N,)`` at temperature 1 and chains ``(N,)``: without
    ``top`` every chain's final state; with it the ``top`` distinct states of highest energy among
    :meth:`Trace.candidates` (``decode``: ``visited`` or ``final``), best first; of equal states the earliest
    counts, ties go to the earlier step, then the smaller chain."""
    states, values = trace.candidates(decode, top)
    states, values, chains = states.flatten(0, 1).cpu(), values.flatten().cpu(), values.shape[1]
    if top is None:
        return states, values, torch.arange(len(states))
    seen, kept = set(), []
    for i in torch.argsort(values, descending=True, stable=True).tolist():
        key = tuple(states[i].tolist())
        if key not in seen:
            seen.add(key)
            kept.append(i)
        if len(kept) == top:
            break
    kept = torch.tensor(kept, dtype=torch.long)
    return states[kept], values[kept], kept % chains
