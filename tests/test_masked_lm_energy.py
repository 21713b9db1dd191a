"""The PLL energy against a slow one-copy-at-a-time reference, and DMALA on the dev MLM."""

import pytest
import torch
from conftest import tiny_bert

from infill.energies import MaskedLMEnergy, evaluate, one_hot, value_and_grad
from infill.samplers import make_sampler, sample
from infill.text.vocabulary import sampleable_token_ids

INPUT_IDS = torch.tensor([2, 10, 11, 4, 12, 4, 4, 13, 3])
BLANKS = torch.tensor([3, 5, 6])
CATEGORIES = torch.arange(20, 27)
MASK = 4


@pytest.fixture(scope="module")
def energy():
    return MaskedLMEnergy(tiny_bert(vocab_size=40, seed=3, init=0.3), INPUT_IDS, BLANKS, CATEGORIES, MASK)


def slow_pll(model, x):
    """Sum over blanks of log p(x_i | slot i masked), one masked copy and one full forward at a time."""
    table = model.get_input_embeddings().weight
    totals = []
    for chain in x:
        total = 0.0
        for i, slot in enumerate(BLANKS):
            embeds = table[INPUT_IDS].clone()
            for j, other in enumerate(BLANKS):
                embeds[other] = chain[j] @ table[CATEGORIES]
            embeds[slot] = table[MASK]
            logits = model(inputs_embeds=embeds[None]).logits[0, slot, CATEGORIES]
            total = total + (torch.log_softmax(logits, -1) * chain[i]).sum()
        totals.append(total)
    return torch.stack(totals)


def test_pll_value_and_gradient_match_slow_reference(energy):
    x = one_hot(
        torch.randint(len(CATEGORIES), (5, len(BLANKS)), generator=torch.Generator().manual_seed(0)), len(CATEGORIES)
    )
    value, grad = value_and_grad(energy, x)
    x_ref = x.clone().requires_grad_(True)
    reference = slow_pll(energy.model, x_ref)
    (reference_grad,) = torch.autograd.grad(reference.sum(), x_ref)
    torch.testing.assert_close(value, reference.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, reference_grad, rtol=1e-4, atol=1e-5)
    assert grad.abs().sum() > 0


def test_conditional_logits_are_the_models_masked_prediction(energy):
    x_idx = torch.tensor([[0, 1, 2], [3, 4, 5]])
    blank = torch.tensor([1, 2])
    logits = energy.conditional_logits(x_idx, blank)
    for b in range(2):
        ids = energy.token_ids(x_idx)[b].clone()
        ids[BLANKS[blank[b]]] = MASK
        expected = energy.model(input_ids=ids[None]).logits[0, BLANKS[blank[b]], CATEGORIES]
        torch.testing.assert_close(logits[b], expected, rtol=1e-5, atol=1e-5)


def test_blank_logits_mask_the_chosen_blanks(energy):
    x_idx = torch.tensor([[0, 1, 2], [3, 4, 5]])
    masked = torch.tensor([[True, False, True], [False, False, False]])
    logits = energy.blank_logits(x_idx, masked)
    assert logits.shape == (2, 3, len(CATEGORIES)) and logits.dtype == torch.float32
    ids = energy.token_ids(x_idx)
    ids[0, BLANKS[[0, 2]]] = MASK
    expected = energy.model(input_ids=ids).logits[:, BLANKS][..., CATEGORIES]
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)


def test_parameters_get_no_gradient(energy):
    assert not any(p.requires_grad for p in energy.model.parameters())


def test_sampleable_ids_exclude_special_unused_and_pieces(bert_tokenizer):
    ids = sampleable_token_ids(bert_tokenizer)
    tokens = bert_tokenizer.convert_ids_to_tokens(ids.tolist())
    assert not any(t.startswith("##") or t.startswith("[") for t in tokens)
    assert {"the", "door"} <= set(tokens) and "." not in tokens  # words only, by default
    with_punctuation = bert_tokenizer.convert_ids_to_tokens(
        sampleable_token_ids(bert_tokenizer, allow_punctuation=True)
    )
    assert {"the", ".", ","} <= set(with_punctuation)
    with_pieces = bert_tokenizer.convert_ids_to_tokens(sampleable_token_ids(bert_tokenizer, allow_subwords=True))
    assert "##ing" in with_pieces and "[unused5]" not in with_pieces
    assert "the" not in bert_tokenizer.convert_ids_to_tokens(sampleable_token_ids(bert_tokenizer, forbid=["The"]))


def dmala_fill(model, tokenizer, text, seed):
    ids = torch.tensor(tokenizer(text)["input_ids"])
    blanks = (ids == tokenizer.mask_token_id).nonzero().squeeze(1)
    categories = sampleable_token_ids(tokenizer)
    energy = MaskedLMEnergy(model, ids, blanks, categories, tokenizer.mask_token_id)
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randint(len(categories), (3, len(blanks)), generator=generator)
    trace = sample(make_sampler("dmala", step_size=0.5), energy, x0, 8, generator=generator)
    return categories[trace.samples[-1]], trace


@pytest.mark.slow
def test_dmala_fills_real_words_with_dev_mlm(dev_model_path, bert_tokenizer):
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(dev_model_path)
    text = "he had not, after all, [MASK] me the chance but [MASK] abandoned me [MASK] ."
    filled, trace = dmala_fill(model, bert_tokenizer, text, seed=7)
    again, _ = dmala_fill(model, bert_tokenizer, text, seed=7)
    assert torch.equal(filled, again)
    special = set(bert_tokenizer.all_special_ids)
    for token_id, token in zip(filled.flatten().tolist(), bert_tokenizer.convert_ids_to_tokens(filled.flatten())):
        assert token_id not in special and not token.startswith("##") and not token.startswith("[unused"), token
        assert token.isalnum() or len(token) == 1, token
    assert trace.energies[-1].mean() > trace.energies[0].mean()


def test_chunked_value_and_grad_equals_one_pass(energy):
    x = one_hot(
        torch.randint(len(CATEGORIES), (5, len(BLANKS)), generator=torch.Generator().manual_seed(1)), len(CATEGORIES)
    )
    chunked = MaskedLMEnergy(energy.model, INPUT_IDS, BLANKS, CATEGORIES, MASK, chunk_size=2 * len(BLANKS))
    for ours, theirs in zip(value_and_grad(chunked, x), value_and_grad(energy, x)):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(evaluate(chunked, x), evaluate(energy, x), rtol=1e-5, atol=1e-6)
