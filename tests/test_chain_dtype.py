"""The bfloat16 route: chains in bfloat16, every reported energy the float32 PLL of its filling, on every path."""

import pytest
import torch

from infill import Infiller
from infill.energies import MaskedLMEnergy, evaluate, one_hot
from infill.energies.conditionals import ConditionalCache
from infill.lm import models

TEMPLATE = "the [MASK] sat on the [MASK] by the [MASK] ."


@pytest.fixture(scope="module")
def pair(tiny_model_dir):
    return Infiller(str(tiny_model_dir)), Infiller(str(tiny_model_dir), dtype="bfloat16")


@pytest.mark.parametrize(
    "options",
    [dict(top=5), dict(), dict(sampler="left-to-right", top=3), dict(sampler="gibbs-mh", include=["the"], top=3)],
    ids=["top", "finals", "baseline", "include"],
)
def test_reported_energies_are_float32(pair, options):
    full, half = pair
    assert half.chain_model.dtype == torch.bfloat16 and half.model.dtype == torch.float32
    chains = {} if options.get("sampler") == "left-to-right" else {"steps": 4}  # a one-pass method takes no steps
    result = half.sample(TEMPLATE, num_samples=6, seed=0, **chains, **options)
    template = full.parse(TEMPLATE)
    categories = full.category_ids()
    energy = MaskedLMEnergy(
        full.model,
        template.input_ids,
        template.blank_positions,
        categories,
        full.tokenizer.mask_token_id,
        cache=ConditionalCache(0),
    )
    index = {int(t): i for i, t in enumerate(categories)}
    x = torch.tensor([[index[s.token_ids[p]] for p in template.blank_positions.tolist()] for s in result.samples])
    want = evaluate(energy, one_hot(x, len(categories)))
    got = torch.tensor([s.energy if s.terms is None else s.terms["pll"] for s in result.samples])
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_rewrite_and_word_blanks_run_in_the_bfloat16_route(pair):
    _, half = pair
    assert half.rewrite("the cat sat on the mat .", change=0.3, num_samples=4, steps=4, top=2, seed=0).samples
    assert half.sample("the cat [MASK*?] the mat .", num_samples=3, steps=3, top=2, seed=0).samples


def test_auto_takes_bfloat16_only_where_it_is_native(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setattr(models, "native_bfloat16", lambda device: False)
    assert models.chain_dtype("auto", cpu) == torch.float32
    monkeypatch.setattr(models, "native_bfloat16", lambda device: True)
    assert models.chain_dtype("auto", cpu) == torch.bfloat16
    assert models.chain_dtype("float16", cpu) == torch.float16 and models.chain_dtype(None, cpu) == torch.float32
