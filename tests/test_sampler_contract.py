"""The sampler contract: registry, shapes, determinism, one evaluation per MH step."""

import pytest
import torch

from infill.energies import PottsEnergy
from infill.energies.base import one_hot
from infill.errors import InfillError
from infill.samplers import SAMPLERS, Sampler, make_sampler, sample

ENERGY = PottsEnergy.random(3, 4, seed=1)


def run(name, seed, steps=6, chains=5):
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randint(4, (chains, 3), generator=generator)
    return sample(make_sampler(name), ENERGY, x0, steps, generator=generator)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_trace_shapes_and_determinism(name):
    trace = run(name, seed=0)
    assert trace.samples.shape == (6, 5, 3) and trace.samples.dtype == torch.long
    assert trace.energies.shape == trace.accepted.shape == trace.hops.shape == (6, 5)
    assert trace.accepted.dtype == torch.bool
    torch.testing.assert_close(trace.energies[-1], ENERGY(one_hot(trace.samples[-1], 4)))
    assert torch.equal(trace.samples, run(name, seed=0).samples)
    assert not torch.equal(run(name, seed=0, steps=30).samples, run(name, seed=1, steps=30).samples)


def test_every_sampler_is_a_sampler_tuned_or_not():
    assert all(isinstance(make_sampler(name), Sampler) for name in SAMPLERS)


@pytest.mark.parametrize("name", ["gwg", "dula", "dmala"])
def test_gradient_samplers_spend_one_evaluation_per_step(name):
    calls = []

    def counting(x):
        calls.append(x.shape[0])
        return ENERGY(x)

    counting.num_categories = 4
    sample(make_sampler(name), counting, torch.zeros(5, 3, dtype=torch.long), 7)
    assert len(calls) == 1 + 7


def test_one_hot_start_is_accepted():
    trace = sample(make_sampler("dmala"), lambda x: ENERGY(x), one_hot(torch.zeros(2, 3, dtype=torch.long), 4), 2)
    assert trace.samples.shape == (2, 2, 3)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: make_sampler("nope"), "unknown sampler"),
        (lambda: make_sampler("dmala", temperature=2), "no option 'temperature'"),
        (lambda: make_sampler("dula", step_size=0), "step_size must be positive"),
        (lambda: sample(make_sampler("gwg"), lambda x: ENERGY(x), torch.zeros(2, 3, dtype=torch.long), 3), "one-hot"),
    ],
)
def test_bad_arguments_say_what_is_wrong(call, message):
    with pytest.raises(InfillError, match=message):
        call()


def test_state_and_trace_select_chains_and_keep_the_tuning():
    x0 = torch.zeros(6, 3, dtype=torch.long)
    trace = sample(make_sampler("dmala"), ENERGY, x0, 10, torch.Generator().manual_seed(0))
    part = trace.select(slice(2, 4))
    assert part.samples.shape == (10, 2, 3) and torch.equal(part.samples, trace.samples[:, 2:4])
    assert torch.equal(part.final_state.scores, trace.final_state.scores[2:4])
    assert part.tuning == trace.tuning and part.tuning.value != 0.1 and part.steps == 10
    assert part.burn_in == trace.burn_in == 5
    mask = torch.tensor([True, False, True, False, False, True])
    assert torch.equal(trace.final_state.select(mask).energy, trace.final_state.energy[mask])


def test_the_driver_keeps_only_the_fields_asked_for():
    x0 = torch.zeros(4, 3, dtype=torch.long)
    full = sample(make_sampler("dmala"), ENERGY, x0, 6, torch.Generator().manual_seed(0))
    some = sample(make_sampler("dmala"), ENERGY, x0, 6, torch.Generator().manual_seed(0), fields=("samples",))
    assert full.proposals.shape == (6, 4, 3) and full.proposal_energies.shape == (6, 4)
    assert torch.equal(some.samples, full.samples) and torch.equal(some.final_state.x, full.final_state.x)
    assert some.energies is None and some.accepted is None and some.hops is None and some.proposals is None
    assert some.steps == full.steps == 6 and some.tuning == full.tuning and some.evaluations == full.evaluations
    assert some.select(slice(0, 2)).samples.shape == (6, 2, 3)
    with pytest.raises(InfillError, match="no field 'scores'"):
        sample(make_sampler("dmala"), ENERGY, x0, 6, fields=("scores",))


class CountingLM:
    """A masked-LM energy that counts its PLL evaluations and conditional forward passes."""

    def __init__(self, energy):
        self.energy, self.num_categories, self.calls = energy, energy.num_categories, {"pll": 0, "conditional": 0}

    def __call__(self, x):
        self.calls["pll"] += 1
        return self.energy(x)

    def conditional_logits(self, x_idx, i):
        self.calls["conditional"] += 1
        return self.energy.conditional_logits(x_idx, i)


@pytest.fixture(scope="module")
def lm_energy():
    from conftest import tiny_bert

    from infill.energies import MaskedLMEnergy

    model = tiny_bert(vocab_size=40, seed=0, init=0.5)
    return MaskedLMEnergy(model, torch.tensor([1, 10, 4, 11, 4, 2]), torch.tensor([2, 4]), torch.arange(20, 26), 4)


def test_plain_gibbs_on_a_masked_lm_costs_one_forward_per_step_and_no_energy(lm_energy):
    counting = CountingLM(lm_energy)
    trace = sample(make_sampler("gibbs"), counting, torch.zeros(3, 2, dtype=torch.long), 8)
    assert counting.calls == {"pll": 0, "conditional": 8} and trace.evaluations == 8
    assert torch.isnan(trace.energies).all() and trace.hops.sum() > 0
    counting = CountingLM(lm_energy)
    trace = sample(make_sampler("gibbs-mh"), counting, torch.zeros(3, 2, dtype=torch.long), 8)
    assert counting.calls == {"pll": 1 + 8, "conditional": 8} and torch.isfinite(trace.energies).all()


def test_gibbs_proposal_is_explicit(lm_energy):
    counting = CountingLM(lm_energy)
    sample(make_sampler("gibbs", proposal="exact"), counting, torch.zeros(3, 2, dtype=torch.long), 4)
    assert counting.calls["conditional"] == 0 and counting.calls["pll"] == 1 + 4  # K values, one batch a step
    with pytest.raises(InfillError, match="proposal"):
        make_sampler("gibbs", proposal="bert")
