"""Sum energies (a PLL stand-in + include + closeness) on enumerable toy targets: every MH sampler at its
default hyperparameters reproduces the sum exactly, biased controls fail the same bound; a proposal that
sees the include term reaches a keyword the model's conditional almost never proposes; rewrite mode's
closeness weight meets the asked-for fraction of changed blanks.

Noise floor of the TV bound at 2000 chains x 75 kept steps: about 0.006 for 64 states (1000 chains, as in
``test_samplers_exact.py``, leave autocorrelated runs too close to 0.02 on these stickier targets).
"""

import pytest
import torch

from infill.constraints import Closeness, Include, WeightedSum, calibrate_closeness
from infill.energies import PottsEnergy
from infill.energies.base import value_and_grad
from infill.energies.exact import (
    all_states,
    empirical_distribution,
    exact_distribution,
    total_variation,
    tv_noise_floor,
)
from infill.samplers import SAMPLERS, make_sampler, sample

CHAINS, STEPS = 2000, 150
EXACT = sorted(n for n, cls in SAMPLERS.items() if getattr(cls, "adjusted", True))  # all but dula, una


class PottsModel(PottsEnergy):
    """A PLL stand-in with its own "model" proposal, as a masked LM has: the fields alone (couplings ignored),
    not the energy's conditional."""

    def conditional_logits(self, x_idx, i):
        return self.fields[i]


def toy_sum(d, k, words, source, include_weight, closeness_weight, cls=PottsEnergy):
    """Random Potts (seed 1) with the include words made less likely (fields -1), plus include and closeness."""
    pll = PottsEnergy.random(d, k, seed=1)
    for word in words:
        pll.fields[:, word] -= 1.0
    pll = cls(pll.fields, pll.couplings)
    terms = [
        (1.0, pll, "pll"),
        (include_weight, Include(words, k)),
        (closeness_weight, Closeness(torch.tensor(source), k)),
    ]
    return pll, WeightedSum(terms)


@pytest.fixture(scope="module", params=["potts", "ising"])
def target(request):
    """3 variables x 4 categories with two include words (one of two forms), or 6 bits with one; 64 states."""
    if request.param == "potts":
        pll, energy = toy_sum(3, 4, [[3], [1, 2]], (0, 1, 2), 2.0, 0.7)
    else:
        pll, energy = toy_sum(6, 2, [[1]], (1, 0, 1, 0, 1, 0), 3.0, 0.5)
    d, k = pll.fields.shape
    return energy, exact_distribution(energy, d, k), pll


def run_tv(sampler, energy, p, d, k, chains=CHAINS, steps=STEPS, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randint(k, (chains, d), generator=generator)
    trace = sample(sampler, energy, x0, steps, generator=generator)
    kept = trace.samples[max(trace.burn_in, steps // 2) :]
    return total_variation(p, empirical_distribution(kept, k)), tv_noise_floor(p, kept.shape[0] * chains), trace


def test_the_sum_is_far_from_the_pll_alone(target):
    energy, p, pll = target
    d, k = pll.fields.shape
    assert total_variation(p, exact_distribution(pll, d, k)) > 0.2
    assert tv_noise_floor(p, CHAINS * STEPS // 2) <= 0.01


@pytest.mark.parametrize("name", EXACT)
def test_every_mh_sampler_targets_the_sum(target, name):
    energy, p, pll = target
    tv, floor, trace = run_tv(make_sampler(name), energy, p, *pll.fields.shape)
    assert tv <= 0.02, f"{name}: TV {tv:.4f} (floor {floor:.4f})"
    assert trace.hops[trace.burn_in :].float().mean() > 0.3


class RatioWithoutCloseness:
    """Mutant: proposals from the whole sum's gradient, the MH test on the sum without its closeness term."""

    def __init__(self, energy: WeightedSum):
        self.full = energy
        self.partial = WeightedSum([(energy.weight(n), energy.term(n), n) for n in energy.entries if n != "closeness"])
        self.num_categories = energy.num_categories

    def __call__(self, x):
        return self.partial(x)

    def value_and_grad(self, x):
        return self.partial(x), value_and_grad(self.full, x)[1]


def test_biased_controls_fail_the_bound(target):
    """Gibbs on the PLL stand-in's own conditionals (the other terms ignored), and DMALA whose MH ratio misses
    the closeness term (its proposal sees it), both land far from the sum."""
    energy, p, pll = target
    d, k = pll.fields.shape
    ignored, _, _ = run_tv(make_sampler("gibbs", proposal="exact"), pll, p, d, k)
    missing, _, _ = run_tv(make_sampler("dmala"), RatioWithoutCloseness(energy), p, d, k)
    assert ignored > 0.05 and missing > 0.05, (ignored, missing)


def test_gibbs_mh_on_the_sum_with_a_model_proposal_is_exact_and_plain_gibbs_is_not():
    """With a model proposal (as a masked LM's), the sum proposes from the model's logits plus the exact
    differences of include and closeness: ``gibbs-mh`` is exact, plain ``gibbs`` (no MH test) is not."""
    pll, energy = toy_sum(3, 4, [[3], [1, 2]], (0, 1, 2), 2.0, 0.7, cls=PottsModel)
    p = exact_distribution(energy, 3, 4)
    x = all_states(3, 4)
    i = torch.arange(len(x)) % 3
    rows = torch.arange(len(x))
    expected = pll.fields[i] + sum(
        energy.weight(n) * energy.term(n).differences(x)[rows, i] for n in ("include", "closeness")
    )
    torch.testing.assert_close(energy.conditional_logits(x, i), expected)
    corrected, floor, _ = run_tv(make_sampler("gibbs-mh"), energy, p, 3, 4)
    plain, _, _ = run_tv(make_sampler("gibbs"), energy, p, 3, 4)
    assert corrected <= 0.02 and plain > 0.05, (corrected, plain, floor)


class ModelProposalOnly:
    """The sum's value with the PLL stand-in's conditional alone as the proposal (blind to include)."""

    def __init__(self, energy: WeightedSum):
        self.energy, self.num_categories = energy, energy.num_categories
        self.conditional_logits = energy.term("pll").conditional_logits

    def __call__(self, x):
        return self.energy(x)


def test_a_proposal_that_sees_the_include_term_reaches_an_unlikely_keyword():
    """Keyword (category 7 of 8) at log-odds -8 at every blank, include weight 14: under the sum 99% of the
    mass holds it. In 100 chains x 30 steps from random starts, samplers that see the include term (through
    the gradient, or the sum's proposal) end with it in >= 90% of chains; Gibbs from the model's conditional
    alone (with or without the MH test on the sum) in <= 5%."""
    d, k, keyword = 4, 8, 7
    pll = PottsEnergy.random(d, k, scale=0.5, seed=3)
    pll.fields[:, keyword] = -8.0
    pll = PottsModel(pll.fields, pll.couplings)  # the model's proposal: its fields
    energy = WeightedSum([(1.0, pll, "pll"), (14.0, Include([[keyword]], k))])
    states = all_states(d, k)
    assert exact_distribution(energy, d, k)[(states == keyword).any(1)].sum() > 0.99

    def reached(sampler, target):
        generator = torch.Generator().manual_seed(0)
        x0 = torch.randint(keyword, (100, d), generator=generator)  # starts without the keyword
        trace = sample(sampler, target, x0, 30, generator)
        return (trace.final_state.x == keyword).any(1).float().mean().item()

    seeing = {name: reached(make_sampler(name), energy) for name in ("gibbs-mh", "gwg", "dmala", "pas")}
    blind = {
        "gibbs on the model": reached(make_sampler("gibbs"), pll),
        "gibbs-mh, model proposal": reached(make_sampler("gibbs-mh"), ModelProposalOnly(energy)),
    }
    assert min(seeing.values()) >= 0.9, seeing
    assert max(blind.values()) <= 0.05, blind


@pytest.fixture(scope="module")
def coupled():
    """A strongly coupled Potts (6 variables x 3 categories) and its most likely state as the source."""
    pll = PottsEnergy.random(6, 3, scale=2.0, seed=2)
    states = all_states(6, 3)
    return pll, states, states[exact_distribution(pll, 6, 3).argmax()]


def changed_fraction(energy, states, source):
    """The exact expected fraction of variables that differ from ``source``."""
    return (exact_distribution(energy, 6, 3) * (states != source).double().mean(1)).sum().item()


@pytest.mark.parametrize("change", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("name", ["gibbs-mh", "dmala"])
def test_calibrated_closeness_meets_the_change(coupled, change, name):
    pll, states, source = coupled
    energy = calibrate_closeness(
        pll,
        source,
        change,
        make_sampler(name),
        chains=64,
        steps=40,
        rounds=4,
        generator=torch.Generator().manual_seed(0),
    )
    assert abs(changed_fraction(energy, states, source) - change) <= 0.03


def test_the_independent_start_alone_misses_a_coupled_target(coupled):
    """The control: the weight from single-variable conditionals at the source, not adapted."""
    pll, states, source = coupled
    assert abs(changed_fraction(calibrate_closeness(pll, source, 0.8), states, source) - 0.8) > 0.05
