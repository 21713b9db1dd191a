"""The masked-LM proposal kernels (``block-mh``, ``mlm-independence``) reproduce an exactly enumerable PLL at
their defaults; without the reverse proposal term they fail the same bound (test_samplers_exact.py's)."""

import pytest
import torch
from conftest import tiny_bert
from test_samplers_exact import bound, exact_floor

from infill.energies import MaskedLMEnergy
from infill.energies.exact import empirical_distribution, exact_distribution, total_variation
from infill.energies.tempered import Tempered
from infill.samplers import make_sampler, run_annealed, sample
from infill.samplers.mlm_block import BlockMH, MLMIndependence, is_masked_lm

D, K = 3, 4
CHAINS, STEPS = 1000, 200  # the second half kept: 100,000 draws


def new_pll():
    """PLL of a tiny random BERT on 3 blanks restricted to 4 tokens: 64 enumerable states."""
    model = tiny_bert(vocab_size=32, seed=2, init=0.15)
    ids, blanks = torch.tensor([2, 10, 4, 11, 4, 12, 4, 3]), torch.tensor([2, 4, 6])
    return MaskedLMEnergy(model, ids, blanks, torch.arange(20, 20 + K), mask_token_id=4)


@pytest.fixture(scope="module")
def tiny_pll():
    energy = new_pll()
    return energy, exact_distribution(energy, D, K)


def run_tv(sampler, energy, p):
    """TV between ``p`` and the second half of a run from uniform starts, and the noise floor at as many draws."""
    generator = torch.Generator().manual_seed(0)
    x0 = torch.randint(K, (CHAINS, D), generator=generator)
    trace = sample(sampler, energy, x0, STEPS, generator)
    kept = trace.samples[STEPS // 2 :]
    return total_variation(p, empirical_distribution(kept, K)), exact_floor(p, kept.shape[0] * CHAINS), trace


class NoReverseBlock(BlockMH):
    """Control: the MH ratio without the reverse proposal ``log q(x | y)``."""

    def reverse(self, logits, x, *rest):
        return torch.zeros(len(x))


class NoReverseIndependence(MLMIndependence):
    """Control: the independence move accepted without the current filling's replayed probability."""

    def reverse(self, logits, x, *rest):
        return torch.zeros(len(x))


def test_target_is_not_trivial(tiny_pll):
    _, p = tiny_pll
    assert total_variation(p, torch.full_like(p, 1 / len(p))) > 0.2


@pytest.mark.parametrize("name", ["block-mh", "mlm-independence"])
def test_exact_at_defaults(tiny_pll, name):
    energy, p = tiny_pll
    tv, floor, trace = run_tv(make_sampler(name), energy, p)
    assert tv <= bound(floor), f"{name}: TV {tv:.4f} (floor {floor:.4f})"
    assert trace.mean_hops > 0.3
    torch.testing.assert_close(
        trace.final_state.energy, energy(torch.nn.functional.one_hot(trace.final_state.x, K).float())
    )


@pytest.mark.parametrize("control", [NoReverseBlock, NoReverseIndependence])
def test_controls_without_the_reverse_proposal_fail(tiny_pll, control):
    energy, p = tiny_pll
    tv, floor, _ = run_tv(control(), energy, p)
    assert tv > bound(floor), f"{control.__name__}: TV {tv:.4f} passes a bound it must fail (floor {floor:.4f})"


@pytest.mark.parametrize("options", [{"order": "random"}, {"block_size": 3}])
def test_block_mh_other_orders_and_sizes_keep_the_target(tiny_pll, options):
    energy, p = tiny_pll
    tv, floor, _ = run_tv(make_sampler("block-mh", **options), energy, p)
    assert tv <= bound(floor), f"{options}: TV {tv:.4f} (floor {floor:.4f})"


def asked(energy):
    """Sequences asked of the encoder: those it ran and those a cache of conditionals answered."""
    return energy.sequences + getattr(energy, "cache_hits", 0)


@pytest.mark.parametrize("block_size", [1, 2, 3])
def test_block_mh_costs_2m_minus_1_plus_d_sequences_per_chain(tiny_pll, block_size):
    """``m`` forward draws, ``m - 1`` reverse contexts (the first is the forward's), the PLL's ``d`` copies."""
    energy, _ = tiny_pll
    sampler = make_sampler("block-mh", block_size=block_size)
    state = sampler.init(energy, torch.zeros(5, D, dtype=torch.long))
    before = asked(energy)
    sampler.step(energy, state, torch.Generator().manual_seed(0))
    assert asked(energy) - before == 5 * (2 * block_size - 1 + D)


def test_independence_move_costs_one_shared_pass_and_3d_minus_2_sequences_per_chain():
    """The first pass is read once and held: the first move pays it, the next ones do not."""
    energy = new_pll()
    sampler = make_sampler("mlm-independence", independence=1.0)
    state = sampler.init(energy, torch.zeros(5, D, dtype=torch.long))
    for shared in (1, 0):
        before = asked(energy)
        state, _ = sampler.step(energy, state, torch.Generator().manual_seed(0))
        assert asked(energy) - before == shared + 5 * (3 * D - 2)


def test_kernels_refuse_bad_options():
    from infill.errors import InfillError

    for name, options in [
        ("block-mh", {"block_size": 0}),
        ("block-mh", {"order": "confident-first"}),
        ("mlm-independence", {"independence": 1.5}),
        ("mlm-independence", {"order": "x"}),
    ]:
        with pytest.raises(InfillError):
            make_sampler(name, **options)


def test_a_tempered_masked_lm_offers_its_blank_logits_scaled(tiny_pll):
    energy, _ = tiny_pll
    tempered = Tempered(energy, 0.5)
    x, masked = torch.tensor([[0, 1, 2]]), torch.tensor([[True, False, True]])
    assert is_masked_lm(tempered)
    torch.testing.assert_close(tempered.blank_logits(x, masked), energy.blank_logits(x, masked) / 0.5)


def test_an_annealed_block_mh_proposes_from_the_masked_lm_and_keeps_its_target(tiny_pll, monkeypatch):
    """Every stage of an annealed run proposes from ``blank_logits`` (not the PLL's conditionals), and the last
    stage, at temperature 0.7, reproduces the tempered target."""
    energy, _ = tiny_pll
    p = exact_distribution(Tempered(energy, 0.7), D, K)
    stages = []
    original = energy.blank_logits
    monkeypatch.setattr(energy, "blank_logits", lambda *a: stages.append(1) or original(*a))
    monkeypatch.setattr(
        energy, "conditional_logits", lambda *a: pytest.fail("proposed from the conditionals"), raising=False
    )
    generator = torch.Generator().manual_seed(0)
    x0 = torch.randint(K, (CHAINS, D), generator=generator)
    trace = run_annealed(make_sampler("block-mh"), energy, x0, [(2.0, 5), (0.7, STEPS)], generator)
    assert stages
    kept = trace.samples[STEPS // 2 :]
    tv, floor = total_variation(p, empirical_distribution(kept, K)), exact_floor(p, kept.shape[0] * CHAINS)
    assert tv <= bound(floor), f"TV {tv:.4f} (floor {floor:.4f})"


@pytest.mark.parametrize("name", ["block-mh", "mlm-independence"])
@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_exact_for_the_tempered_target(tiny_pll, name, temperature):
    energy, _ = tiny_pll
    tempered = Tempered(energy, temperature)
    p = exact_distribution(tempered, D, K)
    tv, floor, _ = run_tv(make_sampler(name), tempered, p)
    assert tv <= bound(floor), f"{name} at T={temperature}: TV {tv:.4f} (floor {floor:.4f})"


def test_control_without_the_reverse_proposal_fails_the_tempered_target(tiny_pll):
    tempered = Tempered(tiny_pll[0], 0.5)
    p = exact_distribution(tempered, D, K)
    tv, floor, _ = run_tv(NoReverseBlock(), tempered, p)
    assert tv > bound(floor), f"TV {tv:.4f} passes a bound it must fail (floor {floor:.4f})"
