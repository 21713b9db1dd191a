"""The masked-LM span energy and the span entry point, on a tiny random BERT and on the dev MLM."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_bert

from infill.errors import InfillError
from infill.lm.scoring import token_scores
from infill.samplers import Trace
from infill.spans.fills import MASK, Fills
from infill.spans.sample import best, draw_starts, sample_spans, span_energy, span_space, start_lengths
from infill.text.template import fill_pieces, parse
from infill.text.vocabulary import token_words, word_piece_ids

WORDS = ["cat", "dog", "so", "##uven", "##ir", "the", "red"]


@pytest.fixture(scope="module")
def setup(bert_tokenizer):
    model = tiny_bert(init=0.5)
    categories = torch.tensor(bert_tokenizer.convert_tokens_to_ids(WORDS))
    template = parse("the [MASK*0-2] sat on [MASK] .", bert_tokenizer, 64, blank_unit="word")
    return model, bert_tokenizer, template, categories


def fills_of(*blanks: list[int], width: int = 8) -> Fills:
    tokens = torch.full((1, len(blanks), width), -1)
    for j, seq in enumerate(blanks):
        tokens[0, j, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return Fills(tokens, torch.tensor([[len(seq) for seq in blanks]]))


@pytest.mark.parametrize("scoring", ["pll", "word-l2r"])
def test_energy_is_the_sentence_score_plus_the_word_bonus(setup, scoring):
    model, tokenizer, template, categories = setup
    space = span_space(template, tokenizer, categories, 1)
    energy = span_energy(model, tokenizer, template, categories, space, scoring=scoring, window=None, word_bonus=0.7)
    fills = fills_of([2, 3, 4, 1], [6])  # "so ##uven ##ir dog" (2 words), "red" (1 word)
    pieces = [categories[[2, 3, 4, 1]].tolist(), categories[[6]].tolist()]
    ids = template.sequence(pieces)
    assert tokenizer.decode(ids[1:-1]) == "the souvenir dog sat on red."
    special = torch.tensor([i in tokenizer.all_special_ids for i in ids.tolist()])
    starts = torch.tensor([i in token_words(tokenizer)[1] for i in ids.tolist()]) | special
    scores, copies = token_scores(
        model,
        ids[None],
        torch.ones(1, len(ids), dtype=torch.long),
        ~special[None],
        word_l2r=scoring == "word-l2r",
        word_starts=starts[None],
        mask_token_id=tokenizer.mask_token_id,
    )
    assert energy(fills).item() == pytest.approx(scores.sum().item() + 0.7 * 3, abs=1e-4)
    assert energy.encoder_sequences == copies == len(ids) - 2
    assert energy.name == f"{scoring} +0.7/word"


def test_window_scores_the_fills_and_their_neighbours(setup):
    model, tokenizer, template, categories = setup
    space = span_space(template, tokenizer, categories, 2)
    energy = span_energy(model, tokenizer, template, categories, space, scoring="word-l2r", window=1)
    two = Fills(torch.cat([fills_of([0, 1], [5]).tokens, fills_of([], [6]).tokens]), torch.tensor([[2, 1], [0, 1]]))
    values = energy(two)
    # "the | cat dog | sat ... on | the | ." and "the | | sat ... on | red | .": fills plus one token each side
    assert energy.encoder_sequences == (2 + 1 + 2 * 2) + (0 + 1 + 2 * 2)
    again = Fills(two.tokens.flip(0), two.lengths.flip(0))
    assert torch.equal(energy(again), values.flip(0))  # scored fills come from the cache
    assert energy.encoder_sequences == (2 + 1 + 2 * 2) + (0 + 1 + 2 * 2)
    assert energy.name == "word-l2r window 1 +0.25/word"


def test_proposal_logits_are_the_models_at_the_mask(setup):
    model, tokenizer, template, categories = setup
    space = span_space(template, tokenizer, categories, 1)
    energy = span_energy(model, tokenizer, template, categories, space)
    fills = fills_of([0, MASK], [6])
    logits = energy.proposal_logits(fills, torch.tensor([0]), torch.tensor([1]))
    ids = template.sequence([[categories[0].item(), tokenizer.mask_token_id], [categories[6].item()]])
    expected = model(input_ids=ids[None]).logits[0, 3, categories]
    assert torch.allclose(logits[0], expected, atol=1e-4)
    assert energy.encoder_sequences == 1


def test_sample_spans_keeps_fills_valid_and_counts_the_encoder(setup):
    model, tokenizer, template, categories = setup
    run, trace = sample_spans(
        model, tokenizer, template, categories, chains=6, steps=8, generator=torch.Generator().manual_seed(0)
    )
    assert isinstance(trace, Trace) and trace.energies.shape == trace.accepted.shape == (8, 6)
    space = span_space(template, tokenizer, categories, 6)
    for t in range(8):
        assert space.fill_valid(run.sampler.fills(trace.samples[t]), torch.arange(6)).all()
    energy = span_energy(model, tokenizer, template, categories, space)
    assert torch.allclose(energy(run.sampler.fills(trace.samples[-1])).double(), trace.energies[-1], atol=1e-4)
    assert run.energy.encoder_sequences > 6 * 8
    rows, values, chains = best(trace, 1)
    assert values.item() == trace.energies.max().item() and len(run.sampler.fills(rows).to_lists()[0]) == 2
    assert torch.equal(rows[0], trace.samples.flatten(0, 1)[trace.energies.flatten().argmax()])


def test_chains_start_at_every_combination_of_lengths(setup):
    model, tokenizer, template, categories = setup  # [MASK*0-2] and [MASK]
    space = span_space(template, tokenizer, categories, 5)
    assert start_lengths(space).tolist() == [[0, 1], [1, 1], [2, 1], [0, 1], [1, 1]]


@pytest.mark.parametrize("init", ["left-to-right", "independent", "argmax", "uniform"])
def test_chain_starts(setup, init):
    model, tokenizer, template, categories = setup
    space = span_space(template, tokenizer, categories, 4)
    energy = span_energy(model, tokenizer, template, categories, space)
    lengths = torch.tensor([[0, 1], [1, 1], [2, 1], [2, 1]])
    fills = draw_starts(energy, space, lengths, init, torch.Generator().manual_seed(0))
    assert torch.equal(fills.lengths, lengths) and space.fill_valid(fills, torch.arange(4)).all()
    assert energy.encoder_sequences == (0 if init == "uniform" else (3 + 2) + 4)  # the chains at each position
    if init == "argmax":
        assert fills.tokens[2, 0, 0] == fills.tokens[3, 0, 0]


def test_per_length_pins_every_combination(setup):
    model, tokenizer, template, categories = setup
    run, trace = sample_spans(
        model,
        tokenizer,
        template,
        categories,
        chains=2,
        steps=3,
        method="per-length",
        generator=torch.Generator().manual_seed(0),
    )
    pieces = run.sampler.fills(trace.samples.flatten(0, 1)).pieces(categories)
    words = torch.tensor(
        [
            [len([i for i in p if not tokenizer.convert_ids_to_tokens(i).startswith("##")]) for p in chain]
            for chain in pieces
        ]
    ).view(3, 6, 2)
    assert words[:, :, 1].eq(1).all()  # [MASK] is one word
    assert words[:, :, 0].tolist() == [[0, 0, 1, 1, 2, 2]] * 3  # [MASK*0-2]: 2 chains at each length


@pytest.mark.parametrize(
    "options, message",
    [
        ({"method": "beam"}, "span method"),
        ({"init": "greedy"}, "start from"),
        ({"steps": 0}, "positive"),
        ({"max_pieces": 0}, "max_pieces"),
        ({"scoring": "bleu"}, "span scoring"),
        ({"window": -1}, "window"),
    ],
)
def test_sample_spans_refuses_bad_options(setup, options, message):
    model, tokenizer, template, categories = setup
    arguments = {"chains": 2, "steps": 2, **options}
    with pytest.raises(InfillError, match=message):
        sample_spans(model, tokenizer, template, categories, **arguments)


@pytest.mark.slow
def test_word_blank_takes_a_word_of_several_pieces(dev_model_path, bert_tokenizer):
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(dev_model_path)
    template = parse("we bought a [MASK] in paris .", bert_tokenizer, 512, blank_unit="word")
    categories = word_piece_ids(bert_tokenizer)
    run, trace = sample_spans(
        model, bert_tokenizer, template, categories, chains=16, steps=20, generator=torch.Generator().manual_seed(0)
    )
    visited = run.sampler.fills(trace.samples.flatten(0, 1)).pieces(categories)
    several = {fill_pieces(template, bert_tokenizer, p)[1][0] for p in visited if len(p[0]) > 1}
    assert several and all(len(word.split()) == 1 for word in several), several


def test_sample_spans_is_exact_on_a_tiny_masked_lm():
    """The kernel with the masked LM's own proposal and energy (defaults) against the enumerated target of a
    word blank of 0-1 words over 2 word starts and a continuation piece, 2 pieces a word (5 fills: nothing,
    ``cat``, ``dog``, ``cats``, ``dogs``), on a tiny BERT with a 13-token WordPiece vocabulary."""
    from transformers import BertTokenizer

    from infill.energies.exact import total_variation, tv_noise_floor

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "sat", ".", "cat", "dog", "##s", "a", "x"]
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(words)})
    model = tiny_bert(vocab_size=len(words), init=0.3, seed=1)
    categories = torch.tensor(tokenizer.convert_tokens_to_ids(["cat", "dog", "##s"]))
    template = parse("the [MASK*0-1] sat .", tokenizer, 64)
    chains, steps = 200, 100
    run, trace = sample_spans(
        model,
        tokenizer,
        template,
        categories,
        chains,
        steps,
        max_pieces=2,
        max_copies=10**5,
        word_bonus=2.0,
        generator=torch.Generator().manual_seed(0),
    )
    space = span_space(template, tokenizer, categories, 1, max_pieces=2)
    grid = torch.cartesian_prod(*[torch.arange(-1, 3)] * 2)  # every sequence of up to 2 categories (-1: empty)
    grid = grid[((grid[:, 1:] < 0) | (grid[:, :-1] >= 0)).all(1)]  # contiguous
    every = Fills(grid[:, None, :], (grid >= 0).sum(1, keepdim=True))
    every = every.select(
        space.select(torch.zeros(len(grid), dtype=torch.long)).fill_valid(
            every, torch.zeros(len(grid), dtype=torch.long)
        )
    )
    assert len(every.lengths) == 5
    energy = span_energy(model, tokenizer, template, categories, space, word_bonus=2.0)
    target = torch.softmax(energy(every).double(), 0)
    index = {repr(f): n for n, f in enumerate(every.to_lists())}
    kept = run.sampler.fills(trace.samples[steps // 2 :].flatten(0, 1)).to_lists()
    counts = torch.bincount(torch.tensor([index[repr(f)] for f in kept]), minlength=5).double()
    tv = total_variation(counts / counts.sum(), target)
    assert tv <= 0.02, f"TV {tv:.4f}, noise floor of independent draws {tv_noise_floor(target, len(kept)):.4f}"
    lengths = run.sampler.fills(trace.samples.flatten(0, 1)).lengths.view(steps, chains)
    assert (lengths[1:] != lengths[:-1]).float().mean() > 0.1
