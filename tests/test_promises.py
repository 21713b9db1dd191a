"""What the README promises of the default path, asserted through the public API and the CLI:
include words present whatever the number of blanks, the budget a hard cap (choosing the fillings included),
a too-small or too-large budget refused in one line, a batch equal to single calls, no option ignored
silently, one blank answered exactly from one pass."""

import json
import re

import pytest
import torch

from infill import Infiller
from infill.cli import main
from infill.energies.masked_lm import MaskedLMEnergy
from infill.errors import InfillError
from infill.onepass.methods import ONE_PASS
from infill.onepass.product_search import MAX_VALUES
from infill.pipeline.config import MAX_BUDGET, RunConfig
from infill.pipeline.policy import for_blanks, least_budget

TWO = "The [MASK] sat on the [MASK]."
SIX = "The [MASK] of the [MASK] was [MASK] by the [MASK] in [MASK] [MASK]."
SEVEN = "a [MASK] [MASK] went to the [MASK] [MASK] and [MASK] [MASK] [MASK] ."
EIGHT = "the [MASK] [MASK] of the [MASK] was [MASK] by [MASK] [MASK] in [MASK] [MASK] ."


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return Infiller(model=str(tiny_model_dir))


@pytest.mark.parametrize("template", [TWO, SIX, EIGHT])
def test_include_holds_under_the_default_at_any_number_of_blanks(infiller, template):
    for seed in range(3):
        result = infiller.sample(template, top=5, seed=seed, include=["cat"])
        assert result.diagnostics.sampler == "gibbs"  # chains: one-pass draws never see the include term
        assert result.samples and all("cat" in s.fills for s in result.samples)
        assert all(s.terms["include"] == 0.0 for s in result.samples)
        chains = infiller.sample(template, num_samples=6, seed=seed, include=["cat"])  # final states, no top
        assert all("cat" in s.fills for s in chains.samples)


def test_a_filling_without_the_include_word_is_never_returned(infiller):
    """Chains too short to place the word: what comes back holds it, or nothing does."""
    result = infiller.sample(SIX, "gibbs", num_samples=2, steps=1, init="uniform", top=5, seed=0, include=["cat"])
    assert all("cat" in s.fills for s in result.samples)
    unconstrained = infiller.sample(SIX, "gibbs", num_samples=2, steps=1, init="uniform", top=5, seed=0)
    assert not all("cat" in s.fills for s in unconstrained.samples)  # else this test could not fail


@pytest.mark.parametrize("method", ["left-to-right", "confident-first", "independent"])
def test_a_one_pass_method_with_include_or_terms_is_refused(infiller, method):
    with pytest.raises(InfillError, match="cannot hold include words"):
        infiller.sample(TWO, method, include=["cat"])
    with pytest.raises(InfillError, match="cannot see terms"):
        infiller.sample(TWO, method, terms=[(1.0, lambda x: x.sum((1, 2)))])


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"sampler": "gibbs"},
        {"sampler": "gibbs-mh"},
        {"sampler": "dmala", "init": "uniform"},
        {"sampler": "block-mh"},
        {"sampler": "confident-first"},
        {"sampler": "left-to-right"},
        {"include": ["cat"]},
        {"sampler": "smc"},
        {"sampler": "smc", "tilt": 2.0, "moves": 1},
    ],
)
@pytest.mark.parametrize("template", [TWO, SIX, EIGHT])
@pytest.mark.parametrize("budget", [60, 150, 400])
def test_the_budget_is_a_hard_cap(infiller, settings, template, budget):
    chains = {} if settings.get("sampler") in ONE_PASS else {"steps": 500}  # a one-pass method takes no steps

    def run(budget):
        return infiller.sample(template, top=3, budget=budget, seed=0, **chains, **settings)

    for _ in range(2):
        try:
            result = run(budget)
            break
        except InfillError as exc:
            assert "\n" not in str(exc)
            if "include word" in str(exc):  # what the budget bought held none: said so, nothing returned
                return
            least = int(re.search(r"at least (\d+)", str(exc)).group(1))  # too small: the least then runs
            assert least > budget
            budget = least
    assert result.diagnostics.budget == budget and 0 < result.diagnostics.encoder_sequences <= budget


def test_the_cap_holds_without_a_cache(tiny_model_dir):
    uncached = Infiller(model=str(tiny_model_dir), cache_mib=0)
    for template in (TWO, SIX):
        result = uncached.sample(template, top=3, budget=300, seed=0)
        assert result.diagnostics.encoder_sequences <= 300


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"top": 3},
        {"top": 3, "decode": "final"},
        {"top": 3, "include": ["cat"]},
        {"num_samples": 4, "include": ["cat"]},
        {"top": 3, "sampler": "gwg"},
    ],
)
def test_the_cap_holds_with_chains_in_bfloat16(tiny_model_dir, settings):
    """Chains in a lower precision re-score their finalists in float32, on the same meter: the budget covers
    that too, or the run is refused in one line naming the least that works."""
    bf16 = Infiller(model=str(tiny_model_dir), dtype="bfloat16")
    for template, budget in ((TWO, 150), (SIX, 400), (SIX, None)):
        try:
            result = bf16.sample(template, budget=budget, seed=0, **settings)
        except InfillError as exc:
            least = int(re.search(r"at least (\d+)", str(exc)).group(1))
            assert "\n" not in str(exc) and budget is not None and least > budget
            result = bf16.sample(template, budget=least, seed=0, **settings)
            budget = least
        diagnostics = result.diagnostics
        assert result.samples and diagnostics.budget == (budget or diagnostics.budget)
        assert diagnostics.budget is None or diagnostics.encoder_sequences <= diagnostics.budget


def test_a_budget_that_buys_the_starts_but_no_step_returns_the_starts(infiller):
    config = for_blanks(RunConfig.create(method="gibbs", num_samples=4, top=2, init="confident-first"), 6)
    least = least_budget(config, 6)
    result = infiller.sample(SIX, "gibbs", num_samples=4, top=2, init="confident-first", budget=least, seed=0)
    assert result.diagnostics.sampler == "confident-first" and result.diagnostics.steps == 0
    assert result.diagnostics.encoder_sequences <= least


def test_huge_budgets_are_refused_whatever_the_method(infiller):
    for template, sampler in ((SEVEN, "confident-first"), (TWO, "auto")):
        with pytest.raises(InfillError, match="budget must be at most"):
            infiller.sample(template, sampler, top=5, budget=10**9, seed=0)
    search = infiller.sample(TWO, top=5, budget=MAX_BUDGET, seed=0)  # the search ends at its largest product
    assert search.diagnostics.encoder_sequences <= 1 + 2 * MAX_VALUES


def test_draws_past_one_chunk_stay_bounded_and_reproducible(infiller, monkeypatch):
    from infill.lm import mlm_draws

    monkeypatch.setattr(mlm_draws, "CHUNK", 16)
    shapes = []
    real = MaskedLMEnergy.blank_logits
    monkeypatch.setattr(
        MaskedLMEnergy, "blank_logits", lambda self, x, *a, **k: shapes.append(len(x)) or real(self, x, *a, **k)
    )
    first = infiller.sample(SIX, "left-to-right", num_samples=40, seed=3)
    assert max(shapes) <= 16 and len(first.samples) == 40
    assert first.texts == infiller.sample(SIX, "left-to-right", num_samples=40, seed=3).texts


def test_draws_stop_when_a_round_brings_no_new_filling(infiller):
    # every draw the same filling: independent draws at a temperature that leaves one token a blank
    result = infiller.sample(TWO, "independent", top=3, budget=10**5, seed=0, temperature=1e-6)
    assert len(result.samples) == 1 and result.diagnostics.encoder_sequences <= 3


def test_one_blank_is_answered_exactly_from_one_pass(infiller):
    template = "the [MASK] sat on the mat ."
    result = infiller.sample(template, top=5, seed=0)
    assert result.diagnostics.sampler == "argmax" and result.diagnostics.encoder_sequences == 1
    t = infiller.parse(template)
    energy = MaskedLMEnergy(
        infiller.model, t.input_ids, t.blank_positions, infiller.category_ids(), infiller.tokenizer.mask_token_id
    )
    every = energy.of_indices(torch.arange(energy.num_categories)[:, None])  # the PLL of every filling
    assert [s.energy for s in result.samples] == pytest.approx(every.topk(5).values.tolist(), abs=1e-5)
    samples = infiller.sample(template, num_samples=7, seed=0)  # without top: exact draws
    assert samples.diagnostics.sampler == "independent" and len(samples.samples) == 7


@pytest.mark.parametrize(
    "settings",
    [
        {"top": 3},
        {"top": 3, "include": ["cat"]},
        {"top": 2, "budget": 150},
        {"sampler": "dmala", "num_samples": 3, "steps": 3, "init": "uniform"},
        {"sampler": "argmax", "top": 1},
        {"sampler": "independent", "num_samples": 3},
        {"sampler": "confident-first", "top": 3},
        {"num_samples": 3},
    ],
)
def test_a_batch_gives_each_template_its_single_call(infiller, settings):
    # lengths and blank counts mixed, so auto's methods too; templates of one length share their first pass
    templates = [TWO, SIX, "I [MASK] it.", EIGHT, TWO, "The [MASK] ran up the [MASK].", "A [MASK] hit it."]
    batch = infiller.sample_many(templates, seed=5, **settings)
    for template, result in zip(templates, batch):
        alone = infiller.sample(template, seed=5, **settings)
        assert [(s.text, s.energy) for s in result.samples] == [(s.text, s.energy) for s in alone.samples]


def test_a_file_gives_each_line_its_single_call(tiny_model_dir, tmp_path, capsys):
    lines = [TWO, SIX, "I [MASK] it.", '{"template": "' + TWO + '", "top": 2}']
    path = tmp_path / "templates.txt"
    path.write_text("\n".join(lines) + "\n")
    common = ["--model", str(tiny_model_dir), "--seed", "0", "--top", "3", "--json", "-q"]
    assert main(["sample", "-f", str(path), *common]) == 0
    together = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    alone = []
    for line in [TWO, SIX, "I [MASK] it."]:
        assert main(["sample", line, *common]) == 0
        alone += [json.loads(out) for out in capsys.readouterr().out.splitlines()]
    assert main(["sample", TWO, "--model", str(tiny_model_dir), "--seed", "0", "--top", "2", "--json", "-q"]) == 0
    alone += [json.loads(out) for out in capsys.readouterr().out.splitlines()]
    strip = lambda records: [{k: v for k, v in r.items() if k != "diagnostics"} for r in records]  # noqa: E731
    assert strip(together) == strip(alone)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"sampler": "dmala"}, "drop --sampler"),
        ({"sampler": "gibbs"}, "drop --sampler"),
        ({"decode": "diverse", "top": 3}, "--decode diverse"),
    ],
)
def test_options_that_word_blanks_cannot_honour_are_refused(infiller, settings, message):
    with pytest.raises(InfillError, match=message):
        infiller.sample("I [MASK*?] it.", **settings)


def test_rewrite_refuses_a_budget(infiller):
    with pytest.raises(InfillError, match="drop --budget"):
        infiller.rewrite("the cat sat on the mat .", budget=100)


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("infill ")
