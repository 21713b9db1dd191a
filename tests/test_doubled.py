"""Doubled words: which fillings double a word beside them, and the default keeping them last."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_bert
from families import tokenizer as family_tokenizer

from infill import Infiller
from infill.text import repeats as repeats_module
from infill.text.repeats import doubled, repeats
from infill.text.template import parse


@pytest.mark.parametrize(
    "parts, fills",
    [
        (["he could not ", " be found ."], ["not"]),  # a function word after the template's copy
        (["he could ", " not be found ."], ["not"]),  # ... and before it
        (["it will ", " ", " done ."], ["be", "be"]),  # two fills side by side
        (["the ", " hit the town ."], ["bomb bomb"]),  # within one fill of two words
        (["between india and ", " ."], ["India"]),  # ignoring case
        (["war between ", " and pakistan ."], ["pakistan"]),  # either side of "and"
        (["war between ", " ", " pakistan ."], ["pakistan", "or"]),  # of "or", the middle word a fill's
        (["it was ", ", ", " ."], ["red", "red"]),  # of a comma
        (["she ", " had enough ."], ["had"]),  # grammatical doubles too (module docstring)
        (["he said that ", " was wrong ."], ["that"]),
    ],
)
def test_a_fill_that_doubles_a_word_beside_it_is_flagged(parts, fills):
    assert doubled(parts, fills)


@pytest.mark.parametrize(
    "parts, fills",
    [
        (["the cat and ", " dog ."], ["the"]),  # "cat and the": no word twice
        (["not ", " the cat , but the dog ."], ["only"]),  # "the" twice, apart
        (["the the cat ", " ."], ["sat"]),  # the template's own double is the user's
        (["pakistan ", " pakistan ."], ["and"]),  # both copies the template's
        (["the ", " . the cat sat ."], ["cat"]),  # a full stop between
        (["the ", " bombs hit ."], ["bomb"]),  # another word, not a copy
    ],
)
def test_legitimate_neighbours_are_not_flagged(parts, fills):
    assert not doubled(parts, fills)


def _doubles(tokenizer, text: str, words: list[str]):
    """``text``'s doubled words, with ``words`` (tokens) as the categories; a filling's row indexes them."""
    return repeats(tokenizer, torch.tensor(tokenizer.convert_tokens_to_ids(words)), parse(text, tokenizer, 64))


def test_fillings_are_judged_by_the_words_a_reader_sees_not_by_tokens(bert_tokenizer):
    pieces = bert_tokenizer.tokenize("the mountaineering club")[1:-1]  # "mountaineering" in several pieces
    assert len(pieces) > 1
    found = _doubles(bert_tokenizer, "the mountaineering [MASK] met .", [pieces[0], "club"])
    assert found.of(torch.tensor([[0], [1]])).tolist() == [False, False]  # its first token, not its word
    found = _doubles(bert_tokenizer, "he could not [MASK*2] be found .", ["not", "##e", "only"])
    no, e, only = range(3)
    rows = torch.tensor([[no, e], [no, only], [only, no], [only, only]])
    assert found.of(rows).tolist() == [False, True, False, True]  # "not note", "not not", "not only not"


def test_a_byte_level_bpe_tokenizer_gets_the_same_judgement():
    tokenizer = family_tokenizer("bpe-lstrip")  # RoBERTa's: "Ġnot" is the word " not"
    found = _doubles(tokenizer, "he could not [MASK] [MASK] be found .", ["Ġnot", "Ġonly", "Ġalways"])
    rows = torch.tensor([[0, 1], [1, 2], [1, 1], [2, 0]])
    assert found.of(rows).tolist() == [True, False, True, False]


def test_doubles_join_the_repeated_content_words_in_one_mask(bert_tokenizer, monkeypatch):
    found = _doubles(bert_tokenizer, "he could not [MASK] [MASK] the river .", ["not", "only", "river", "war"])
    rows = torch.tensor([[0, 1], [1, 1], [1, 2], [3, 3], [1, 3]])
    assert found.of(rows).tolist() == [True, True, True, True, False]  # doubled, doubled, echo, twice, none
    monkeypatch.setattr(repeats_module.Doubles, "of", lambda self, rows: torch.zeros(len(rows), dtype=torch.bool))
    assert found.of(rows).tolist() == [False, False, True, True, False]  # the content-word rule alone


FAVOURED = {"not": 12.0, "only": 11.0, "just": 10.0, "so": 9.0, "too": 8.0}
"""Output biases that make a tiny random model fill every blank with these stop words, best first."""


@pytest.fixture(scope="module")
def not_not(bert_tokenizer):
    """An ``Infiller`` on a tiny random BERT whose best fillings of "he could not [MASK] [MASK] ." double "not"."""
    model = tiny_bert()
    with torch.no_grad():
        for word, bias in FAVOURED.items():
            model.cls.predictions.decoder.bias[bert_tokenizer.convert_tokens_to_ids(word)] += bias
    return Infiller(model=model, tokenizer=bert_tokenizer)


def test_the_default_keeps_doubled_fillings_last(not_not):
    template = "he could not [MASK] [MASK] ."
    parts = ["he could not ", " ", " ."]
    plain = not_not.sample(template, top=4, seed=0, decode="visited")  # by PLL alone: doubles come first
    assert doubled(parts, plain.samples[0].fills)
    kept = not_not.sample(template, top=4, seed=0)
    assert kept.diagnostics.decode == "diverse" and len(kept.samples) == 4
    assert not any(doubled(parts, s.fills) for s in kept.samples)


@pytest.mark.slow
def test_the_dev_mlm_default_keeps_no_doubled_word_where_others_are_found(dev_model_path):
    infiller = Infiller(str(dev_model_path))
    template = "he could [MASK] [MASK] be found in the [MASK] ."
    parts = ["he could ", " ", " be found in the ", " ."]
    plain = infiller.sample(template, top=5, seed=0, sampler="gibbs", decode="visited", num_samples=50, steps=20)
    assert any(doubled(parts, s.fills) for s in plain.samples)  # "he could not not be found"
    kept = infiller.sample(template, top=5, seed=0)
    assert len(kept.samples) == 5 and not any(doubled(parts, s.fills) for s in kept.samples)


def test_the_measurement_builds_templates_the_calibration_leaves_out_and_counts_doubles(dev_model_path):
    from scripts.doubled_words import build, measure
    from scripts.harness import load_half

    rows = build(6, 0)
    used = {row["id"][: -len(row["regime"]) - 1] for half in ("tune", "check") for row in load_half(half)}
    assert len(rows) == 6 and not used & {r["id"] for r in rows}
    assert all(r["id"].startswith("wt103-") and 2 <= r["template"].count("[MASK]") <= 6 for r in rows)
    fillings = [{"text": "", "fills": fills, "energy": -1.0} for fills in (["not", "not"], ["not", "only"])]
    assert measure([{"template": "he could [MASK] [MASK] be .", "fillings": fillings}])["doubled"] == 0.5
