"""Newton-series samplers (una, mana) and the locally balanced sampler (lb) on enumerable targets."""

import pytest
import torch
from conftest import recording

from infill.energies.exact import empirical_distribution, exact_distribution, total_variation
from infill.energies.toy import PottsEnergy
from infill.errors import InfillError
from infill.samplers import make_sampler, sample
from infill.samplers.balancing import balancing_function
from infill.samplers.neighbours import neighbour_values

CHAINS, STEPS, BURN_IN = 1000, 300, 100  # 1000 x 200 draws kept: TV noise floors 0.0050 (ising), 0.0057 (potts)


@pytest.fixture(scope="module")
def ising():
    energy = PottsEnergy.random(6, 2, scale=1.0, seed=0)
    return energy, exact_distribution(energy, 6, 2)


@pytest.fixture(scope="module")
def potts():
    energy = PottsEnergy.random(3, 4, scale=1.0, seed=0)
    return energy, exact_distribution(energy, 3, 4)


class NoGradEnergy:
    """Wraps an energy so that it has no gradient at all (values only, through numpy)."""

    def __init__(self, energy):
        self.energy, self.num_categories = energy, energy.num_categories

    def __call__(self, x):
        values = self.energy(x.detach()).numpy()
        return torch.from_numpy(values.copy())


def run_tv(energy, target, name, chains=CHAINS, steps=STEPS, burn_in=BURN_IN, seed=0, **hp):
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randint(energy.num_categories, (chains, energy_dim(energy)), generator=generator)
    trace = sample(make_sampler(name, **hp), energy, x0, steps, generator=generator)
    empirical = empirical_distribution(trace.samples[burn_in:], energy.num_categories)
    return total_variation(target, empirical), trace


def energy_dim(energy):
    inner = getattr(energy, "energy", energy)
    return inner.fields.shape[0]


def test_neighbour_values_match_direct_evaluation(potts):
    energy, _ = potts
    x = torch.tensor([[0, 3, 1], [2, 2, 0]])
    value, table = neighbour_values(energy, x, 4)
    for b in range(2):
        for i in range(3):
            for c in range(4):
                y = x[b].clone()
                y[i] = c
                direct = energy(torch.nn.functional.one_hot(y[None], 4).float())
                assert torch.allclose(table[b, i, c], direct[0], atol=1e-5)
    assert torch.allclose(value, energy(torch.nn.functional.one_hot(x, 4).float()))


@pytest.mark.parametrize(
    "name,hp", [("mana", {}), ("mana", {"step_size": 2.0}), ("lb", {}), ("lb", {"balancing": "ratio"})]
)
def test_exact_on_binary_ising(ising, name, hp):
    energy, target = ising
    tv, trace = run_tv(energy, target, name, **hp)
    assert tv <= 0.02, f"{name} {hp}: TV {tv:.4f}"
    assert trace.mean_hops > 0.3


@pytest.mark.parametrize("name", ["mana", "lb"])
def test_exact_on_categorical_potts_without_gradient(potts, name):
    energy, target = potts
    tv, trace = run_tv(NoGradEnergy(energy), target, name)  # a gradient would fail: numpy inside
    assert tv <= 0.02, f"{name}: TV {tv:.4f}"
    assert 0.3 < trace.acceptance_rate < 1.0


def test_una_bias_shrinks_with_step_size(ising):
    energy, target = ising
    tvs = [run_tv(energy, target, "una", step_size=a, adapt_steps=0)[0] for a in (1.0, 0.5, 0.25)]
    assert tvs[0] > tvs[1] > tvs[2], tvs
    assert tvs[0] > 0.1  # visibly biased at a large step: the exactness check above can fail


def test_una_accepts_everything_and_mana_rejects_some(ising):
    energy, target = ising
    _, una = run_tv(energy, target, "una", chains=50, steps=20, burn_in=0, step_size=2.0, adapt_steps=0)
    _, mana = run_tv(energy, target, "mana", chains=50, steps=20, burn_in=0, step_size=2.0, adapt_steps=0)
    assert una.accepted.all()
    assert 0.0 < mana.acceptance_rate < 1.0


def test_step_size_decay_schedule_and_exactness(ising):
    energy, target = ising
    sampler = make_sampler("mana", step_size=2.0, decay=0.9, min_step_size=0.5, adapt_steps=0)
    sizes = []
    trace = sample(
        recording(sampler, sizes), energy, torch.zeros(4, 6, dtype=torch.long), 20, torch.Generator().manual_seed(0)
    )
    assert trace.tuning.steps == 20 and trace.tuning.value == sizes[-1] and trace.burn_in == 0
    assert sizes[0] == 2.0 and abs(sizes[1] - 1.8) < 1e-9 and sizes[-1] == 0.5
    tv, _ = run_tv(energy, target, "mana", step_size=2.0, decay=0.99, min_step_size=0.5, adapt_steps=0)
    assert tv <= 0.02


def test_same_seed_same_trace_and_evaluation_count(potts):
    energy, target = potts
    a = run_tv(energy, target, "mana", chains=20, steps=30, burn_in=0)[1]
    b = run_tv(energy, target, "mana", chains=20, steps=30, burn_in=0)[1]
    assert torch.equal(a.samples, b.samples)
    # the start and each step cost one state and its d (K - 1) neighbours
    assert a.evaluations == (1 + 3 * 3) + 30 * (1 + 3 * 3)
    lb = run_tv(energy, target, "lb", chains=20, steps=30, burn_in=0)[1]
    assert lb.evaluations == (1 + 3 * 3) + 30 * 3 * 3  # a step needs no value of the proposal: it is a neighbour


def test_cached_energy_matches_state(potts):
    energy, target = potts
    trace = run_tv(energy, target, "lb", chains=20, steps=50, burn_in=0)[1]
    direct = energy(torch.nn.functional.one_hot(trace.final_state.x, 4).float())
    assert torch.allclose(trace.final_state.energy, direct, atol=1e-4)


@pytest.mark.parametrize(
    "name,hp",
    [
        ("mana", {"step_size": 0}),
        ("una", {"step_size": -1}),
        ("mana", {"decay": 1.5}),
        ("una", {"min_step_size": 5.0}),
        ("una", {"decay": 0.9}),  # decays to 0 without a floor
        ("lb", {"balancing": "cube"}),
    ],
)
def test_bad_hyperparameters(name, hp):
    with pytest.raises(InfillError):
        make_sampler(name, **hp)


def test_balancing_functions_are_balanced():
    log_t = torch.linspace(-5, 5, 11)
    for name in ("sqrt", "ratio"):
        g = balancing_function(name)
        # g(t) = t g(1/t)  <=>  log g(t) = log t + log g(1/t)
        assert torch.allclose(g(log_t), log_t + g(-log_t), atol=1e-6)
