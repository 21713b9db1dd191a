"""The cache of conditionals: exact (every MH sampler still reproduces an enumerable PLL through it, a stale
key fails the same bound), reproducible (same seed, same fillings and energies with and without it), cheaper
(fewer encoder sequences), bounded (a cap in bytes)."""

import numpy as np
import pytest
import torch
from conftest import tiny_bert

from infill import Infiller
from infill.energies import MaskedLMEnergy, evaluate, one_hot, value_and_grad
from infill.energies.conditionals import ConditionalCache, key
from infill.energies.exact import empirical_distribution, exact_distribution, total_variation, tv_noise_floor
from infill.samplers import SAMPLERS, make_sampler, sample

INPUT_IDS = torch.tensor([2, 10, 4, 11, 4, 12, 4, 3])
BLANKS = torch.tensor([2, 4, 6])
CATEGORIES = torch.tensor([20, 21, 22, 23])
MASK = 4
D, K = 3, 4
CHAINS, STEPS = 1000, 200
READERS = {"gibbs-mh": {}, "gibbs": {"proposal": "exact"}, "block-mh": {}, "mlm-independence": {}, "lb": {}, "mana": {}}
"""The MH samplers whose evaluations read the cache (values without gradient, conditionals)."""
GRADIENT = sorted(n for n, cls in SAMPLERS.items() if getattr(cls, "adjusted", True) and n not in READERS)
"""The other MH samplers: every evaluation takes a gradient, so goes through the encoder."""


def stale_key(slot, rows):
    """A wrong key: the cached logits of blank ``slot`` ignore blank 0 (unless they are blank 0's own)."""
    rows = rows.copy()
    rows[slot != 0, 0] = 0
    return key(slot, rows)


@pytest.fixture(scope="module")
def model():
    return tiny_bert(vocab_size=32, seed=2, init=0.15)


def pll(model, cache=None):
    return MaskedLMEnergy(model, INPUT_IDS, BLANKS, CATEGORIES, MASK, cache=cache)


@pytest.fixture(scope="module")
def target(model):
    """The PLL over 3 blanks x 4 categories (64 states), enumerated without a cache."""
    p = exact_distribution(pll(model, ConditionalCache(0)), D, K)
    assert tv_noise_floor(p, CHAINS * STEPS // 2) <= 0.01
    return p


def run_tv(sampler, energy, p, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randint(K, (CHAINS, D), generator=generator)
    trace = sample(sampler, energy, x0, STEPS, generator=generator)
    kept = trace.samples[max(trace.burn_in, STEPS // 2) :]
    return total_variation(p, empirical_distribution(kept, K)), tv_noise_floor(p, kept.shape[0] * CHAINS)


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_mh_sampler_that_reads_it_is_exact_through_the_cache(model, target, name):
    energy = pll(model)
    tv, floor = run_tv(make_sampler(name, **READERS[name]), energy, target)
    assert tv <= min(0.02, 2.5 * floor), f"{name}: TV {tv:.4f} (floor {floor:.4f})"
    assert energy.cache_hits > 0


@pytest.mark.parametrize("name", GRADIENT)
def test_gradient_samplers_never_read_it(model, name):
    """Their chains are those of a run without the cache, step for step: their exactness is the one shown
    on the enumerable targets of ``test_samplers_exact.py``."""
    traces = []
    for energy in (pll(model), pll(model, ConditionalCache(0))):
        generator = torch.Generator().manual_seed(0)
        traces.append(sample(make_sampler(name), energy, torch.randint(K, (20, D), generator=generator), 4, generator))
        assert energy.cache_hits == 0
    assert torch.equal(traces[0].samples, traces[1].samples)
    assert torch.equal(traces[0].energies, traces[1].energies)


def test_a_stale_key_fails_the_same_bound(model, target):
    """A key that omits blank 0 serves the terms of other blanks computed beside another token there."""
    energy = pll(model, ConditionalCache(key_of=stale_key))
    tv, floor = run_tv(make_sampler("gibbs-mh"), energy, target)
    assert tv > min(0.02, 2.5 * floor), f"stale cache: TV {tv:.4f} (floor {floor:.4f})"


def test_cached_values_equal_a_fresh_forward(model):
    """Every way of reading the same term gives the value a cache-free pass gives."""
    x = torch.randint(K, (50, D), generator=torch.Generator().manual_seed(1))
    cached, fresh = pll(model), pll(model, ConditionalCache(0))
    first = evaluate(cached, one_hot(x, K))
    torch.testing.assert_close(evaluate(cached, one_hot(x, K)), first)  # now all hits
    torch.testing.assert_close(first, evaluate(fresh, one_hot(x, K)), atol=1e-5, rtol=0)
    i = torch.randint(D, (50,), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(cached.conditional_logits(x, i), fresh.conditional_logits(x, i), atol=1e-5, rtol=0)
    assert cached.sequences < fresh.sequences and cached.cache_hits > 0


def test_identical_sequences_of_a_pass_go_through_once(model):
    """All-masked draws: every chain holds the same sequence, so one goes through the encoder."""
    energy = pll(model, ConditionalCache(0))
    logits = energy.blank_logits(torch.zeros(30, D, dtype=torch.long), torch.ones(30, D, dtype=torch.bool))
    assert energy.sequences == 1 and energy.cache_hits == 29
    assert (logits == logits[:1]).all()


def test_the_cap_bounds_the_bytes_kept(model):
    cache = ConditionalCache(max_bytes=10 * K * 4)
    energy = pll(model, cache)
    evaluate(energy, one_hot(torch.randint(K, (40, D), generator=torch.Generator().manual_seed(3)), K))
    assert len(cache) == 10 and cache.nbytes == 10 * K * 4


def test_the_least_recently_used_entry_goes_first():
    """Finding an entry makes it the most recent; putting a key held, or one twice, changes nothing."""
    cache = ConditionalCache(max_bytes=2 * K * 4)
    a, b, c = b"a", b"b", b"c"
    first = torch.arange(3 * K, dtype=torch.float32).view(3, K)
    cache.put([a, b, a], first)
    assert cache.find([a]) != [-1]  # a is now the most recent, b the least
    cache.put([b, c], first[:2] + 100)  # b held: skipped; c evicts b
    assert cache.find([b]) == [-1] and len(cache) == 2
    torch.testing.assert_close(cache.logits(torch.tensor(cache.find([a, c]))), torch.stack([first[0], first[1] + 100]))


def test_its_tensor_grows_to_the_cap_keeping_what_it_holds(monkeypatch):
    from infill.energies import conditionals

    monkeypatch.setattr(conditionals, "CACHE_MIB", 0)  # no first allocation: grow from the first put
    cache = ConditionalCache(max_bytes=10 * K * 4)
    logits = torch.arange(12 * K, dtype=torch.float32).view(12, K)
    for part in (range(0, 3), range(3, 6), range(6, 12)):
        cache.put([bytes([i]) for i in part], logits[list(part)])
    assert len(cache) == 10 and cache.find([b"\x00", b"\x01"]) == [-1, -1]  # the two oldest evicted
    held = [bytes([i]) for i in range(2, 12)]
    torch.testing.assert_close(cache.logits(torch.tensor(cache.find(held))), logits[2:])


def test_passes_with_and_without_gradient_share_it(model):
    """A pass without gradient puts logits first, then one with it: its PLL terms are read back."""
    x = torch.randint(K, (6, D), generator=torch.Generator().manual_seed(5))
    energy = pll(model)
    energy.blank_logits(x, torch.ones_like(x, dtype=torch.bool))
    value, _ = value_and_grad(energy, one_hot(x, K))
    sequences = energy.sequences
    torch.testing.assert_close(evaluate(energy, one_hot(x, K)), value, atol=1e-5, rtol=0)
    assert energy.sequences == sequences  # every term read from the cache


@pytest.mark.parametrize("sampler", ["gibbs", "gibbs-mh", "dmala"])
def test_same_seed_same_fillings_with_and_without_the_cache(tiny_model_dir, sampler):
    template = "the [MASK] sat on the [MASK] by the [MASK] ."
    runs = [
        Infiller(str(tiny_model_dir), cache_mib=mib).sample(template, sampler, num_samples=6, steps=5, top=5, seed=0)
        for mib in (0, 64)
    ]
    without, with_cache = runs
    assert with_cache.texts == without.texts
    np.testing.assert_allclose(
        [s.energy for s in with_cache.samples], [s.energy for s in without.samples], atol=1e-5, rtol=0
    )
    saved = without.diagnostics.encoder_sequences - with_cache.diagnostics.encoder_sequences
    assert saved == with_cache.diagnostics.cache_hits - without.diagnostics.cache_hits
    assert saved > 0 or sampler == "dmala"  # its gradient steps go through the encoder; only re-scoring reads


def test_the_bound_is_above_the_energy_and_equal_once_every_term_is_held(model):
    energy = pll(model)
    x = torch.randint(K, (30, D), generator=torch.Generator().manual_seed(4))
    assert (energy.bound(x) == 0).all()  # nothing held yet
    energy.conditional_logits(x, torch.zeros(30, dtype=torch.long))  # blank 0's term of every state
    exact = evaluate(pll(model, ConditionalCache(0)), one_hot(x, K))
    partial = energy.bound(x)
    assert (partial >= exact - 1e-5).all() and (partial < 0).all()
    evaluate(energy, one_hot(x, K))
    torch.testing.assert_close(energy.bound(x), exact, atol=1e-5, rtol=0)


def test_top_skips_only_candidates_that_cannot_be_among_the_best(bert_tokenizer, monkeypatch):
    """A tiny BERT peaked enough that some visited states are ruled out by the terms their chain computed."""
    from infill.pipeline import choose

    infiller = Infiller(tiny_bert(init=0.5), tokenizer=bert_tokenizer)
    template = "the [MASK] sat on the [MASK] by the [MASK] ."
    chains = {"sampler": "gibbs", "init": "confident-first", "target": "repeat-masked", "decode": "diverse"}
    pruned = infiller.sample(template, num_samples=8, steps=10, top=4, seed=1, budget=300, **chains)
    monkeypatch.setattr(
        choose,
        "_fill_top",
        lambda energy, rows, values, k, bar: choose._fill_missing(
            energy, rows, values, bar, energy.category_ids.device
        ),
    )
    full = infiller.sample(template, num_samples=8, steps=10, top=4, seed=1, budget=300, **chains)
    assert pruned.texts == full.texts
    np.testing.assert_allclose([s.energy for s in pruned.samples], [s.energy for s in full.samples], atol=1e-5)
    assert pruned.diagnostics.encoder_sequences < full.diagnostics.encoder_sequences
    assert pruned.trace.energies.isnan().any() and not full.trace.energies.isnan().any()
