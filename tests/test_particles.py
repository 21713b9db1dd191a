"""Particles through the one-pass order (``smc``, :mod:`infill.onepass.particles`): at its defaults a draw from
each run's weighted particles reproduces an exactly enumerable PLL (test_samplers_exact.py's bound), for every
weight, order and with moves; the particles without their weights fail the same bound. Through the API the
method keeps the default's promises: the budget a cap, same seed same fillings, a batch equal to single calls."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import reading_only_masked_blanks
from test_mlm_block_exact import new_pll
from test_samplers_exact import bound, exact_floor

from infill import Infiller
from infill.energies import MaskedLMEnergy
from infill.energies.exact import empirical_distribution, exact_distribution, total_variation
from infill.errors import InfillError
from infill.onepass.methods import ONE_PASS
from infill.onepass.particles import SMC, effective_size, smc, systematic
from infill.pipeline.choose import spread
from infill.pipeline.config import SAMPLES
from infill.pipeline.policy import Spend
from infill.pipeline.runs import draws

D, K = 3, 4
RUNS = 20_000
TWO = "The [MASK] sat on the [MASK]."
SIX = "The [MASK] of the [MASK] was [MASK] by the [MASK] in [MASK] [MASK]."


@pytest.fixture(scope="module")
def tiny_pll():
    """PLL of a tiny random BERT on 3 blanks restricted to 4 tokens: 64 enumerable states (as
    test_mlm_block_exact.py's)."""
    energy = new_pll()
    return energy, exact_distribution(energy, D, K)


def one_per_run(samples: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One of each run's samples ``(R N, d)`` (laid end to end), at a uniformly random index: independent draws
    ``(R, d)``."""
    samples = samples.view(RUNS, -1, samples.shape[1])
    pick = torch.randint(samples.shape[1], (samples.shape[0],), generator=generator)
    return samples[torch.arange(samples.shape[0]), pick]


@pytest.mark.parametrize(
    "settings",
    [SMC(), SMC(tilt=2.0), SMC(weight="partial"), SMC(order="random-order"), SMC(tilt=2.0, moves=2)],
    ids=["default", "tilt2", "partial", "random", "moves"],
)
def test_weighted_particles_reproduce_the_pll(tiny_pll, settings):
    energy, p = tiny_pll
    generator = torch.Generator().manual_seed(0)
    out = smc(energy, settings, RUNS, SAMPLES, generator)
    floor = exact_floor(p, RUNS)
    tv = total_variation(p, empirical_distribution(one_per_run(out.samples, generator)[None], K))
    assert tv <= bound(floor), f"TV {tv:.4f} (floor {floor:.4f})"
    unweighted = total_variation(p, empirical_distribution(one_per_run(out.x, generator)[None], K))
    assert unweighted > bound(floor), f"the particles without weights: TV {unweighted:.4f}"  # else untestable


def test_systematic_resampling_follows_the_weights():
    weights = np.array([[0.5, 0.25, 0.125, 0.125]], np.float32)
    rows = np.log(weights).repeat(800, 0)
    counts = np.bincount(systematic(rows, torch.Generator().manual_seed(0), torch.device("cpu")).ravel(), minlength=4)
    assert np.allclose(counts / counts.sum(), weights[0], atol=0.01)
    assert np.allclose(effective_size(np.log(weights)), [1 / (weights**2).sum()])


@pytest.mark.parametrize(
    "settings",
    [
        {"tilt": -1.0},
        {"order": "left-to-right"},
        {"weight": "prefix"},
        {"ess": 1.5},
        {"move": "nope"},
        {"run_size": -1},
    ],
)
def test_bad_settings_are_refused(settings):
    with pytest.raises(InfillError) as info:
        SMC(**settings)
    assert "\n" not in str(info.value)


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return Infiller(model=str(tiny_model_dir))


@pytest.mark.parametrize(
    "options", [{}, {"tilt": 2.0, "decode": "diverse"}, {"weight": "partial"}, {"moves": 1}, {"run_size": 2}]
)
@pytest.mark.parametrize("budget", [80, 300])
def test_the_method_spends_its_budget_and_reproduces(infiller, options, budget):
    runs = [infiller.sample(SIX, "smc", top=3, budget=budget, seed=0, **options) for _ in range(2)]
    diagnostics = runs[0].diagnostics
    assert diagnostics.encoder_sequences <= budget and diagnostics.sampler == "smc"
    assert [s.fills for s in runs[0].samples] == [s.fills for s in runs[1].samples]
    batch = infiller.sample_many([TWO, SIX], "smc", top=3, budget=budget, seed=0, **options)
    assert [s.fills for s in batch[1].samples] == [s.fills for s in runs[0].samples]


@pytest.mark.parametrize("top, least", [(5, 5), (None, 1)])
def test_particle_rounds_stop_below_the_fillings_kept(infiller, monkeypatch, top, least):
    """With ``top``, a later round of fewer particles than ``top`` is not drawn (its few candidates would cost a
    whole round's host work); without, rounds go on while the rest buys one."""
    rounds = []
    real = draws.smc

    def counted(energy, settings, runs, particles, *rest):
        rounds.append(runs * particles)
        return real(energy, settings, runs, particles, *rest)

    monkeypatch.setattr(draws, "smc", counted)
    infiller.sample(TWO, "smc", top=top, budget=400, seed=0)
    later = min(rounds[1:])
    assert len(rounds) > 2 and later >= least
    assert later < 5 if top is None else later < 2 * top  # down to the floor; below it without top


def test_the_all_masked_pass_is_read_once_for_every_round(infiller, monkeypatch):
    reads, rounds = [], []
    real_read, real_smc = MaskedLMEnergy.blank_logits, draws.smc

    def blank_logits(energy, x_idx, masked, read=None):
        reads.append(bool(masked.all()))
        return real_read(energy, x_idx, masked, read)

    monkeypatch.setattr(MaskedLMEnergy, "blank_logits", blank_logits)
    monkeypatch.setattr(draws, "smc", lambda *a: rounds.append(1) or real_smc(*a))
    infiller.sample(TWO, "smc", top=2, budget=400, seed=0)
    assert len(rounds) > 2 and sum(reads) == 1


@pytest.mark.parametrize("least, rounds", [(5, 2), (1, 4)])
def test_a_round_bringing_fewer_new_fillings_than_the_floor_is_the_last(least, rounds):
    """A round whose fillings the cache already holds costs no sequence, so the budget alone would not stop the
    rounds: one that brings fewer new fillings than the floor is the last; with a floor of one, one with none."""
    new = {1: range(8), 2: [*range(5), 10, 11, 12], 3: range(20, 26), 4: range(20, 26)}  # round 2: 3 new
    drawn = []

    def method(n):
        drawn.append(n)
        rows = torch.tensor([[v, v] for v in new[len(drawn)]])
        return rows, -rows[:, 0].float()

    energy = SimpleNamespace(num_blanks=2, meter=SimpleNamespace(limit=10_000, spent=0))
    config = SimpleNamespace(method="confident-first", one_pass=ONE_PASS["confident-first"], options={}, num_samples=8)
    plan = SimpleNamespace(settings=config, spend=Spend(limit=10_000, least_round=least))
    x, values = draws._to_budget(energy, plan, method)
    assert len(drawn) == rounds and torch.equal(values, -x[:, 0].float())


def test_without_top_every_sample_is_a_resampled_particle(infiller):
    result = infiller.sample(TWO, "smc", num_samples=6, seed=0)
    assert len(result.samples) == 6 and all(s.energy <= 0 for s in result.samples)


def test_include_is_refused(infiller):
    with pytest.raises(InfillError, match="cannot hold include words"):
        infiller.sample(TWO, "smc", include=["cat"])


def test_diversity_sets_how_far_the_diverse_pick_reaches(infiller):
    rows = torch.tensor([[0, 0], [0, 1], [1, 1]])  # best first; the third differs from the best in both blanks
    values = torch.tensor([0.0, -0.5, -3.0])
    assert spread(rows, values, 2, margin=1.0).tolist() == [0, 1]
    assert spread(rows, values, 2, margin=10.0).tolist() == [0, 2]
    runs = [infiller.sample(SIX, "smc", top=5, budget=400, seed=0, decode="diverse", diversity=m) for m in (0.0, 50.0)]
    assert runs[0].samples[0].fills == runs[1].samples[0].fills  # the best is kept either way
    with pytest.raises(InfillError, match="diversity sets how --decode diverse"):
        infiller.sample(SIX, "smc", top=5, decode="visited", diversity=2.0)


def test_a_named_diversity_reaches_every_candidate(dev_model_path, monkeypatch):
    """With a pool of only the ``top`` best, decode diverse keeps those; a diversity named reaches every
    candidate, for fillings that differ in more blanks (the dev MLM: its likely fillings share words)."""
    monkeypatch.setattr("infill.pipeline.policy.DIVERSE_POOL", 1)
    dev = Infiller(model=str(dev_model_path))
    settings = dict(top=3, budget=200, seed=0, tilt=2.0)

    def fills(**extra):
        return [
            tuple(s.fills)
            for s in dev.sample("he had not , after all , [MASK] me the [MASK] .", "smc", **settings, **extra).samples
        ]

    def nearest(kept):  # the fewest blanks in which two kept fillings differ
        return min(sum(a != b for a, b in zip(x, y)) for i, x in enumerate(kept) for y in kept[:i])

    best, wide = fills(decode="diverse"), fills(decode="diverse", diversity=1e6)
    assert best == fills(decode="visited")  # the pool of the top best: those
    assert wide[0] == best[0] and nearest(wide) > nearest(best)


@pytest.mark.parametrize("order", ["confident-first", "random-order"])
def test_the_particles_read_no_filled_blank(order, monkeypatch):
    energy = new_pll()  # its first pass still to read
    calls = reading_only_masked_blanks(energy, monkeypatch)
    smc(energy, SMC(order=order, tilt=2.0), 3, 8, torch.Generator().manual_seed(0))
    assert len(calls) == D and all(calls)


def test_block_mh_moves_at_a_temperature_propose_from_the_masked_lm(tiny_pll, monkeypatch):
    energy = tiny_pll[0]

    def conditional_logits(x_idx, i):
        raise AssertionError("the moves proposed from conditional_logits")

    monkeypatch.setattr(energy, "conditional_logits", conditional_logits)
    out = smc(energy, SMC(moves=2, move="block-mh"), 2, 4, torch.Generator().manual_seed(0), temperature=0.5)
    assert out.visited.shape == (2 * 2 * 4, D)


@pytest.mark.parametrize("run_size, n, split", [(0, 53, (1, 53)), (8, 53, (6, 8)), (8, 5, (1, 5)), (2, 7, (3, 2))])
def test_a_round_runs_as_runs_of_run_size(run_size, n, split):
    assert SMC(run_size=run_size).split(n) == split
