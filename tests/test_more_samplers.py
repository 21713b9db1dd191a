"""DLMC, DLMCf, NCG, AVG, PAVG and PAS: transitions, PAVG vs AVG, adaptation, masked LM, bad options."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import recording, tiny_bert

from infill.energies import MaskedLMEnergy, PottsEnergy, evaluate, one_hot
from infill.energies.exact import empirical_distribution, exact_distribution, total_variation
from infill.errors import InfillError
from infill.samplers import SAMPLERS, make_sampler, sample
from infill.samplers.adaptive import moving_acceptance
from infill.samplers.auxiliary_gaussian import Preconditioner
from infill.samplers.balancing import balancing_function
from infill.samplers.dlmc import euler_log_proposal, interpolated_log_proposal
from infill.samplers.langevin import ncg_log_proposal

NEW = ["dlmc", "dlmcf", "ncg", "avg", "pavg", "pas"]
CONFIGS = [
    ("dlmc", {"balancing": "ratio"}),
    ("dlmcf", {"balancing": "ratio"}),
    ("pas", {"balancing": "ratio"}),
    ("pavg", {"preconditioner": "covariance"}),
]
BURN_IN, KEEP, CHAINS = 100, 100, 1000


def _ising(d: int, coupling: float, field: float) -> PottsEnergy:
    """Ferromagnetic Ising in one-hot form: ``coupling * s_i s_j`` for all pairs, ``field * s_i``, ``s = +-1``."""
    spin = torch.tensor([-1.0, 1.0])
    couplings = coupling * spin[None, :, None, None] * spin[None, None, None, :] * torch.ones(d, 1, d, 1)
    return PottsEnergy(field * spin.expand(d, 2).clone(), couplings)


def _tv(name: str, options: dict, energy, d: int, k: int, chains: int, burn_in: int, keep: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randint(k, (chains, d), generator=generator)
    trace = sample(make_sampler(name, **options), energy, x0, burn_in + keep, generator)
    tv = total_variation(exact_distribution(energy, d, k), empirical_distribution(trace.samples[burn_in:], k))
    return tv, trace


@pytest.mark.parametrize("name,options", CONFIGS, ids=[f"{n}-{'-'.join(o.values())}" for n, o in CONFIGS])
@pytest.mark.parametrize("d,k", [(6, 2), (3, 4)], ids=["ising", "potts"])
def test_exact_with_other_options(name, options, d, k):
    """The non-default balancing functions and PAVG's covariance estimate (defaults: test_samplers_exact).
    Floor at 1000 x 100 draws of 64 states: 0.0076 (ising), 0.0085 (potts)."""
    tv, trace = _tv(name, options, PottsEnergy.random(d, k, scale=1.0, seed=1), d, k, CHAINS, BURN_IN, KEEP)
    assert tv <= 0.02, f"{name} {options}: TV {tv:.4f}, acceptance {trace.acceptance_rate:.3f}"
    assert trace.evaluations == 1 + BURN_IN + KEEP  # one value-and-gradient evaluation per MH step
    assert trace.hops[BURN_IN:].float().mean() > 0.3


def test_dlmc_transitions():
    gen = torch.Generator().manual_seed(9)
    for k in (2, 4):
        x, grad = torch.randint(k, (3, 5), generator=gen), 3 * torch.randn(3, 5, k, generator=gen)
        for proposal in (interpolated_log_proposal, euler_log_proposal):
            for h in (0.1, 5.0):  # DLMCf overshoots at h = 5 and is renormalised
                torch.testing.assert_close(proposal(x, grad, h, "sqrt").exp().sum(-1), torch.ones(3, 5))
    # Eq. 37: for binary variables the interpolation is the exact transition exp(hQ) of the rate matrix.
    x, grad = torch.randint(2, (3, 5), generator=gen), torch.randn(3, 5, 2, generator=gen)
    for balancing in ("sqrt", "ratio"):
        rates = balancing_function(balancing)(grad[..., None, :] - grad[..., :, None]).exp()  # [a, b]: a -> b
        rates = rates * (1 - torch.eye(2))
        exact = torch.linalg.matrix_exp(0.7 * (rates - torch.diag_embed(rates.sum(-1))))
        expected = exact.gather(2, x[..., None, None].expand(3, 5, 1, 2)).squeeze(2)
        torch.testing.assert_close(interpolated_log_proposal(x, grad, 0.7, balancing).exp(), expected)


def test_ncg_proposal_is_the_papers_in_bit_encoding():
    # The NCG proposal written in the paper's encoding: bits for K = 2, where a flip costs ||x' - x||^2 = 1.
    eps, gen = 0.3, torch.Generator().manual_seed(0)
    x, grad = torch.randint(2, (5, 7), generator=gen), torch.randn(5, 7, 2, generator=gen)
    bit_grad = grad[..., 1] - grad[..., 0]
    flip = torch.nn.functional.logsigmoid(0.5 * bit_grad * (1 - 2 * x) - 1 / (2 * eps))
    ncg = ncg_log_proposal(x, grad, eps)
    torch.testing.assert_close(ncg.gather(2, (1 - x).unsqueeze(-1)).squeeze(-1), flip)
    # K > 2: one-hot, a change costs ||x' - x||^2 = 2, i.e. 1/eps in the logits.
    x, grad = torch.randint(3, (5, 7), generator=gen), torch.randn(5, 7, 3, generator=gen)
    logits = 0.5 * (grad - grad.gather(2, x[..., None])) - (1 - one_hot(x, 3)) / eps
    torch.testing.assert_close(ncg_log_proposal(x, grad, eps), torch.log_softmax(logits, -1))


def test_pavg_beats_avg_on_a_strongly_correlated_target():
    energy = _ising(8, coupling=0.3, field=0.1)  # two modes holding 88% of the mass, 74% / 15%
    tv_avg, _ = _tv("avg", {}, energy, 8, 2, 1000, 150, 250)
    tv_pavg, trace = _tv("pavg", {"burn_in": 100}, energy, 8, 2, 1000, 150, 250)
    assert trace.tuning.gamma > 0
    assert json.loads(json.dumps(trace.tuning.to_dict()))["gamma"] == trace.tuning.gamma
    assert tv_pavg < 0.8 * tv_avg, (tv_pavg, tv_avg)


def test_pavg_with_the_true_curvature_is_exact_and_rejection_free():
    d, k = 4, 3
    energy = PottsEnergy.random(d, k, scale=1.0, seed=7)  # quadratic, no same-site couplings
    spectrum, basis = torch.linalg.eigh(energy.couplings.reshape(d * k, d * k))
    avg = make_sampler("pavg").sampler
    kernel = avg.fixed(avg.step_size, Preconditioner(basis, spectrum, 1.0))
    generator = torch.Generator().manual_seed(8)
    state = kernel.init(energy, torch.randint(k, (CHAINS, d), generator=generator))
    samples, accepted = [], []
    for _ in range(BURN_IN + KEEP):
        state, info = kernel.step(energy, state, generator)
        samples.append(state.x)
        accepted.append(info.accepted)
    assert torch.stack(accepted).float().mean() > 0.999
    tv = total_variation(exact_distribution(energy, d, k), empirical_distribution(torch.stack(samples[BURN_IN:]), k))
    assert tv <= 0.02  # floor at 1000 x 100 draws: 0.0073


@pytest.mark.parametrize("name", ["dmala", "dlmc", "avg", "pas"])
def test_adaptation_reaches_the_target_acceptance_of_moves_then_freezes(name):
    energy = PottsEnergy.random(30, 3, scale=2.0, seed=5)
    generator = torch.Generator().manual_seed(6)
    x0 = torch.randint(3, (200, 30), generator=generator)
    sampler, values, rates = make_sampler(name, adapt_steps=100), [], []
    trace = sample(
        recording(sampler, values),
        energy,
        x0,
        160,
        generator,
        callback=lambda t, state, info: rates.append(moving_acceptance(info)),
    )
    rate = sum(rates[100:]) / 60  # every step has moving proposals here
    assert abs(rate - 0.574) <= 0.05, (name, rate, values[-1])
    assert len(set(values[100:])) == 1 and len(set(values[:100])) > 50  # tuned during the warmup, then fixed
    assert trace.burn_in == 100 and trace.tuning.value == values[100]


def test_adaptation_grows_a_step_that_stays_put():
    """Acceptance alone would keep a tiny step (every stay-put proposal is accepted); moves drive it up."""
    energy = PottsEnergy.random(6, 4, scale=1.0, seed=2)
    x0 = torch.randint(4, (100, 6), generator=torch.Generator().manual_seed(0))
    trace = sample(make_sampler("dmala", step_size=1e-3), energy, x0, 200, torch.Generator().manual_seed(1))
    assert trace.burn_in == 100 and trace.tuning.value > 0.3
    assert trace.hops[:3].float().mean() < 0.05 and trace.hops[100:].float().mean() > 0.5


def test_without_adaptation_nothing_is_burnt_in():
    energy = PottsEnergy.random(6, 4, scale=1.0, seed=2)
    trace = sample(make_sampler("dmala", step_size=0.7, adapt_steps=0), energy, torch.zeros(5, 6, dtype=torch.long), 20)
    assert trace.burn_in == 0 and trace.tuning.value == 0.7


@pytest.fixture(scope="module")
def lm_energy():
    model = tiny_bert(vocab_size=100, seed=0, init=0.5)
    input_ids = torch.tensor([1, 10, 4, 11, 4, 12, 2])
    return MaskedLMEnergy(
        model, input_ids, torch.tensor([2, 4]), torch.tensor([20, 21, 22, 23, 24, 25]), mask_token_id=4
    )


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_runs_on_the_masked_lm_energy_at_defaults(lm_energy, name):
    x0 = torch.zeros(4, 2, dtype=torch.long)
    trace = sample(make_sampler(name), lm_energy, x0, 16, torch.Generator().manual_seed(0))
    assert trace.samples.shape == (16, 4, 2) and trace.hops.sum() > 0
    if name != "gibbs":  # plain Gibbs on a masked LM never computes the energy (test_sampler_contract)
        torch.testing.assert_close(trace.final_state.energy, evaluate(lm_energy, one_hot(trace.final_state.x, 6)))


@pytest.mark.parametrize(
    "name,options",
    [
        ("dlmc", {"step_size": 0}),
        ("dlmcf", {"balancing": "cube"}),
        ("ncg", {"step_size": -1.0}),
        ("avg", {"step_size": 0}),
        ("pavg", {"preconditioner": "hessian"}),
        ("pavg", {"burn_in": 3}),
        ("pavg", {"burn_in": 20, "adapt_steps": 30}),
        ("pas", {"path_length": 0.5}),
        ("pas", {"balancing": "max"}),
        ("dmala", {"adapt_steps": -1}),
        ("dlmc", {"target_accept": 1.0}),
    ],
)
def test_bad_hyperparameters_are_rejected(name, options):
    with pytest.raises(InfillError):
        make_sampler(name, **options)


def test_registered():
    assert set(NEW) <= set(SAMPLERS)


def test_pavg_refuses_a_dense_preconditioner_too_large_before_sampling():
    energy = PottsEnergy.random(3, 2000, scale=0.1, seed=0)
    with pytest.raises(InfillError, match="dense"):
        sample(make_sampler("pavg"), energy, torch.zeros(2, 3, dtype=torch.long), 1)
