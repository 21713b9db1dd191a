"""The annealed runner and adaptation as a wrapper around kernels that do not know they are tuned, itself a
sampler whose states carry the tuning."""

import dataclasses
from dataclasses import dataclass, field

import pytest
import torch

from infill.energies import PottsEnergy
from infill.energies.tempered import Tempered
from infill.errors import InfillError
from infill.samplers import Adapted, Sampler, Tuning, make_sampler, run_annealed, sample, sampler_options
from infill.samplers.auxiliary_gaussian import AVG, Preconditioning
from infill.samplers.presets import DMALA

ENERGY = PottsEnergy.random(3, 4, seed=1)


def test_run_annealed_is_fresh_runs_from_each_final_state():
    sampler, x0 = make_sampler("dmala"), torch.zeros(5, 3, dtype=torch.long)
    seen = []
    trace = run_annealed(
        sampler,
        ENERGY,
        x0,
        [(4.0, 3), (2.0, 2), (1.0, 4)],
        torch.Generator().manual_seed(0),
        callback=lambda t, state, info: seen.append(t),
    )
    generator, x, evaluations = torch.Generator().manual_seed(0), x0, 0
    for temperature, steps in [(4.0, 3), (2.0, 2)]:
        stage = sample(sampler, Tempered(ENERGY, temperature), x, steps, generator)
        x, evaluations = stage.final_state.x, evaluations + stage.evaluations
    last = sample(sampler, ENERGY, x, 4, generator)
    assert torch.equal(trace.samples, last.samples) and trace.samples.shape == (4, 5, 3)
    assert trace.evaluations == evaluations + last.evaluations
    assert seen == list(range(9))


def test_run_annealed_builds_each_stage_sampler_from_its_energy_and_start():
    built = []

    def build(energy, x):
        built.append((energy.temperature if isinstance(energy, Tempered) else 1.0, x.shape))
        return make_sampler("gibbs")

    run_annealed(build, ENERGY, torch.zeros(2, 3, dtype=torch.long), [(3.0, 2), (1.0, 2)], None)
    assert built == [(3.0, (2, 3)), (1.0, (2, 3))]


@dataclass(frozen=True)
class Halving:
    """A user's adaptation: halve the step size after each of the first ``window`` steps."""

    window: int = 3

    def init(self, value, steps):
        return Tuning(float(value), self.window, self.window)

    def update(self, tuning, before, after, info):
        value = tuning.value / 2 if tuning.steps < self.window else tuning.value
        return dataclasses.replace(tuning, value=value, steps=tuning.steps + 1)

    def final(self, tuning):
        return (tuning.value,)

    def schedule(self, tuning):
        return dataclasses.replace(tuning, steps=tuning.steps + 1)


@dataclass(frozen=True)
class RecordingDMALA(DMALA):
    """DMALA that records the step size of each step (its copies share the record)."""

    given: list = field(default_factory=list)

    def step(self, energy, state, generator):
        self.given.append(self.step_size)
        return super().step(energy, state, generator)


def test_the_kernel_steps_with_the_value_the_adaptation_feeds_and_it_freezes_after_the_warmup():
    kernel = RecordingDMALA(step_size=0.8)
    trace = sample(Adapted(kernel, Halving()), ENERGY, torch.zeros(4, 3, dtype=torch.long), 6)
    assert kernel.given == [0.8, 0.4, 0.2, 0.1, 0.1, 0.1]
    assert trace.burn_in == 3 and trace.tuning == Tuning(0.1, 3, 3, 6)


def test_an_adapted_sampler_is_a_sampler_whose_states_carry_the_tuning():
    x0, steps = torch.zeros(4, 3, dtype=torch.long), 10
    trace = sample(make_sampler("dmala", step_size=0.5), ENERGY, x0, steps, torch.Generator().manual_seed(2))
    adapted, generator = make_sampler("dmala", step_size=0.5), torch.Generator().manual_seed(2)
    assert isinstance(adapted, Sampler) and adapted.init(ENERGY, x0).tuning.adapt_steps == 0  # run length unknown
    state = adapted.for_run(steps).init(ENERGY, x0)
    assert state.tuning == Tuning(0.5, 5, 5)
    for _ in range(steps):
        state, _ = adapted.step(ENERGY, state, generator)  # the tuning travels in the state
    assert torch.equal(state.x, trace.final_state.x) and state.tuning == trace.tuning and trace.burn_in == 5


def test_a_kernel_without_its_adaptation_is_the_fixed_kernel():
    x0, steps = torch.zeros(5, 3, dtype=torch.long), 12
    fixed = sample(
        make_sampler("dmala", step_size=0.5, adapt_steps=0), ENERGY, x0, steps, torch.Generator().manual_seed(3)
    )
    kernel, generator = DMALA(step_size=0.5), torch.Generator().manual_seed(3)
    state, samples = kernel.init(ENERGY, x0), []
    for _ in range(steps):
        state, _ = kernel.step(ENERGY, state, generator)
        samples.append(state.x)
    assert torch.equal(fixed.samples, torch.stack(samples)) and fixed.burn_in == 0


def test_pavg_is_avg_tuned_by_preconditioning():
    x0 = torch.randint(4, (20, 3), generator=torch.Generator().manual_seed(0))
    pavg = make_sampler("pavg", burn_in=20)
    assert isinstance(pavg.adaptation, Preconditioning) and pavg.hyperparameters()["burn_in"] == 20
    a = sample(pavg, ENERGY, x0, 30, torch.Generator().manual_seed(1))
    b = sample(Adapted(AVG(), Preconditioning(burn_in=20)), ENERGY, x0, 30, torch.Generator().manual_seed(1))
    assert torch.equal(a.samples, b.samples) and a.tuning.gamma == b.tuning.gamma
    assert a.burn_in == 20


def test_adaptation_options_are_sampler_options():
    assert {"step_size": 0.1, "adapt_steps": None, "target_accept": 0.9}.items() <= sampler_options("dula").items()
    assert {"decay": 1.0, "min_step_size": 0.0}.items() <= sampler_options("mana").items()
    sampler = make_sampler("dmala", step_size=0.5, adapt_steps=0)
    assert sampler.name == "dmala" and sampler.hyperparameters() == {
        "step_size": 0.5,
        "preconditioner": None,
        "adapt_steps": 0,
        "target_accept": 0.574,
    }
    with pytest.raises(InfillError, match="min_step_size must be in"):
        make_sampler("una", min_step_size=5.0)
