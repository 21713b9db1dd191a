"""Constraints with the dev MLM on real text: an include word the model finds unlikely is met; rewrite's
calibrated closeness returns distinct variants near the asked-for change."""

import pytest
import torch
from transformers import AutoModelForMaskedLM

from infill.constraints import calibrate_closeness, constrained_energy, include_term, source_categories
from infill.energies import MaskedLMEnergy
from infill.samplers import make_sampler, sample
from infill.text.template import parse
from infill.text.vocabulary import sampleable_token_ids

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dev(dev_model_path, bert_tokenizer):
    model = AutoModelForMaskedLM.from_pretrained(dev_model_path).eval()
    return model, bert_tokenizer, sampleable_token_ids(bert_tokenizer)


def energy_of(dev, text):
    model, tokenizer, categories = dev
    template = parse(text, tokenizer, 128)
    return MaskedLMEnergy(model, template.input_ids, template.blank_positions, categories, tokenizer.mask_token_id)


def indices(dev, words):
    _, tokenizer, categories = dev
    return source_categories(categories, torch.tensor(tokenizer.convert_tokens_to_ids(words)))


def test_include_is_met_on_a_real_template(dev):
    """ "quantum" in "she walked into the [MASK] and sat down next to the [MASK] .": 8 chains from
    ("room", "window"), 20 steps. gibbs-mh on the sum holds it in every final state; Gibbs on the model's
    conditionals alone never proposes it."""
    _, tokenizer, categories = dev
    pll = energy_of(dev, "she walked into the [MASK] and sat down next to the [MASK] .")
    energy = constrained_energy(pll, include=include_term(tokenizer, categories, ["quantum"], 2))
    x0 = indices(dev, ["room", "window"]).expand(8, -1)
    reached = {}
    for name, target in (("gibbs-mh", energy), ("gibbs", pll)):
        trace = sample(make_sampler(name), target, x0, 20, torch.Generator().manual_seed(0))
        reached[name] = (
            (
                energy.terms(torch.nn.functional.one_hot(trace.final_state.x, len(categories)).float(), ["include"])[
                    "include"
                ]
                == 0
            )
            .float()
            .mean()
            .item()
        )
    assert reached["gibbs-mh"] == 1.0 and reached["gibbs"] == 0.0, reached


def test_rewrite_returns_distinct_variants_near_the_change(dev):
    """Every word of "the old man walked to the market" a blank, change 0.5: after calibration (one round of 8
    chains x 10 steps), 8 chains x 16 steps of gibbs-mh from the source end in distinct variants that change
    between 1/4 and 3/4 of the words on average over the last 8 steps."""
    words = "the old man walked to the market".split()
    pll = energy_of(dev, " ".join(["[MASK]"] * len(words)) + " .")
    source = indices(dev, words)
    generator = torch.Generator().manual_seed(0)
    sampler = make_sampler("gibbs-mh")
    energy = calibrate_closeness(pll, source, 0.5, sampler, chains=8, steps=10, rounds=1, generator=generator)
    trace = sample(sampler, energy, source.expand(8, -1), 16, generator)
    final = trace.final_state.x
    assert len({tuple(x) for x in final.tolist()}) >= 6
    changed = (trace.samples[8:] != source).float().mean().item()
    assert 0.25 <= changed <= 0.75, changed
