"""The repeat-masked PLL: its terms, its cache keys, and exact samplers on it."""

import numpy as np
import pytest
import torch
from conftest import tiny_bert

from infill.energies import MaskedLMEnergy
from infill.energies.conditionals import MASKED, ConditionalCache, key
from infill.energies.exact import all_states, empirical_distribution, exact_distribution, total_variation
from infill.samplers import make_sampler, sample

INPUT_IDS = torch.tensor([2, 10, 11, 4, 12, 4, 13, 3])
BLANKS, CATEGORIES = torch.tensor([3, 5]), torch.arange(20, 26)


def energy_of(model, mask_repeats=True, cache=None):
    return MaskedLMEnergy(model, INPUT_IDS, BLANKS, CATEGORIES, mask_token_id=4, cache=cache, mask_repeats=mask_repeats)


@pytest.fixture(scope="module")
def model():
    return tiny_bert(vocab_size=32, seed=1, init=0.25)


def naive(model, x_idx, mask_repeats):
    """Each term by hand: one sequence per term, the model's full logits, the categories' log-softmax."""
    out = []
    for row in x_idx.tolist():
        total = 0.0
        for i, token in enumerate(row):
            ids = INPUT_IDS.clone()
            ids[BLANKS] = CATEGORIES[torch.tensor(row)]
            for j, other in enumerate(row):
                if j == i or (mask_repeats and other == token):
                    ids[BLANKS[j]] = 4
            with torch.no_grad():
                logits = model(input_ids=ids[None]).logits[0, BLANKS[i], CATEGORIES]
            total += torch.log_softmax(logits, -1)[token].item()
        out.append(total)
    return torch.tensor(out)


def test_terms_mask_every_blank_holding_the_token(model):
    states = all_states(2, 6)
    energy = energy_of(model)
    expected = naive(model, states, True)
    torch.testing.assert_close(energy.of_indices(states), expected, atol=1e-4, rtol=0)
    with torch.enable_grad():  # the gradient path masks the same copies
        torch.testing.assert_close(
            energy_of(model)(torch.nn.functional.one_hot(states, 6).float()).detach(), expected, atol=1e-4, rtol=0
        )
    repeats = states[:, 0] == states[:, 1]
    plain = naive(model, states, False)
    torch.testing.assert_close(expected[~repeats], plain[~repeats], atol=1e-4, rtol=0)
    assert (expected[repeats] - plain[repeats]).abs().min() > 1e-3  # a repeat is scored otherwise


def test_bound_reads_the_repeat_masked_terms(model):
    energy = energy_of(model)
    states = all_states(2, 6)
    values = energy.of_indices(states)
    torch.testing.assert_close(energy.bound(states), values, atol=1e-4, rtol=0)


def stationary_tv(energy, p, name, chains=1000, steps=40, seed=0):
    """A kernel started at the target: TV of its draws to ``p`` (floor at 1000 x 40 correlated draws ~0.009)."""
    x0 = torch.repeat_interleave(all_states(2, 6), torch.round(p * chains).long(), dim=0)
    trace = sample(make_sampler(name), energy, x0, steps, generator=torch.Generator().manual_seed(seed))
    return total_variation(p, empirical_distribution(trace.samples, 6)), trace


@pytest.mark.parametrize("name", ["gibbs-mh", "block-mh", "gwg"])
def test_mh_samplers_are_exact_for_the_repeat_masked_target(model, name):
    energy = energy_of(model)
    p = exact_distribution(energy, 2, 6)
    tv, trace = stationary_tv(energy, p, name)
    assert tv <= 0.03, f"{name}: TV {tv:.4f}"
    assert trace.mean_hops > 0.15


def test_the_plain_pll_fails_the_same_bound(model):
    """The biased control: chains on the plain PLL, judged against the repeat-masked target."""
    p = exact_distribution(energy_of(model), 2, 6)
    assert stationary_tv(energy_of(model, mask_repeats=False), p, "gibbs-mh")[0] > 0.05


def test_a_key_that_forgets_the_repeats_mask_is_stale(model):
    """A cache shared with the plain PLL is exact with the true keys; a key that records a masked repeat as a
    token (a stale entry: the plain PLL's term of another state) breaks the target."""
    states = all_states(2, 6)
    expected = naive(model, states, True)
    for key_of, exact in ((key, True), (lambda s, rows: key(s, forget_repeats(s, rows)), False)):
        cache = ConditionalCache(key_of=key_of)
        energy_of(model, mask_repeats=False, cache=cache).of_indices(states)
        values = energy_of(model, cache=cache).of_indices(states)
        assert torch.allclose(values, expected, atol=1e-4) == exact


def forget_repeats(slot, rows):
    """Rows with every masked blank but the read one recorded as category 0."""
    rows = rows.copy()
    other = np.ones(rows.shape, dtype=bool)
    other[np.arange(len(rows)), slot] = False
    rows[other & (rows == MASKED)] = 0
    return rows
