"""The annealed runner and adaptation as a wrapper around kernels that do not know they are tuned."""
import torch

from infill.energies import PottsEnergy
from infill.energies.tempered import Tempered
from infill.samplers import make_sampler, run_annealed

ENERGY = PottsEnergy.random(3, 4, seed=1)


def test_run_annealed_is_fresh_runs_from_each_final_state():
    sampler, x0 = make_sampler("dmala"), torch.zeros(5, 3, dtype=torch.long)
    seen = []
    trace = run_annealed(sampler, ENERGY, x0, [(4.0, 3), (2.0, 2), (1.0, 4)], torch.Generator().manual_seed(0),
                         callback=lambda t, state, info: seen.append(t))
    generator, x, evaluations = torch.Generator().manual_seed(0), x0, 0
    for temperature, steps in [(4.0, 3), (2.0, 2)]:
        stage = sampler.run(Tempered(ENERGY, temperature), x, steps, generator)
        x, evaluations = stage.final_state.x, evaluations + stage.evaluations
    last = sampler.run(ENERGY, x, 4, generator)
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
