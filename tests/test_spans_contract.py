"""Word blanks through the one sampler contract: the span sampler run by ``run_annealed`` (annealing, the
trace's candidates), its energy charged to a budget's meter, and the pipeline's budget, annealing and refusals."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_bert

from infill import Infiller
from infill.energies.budget import BudgetSpent, Meter
from infill.errors import InfillError
from infill.samplers import run_annealed, sample
from infill.spans import best, sample_spans, span_run
from infill.text.template import parse

TEMPLATE = "I [MASK*?] it."
WORDS = ["cat", "dog", "so", "##uven", "##ir", "the", "red"]


@pytest.fixture(scope="module")
def setup(bert_tokenizer):
    categories = torch.tensor(bert_tokenizer.convert_tokens_to_ids(WORDS))
    template = parse("the [MASK*0-2] sat on [MASK] .", bert_tokenizer, 64, blank_unit="word")
    return tiny_bert(init=0.5), bert_tokenizer, template, categories


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return Infiller(model=str(tiny_model_dir))


def test_annealed_stages_end_at_the_last_temperature_with_valid_fills(setup):
    model, tokenizer, template, categories = setup
    run = span_run(model, tokenizer, template, categories, 4, torch.Generator().manual_seed(0), temperature=2.0)
    steps = []
    trace = run_annealed(
        run.sampler,
        run.target,
        run.x0,
        [(2.0, 3), (1.0, 2), (0.5, 4)],
        torch.Generator().manual_seed(0),
        callback=lambda t, state, info: steps.append(t),
    )
    assert steps == list(range(9)) and trace.samples.shape[0] == 4 and trace.temperature == 0.5
    fills = run.sampler.fills(trace.samples.flatten(0, 1))
    assert run.sampler.space.fill_valid(fills, torch.zeros(len(fills.lengths), dtype=torch.long)).all()
    states, values = trace.candidates("visited", 3)
    assert torch.allclose(values, run.energy(run.sampler.fills(states.flatten(0, 1))).view(4, 4), atol=1e-4)


def test_candidates_and_best_follow_decode(setup):
    model, tokenizer, template, categories = setup
    run, trace = sample_spans(
        model, tokenizer, template, categories, 3, 4, torch.Generator().manual_seed(1), temperature=0.5
    )
    final, values = trace.candidates("final", 2)
    assert torch.equal(final[0], trace.samples[-1]) and torch.equal(values[0], trace.energies[-1] * 0.5)
    rows, energies, chains = best(trace, None)
    assert torch.equal(rows, trace.samples[-1]) and chains.tolist() == [0, 1, 2]
    rows, energies, _ = best(trace, 5)
    assert len({tuple(r) for r in rows.tolist()}) == len(rows) and energies.tolist() == sorted(energies.tolist())[::-1]


def test_a_pass_the_meter_cannot_pay_is_refused_before_it_runs(setup):
    model, tokenizer, template, categories = setup
    meter = Meter()
    run = span_run(model, tokenizer, template, categories, 2, torch.Generator().manual_seed(0), meter=meter)
    starts = meter.spent  # the starts' proposal passes, charged as they ran
    assert starts == run.energy.encoder_sequences > 0
    meter.limit = starts + 1  # the starts' energies need more copies than that
    with pytest.raises(BudgetSpent):
        sample(run.sampler, run.target, run.x0, 3, torch.Generator().manual_seed(0))
    assert meter.spent == starts  # nothing of the refused pass ran


@pytest.mark.parametrize("budget", [120, 200, 400])
def test_a_budget_caps_the_encoder_sequences_of_word_blanks(infiller, budget):
    result = infiller.sample(TEMPLATE, num_samples=4, steps=50, seed=0, top=3, budget=budget)
    d = result.diagnostics
    assert d.budget == budget and 0 < d.encoder_sequences <= budget and result.samples
    assert d.steps < 50 and all(1 <= len(s.fills[0].split()) <= 4 for s in result.samples)


def test_a_budget_that_buys_no_step_is_one_line(infiller):
    with pytest.raises(InfillError, match="ran out before a step of the span sampler") as error:
        infiller.sample(TEMPLATE, num_samples=4, steps=5, seed=0, budget=5)
    assert "\n" not in str(error.value)


def test_annealed_word_blanks_give_valid_fills(infiller):
    result = infiller.sample(TEMPLATE, num_samples=4, steps=8, seed=0, top=3, anneal_from=2.0)
    assert result.samples and all(1 <= len(s.fills[0].split()) <= 4 for s in result.samples)
    assert all(s.text == f"I {s.fills[0]} it." for s in result.samples)


@pytest.mark.parametrize(
    "settings, named", [({"sampler": "gwg"}, "--sampler gwg"), ({"decode": "diverse", "top": 3}, "--decode diverse")]
)
def test_token_options_are_refused_once_in_one_line(infiller, settings, named):
    with pytest.raises(InfillError) as error:
        infiller.sample(TEMPLATE, seed=0, **settings)
    message = str(error.value)
    assert "\n" not in message and f"drop {named}" in message and "word blanks" in message
