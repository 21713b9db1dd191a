"""The product search: exact scores, the budget as a hard cap, the exhaustive best where the sets cover all."""

import numpy as np
import pytest
import torch
from conftest import tiny_bert

from infill import Infiller
from infill.energies import MaskedLMEnergy
from infill.energies.budget import Meter
from infill.energies.exact import all_states
from infill.onepass.product_search import cost, grow, search

CATEGORIES = torch.arange(20, 26)


def energy_of(blanks, budget, mask_repeats=False, seed=1):
    input_ids = torch.tensor([2, 10, 4, 11, 4, 12, 4, 13, 3])[: 2 * blanks + 3].clone()
    input_ids[-1] = 3
    positions = torch.arange(2, 2 * blanks + 1, 2)
    return MaskedLMEnergy(
        tiny_bert(vocab_size=32, seed=seed, init=0.25),
        input_ids,
        positions,
        CATEGORIES,
        mask_token_id=4,
        meter=Meter(budget),
        mask_repeats=mask_repeats,
    )


def test_cost_counts_one_read_per_blank_and_context():
    assert cost([99, 99]) == 198
    assert cost([5, 5, 4, 4]) == 80 + 80 + 100 + 100
    assert cost([7]) == 1  # one blank: its read is the first pass's


def test_a_peaked_blank_keeps_few_values():
    sets = [[0], [0]]
    offers = [[(-5.0, 1), (-6.0, 2)], [(-0.5, 1), (-0.7, 2), (-0.9, 3), (-8.0, 4)]]
    assert grow(sets, offers, 3) == 3
    assert sets == [[0], [0, 1, 2, 3]]


@pytest.mark.parametrize("mask_repeats", [False, True])
@pytest.mark.parametrize("blanks,budget", [(2, 9), (3, 40)])
def test_scores_are_exact_and_the_budget_a_hard_cap(blanks, budget, mask_repeats):
    energy = energy_of(blanks, budget, mask_repeats)
    x, values = search(energy)
    assert energy.meter.spent <= budget
    assert len(set(map(tuple, x.tolist()))) == len(x)
    fresh = energy_of(blanks, None, mask_repeats)
    torch.testing.assert_close(values, fresh.of_indices(x), atol=1e-4, rtol=0)


@pytest.mark.parametrize("mask_repeats", [False, True])
def test_with_room_for_every_filling_it_finds_the_best(mask_repeats):
    energy = energy_of(3, 1 + 3 * 36 + 36, mask_repeats)
    x, values = search(energy)
    states = all_states(3, 6)
    exhaustive = energy_of(3, None, mask_repeats).of_indices(states)
    assert len(x) == 6**3
    assert values.max().item() == pytest.approx(exhaustive.max().item(), abs=1e-4)
    assert x[values.argmax()].tolist() == states[exhaustive.argmax()].tolist()


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return Infiller(str(tiny_model_dir))


def test_through_the_pipeline(infiller):
    template = "the [MASK] of the [MASK] was [MASK] ."
    first = infiller.sample(template, sampler="product-search", top=5, seed=0, budget=150, decode="diverse")
    again = infiller.sample(template, sampler="product-search", top=5, seed=1, budget=150, decode="diverse")
    assert first.diagnostics.encoder_sequences <= 150
    assert len(first.samples) == 5
    assert [s.text for s in first.samples] == [s.text for s in again.samples]  # a search: no randomness
    scores = infiller.sample(template, sampler="product-search", top=5, seed=0, budget=150)
    assert [s.energy for s in scores.samples] == sorted((s.energy for s in scores.samples), reverse=True)


def test_without_top_it_is_refused_in_one_line(infiller):
    from infill.errors import InfillError

    with pytest.raises(InfillError, match="give --top K"):
        infiller.sample("the [MASK] of the [MASK] .", sampler="product-search", seed=0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_round_that_leaves_the_best_fillings_ends_the_search(monkeypatch, seed):
    """The search ends at the first refresh round whose best fillings are the round before's, budget unspent:
    the rounds before it each changed them (a search that went on to its budget fails both)."""
    from infill.onepass import product_search

    bests, scores_of = [], product_search.product_scores

    def recorded(energy, sets):
        scores = scores_of(energy, sets)
        bests.append(product_search._best(sets, scores, product_search.REFRESH_FROM))
        return scores

    monkeypatch.setattr(product_search, "product_scores", recorded)
    energy = MaskedLMEnergy(
        tiny_bert(vocab_size=32, seed=seed, init=0.25),
        torch.tensor([2, 10, 4, 11, 4, 12, 4, 13, 3]),
        torch.tensor([2, 4, 6]),
        torch.arange(5, 32),  # too many for one product: the search refreshes
        mask_token_id=4,
        meter=Meter(400),
    )
    search(energy)
    assert len(bests) >= 2 and np.array_equal(bests[-1], bests[-2])
    assert not any(np.array_equal(a, b) for a, b in zip(bests[:-2], bests[1:-1]))
    assert energy.meter.spent < 0.9 * 400
