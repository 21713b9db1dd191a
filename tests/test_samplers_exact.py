"""Every sampler at its default hyperparameters reproduces exactly enumerable targets; mutants fail the bound.

The exactness bound is relative to the noise floor of the run: the mean TV of as many exact, independent
draws from the target as the run keeps (:func:`exact_floor`), what a perfect sampler would score. Chains are
autocorrelated, so the attainable TV is somewhat above it: a sampler passes within ``BOUND`` times the floor
(measured: at most 2.1 times) and within TV 0.02, and every biased control must fail the same bound (measured:
13 times and more).
"""

from dataclasses import dataclass, field

import pytest
import torch
from conftest import tiny_bert

from infill.energies import MaskedLMEnergy, PottsEnergy, one_hot, value_and_grad
from infill.energies.exact import (
    all_states,
    empirical_distribution,
    exact_distribution,
    total_variation,
    tv_noise_floor,
)
from infill.energies.toy import TwoScalePotts
from infill.samplers import SAMPLERS, Adapted, make_sampler, sample
from infill.samplers.presets import DMALA

UNADJUSTED = {"dula", "una"}  # biased by design: no exactness bound, a bias bound instead
CHAINS, STEPS = 1000, 200  # the second half is kept: 1000 x 100 draws
BOUND = 2.5  # times the noise floor
MAX_TV = 0.02  # and never above the project's absolute bound


def bound(floor: float) -> float:
    """The TV a correct sampler must stay within, and every biased control must exceed."""
    return min(MAX_TV, BOUND * floor)


def exact_floor(p, draws, repeats=5):
    """Mean TV between ``p`` and the empirical distribution of ``draws`` exact independent draws from it."""
    generator = torch.Generator().manual_seed(0)
    tvs = [
        total_variation(
            p, torch.bincount(torch.multinomial(p, draws, True, generator=generator), minlength=len(p)).double() / draws
        )
        for _ in range(repeats)
    ]
    return sum(tvs) / repeats


@pytest.fixture(scope="module", params=[(6, 2), (3, 4)], ids=["ising", "potts"])
def target(request):
    """A random Ising model (6 bits) and a random Potts model (3 variables x 4 categories): 64 states each."""
    d, k = request.param
    energy = PottsEnergy.random(d, k, scale=1.0, seed=1)
    return energy, exact_distribution(energy, d, k), d


def run_tv(sampler, energy, target, d, chains=CHAINS, steps=STEPS, seed=0):
    """TV between the target and the second half of the run (never less than the adaptation's burn-in), and
    the noise floor at as many draws."""
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randint(energy.num_categories, (chains, d), generator=generator)
    trace = sample(sampler, energy, x0, steps, generator=generator)
    kept = trace.samples[max(trace.burn_in, steps // 2) :]
    floor = exact_floor(target, kept.shape[0] * chains)
    return total_variation(target, empirical_distribution(kept, energy.num_categories)), floor, trace


@pytest.mark.parametrize("name", sorted(set(SAMPLERS) - UNADJUSTED))
def test_exact_at_default_hyperparameters(target, name):
    energy, p, d = target
    tv, floor, trace = run_tv(make_sampler(name), energy, p, d)
    assert tv <= bound(floor), f"{name}: TV {tv:.4f} (floor {floor:.4f})"
    assert trace.hops[trace.burn_in :].float().mean() > 0.3  # the chains move


@pytest.mark.parametrize("name", sorted(UNADJUSTED))
def test_unadjusted_samplers_have_a_small_bias_at_defaults(target, name):
    energy, p, d = target
    tv, floor, trace = run_tv(make_sampler(name), energy, p, d)
    assert tv <= 0.12, f"{name}: TV {tv:.4f} (floor {floor:.4f})"  # the would-be acceptance 0.9 bounds the bias
    assert trace.accepted.all() and trace.hops[trace.burn_in :].float().mean() > 0.2


@dataclass(frozen=True)
class NoReverseDMALA(DMALA):
    """Mutant: the MH ratio without the reverse-proposal term ``log q(x | y)``."""

    calls: list = field(default_factory=list, compare=False)  # shared by its tuned copies

    def log_proposal(self, x, scores, value):
        log_q = super().log_proposal(x, scores, value)
        self.calls.append(None)  # calls alternate: forward, reverse
        return log_q if len(self.calls) % 2 else torch.zeros_like(log_q)


@dataclass(frozen=True)
class StaleReverseDMALA(DMALA):
    """Mutant: the reverse proposal built from the gradient at the current state, not at the proposal."""

    stale: list = field(default_factory=list, compare=False)  # shared by its tuned copies

    def log_proposal(self, x, scores, value):
        if not self.stale:
            self.stale.append(scores)
            return super().log_proposal(x, scores, value)
        return super().log_proposal(x, self.stale.pop(), value)


@pytest.mark.parametrize("mutant", [NoReverseDMALA, StaleReverseDMALA])
def test_mutants_fail_the_exactness_bound(target, mutant):
    energy, p, d = target
    tv, floor, _ = run_tv(Adapted(mutant()), energy, p, d)
    assert tv > bound(floor), f"{mutant.__name__}: TV {tv:.4f} passes a bound it must fail (floor {floor:.4f})"


def test_preconditioned_dmala_is_exact(target):
    """A constant diagonal preconditioner (one step scale per variable) keeps DMALA exact; without the
    reverse proposal the same run fails the bound (the control)."""
    energy, p, d = target
    g = tuple(float(v) for v in torch.linspace(0.25, 4.0, d))
    tv, floor, trace = run_tv(make_sampler("dmala", preconditioner=g), energy, p, d)
    assert tv <= bound(floor) and trace.hops[trace.burn_in :].float().mean() > 0.3, f"TV {tv:.4f} (floor {floor:.4f})"
    control, floor, _ = run_tv(Adapted(NoReverseDMALA(preconditioner=g)), energy, p, d)
    assert control > bound(floor), f"control TV {control:.4f} (floor {floor:.4f})"


def test_preconditioner_is_dlps_in_value_coordinates():
    """DLP's preconditioned proposal on spins with values {a_i, b_i} (the paper's coordinates):
    ``q_i(t') ∝ exp(1/2 dU/dt_i (t' - t_i) - (t' - t_i)^2 / (2 alpha G_i))``. In one-hot form a change costs
    ``1/(alpha g_i)``, so it is our proposal with ``g_i = 2 G_i / (b_i - a_i)^2``. A single one-hot step is thus
    the paper's proposal preconditioned by ``G_i = (b_i - a_i)^2 / 2``: spins on different value scales need no
    preconditioner here; what differs between one-hot variables is how many values are plausible (next test)."""
    gen = torch.Generator().manual_seed(0)
    d, alpha = 5, 0.7
    values = torch.stack([-torch.rand(d, generator=gen), torch.rand(d, generator=gen) * 3], -1)  # (d, 2)
    j = torch.randn(d, d, generator=gen)
    j = (j + j.T).fill_diagonal_(0.0)
    h, big_g = torch.randn(d, generator=gen), torch.rand(d, generator=gen) + 0.5
    x = torch.randint(2, (4, d), generator=gen)
    t = values.gather(1, x.T).T  # (4, d) spin values
    dudt = t @ j + h
    change = values.gather(1, (1 - x).T).T - t
    flip = torch.nn.functional.logsigmoid(0.5 * dudt * change - change**2 / (2 * alpha * big_g))

    def energy(onehot):
        spins = (onehot * values).sum(-1)
        return 0.5 * ((spins @ j) * spins).sum(-1) + spins @ h

    _, scores = value_and_grad(energy, one_hot(x, 2))
    g = tuple((2 * big_g / (values[:, 1] - values[:, 0]) ** 2).tolist())
    ours = make_sampler("dmala", preconditioner=g).sampler.log_proposal(x, scores, alpha)
    torch.testing.assert_close(ours.gather(2, (1 - x).unsqueeze(-1)).squeeze(-1), flip)


def test_preconditioned_dmala_mixes_where_no_single_step_size_does():
    """Two scales of plausibility (:class:`TwoScalePotts`: 2 coupled variables with 32 plausible values, 6
    binary ones), 4000 chains from one corner, 10 steps. At every single step size, fixed over a grid from 0.2
    to 20 or adapted (the default), the binary block stays > 2x farther from its target than with a
    per-variable step (g = 10 on the binary block), which reaches the binary block's noise floor and keeps the
    many-valued block as close to its target as the best single step. Floors at 4000 draws: 0.194 (1024
    states) and 0.049 (64 states)."""
    energy = TwoScalePotts()
    chains, steps = 4000, 10
    x0 = torch.zeros(chains, 8, dtype=torch.long)

    def distances(**options):
        trace = sample(make_sampler("dmala", **options), energy, x0, steps, torch.Generator().manual_seed(0))
        return energy.block_distances(trace.samples[-1])

    floor = tv_noise_floor(energy.binary_marginal, chains)
    singles = [distances(step_size=a, adapt_steps=0) for a in (0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 20.0)]
    singles.append(distances())
    many, binary = distances(step_size=0.3, adapt_steps=0, preconditioner=(1.0,) * 2 + (10.0,) * 6)
    assert binary <= 1.5 * floor, f"preconditioned: binary block TV {binary:.3f} (floor {floor:.3f})"
    assert many <= min(m for m, _ in singles) + 0.03, f"preconditioned: many-valued block TV {many:.3f}, {singles}"
    assert all(b > 2 * binary for _, b in singles), f"a single step mixes the binary block: {singles}"


@pytest.mark.parametrize("bad", [(1.0, -1.0), "ab", (1.0, float("inf"))])
def test_preconditioner_values_are_checked(bad):
    from infill.errors import InfillError

    with pytest.raises(InfillError, match="preconditioner must be a list of positive numbers"):
        make_sampler("dmala", preconditioner=bad)


def test_dula_bias_shrinks_with_step_size():
    energy = PottsEnergy.random(4, 5, scale=1.0, seed=0)
    p = exact_distribution(energy, 4, 5)  # 625 states; floor at 1000 x 200 draws: 0.0167
    tvs = [
        run_tv(make_sampler("dula", step_size=a, adapt_steps=0), energy, p, 4, steps=400)[0] for a in (1.0, 0.6, 0.35)
    ]
    assert tvs[0] > tvs[1] > tvs[2], tvs
    assert tvs[0] > 0.1  # the unadjusted chain is visibly biased: the TV checks above can fail


@pytest.fixture(scope="module")
def tiny_pll():
    """PLL energy of a tiny random BERT on 2 blanks restricted to 6 tokens: 36 enumerable states."""
    model = tiny_bert(vocab_size=32, seed=1, init=0.25)
    input_ids = torch.tensor([2, 10, 11, 4, 12, 4, 13, 3])
    energy = MaskedLMEnergy(model, input_ids, torch.tensor([3, 5]), torch.arange(20, 26), mask_token_id=4)
    return energy, exact_distribution(energy, 2, 6)


def test_tiny_bert_target_is_not_trivial(tiny_pll):
    _, p = tiny_pll
    assert total_variation(p, torch.full_like(p, 1 / 36)) > 0.1


def stationary_run(energy, p, sampler, chains=1000, steps=40, seed=0):
    """Start the chains spread over the states in proportion to the target: a correct MH kernel leaves it
    invariant, a biased one drifts away at once. Floor at 1000 x 40 draws (correlated): 0.0086."""
    x0 = torch.repeat_interleave(all_states(2, 6), torch.round(p * chains).long(), dim=0)
    generator = torch.Generator().manual_seed(seed)
    trace = sample(sampler, energy, x0, steps, generator=generator)
    return total_variation(p, empirical_distribution(trace.samples, 6)), trace


@pytest.mark.parametrize("name", ["gibbs-mh", "gwg", "dmala"])
def test_mh_samplers_keep_tiny_bert_pll_invariant(tiny_pll, name):
    energy, p = tiny_pll
    tv, trace = stationary_run(energy, p, make_sampler(name))
    assert tv <= 0.03, f"{name}: TV {tv:.4f}"
    assert trace.mean_hops > 0.15  # a kernel that never moves would pass the bound trivially


def test_plain_gibbs_on_a_masked_lm_does_not_target_the_pll(tiny_pll):
    energy, p = tiny_pll
    assert stationary_run(energy, p, make_sampler("gibbs"))[0] > 0.05  # Wang & Cho's chain: the model's own


def test_dmala_without_reverse_term_drifts_off_tiny_bert_pll(tiny_pll):
    energy, p = tiny_pll
    assert stationary_run(energy, p, Adapted(NoReverseDMALA()))[0] > 0.05
