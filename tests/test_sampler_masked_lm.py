"""Every sampler at its default hyperparameters on the dev MLM's PLL energy (large gradients, real text)."""

import pytest
import torch

from infill.energies import MaskedLMEnergy, evaluate, one_hot
from infill.samplers import SAMPLERS, make_sampler, sample
from infill.text.vocabulary import sampleable_token_ids

TEXT = "he had not, after all, [MASK] me the chance but [MASK] abandoned me [MASK] ."
NEIGHBOUR_SAMPLERS = {"lb", "una", "mana"}  # evaluate all d (K - 1) neighbours: 4 words
DENSE = {"pavg"}  # a dense (dK)^2 preconditioner: 4 words


@pytest.fixture(scope="module")
def dev_energy(dev_model_path, bert_tokenizer):
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(dev_model_path)
    ids = torch.tensor(bert_tokenizer(TEXT)["input_ids"])
    blanks = (ids == bert_tokenizer.mask_token_id).nonzero().squeeze(1)
    full = sampleable_token_ids(bert_tokenizer)
    small = full[torch.randperm(len(full), generator=torch.Generator().manual_seed(0))[:4]].sort().values

    def energy(categories):
        return MaskedLMEnergy(model, ids, blanks, categories, bert_tokenizer.mask_token_id)

    return {"full": energy(full), "small": energy(small)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_defaults_move_and_climb_on_the_dev_mlm(dev_energy, name):
    energy = dev_energy["small" if name in NEIGHBOUR_SAMPLERS | DENSE else "full"]
    generator = torch.Generator().manual_seed(0)
    x0 = torch.randint(energy.num_categories, (2, energy.num_blanks), generator=generator)
    start = evaluate(energy, one_hot(x0, energy.num_categories))
    trace = sample(make_sampler(name), energy, x0, 8, generator)
    final = evaluate(energy, one_hot(trace.final_state.x, energy.num_categories))
    if name != "gibbs":  # plain Gibbs never computes the energy
        torch.testing.assert_close(trace.final_state.energy, final, rtol=1e-4, atol=1e-3)
    assert trace.hops.float().sum() > 0 and torch.isfinite(final).all()
    assert final.mean() > start.mean() + 1, (name, start.mean().item(), final.mean().item())
