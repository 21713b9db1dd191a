"""Templates' first passes packed into shared passes (infill/lm/packed.py): on this CPU a template's floats do not
depend on its pass mates, its place among them or how many there are; the energy takes the packed logits as its
first pass, charged and counted as its own, and only for that sequence; the category head kept with the model is
rebuilt when the decoder's weights or the tokens change."""

import random

import pytest
import torch
from conftest import tiny_bert

from infill import Infiller
from infill.energies.masked_lm import MaskedLMEnergy
from infill.lm import packed
from infill.lm.models import category_head
from infill.text.vocabulary import sampleable_token_ids

TEMPLATES = [
    "I [MASK] it.",
    "the [MASK] sat on the mat .",
    "the [MASK] sat on the rug .",
    "a [MASK] [MASK] .",
    "the [MASK] of the [MASK] was [MASK] by the [MASK] in [MASK] .",
    "[MASK] said so .",
    "[MASK] , [MASK] !",
    "she walked into the [MASK] and sat down next to the [MASK] .",
    "we [MASK] [MASK] [MASK] [MASK] today .",
]


@pytest.fixture(scope="module")
def setting(bert_tokenizer):
    model = tiny_bert()
    categories = sampleable_token_ids(bert_tokenizer, False, (), False)
    infiller = Infiller(model, tokenizer=bert_tokenizer)
    templates = [infiller.parse(t) for t in TEMPLATES]
    return model, categories, [(t.input_ids, t.blank_positions) for t in templates], bert_tokenizer.mask_token_id


def test_a_template_gets_the_same_bits_whatever_shares_its_passes(setting):
    model, categories, templates, mask = setting
    head = category_head(model, categories)
    alone = [packed.all_masked_logits(model, head, [t], mask, 64)[0] for t in templates]
    rng = random.Random(0)
    for rows in (1, 2, 3, 64):
        for _ in range(4):
            order = rng.sample(range(len(templates)), rng.randint(2, len(templates)))
            mates = [templates[i] for i in order] * rng.randint(1, 3)  # copies: a length group past `rows`
            for i, logits in zip(order * 3, packed.all_masked_logits(model, head, mates, mask, rows)):
                assert torch.equal(logits, alone[i])


def test_the_packed_pass_is_the_energys_own_pass(setting):
    model, categories, templates, mask = setting
    head = category_head(model, categories)
    for (ids, positions), logits in zip(templates, packed.all_masked_logits(model, head, templates, mask, 64)):
        energy = MaskedLMEnergy(model, ids, positions, categories, mask)
        x = torch.zeros(1, len(positions), dtype=torch.long)
        own = energy.blank_logits(x, torch.ones_like(x, dtype=torch.bool))[0]
        assert own.shape == logits.shape
        if len(positions) >= packed.MIN_ROWS:  # the head's product has as many rows alone: the same kernel
            assert torch.equal(own, logits)
        assert torch.allclose(own, logits, rtol=0, atol=1e-5)


def test_the_energy_takes_the_given_pass_for_its_sequence_only(setting):
    model, categories, templates, mask = setting
    ids, positions = templates[4]
    d = len(positions)
    x = torch.zeros(1, d, dtype=torch.long)
    every = torch.ones_like(x, dtype=torch.bool)
    given = torch.full((d, len(categories)), 7.0)
    energy = MaskedLMEnergy(model, ids, positions, categories, mask, first=given)
    assert torch.equal(energy.first_pass(), given)  # taken, in blank order
    assert energy.first_pass() is energy.first_pass()  # held: read once
    assert torch.equal(energy.blank_logits(x, every)[0], given)
    assert energy.sequences == 1 and energy.cache_hits == 1  # counted as the pass it replaced, then cached
    read = torch.tensor([[3, 0]])
    assert torch.equal(energy.blank_logits(x, every, read)[0], given[[3, 0]])  # the cache now holds it
    other = MaskedLMEnergy(model, ids, positions, categories, mask, first=given)
    one_masked = torch.zeros_like(every)
    one_masked[0, 2] = True
    fresh = MaskedLMEnergy(model, ids, positions, categories, mask)
    assert torch.equal(other.blank_logits(x, one_masked), fresh.blank_logits(x, one_masked))  # another sequence
    assert torch.equal(other.blank_logits(x, every), fresh.blank_logits(x, every))  # dropped after one pass


def test_the_kept_category_head_follows_the_decoder_and_the_tokens(setting):
    model, categories, templates, mask = setting
    model = tiny_bert(seed=1)
    hidden = torch.randn(5, model.config.hidden_size)
    before = category_head(model, categories)(hidden)
    assert category_head(model, categories) is not None and torch.equal(
        category_head(model, categories)(hidden), before
    )
    assert torch.allclose(category_head(model, categories[:10])(hidden), before[:, :10], atol=1e-6)  # rebuilt
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(2)  # an in-place update bumps the version the key holds
    after = category_head(model, categories)(hidden)
    full = model.cls.predictions.decoder(model.cls.predictions.transform(hidden))[:, categories]
    assert not torch.equal(after, before) and torch.allclose(after, full, atol=1e-5)


def test_a_copy_read_at_one_position_gets_the_same_bits_whatever_shares_its_passes(setting):
    model, categories, templates, mask = setting
    head = category_head(model, categories)
    x = [torch.arange(len(positions)) for _, positions in templates]
    copies = [
        (ids.scatter(0, positions, categories[c]).index_fill(0, positions[:1], mask), positions[0].item())
        for (ids, positions), c in zip(templates, x)
    ]

    def run(members: list[int], rows: int) -> dict:
        out = {}
        ids, at = [copies[i][0] for i in members], [copies[i][1] for i in members]
        for part, logits in packed.logits_at(model, head, ids, at, rows):
            assert logits.dtype == torch.float32 and len(logits) == len(part)
            out.update((members[s], logits[r]) for r, s in enumerate(part))
        return out

    alone = {i: run([i], 64)[i] for i in range(len(copies))}
    rng = random.Random(1)
    for rows in (1, 3, 64):
        order = rng.sample(range(len(copies)), rng.randint(2, len(copies)))
        for i, logits in run((order * 300)[:300], rows).items():  # past HEAD_ROWS: the head runs twice
            assert torch.equal(logits, alone[i])
    for (ids, positions), c, i in zip(templates, x, range(len(copies))):  # the energy's own PLL term's logits
        energy = MaskedLMEnergy(model, ids, positions, categories, mask)
        own = energy.conditional_logits(c[None], torch.tensor([0]))[0]
        assert torch.allclose(own, alone[i], atol=1e-5)
