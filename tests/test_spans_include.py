"""Include words in span fills: the kernel on the sum energy against its exact target, a control that
ignores the include term, and chain starts that hold every word."""

from __future__ import annotations

import pytest
import torch
from families import tokenizer
from test_spans_kernel import TableEnergy, all_fills, make_space

from infill.constraints import include_pieces
from infill.energies.exact import total_variation, tv_noise_floor
from infill.errors import InfillError
from infill.samplers import sample
from infill.spans.fills import MASK, Fills
from infill.spans.include import SpanInclude, plant
from infill.spans.kernel import SpanSampler
from infill.text.vocabulary import word_piece_ids

WORDS = [[(0, 2)], [(1,)]]  # a word of two pieces (start 0, continuation 2) and a word of one (start 1)


def visited_tv(target_energy, chain_energy, chains: int = 2000, steps: int = 200, seed: int = 0):
    """TV between the second half of ``steps`` steps of the span sampler on ``chain_energy`` (chains started
    uniformly over the fills of the ``words`` space) and the exact distribution of ``target_energy``."""
    space = make_space("words", chains)
    generator = torch.Generator().manual_seed(seed)
    enumerated = all_fills(space)
    base = target_energy.energy
    sampler = SpanSampler(space)
    x0 = enumerated.select(torch.randint(len(enumerated.lengths), (chains,), generator=generator)).pack()
    trace = sample(sampler, chain_energy, x0, steps, generator)
    kept = base.index(sampler.fills(trace.samples[steps // 2 :].flatten(0, 1)))
    target = torch.softmax(target_energy(enumerated), 0)
    position = {int(i): n for n, i in enumerate(base.index(enumerated))}
    counts = torch.bincount(torch.tensor([position[int(i)] for i in kept]), minlength=len(target))
    return total_variation(counts.double() / counts.sum(), target), target, int(counts.sum())


def test_span_kernel_is_exact_on_the_sum_with_include():
    space = make_space("words", 1)
    summed = SpanInclude(TableEnergy(4, space.width, 1, seed=0), WORDS, space.starts, weight=1.5)
    tv, target, n = visited_tv(summed, summed)
    assert tv <= 0.02, f"TV {tv:.4f} (noise floor {tv_noise_floor(target, n):.4f})"
    fills = all_fills(space)
    held, alone = summed.include(fills) == 0, torch.softmax(summed.energy(fills), 0)
    assert target[held].sum() > 2 * alone[held].sum() and target[held].sum() < 0.5  # shaped, not decided


def test_a_chain_blind_to_the_include_term_fails_the_bound():
    space = make_space("words", 1)
    summed = SpanInclude(TableEnergy(4, space.width, 1, seed=0), WORDS, space.starts, weight=1.5)
    tv, _, _ = visited_tv(summed, summed.energy)
    assert tv > 0.02


def test_include_counts_whole_words_only():
    space = make_space("words", 3)
    term = SpanInclude(TableEnergy(4, space.width, 1, seed=0), WORDS, space.starts, weight=20.0)
    fills = all_fills(space)
    for chain, value in zip(fills.to_lists(), term.include(fills).tolist()):
        words = []
        for c in chain[0]:
            words.append([c]) if c in (0, 1) else words[-1].append(c)
        assert value == -(([0, 2] not in words) + ([1] not in words))


def test_planted_starts_hold_every_word_and_are_valid():
    space = make_space("words", 64)
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(0, 3, (64, 1), generator=generator)
    fills = plant(lengths, space, WORDS, generator)
    term = SpanInclude(TableEnergy(4, space.width, 1, seed=0), WORDS, space.starts, weight=20.0)
    assert (fills.lengths >= 3).all()  # both words: 2 pieces and 1
    drawn = Fills(torch.where(fills.tokens == MASK, 1, fills.tokens), fills.lengths)  # the masked LM's draws
    assert (term.include(drawn) == 0).all() and space.fill_valid(drawn, torch.arange(64)).all()


@pytest.mark.parametrize("style", ["wordpiece", "bpe", "XLMRobertaTokenizer", "albert", "DebertaV2Tokenizer"])
def test_include_forms_spell_the_word_in_every_tokenizer_style(style):
    tok = tokenizer(style)
    pieces = word_piece_ids(tok)
    several = []
    for word in ("mountain", "Paris", "souvenir"):
        if len(tok.tokenize(f" {word}")) <= 4:  # the SentencePiece test vocabulary spells souvenir in 5 pieces
            forms = include_pieces(tok, pieces, [word], capacity=1, max_pieces=4)[0]
            assert forms and all(tok.decode(pieces[list(f)]).strip().lower() == word.lower() for f in forms)
            several += [len(f) > 1 for f in forms]
    assert any(several)  # a word of several pieces in every style


def test_include_pieces_refuses_what_no_filling_can_hold():
    tok = tokenizer("wordpiece")
    pieces = word_piece_ids(tok)
    with pytest.raises(InfillError, match="more than the 2 a word of a blank may take"):
        include_pieces(tok, pieces, ["souvenir"], 1, max_pieces=2)
    with pytest.raises(InfillError, match="cannot include 2 words in blanks of at most 1 word"):
        include_pieces(tok, pieces, ["souvenir", "paris"], 1, 4)
    with pytest.raises(InfillError, match="also forbidden"):
        include_pieces(tok, pieces, ["paris"], 1, 4, forbid=["Paris"])
    with pytest.raises(InfillError, match="no word blank may take it"):
        include_pieces(tok, pieces, [","], 1, 4)
