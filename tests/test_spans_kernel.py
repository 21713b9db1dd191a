"""The span sampler, run by the samplers' driver (:meth:`Sampler.run`), against exactly enumerable
variable-length targets, and its biased and stale controls."""

from __future__ import annotations

import itertools

import pytest
import torch

from infill.energies.exact import total_variation, tv_noise_floor
from infill.energies.tempered import Tempered
from infill.errors import InfillError
from infill.samplers import sample
from infill.spans.fills import EMPTY, MASK, Fills, SpanSpace
from infill.spans.kernel import SpanSampler


class TableEnergy:
    """A random energy over every fill: per-category, neighbour-pair and per-length terms plus a random table
    (one value per fill). Its proposal at a mask is the target's conditional there plus a random function of
    the mask's neighbours: informed, as a masked LM's, but wrong (MH must correct it)."""

    def __init__(self, k: int, width: int, blanks: int, seed: int, scale: float = 0.5):
        g = torch.Generator().manual_seed(seed)
        self.num_categories, self.width = k, width
        self.table = scale * torch.randn((k + 1) ** (width * blanks), generator=g, dtype=torch.float64)
        self.unary = 2 * scale * torch.randn(k + 1, generator=g, dtype=torch.float64)
        self.pair = scale * torch.randn(k + 1, k + 1, generator=g, dtype=torch.float64)
        self.per_length = scale * torch.randn(width + 1, generator=g, dtype=torch.float64)
        self.left = 0.5 * torch.randn(k + 1, k, generator=g)
        self.right = 0.5 * torch.randn(k + 1, k, generator=g)

    def index(self, fills: Fills) -> torch.Tensor:
        digits = (fills.tokens + 1).flatten(1)  # EMPTY -> 0
        weights = (self.num_categories + 1) ** torch.arange(digits.shape[1])
        return (digits * weights).sum(1)

    def __call__(self, fills: Fills) -> torch.Tensor:
        t = fills.tokens + 1  # EMPTY -> 0
        inside = (t > 0).double()
        pairs = (self.pair[t[..., :-1], t[..., 1:]] * inside[..., 1:]).sum((1, 2))
        return (
            (self.unary[t] * inside).sum((1, 2))
            + pairs
            + self.per_length[fills.lengths].sum(1)
            + self.table[self.index(fills)]
        )

    def proposal_logits(self, fills, blank, slot):
        rows = fills.rows(blank)
        assert (rows[torch.arange(len(slot)), slot] == MASK).all()
        padded = torch.nn.functional.pad(rows, (1, 1), value=EMPTY)
        left = padded[torch.arange(len(slot)), slot].clamp_min(-1)
        right = padded[torch.arange(len(slot)), slot + 2].clamp_min(-1)
        k = self.num_categories
        candidates = [fills.put(blank, slot, torch.full_like(slot, c)) for c in range(k)]
        conditional = torch.stack([self(c) for c in candidates], 1).float()
        return conditional + self.left[left + 1] + self.right[right + 1]


def make_space(case: str, b: int) -> SpanSpace:
    """``words``: one word blank of 0-2 words over 2 word starts and 2 continuations, 2 pieces a word (43 fills);
    ``two``: two token blanks over 3 categories, of 0-2 and of 0-1 allowing 2 of the categories (39 fills)."""
    if case == "words":
        allowed, starts, pieces, low, high = [[1, 1, 1, 1]], [[1, 1, 0, 0]], [2], [0], [2]
    else:
        allowed, starts, pieces, low, high = [[1, 1, 1], [1, 1, 0]], [[1, 1, 1]] * 2, [1, 1], [0, 0], [2, 1]
    return SpanSpace(
        torch.tensor(allowed).bool(),
        torch.tensor(starts).bool(),
        torch.tensor(pieces),
        torch.tensor(low).expand(b, -1),
        torch.tensor(high).expand(b, -1),
    )


def all_fills(space: SpanSpace) -> Fills:
    """Every valid fill of a space (one chain's bounds), enumerated."""
    k, width = space.allowed.shape[1], space.width
    per_blank = [
        [list(seq) for n in range(width + 1) for seq in itertools.product(range(k), repeat=n)]
        for _ in range(space.allowed.shape[0])
    ]
    combos = list(itertools.product(*per_blank))
    tokens = torch.tensor([[seq + [EMPTY] * (width - len(seq)) for seq in combo] for combo in combos])
    lengths = torch.tensor([[len(seq) for seq in combo] for combo in combos])
    fills = Fills(tokens, lengths)
    valid = space.select(torch.zeros(len(combos), dtype=torch.long)).fill_valid(fills, torch.arange(len(combos)))
    return fills.select(valid)


class NoReverseInsert(SpanSampler):
    """Biased: an insert's ratio omits the reverse (delete) proposal."""

    def log_proposals(self, move, *args):
        forward, reverse = super().log_proposals(move, *args)
        return forward, torch.where(move == 0, 0.0, reverse)


class SymmetricInsert(SpanSampler):
    """Biased: inserts and deletes ignore the probability of the category drawn (as if it were uniform)."""

    def log_proposals(self, move, n, log_p_x, log_p_y, log_q_new, log_q_old):
        return super().log_proposals(
            move, n, log_p_x, log_p_y, torch.where(move == 2, log_q_new, 0.0), torch.where(move == 2, log_q_old, 0.0)
        )


class StaleEnergy(SpanSampler):
    """Stale: an accepted state keeps the energy cached for the state it left."""

    def step(self, energy, state, generator):
        new, info = super().step(energy, state, generator)
        return type(state)(new.x, state.energy, num_categories=state.num_categories), info


def run_chains(kind: type, case: str, temperature: float = 1.0, chains: int = 2000, steps: int = 200, seed: int = 0):
    """TV to the exact target ``exp(U / temperature)`` of the second half of ``steps`` steps (by
    :meth:`Sampler.run`) of ``chains`` chains of the sampler ``kind`` started uniformly over the fills, the fraction
    of chain-steps that changed a length, the target and the number of samples."""
    space = make_space(case, chains)
    energy = TableEnergy(space.allowed.shape[1], space.width, space.allowed.shape[0], seed=seed)
    target_energy = energy if temperature == 1 else Tempered(energy, temperature)
    generator = torch.Generator().manual_seed(seed)
    enumerated = all_fills(space)
    start = torch.randint(len(enumerated.lengths), (chains,), generator=generator)  # uniform over the fills
    sampler = kind(space)

    def check(t, state, info):
        if kind is not StaleEnergy:
            assert torch.equal(state.energy, target_energy(sampler.fills(state.x)))  # the cached energy is the state's
        assert torch.equal(info.hops, torch.where(info.accepted, info.proposed_hops, 0))  # only accepted ones move

    trace = sample(sampler, target_energy, enumerated.select(start).pack(), steps, generator, callback=check)
    lengths = sampler.fills(trace.samples.flatten(0, 1)).lengths.view(steps, chains, -1)
    changed = (lengths[1:] != lengths[:-1]).any(-1).sum().item()
    target = torch.softmax(energy(enumerated) / temperature, 0)
    position = {int(i): n for n, i in enumerate(energy.index(enumerated))}
    samples = energy.index(sampler.fills(trace.samples[steps // 2 :].flatten(0, 1))).tolist()
    assert all(i in position for i in samples)  # every visited fill is valid
    counts = torch.bincount(torch.tensor([position[i] for i in samples]), minlength=len(target)).double()
    return total_variation(counts / counts.sum(), target), changed / (chains * steps), target, len(samples)


@pytest.mark.parametrize("case, temperature", [("words", 1.0), ("two", 1.0), ("words", 0.5)])
def test_span_sampler_is_exact(case, temperature):  # 0.5: the default of word blanks, target exp(U / 0.5)
    tv, length_changes, target, n = run_chains(SpanSampler, case, temperature)
    assert tv <= 0.02, f"TV {tv:.4f} (noise floor of independent draws {tv_noise_floor(target, n):.4f})"
    assert length_changes > 0.05  # the chains move between lengths (18-28% of steps at T = 1, 6% at 0.5)


@pytest.mark.parametrize(
    "kind", [NoReverseInsert, SymmetricInsert, StaleEnergy], ids=["no-reverse", "symmetric", "stale"]
)
def test_biased_and_stale_controls_fail_the_bound(kind):
    tv, *_ = run_chains(kind, "words")
    assert tv > 0.02


def test_fill_edits_and_word_validity():
    fills = Fills(torch.tensor([[[0, 2, EMPTY, EMPTY]], [[1, EMPTY, EMPTY, EMPTY]]]), torch.tensor([[2], [1]]))
    blank, slot = torch.tensor([0, 0]), torch.tensor([1, 0])
    assert fills.insert(blank, slot, torch.tensor([3, 0])).to_lists() == [[[0, 3, 2]], [[0, 1]]]
    assert fills.delete(blank, slot).to_lists() == [[[0]], [[]]]
    assert fills.put(blank, slot, torch.tensor([1, 2])).to_lists() == [[[0, 1]], [[2]]]
    space = make_space("words", 2)  # starts 0, 1; continuations 2, 3; 2 pieces a word, 0-2 words
    mask = space.proposal_mask(fills, blank, slot, torch.tensor([True, True]), torch.arange(2))
    # chain 0 "0 2" + slot 1: a start (a second word) fits, a continuation would make 3 pieces;
    # chain 1 "1" + slot 0: only a start can open the fill (then "x 1" is two words)
    assert mask.tolist() == [[True, True, False, False], [True, True, False, False]]
    invalid = Fills(torch.tensor([[[2, EMPTY, EMPTY, EMPTY]], [[0, 2, 3, EMPTY]]]), torch.tensor([[1], [3]]))
    assert space.fill_valid(invalid, torch.arange(2)).tolist() == [False, False]


def test_sampler_refuses_bad_settings_and_starts():
    space = make_space("words", 1)
    with pytest.raises(InfillError, match="move_weights"):
        SpanSampler(space, move_weights=(0, 0, 0))
    bad = Fills(torch.tensor([[[2, EMPTY, EMPTY, EMPTY]]]), torch.tensor([[1]]))
    with pytest.raises(InfillError, match="outside its span space"):
        SpanSampler(space).init(TableEnergy(4, 4, 1, 0), bad.pack())
    with pytest.raises(InfillError, match="packed"):
        SpanSampler(space).init(TableEnergy(4, 4, 1, 0), bad.tokens[:, 0])
