"""The masked LM's one-pass draws in every order: their distributions, their shared first pass and its count,
and draws of the older methods unchanged for a seed."""

import itertools

import pytest
import torch
from conftest import reading_only_masked_blanks, tiny_bert
from test_samplers_exact import bound, exact_floor

from infill.energies import MaskedLMEnergy
from infill.energies.exact import all_states, empirical_distribution, total_variation
from infill.lm import mlm_draws
from infill.onepass.methods import ONE_PASS
from infill.pipeline.config import INITS, RunConfig

D, K = 3, 4
IDS, BLANKS = torch.tensor([2, 10, 4, 11, 4, 12, 4, 3]), torch.tensor([2, 4, 6])
SEQUENTIAL = [name for name, order in mlm_draws.ORDERS.items() if order.blanks is not None]
"""The orders that fill the blanks one at a time."""


def new_energy():
    return MaskedLMEnergy(tiny_bert(vocab_size=32, seed=2, init=0.15), IDS, BLANKS, torch.arange(20, 20 + K), 4)


@pytest.fixture(scope="module")
def energy():
    return new_energy()


@pytest.fixture
def fresh():
    """An energy whose first pass is still to read."""
    return new_energy()


def order_probability(energy, blanks, confident):
    """The probability of each of the ``K**D`` fillings under one order, replayed along it."""
    states = all_states(D, K)
    order = torch.as_tensor(blanks).expand(len(states), D)
    zeros = torch.zeros_like(states)
    return (
        mlm_draws.fill(energy.blank_logits, zeros, order, mlm_draws.Drawing(confident, None, values=states))[1]
        .exp()
        .double()
    )


def exact_order(energy, method):
    if method == "random-order":
        return sum(order_probability(energy, list(p), False) for p in itertools.permutations(range(D))) / 6
    return order_probability(energy, list(range(D)), method == "confident-first")


DRAWS = 80000  # the floor well below the bound's cap


@pytest.mark.parametrize("method", SEQUENTIAL)
def test_draws_follow_their_order(energy, method):
    q = exact_order(energy, method)
    assert abs(q.sum().item() - 1) < 1e-5
    x = mlm_draws.draw(energy, method, DRAWS, torch.Generator().manual_seed(0))  # in many chunks
    tv, floor = total_variation(q, empirical_distribution(x[None], K)), exact_floor(q, DRAWS)
    assert tv <= bound(floor), f"{method}: TV {tv:.4f} (floor {floor:.4f})"


def test_the_orders_differ(energy):
    """Otherwise the test above could not tell them apart."""
    qs = [exact_order(energy, m) for m in SEQUENTIAL]
    assert min(total_variation(a, b) for a, b in itertools.combinations(qs, 2)) > 0.02


def test_confident_first_fills_the_most_peaked_blank_first(energy):
    """Near temperature 0: the greedy filling, each step at the open blank of highest maximum probability."""
    x = torch.zeros(1, D, dtype=torch.long)
    masked = torch.ones(1, D, dtype=torch.bool)
    for _ in range(D):
        p = energy.blank_logits(x, masked)[0].softmax(-1)
        j = p.amax(-1).masked_fill(~masked[0], -1).argmax()
        x[0, j], masked[0, j] = p[j].argmax(), False
    drawn = mlm_draws.draw(energy, "confident-first", 3, torch.Generator().manual_seed(0), 1e-6)
    assert torch.equal(drawn, x.expand(3, D))


def reference_draw(energy, method, n, generator, temperature=1.0):
    """The draws before the shared first pass: every pass over all ``n`` chains."""
    x = torch.zeros(n, D, dtype=torch.long)
    masked = torch.ones(n, D, dtype=torch.bool)
    if method in ("independent", "argmax"):
        logits = energy.blank_logits(x, masked)
        return (
            logits.argmax(-1) if method == "argmax" else mlm_draws.sample_categorical(logits / temperature, generator)
        )
    for j in range(D):
        logits = energy.blank_logits(x, masked, read=torch.full((n, 1), j))[:, 0]
        x[:, j] = mlm_draws.sample_categorical(logits / temperature, generator)
        masked[:, j] = False
    return x


@pytest.mark.parametrize("method", ["independent", "argmax", "left-to-right"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_older_methods_draw_the_same_as_before_for_a_seed(energy, method, temperature, monkeypatch):
    monkeypatch.setattr(mlm_draws, "CHUNK", 300)  # one chunk, as every draw was before draws were chunked
    new = mlm_draws.draw(energy, method, 300, torch.Generator().manual_seed(3), temperature)
    assert torch.equal(new, reference_draw(energy, method, 300, torch.Generator().manual_seed(3), temperature))


def asked(energy):
    """Sequences asked of the encoder: those it ran and those a cache of conditionals answered."""
    return energy.sequences + getattr(energy, "cache_hits", 0)


@pytest.mark.parametrize("method", [*mlm_draws.ORDERS])
def test_the_first_pass_runs_once_and_the_count_says_so(method):
    model = tiny_bert(vocab_size=32, seed=2, init=0.15)
    energy = MaskedLMEnergy(model, IDS, BLANKS, torch.arange(20, 24), 4)
    mlm_draws.draw(energy, method, 40, torch.Generator().manual_seed(0))
    assert asked(energy) == mlm_draws.encoder_sequences(method, D, 40)
    assert mlm_draws.encoder_sequences(method, D, 40) == {"uniform": 0, "independent": 1, "argmax": 1}.get(
        method, 1 + 40 * (D - 1)
    )


def test_random_order_draws_a_permutation_per_draw(fresh, monkeypatch):
    reads = []
    logits = fresh.blank_logits
    monkeypatch.setattr(fresh, "blank_logits", lambda x, m, read=None: reads.append(read) or logits(x, m, read))
    mlm_draws.draw(fresh, "random-order", 200, torch.Generator().manual_seed(0))
    assert reads[0] is None and len(reads) == D
    assert all(len(set(r[:, 0].tolist())) == D for r in reads[1:])  # each step reads every blank in some draw


@pytest.mark.parametrize("method", ["confident-first", "random-order"])
def test_orders_are_methods_and_chain_starts(method):
    assert method in ONE_PASS and method in INITS
    assert RunConfig.create(sampler=method).is_baseline
    assert RunConfig.create(init=method).init == method


@pytest.mark.parametrize("method", SEQUENTIAL)
def test_the_head_reads_no_filled_blank(fresh, method, monkeypatch):
    """A filled blank's logits are never used: reading them would cost head work and, where the cache holds the
    masked blanks' entries of a sequence but not those, the sequence again."""
    calls = reading_only_masked_blanks(fresh, monkeypatch)
    mlm_draws.draw(fresh, method, 50, torch.Generator().manual_seed(0))
    assert len(calls) == D and all(calls)
