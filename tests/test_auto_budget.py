"""The default method ``auto``, a budget in encoder sequences, and ``decode="diverse"``."""

import pytest
import torch

from infill import Infiller
from infill.errors import InfillError
from infill.pipeline.choose import DIVERSE_MARGIN, _margin, _pool, spread
from infill.pipeline.config import (
    AUTO_BUDGET_PER_BLANK,
    AUTO_ORDER,
    AUTO_SPREAD,
    MAX_BUDGET,
    RunConfig,
    auto_share,
)
from infill.pipeline.policy import Keep, for_blanks, for_words, resolve, searchable
from infill.samplers.base import Trace

TWO = "The [MASK] sat on the [MASK]."
SIX = "The [MASK] of the [MASK] was [MASK] by the [MASK] in [MASK] [MASK]."


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return Infiller(model=str(tiny_model_dir))


def test_auto_resolves_by_the_number_of_blanks():
    config = RunConfig.create(top=5)
    assert config.method == "auto" and config.num_samples is None and config.decode is None
    search = for_blanks(config, 2)  # the first product of 8 tokens a blank fits 2 blank tokens at 100 a blank
    assert (search.method, search.decode, search.target) == ("product-search", "diverse", "repeat-masked")
    assert search.budget == AUTO_BUDGET_PER_BLANK * 2 and search.diversity is None
    chains = for_blanks(RunConfig.create(), 4)  # without top every chain's final state a sample
    assert (chains.method, chains.init, chains.num_samples, chains.decode) == (
        "gibbs",
        "confident-first",
        50,
        "diverse",
    )
    assert chains.target == "repeat-masked" and for_blanks(RunConfig.create(target="pll"), 2).target == "pll"
    assert for_blanks(RunConfig.create(top=5, include=("cat",)), 3, constrained=True).method == "gibbs"
    assert for_blanks(config, 3).method == "smc"
    particles = for_blanks(config, 6)
    assert (particles.method, particles.options, particles.decode) == ("smc", {"tilt": 1.5}, "diverse")
    assert particles.target == "repeat-masked" and particles.diversity is None
    assert particles.budget == AUTO_BUDGET_PER_BLANK * 6
    assert for_blanks(config, 10).options == {"tilt": 1.5}  # the share short of the whole range: one run a round
    eleven = for_blanks(config, 11)  # the whole range: the first round split into top runs
    assert eleven.options == {"tilt": 1.5, "run_size": eleven.num_samples // 5} and auto_share(11) == 1.0
    assert particles.num_samples == (particles.budget - 1) // (6 - 1 + 6)  # 5 passes after the shared one, 6 to score
    assert for_blanks(RunConfig.create(top=5, diversity=3.0), 8).diversity == 3.0  # the user's, where named
    assert for_blanks(RunConfig.create(top=5, decode="final"), 8).diversity is None  # no diverse pick: no diversity
    draws = for_blanks(RunConfig.create(num_samples=7), 6)  # without top every draw is a sample
    assert (draws.method, draws.num_samples, draws.budget) == (AUTO_ORDER, 7, None)
    assert RunConfig.create(method="gibbs").num_samples == 25 and RunConfig.create(method="gibbs").steps == 12
    assert for_blanks(RunConfig.create(num_samples=3, steps=2), 2).num_samples == 3
    words = for_words(RunConfig.create())  # word blanks: the span sampler at the named methods' defaults
    assert (words.num_samples, words.steps) == (25, 12)


LADDER = {5: ("search", "particles"), None: ("chains", "one-pass")}
"""The rule's kinds in the order it takes them as the blanks grow, with ``top`` and without."""


@pytest.mark.parametrize("top", [5, None])
@pytest.mark.parametrize("budget", [None, 300, 2000, 50_000])
def test_auto_never_goes_back_as_the_blanks_grow(top, budget):
    """From 2 to 32 blank tokens, at the default budget and at fixed ones, the rule leaves the search (chains
    without top) once and never comes back; terms run chains at every count."""
    kinds = []
    for d in range(2, 33):
        template = Template(d)
        try:
            kinds.append(resolve(RunConfig.create(top=top, budget=budget), template).kind)
        except InfillError:  # a fixed budget too small for the request at this many blanks
            break
        if budget is None:
            plan = resolve(RunConfig.create(top=top, include=("cat",)), template, constrained=True)
            assert plan.kind == "chains"
    ranks = [LADDER[top].index(k) for k in kinds]
    assert len(ranks) >= 2 and ranks == sorted(ranks), kinds
    assert kinds[0] == ("search" if top else "chains")
    if budget is None:  # with top the search at 2 blank tokens; without, chains up to 4
        assert kinds[0:2] == ["search", "particles"] if top else kinds[2:4] == ["chains", "one-pass"]


class Template:
    """What :func:`resolve` reads of a template of ``num_blanks`` token blanks."""

    fixed = True

    def __init__(self, num_blanks: int):
        self.num_blanks = num_blanks


def test_the_rule_is_read_from_the_budget():
    assert searchable(2, 200) and not searchable(3, 300)  # 2 x 8 <= 99.5; 3 x 64 > 149.5
    assert searchable(3, 1000) and not searchable(4, 1000)  # a larger budget buys the search more blanks
    assert resolve(RunConfig.create(top=5, budget=1000), Template(3)).kind == "search"


def test_auto_draws_no_particle_round_smaller_than_top_below_the_whole_range():
    assert resolve(RunConfig.create(top=5), Template(3)).spend.least_round == 5
    assert resolve(RunConfig.create(top=5), Template(10)).spend.least_round == 5 and auto_share(10) < 1.0
    assert resolve(RunConfig.create(top=5), Template(11)).spend.least_round == 1 and auto_share(11) == 1.0
    assert resolve(RunConfig.create(top=5), Template(2)).spend.least_round == 1  # the search: no rounds of draws
    assert resolve(RunConfig.create(), Template(6)).spend.least_round == 1  # without top: one-pass draws


@pytest.mark.parametrize("d", [11, 16, 24])
@pytest.mark.parametrize("top", [1, 3, 5, 12, 40])
def test_auto_splits_the_first_round_of_particles_into_top_runs_past_the_whole_range(d, top):
    """No run size of its own: runs of the first round's particles over ``top`` (each filling kept can come from a
    lineage of its own: ``top`` runs, or a few more where ``top`` leaves a large remainder, never twice as many);
    later rounds in runs of the same size."""
    from infill.onepass.particles import SMC

    config = for_blanks(RunConfig.create(top=top), d)
    n, size = config.num_samples, config.options["run_size"]
    runs, particles = SMC(**config.options).split(n)
    assert size == max(1, n // top) and particles == size and top <= runs < 2 * top
    assert SMC(**config.options).split(size - 1) == (1, size - 1)  # a later, smaller round: one run


def test_the_round_floor_follows_the_runs_not_the_share():
    """One switch: a round of one run has the floor, a round split into independent runs has none, whoever set
    them (``auto`` past the whole range with a named diversity, or a named ``smc``)."""
    spread = resolve(RunConfig.create(top=5, diversity=3.0), Template(12))
    assert spread.settings.options["run_size"] == spread.settings.num_samples // 5 and spread.spend.least_round == 1
    named = RunConfig.create(method="smc", top=5, budget=400)
    assert resolve(named, Template(4)).spend.least_round == 5
    runs = RunConfig.create(method="smc", top=5, budget=400, options={"run_size": 4})
    assert resolve(runs, Template(4)).spend.least_round == 1


def test_auto_keeps_a_share_of_the_candidates_range():
    keep = resolve(RunConfig.create(top=5), Template(2)).keep
    assert (keep.decode, keep.diversity, keep.share, keep.every) == ("diverse", None, 2 * AUTO_SPREAD, False)
    particles = resolve(RunConfig.create(top=5), Template(9)).keep
    assert (particles.share, particles.every) == (auto_share(9), True) and auto_share(9) == 72 * AUTO_SPREAD
    assert auto_share(40) == 1.0  # a share a pair of blank tokens, at most the whole range
    assert (_pool(particles, 300, True), _pool(keep, 300, True)) == (300, 20)  # every particle; the search's best
    named = resolve(RunConfig.create(top=5, diversity=2.0), Template(3)).keep
    assert (named.diversity, named.share) == (2.0, None)  # nats, where the user names them
    assert resolve(RunConfig.create(top=5, decode="visited"), Template(3)).keep.share is None
    assert resolve(RunConfig.create(top=5, method="product-search"), Template(3)).keep.share is None


def test_the_share_sets_the_margin_from_the_range():
    ranked = torch.tensor([-1.0, -2.0, -5.0])
    assert _margin(Keep(5, "diverse", None, 0.5), ranked) == 2.0
    assert _margin(Keep(5, "diverse", 3.0, None), ranked) == 3.0
    assert _margin(Keep(5, "diverse"), ranked) == DIVERSE_MARGIN


def test_a_one_pass_method_spends_its_budget(infiller):
    small = infiller.sample(SIX, "left-to-right", top=3, seed=0, budget=120)
    large = infiller.sample(SIX, "left-to-right", top=3, seed=0, budget=480)
    for result, budget in ((small, 120), (large, 480)):  # drawing until what is left buys no draw
        d = result.diagnostics
        assert d.budget == budget and d.num_samples >= (budget - 1) // 11
        assert budget - 11 < d.encoder_sequences <= budget
    assert large.diagnostics.encoder_sequences > 2 * small.diagnostics.encoder_sequences


@pytest.mark.parametrize("sampler", ["gibbs", "gibbs-mh"])
def test_chains_stop_when_the_budget_is_spent(infiller, sampler):
    runs = {
        budget: infiller.sample(TWO, sampler, num_samples=8, steps=200, top=3, seed=0, budget=budget)
        for budget in (60, 240)
    }
    for budget, result in runs.items():
        d = result.diagnostics
        assert d.budget == budget and 1 <= d.steps < 200 and len(result.trace.samples) == d.steps
        assert d.encoder_sequences <= budget
    assert runs[240].diagnostics.steps > runs[60].diagnostics.steps
    unbudgeted = infiller.sample(TWO, sampler, num_samples=8, steps=runs[60].diagnostics.steps, top=3, seed=0)
    assert torch.equal(unbudgeted.trace.samples, runs[60].trace.samples)  # the same chains, cut


def test_auto_runs_search_chains_or_draws(infiller):
    two = infiller.sample(TWO, top=5, seed=0)
    assert two.diagnostics.sampler == "product-search" and two.diagnostics.budget == 2 * AUTO_BUDGET_PER_BLANK
    assert two.diagnostics.encoder_sequences <= 2 * AUTO_BUDGET_PER_BLANK
    chains = infiller.sample(TWO, seed=0)
    assert chains.diagnostics.sampler == "gibbs" and chains.diagnostics.init == "confident-first"
    six = infiller.sample(SIX, top=5, seed=0)
    assert six.diagnostics.sampler == "smc" and six.diagnostics.steps == 0
    assert six.diagnostics.encoder_sequences <= 6 * AUTO_BUDGET_PER_BLANK
    assert infiller.sample(SIX, top=5, seed=0).samples == six.samples
    assert len(infiller.sample(SIX, num_samples=4, seed=0).samples) == 4


@pytest.mark.parametrize("blanks", [2, 3, 6])
def test_a_huge_budget_is_refused_alike_at_every_blank_count(blanks, tiny_model_dir, capsys, monkeypatch):
    from infill.cli import main
    from infill.lm import models

    for top in (None, 5):  # chains up to 4 blank tokens; above, draws (particles with top)
        assert for_blanks(RunConfig.create(budget=MAX_BUDGET, top=top), blanks).budget == MAX_BUDGET
    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    template = " ".join(["a [MASK]"] * blanks) + " day ."
    assert main(["sample", template, "--budget", str(10**9), "--model", str(tiny_model_dir)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"infill: error: budget must be at most {MAX_BUDGET} encoder sequences, got {10**9}"
    ]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"budget": 0}, "budget must be a positive integer"),
        ({"budget": 100, "sampler": "gibbs", "anneal_from": 2.0, "steps": 8}, "cannot be annealed"),
        ({"sampler": "auto", "anneal_from": 2.0}, "auto picks its own run"),
    ],
)
def test_bad_budgets(infiller, kwargs, message):
    with pytest.raises(InfillError, match=message):
        infiller.sample(TWO, **kwargs)


def test_spread_prefers_a_comparable_filling_that_differs_more():
    rows = torch.tensor([[0, 0, 0], [0, 0, 1], [1, 1, 0], [2, 2, 2]])
    values = torch.tensor([-1.0, -1.1, -1.5, -9.0])
    assert spread(rows, values, 2).tolist() == [0, 2]  # row 1 differs in one blank, row 2 in two
    assert spread(rows, values, 2, margin=0.2).tolist() == [0, 1]  # row 2 is not comparable within 0.2
    assert spread(rows, values, 4).tolist() == [0, 2, 1, 3]


def test_diverse_decoding_reads_starts_and_scored_proposals(infiller):
    visited = infiller.sample(TWO, "gibbs-mh", num_samples=6, steps=4, top=5, seed=0)
    diverse = infiller.sample(TWO, "gibbs-mh", num_samples=6, steps=4, top=5, seed=0, decode="diverse")
    assert diverse.diagnostics.candidates > visited.diagnostics.candidates

    def near(result):
        return [
            sum(a != b for a, b in zip(x.token_ids, y.token_ids))
            for i, x in enumerate(result.samples)
            for y in result.samples[:i]
        ]

    assert min(near(diverse)) >= min(near(visited))


def test_the_trace_keeps_every_scored_proposal(infiller):
    energy_run = infiller.sample(TWO, "gibbs-mh", num_samples=4, steps=5, seed=0)
    trace: Trace = energy_run.trace
    assert trace.proposals.shape == trace.samples.shape
    accepted = trace.accepted
    assert torch.equal(trace.proposals[accepted], trace.samples[accepted])
    assert torch.isfinite(trace.proposal_energies).all()
    assert torch.equal(trace.proposal_energies[accepted], trace.energies[accepted])


def test_the_rule_is_the_one_its_study_chose():
    """The constants are those ``scripts/auto_rule.py tune`` chose on the tuning half (``eval/auto-rule-minilm``)."""
    from pathlib import Path

    from infill.pipeline.config import AUTO_PARTICLES, AUTO_SEARCH_VALUES
    from infill.pipeline.policy import DIVERSE_POOL

    tune = Path(__file__).parents[1] / "eval" / "auto-rule-minilm" / "tune.md"
    chosen = next(line for line in tune.read_text().splitlines() if line.startswith("Chosen: "))
    tilt = AUTO_PARTICLES["options"]["tilt"]
    particles = "smc" if tilt == 2.0 else f"smc-tilt{tilt:g}"
    among = f"pools ({DIVERSE_POOL * 5}, 100)"  # the search's as any diverse decoding's; every particle captured
    assert chosen == f"Chosen: values {AUTO_SEARCH_VALUES}, {particles}, share a pair {AUTO_SPREAD}, {among}.", chosen
