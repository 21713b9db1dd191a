"""Every masked-LM family on tiny random models with real vocabularies (tests/families.py): the PLL against a
masked forward pass, the tokenizer's own sequence, whole-word fills, clean text, forbid, dmala and gibbs."""

import warnings

import pytest
import torch
import transformers as tf
from families import FAMILIES, build, tokenizer

from infill import Infiller
from infill.energies import MaskedLMEnergy, evaluate, one_hot
from infill.errors import InfillError
from infill.text.template import fill_pieces, parse
from infill.text.vocabulary import (
    continuation_pieces,
    piece_kinds,
    sampleable_token_ids,
    token_words,
    word_piece_ids,
    word_start_a,
)

TEMPLATE = "the [MASK] sat on the [MASK*2]."
MARKERS = {"wordpiece": "", "bpe": "Ġ", "bpe-lstrip": "Ġ"}  # what a word start looks like, to check; else "▁"
each_family = pytest.mark.parametrize("family", list(FAMILIES))


def energy_of(family, text=TEMPLATE):
    model, tok = build(family)
    t = parse(text, tok, 64)
    return MaskedLMEnergy(model, t.input_ids, t.blank_positions, sampleable_token_ids(tok), tok.mask_token_id), t


@each_family
def test_pll_and_blank_logits_equal_masked_forward_passes_on_the_fast_path(family):
    energy, t = energy_of(family)
    assert energy._head is not None
    x_idx = torch.randint(energy.num_categories, (2, t.num_blanks), generator=torch.Generator().manual_seed(0))
    ids = energy.token_ids(x_idx)
    reference = torch.zeros(2)
    for i, slot in enumerate(t.blank_positions):
        masked = ids.clone()
        masked[:, slot] = energy.mask_token_id
        with torch.no_grad():
            logits = energy.model(input_ids=masked).logits[:, slot, energy.category_ids]
        reference += torch.log_softmax(logits, -1).gather(1, x_idx[:, i : i + 1]).squeeze(1)
    torch.testing.assert_close(evaluate(energy, one_hot(x_idx, energy.num_categories)), reference, rtol=1e-4, atol=1e-4)
    masked = ids.clone()
    masked[:, t.blank_positions] = energy.mask_token_id  # every blank masked: what MLM starts draw from
    with torch.no_grad():
        expected = energy.model(input_ids=masked).logits[:, t.blank_positions][..., energy.category_ids]
    torch.testing.assert_close(
        energy.blank_logits(x_idx, torch.ones_like(x_idx, dtype=torch.bool)), expected, rtol=1e-4, atol=1e-4
    )


@each_family
def test_word_starts_are_derived_from_the_tokenizer(family):
    style = FAMILIES[family][0]
    tok = tokenizer(style)
    words = tok.convert_ids_to_tokens(sampleable_token_ids(tok).tolist())
    marker = MARKERS.get(style, "▁")
    assert all(w.startswith(marker) and not w.startswith("##") and w.strip(marker) for w in words)
    pieces = set(tok.convert_ids_to_tokens(sampleable_token_ids(tok, allow_subwords=True).tolist())) - set(words)
    assert any(p.startswith("##") if style == "wordpiece" else not p.startswith(marker) for p in pieces)
    kept = sampleable_token_ids(tok, forbid=["The"]).tolist()
    texts = token_words(tok)[0]
    assert not any(texts[i].casefold() == "the" for i in kept) and len(kept) < len(words)


@each_family
def test_blanks_take_words_and_punctuation_only_when_allowed(family):
    tok = tokenizer(FAMILIES[family][0])
    texts = token_words(tok)[0] | continuation_pieces(tok)
    for words in (sampleable_token_ids(tok), word_piece_ids(tok)):
        assert len(words) and all(any(c.isalnum() for c in texts[i]) for i in words.tolist())
    commas = {i for i in word_piece_ids(tok, allow_punctuation=True).tolist() if texts[i] == ","}
    assert commas and not commas & set(word_piece_ids(tok).tolist())  # "," is a word (BERT) or a piece (BPE, Unigram)
    assert not commas & set(word_piece_ids(tok, forbid=[","], allow_punctuation=True).tolist())
    assert not commas & set(sampleable_token_ids(tok, forbid=[","], allow_punctuation=True).tolist())


@each_family
def test_a_word_of_several_pieces_is_a_word_start_and_continuation_pieces(family):
    tok = tokenizer(FAMILIES[family][0])
    ids = tok(" souvenir", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1  # several pieces in every vocabulary tested
    categories = word_piece_ids(tok)
    assert set(ids) <= set(categories.tolist())
    starts, continuations = piece_kinds(tok, torch.tensor(ids))
    assert starts.tolist() == [True] + [False] * (len(ids) - 1) and continuations.tolist() == [False] + [True] * (
        len(ids) - 1
    )
    starts, continuations = piece_kinds(tok, categories)
    assert not (starts & continuations).any() and (starts | continuations).all()
    assert categories[starts].tolist() == sampleable_token_ids(tok).tolist()
    pieces = continuation_pieces(tok)
    assert all(tok.decode([word_start_a(tok), i]).strip().endswith("a" + pieces[i]) for i in ids[1:])


@each_family
@pytest.mark.parametrize("sampler", ["dmala", "gibbs"])
def test_samples_are_whole_words_in_the_tokenizers_own_sequence(family, sampler):
    model, tok = build(family)
    result = Infiller(model=model, tokenizer=tok).sample(
        TEMPLATE, sampler=sampler, num_samples=3, steps=2, seed=0, forbid=["the"]
    )
    word_starts = token_words(tok)[1]
    for s in result.samples:
        assert s.token_ids == tok(s.text)["input_ids"]  # what was scored is what the tokenizer makes of the text
        blanks = [s.token_ids[p] for p in parse(TEMPLATE, tok, 64).blank_positions]
        assert set(blanks) <= word_starts and "the" not in [f.casefold() for f in " ".join(s.fills).split()]
        assert "  " not in s.text and not any(m in s.text for m in ("Ġ", "▁", "##", tok.mask_token))
        assert s.text == f"the {s.fills[0]} sat on the {s.fills[1]}."  # the template with the fills spliced in


def _pieces(tok, words: str) -> list[int]:
    """The tokenizer's ids of ``words`` after a space: word starts and continuation pieces."""
    before = len(tok("a", add_special_tokens=False)["input_ids"])
    return tok("a " + words, add_special_tokens=False)["input_ids"][before:] if words else []


@each_family
@pytest.mark.parametrize(
    "text, words",
    [
        ("The [MASK*1-3] sat on the mat.", ["big black dog"]),
        ("I saw [MASK*0-2] cats.", [""]),
        ("I saw [MASK*0-2] cats.", ["souvenir"]),
        ("He left the [MASK*0-1].", [""]),
        ("the [MASK*?]'s toy, 40,000 $ and night; [MASK] end", ["souvenir shop", "the"]),
        ("[MASK*?] sat. [MASK] ran", ["old cats", "dog"]),
    ],
)
def test_segments_with_fills_are_the_tokenizers_sequence_of_the_spliced_text(family, text, words):
    tok = tokenizer(FAMILIES[family][0])
    t = parse(text, tok, 64)
    fills = [_pieces(tok, w) for w in words]
    ids = t.sequence(fills)
    filled, spliced = fill_pieces(t, tok, fills)
    assert filled == t.splice(words) and [w.casefold() for w in spliced] == [w.casefold() for w in words]
    prefix = " " if text.startswith("[MASK") else ""  # a blank opening the text is a word after a space
    assert ids.tolist() == tok(prefix + filled)["input_ids"]


@each_family
def test_blanks_next_to_text(family):
    tok = tokenizer(FAMILIES[family][0])
    energy, t = energy_of(family, "[MASK] sat on  the mat   [MASK] .")
    assert t.input_ids.tolist() == parse("[MASK] sat on the mat [MASK] .", tok, 64).input_ids.tolist()
    x = one_hot(torch.zeros(1, 2, dtype=torch.long), energy.num_categories)
    assert t.num_blanks == 2 and torch.isfinite(evaluate(energy, x)).all()
    with pytest.raises(InfillError, match="glued"):
        parse("un[MASK] cat", tok, 64)
    if FAMILIES[family][0] == "wordpiece":
        parse('he said "[MASK]".', tok, 64)
    else:  # a word after a quote is a continuation piece there, never a word start
        with pytest.raises(InfillError, match="glued"):
            parse('he said "[MASK]".', tok, 64)


def test_deberta_legacy_head_and_unknown_architectures_fall_back_with_one_warning():
    model, tok = build("deberta-v3")
    config = model.config.to_dict() | {"legacy": True}
    legacy = tf.DebertaV2ForMaskedLM(tf.DebertaV2Config(**config)).eval()

    class Custom(tf.DebertaV2ForMaskedLM):
        pass

    unknown = Custom(legacy.config).eval()
    unknown.load_state_dict(legacy.state_dict())
    t = parse(TEMPLATE, tok, 64)
    categories = sampleable_token_ids(tok)
    x = one_hot(
        torch.randint(len(categories), (2, t.num_blanks), generator=torch.Generator().manual_seed(1)), len(categories)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        energies = [
            MaskedLMEnergy(m, t.input_ids, t.blank_positions, categories, tok.mask_token_id)
            for m in (legacy, unknown, unknown)
        ]
    assert [str(w.message)[:6] for w in caught] == ["Custom"]
    assert energies[0]._head is not None and energies[1]._head is None
    torch.testing.assert_close(evaluate(energies[0], x), evaluate(energies[1], x), rtol=1e-4, atol=1e-4)
