"""Sampling the fills of a template's blanks, lengths included: the entry point :func:`sample_spans`."""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch
from torch import Tensor, nn

from ..constraints.weighted_sum import INCLUDE_WEIGHT
from ..errors import InfillError
from ..lm.models import max_length
from ..samplers import sample_categorical
from ..text.template import Template
from ..text.vocabulary import piece_kinds, token_words
from .fills import MASK, Fills, SpanSpace
from .include import Form, SpanInclude, plant
from .kernel import SpanKernel, SpanState, SpanStepInfo
from .mlm import MaskedLMSpanEnergy

METHODS = ("rjmcmc", "per-length")
INITS = ("left-to-right", "independent", "argmax", "uniform")
MAX_COMBINATIONS = 64  # length combinations the per-length method runs at once
MAX_PIECES = 4  # pieces a word of a word blank may take


@dataclass
class SpanTrace:
    """What a run produced, per step ``t`` and chain ``b``: the fills as category indices ``tokens (T, B, J, C)``
    (:data:`~infill.spans.fills.EMPTY` past ``lengths (T, B, J)``), their ``energies (T, B)`` (temperature 1),
    ``accepted (T, B)``; ``categories (K,)`` maps a category to its token id. ``encoder_sequences`` counts
    the sequences through the encoder (chain starts included); ``energy_name`` names the energy. With include
    words, ``energies`` hold the sum the chains target and ``include (T, B)`` the include term, of weight
    ``include_weight``."""

    tokens: Tensor
    lengths: Tensor
    energies: Tensor
    accepted: Tensor
    categories: Tensor
    encoder_sequences: int
    seconds: float
    energy_name: str
    include: Optional[Tensor] = None
    include_weight: float = 0.0

    def pieces(self, t: int, b: int) -> list[list[int]]:
        """The token ids of each blank's fill at step ``t`` of chain ``b``."""
        fills = Fills(self.tokens[t, b:b + 1], self.lengths[t, b:b + 1]).to_lists()[0]
        return [self.categories[f].tolist() for f in fills]

    def top(self, k: Optional[int], final: bool = False) -> list[tuple[float, list[list[int]], int, int]]:
        """The ``k`` distinct fills of highest energy (all of them if ``k`` is None) among all states visited,
        or only the final ones with ``final``: ``(energy, pieces, chain, step)``, best first; of equal fills the
        earliest state counts, ties go to the earlier step, then the smaller chain."""
        energies = self.energies[-1:] if final else self.energies
        offset = len(self.energies) - len(energies)
        seen, out = set(), []
        for i in torch.argsort(energies.flatten(), descending=True, stable=True).tolist():
            t, b = divmod(i, energies.shape[1])
            pieces = self.pieces(offset + t, b)
            key = repr(pieces)
            if key not in seen:
                seen.add(key)
                out.append((energies[t, b].item(), pieces, b, offset + t))
            if len(out) == k:
                break
        return out


def span_space(template: Template, tokenizer, categories: Tensor, chains: int,
               max_pieces: int = MAX_PIECES) -> SpanSpace:
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
    return SpanSpace(torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows]),
                     torch.tensor([r[2] for r in rows]), bounds[:, 0].expand(chains, -1).clone(),
                     bounds[:, 1].expand(chains, -1).clone())


def span_energy(model: nn.Module, tokenizer, template: Template, categories: Tensor, space: SpanSpace,
                **options) -> MaskedLMSpanEnergy:
    """The masked-LM span energy of ``template`` (``options``: ``scoring``, ``window``, ``word_bonus``,
    ``max_copies``, see :class:`MaskedLMSpanEnergy`)."""
    word_starts = token_words(tokenizer)[1]
    special = set(tokenizer.all_special_ids) - {tokenizer.mask_token_id, tokenizer.unk_token_id}
    text_starts = [torch.tensor([i in word_starts for i in s.tolist()], dtype=torch.bool) for s in template.segments]
    specials = [torch.tensor([i in special for i in s.tolist()], dtype=torch.bool) for s in template.segments]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.mask_token_id
    return MaskedLMSpanEnergy(model, template.segments, categories, piece_kinds(tokenizer, categories.cpu())[0],
                              text_starts, specials, space.starts, tokenizer.mask_token_id, pad, **options)


def start_lengths(space: SpanSpace) -> Tensor:
    """Units ``(B, J)`` to start each chain's blanks with: the chains take the combinations of the blanks'
    lengths in turn (chain ``b`` the ``b``-th, modulo their number; the first blank's length varies fastest),
    so that every length has its chains from the start."""
    span = space.high - space.low + 1
    stride = torch.cumprod(torch.cat([torch.ones_like(span[:, :1]), span[:, :-1]], 1), 1)
    chain = torch.arange(len(span), device=span.device)[:, None]
    return space.low + (chain // stride) % span


def draw_starts(energy: MaskedLMSpanEnergy, space: SpanSpace, lengths: Tensor, init: str,
                generator: Optional[torch.Generator], temperature: float = 1.0,
                planted: Optional[Fills] = None) -> Fills:
    """Fills of one-piece units, ``lengths (B, J)`` of them (or the masks of ``planted``, whose other pieces
    stay): drawn uniformly (``uniform``) or from the masked LM's conditional at each position (one forward
    pass per position of the longest chain), given the earlier ones as drawn and the later ones masked
    (``left-to-right``) or every one masked (``independent``; ``argmax`` takes its most likely category)."""
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
            if init == "uniform":
                logits = torch.zeros(len(live), energy.num_categories)
            else:
                context = fills if init == "left-to-right" else masked
                logits = energy.proposal_logits(context.select(live), index[live], at[live]).cpu() / temperature
            logits = logits.masked_fill(~options[live], float("-inf"))
            values = torch.zeros(b, dtype=torch.long)
            values[live] = logits.argmax(-1) if init == "argmax" else sample_categorical(logits, generator)
            fills = fills.put(index, at, values).where(masked.tokens[:, blank, slot] == MASK, fills)
    return fills


def length_combinations(space: SpanSpace, chains: int) -> Tensor:
    """Every combination of the blanks' units, ``(N, J)``, for the per-length method."""
    ranges = [range(int(lo), int(hi) + 1) for lo, hi in zip(space.low[0], space.high[0])]
    count = 1
    for r in ranges:
        count *= len(r)
    if count > MAX_COMBINATIONS:
        raise InfillError(f"the blanks' lengths make {count} combinations, more than the {MAX_COMBINATIONS} the "
                          "per-length method runs; use method 'rjmcmc' or narrower spans")
    return torch.tensor(list(itertools.product(*ranges)), dtype=torch.long).reshape(count, len(ranges))


def sample_spans(model: nn.Module, tokenizer, template: Template, categories: Tensor, chains: int, steps: int,
                 generator: Optional[torch.Generator] = None, temperature: float = 1.0, init: str = "left-to-right",
                 method: str = "rjmcmc", on_step: Optional[Callable[[int, SpanState, SpanStepInfo], None]] = None,
                 max_pieces: int = MAX_PIECES, move_weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
                 include: Sequence[Sequence[Form]] = (), include_weight: float = INCLUDE_WEIGHT,
                 **energy_options) -> SpanTrace:
    """Fills of ``template``'s blanks over the token ids ``categories`` by the span kernel (see the package
    docstring); ``energy_options`` go to :class:`MaskedLMSpanEnergy`. With ``include`` (per word, its forms
    as category indices), the target adds ``include_weight`` times the include term
    (:class:`~.include.SpanInclude`) and the chains start from fills that hold every word (:func:`plant`)."""
    if method not in METHODS:
        raise InfillError(f"span method must be one of {', '.join(METHODS)}, got {method!r}")
    if init not in INITS:
        raise InfillError(f"span chains start from one of {', '.join(INITS)}, got {init!r}")
    if chains < 1 or steps < 1:
        raise InfillError(f"chains and steps must be positive, got {chains} and {steps}")
    if max_pieces < 1:
        raise InfillError(f"a word takes at least one piece: max_pieces must be >= 1, got {max_pieces}")
    begin = time.perf_counter()
    kernel = SpanKernel(move_weights, temperature)
    space = span_space(template, tokenizer, categories, chains, max_pieces)
    longest = sum(len(s) for s in template.segments) + int(space.capacity[0].sum())
    limit = max_length(tokenizer, model.config)
    if longest > limit:
        raise InfillError(f"the template's longest filling is {longest} tokens, more than the model's maximum of "
                          f"{limit}; use shorter spans or fewer pieces per word")
    if method == "per-length":
        combos = length_combinations(space, chains)
        pinned = combos.repeat_interleave(chains, 0)
        space = SpanSpace(space.allowed, space.starts, space.pieces, pinned, pinned)
    energy = span_energy(model, tokenizer, template, categories, space, **energy_options)
    initial, planted = start_lengths(space), None
    if include:
        energy = SpanInclude(energy, [set(map(tuple, w)) for w in include], space.starts, include_weight)
        planted = plant(initial, space, include, generator)
    fills = draw_starts(energy, space, initial, init, generator, temperature, planted)
    state = kernel.init(energy, space, fills)
    tokens, lengths, energies, accepted, included = [], [], [], [], []
    for t in range(steps):
        state, info = kernel.step(energy, space, state, generator)
        tokens.append(state.fills.tokens)
        lengths.append(state.fills.lengths)
        energies.append(state.energy)
        accepted.append(info.accepted)
        if include:
            included.append(energy.include(state.fills))
        if on_step is not None:
            on_step(t, state, info)
    return SpanTrace(torch.stack(tokens), torch.stack(lengths), torch.stack(energies), torch.stack(accepted),
                     categories, energy.encoder_sequences, time.perf_counter() - begin, energy.name,
                     torch.stack(included) if include else None, include_weight if include else 0.0)
