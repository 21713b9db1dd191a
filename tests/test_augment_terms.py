"""Augment's terms and actions (infill.augmentation.terms, .actions): each variant's closeness as reported,
``keep_close`` ranking by it, a classifier's label kept (a callable or a Hugging Face sequence classifier by path),
bad terms refused in one line; words inserted and deleted with the text outside the edits kept."""

from __future__ import annotations

import json

import pytest
import torch
from test_augment import SENTENCES, check_variants
from transformers import BertConfig, BertForSequenceClassification

import infill
from infill.cli import main
from infill.errors import InfillError


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    return infill.Infiller(str(tiny_model_dir))


def parity(texts):
    """A classifier of two labels, sure of label 1 for a text of even length and of label 0 otherwise."""
    return [[1e-12, 1 - 1e-12] if len(t) % 2 == 0 else [1 - 1e-12, 1e-12] for t in texts]


def test_closeness_is_the_mean_cosine_of_the_old_and_new_tokens(infiller):
    embeddings = infiller.model.get_input_embeddings().weight
    ids = infiller.tokenizer.convert_tokens_to_ids
    for variant in infiller.augment(SENTENCES[0], n=4, change=0.3, seed=0):
        pairs = [(ids(e.old.lower()), ids(e.new.lower())) for e in variant.edits]
        cosines = [torch.cosine_similarity(embeddings[a], embeddings[b], 0).item() for a, b in pairs]
        assert variant.closeness == pytest.approx(sum(cosines) / len(cosines), abs=1e-5)
        assert variant.label_probability is None


def test_keep_close_ranks_the_closer_draws_first(infiller):
    plain = infiller.augment(SENTENCES, n=3, change=0.3, seed=0)
    close = infiller.augment(SENTENCES, n=3, change=0.3, seed=0, keep_close=1e6)
    for source, found in zip(SENTENCES, close):
        check_variants(source, found, 3)
    mean = [sum(v.closeness for vs in found for v in vs) / sum(map(len, found)) for found in (plain, close)]
    assert mean[1] > mean[0]


def test_a_classifier_keeps_the_source_label(infiller):
    found = infiller.augment(SENTENCES, n=3, change=0.3, seed=0, classifier=parity)
    plain = infiller.augment(SENTENCES, n=3, change=0.3, seed=0)
    kept = [v.label_probability > 0.5 for vs in found for v in vs]
    assert all(v.label_probability is not None for vs in found for v in vs)
    same = [len(v.text) % 2 == len(vs.source) % 2 for vs in plain for v in vs]  # the source's label, by chance
    assert sum(kept) / len(kept) > 0.9 and sum(kept) > sum(same)
    forced = infiller.augment(SENTENCES[0], n=3, change=0.3, seed=0, classifier=parity, label=1)
    assert all(len(v.text) % 2 == 0 for v in forced)


def test_a_hub_classifier_by_path_from_the_command_line(tmp_path, tiny_model_dir, capsys):
    torch.manual_seed(0)
    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_labels=2)
    config.id2label, config.label2id = {0: "neg", 1: "pos"}, {"neg": 0, "pos": 1}
    BertForSequenceClassification(config).save_pretrained(tmp_path / "clf")
    infill.Infiller(str(tiny_model_dir)).tokenizer.save_pretrained(tmp_path / "clf")
    args = ["augment", SENTENCES[1], "-n", "2", "--json", "--model", str(tiny_model_dir)]
    assert main([*args, "--classifier", str(tmp_path / "clf"), "--label", "pos"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert all(0 < v["label_probability"] < 1 and -1 <= v["closeness"] <= 1 for v in record["variants"])
    assert main([*args, "--classifier", str(tmp_path / "clf"), "--label", "happy"]) != 0
    assert "the classifier has no label 'happy'; its labels: neg, pos" in capsys.readouterr().err


def failing(texts):
    raise RuntimeError("out of memory")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"keep_close": -1}, "keep_close must be a number >= 0"),
        ({"keep_close": float("nan")}, "keep_close must be a number >= 0"),
        ({"label": 1}, "label needs a classifier"),
        ({"classifier": 3}, "a classifier must be callable"),
        ({"classifier": failing}, "the classifier failed on 2 texts: RuntimeError: out of memory"),
        ({"classifier": lambda texts: [[0.5]]}, "the classifier must give finite probabilities"),
        ({"classifier": parity, "label": 2}, "label 2 is out of range"),
        ({"classifier": parity, "label": "pos"}, "the classifier has no label 'pos'; its labels: none named"),
    ],
)
def test_bad_terms_refused_in_one_line(infiller, options, message):
    with pytest.raises(InfillError, match=message):
        infiller.augment(SENTENCES[:2], n=2, seed=0, **options)


@pytest.mark.parametrize("action", ["insert", "delete"])
def test_insert_and_delete_keep_the_text_outside_their_edits(infiller, action):
    found = infiller.augment(SENTENCES, n=3, change=0.3, seed=0, action=action)
    for source, variants in zip(SENTENCES, found):
        check_variants(source, variants, 3)
        for v in variants:
            k = len(v.edits)
            assert len(v.text.split()) == len(source.split()) + (k if action == "insert" else -k)
            assert all(e.old == "" and e.new.endswith(" ") for e in v.edits) if action == "insert" else True
            assert all(e.new == "" and e.old.startswith(" ") for e in v.edits) if action == "delete" else True
            assert v.closeness is None and (v.score == 0.0) == (action == "delete")
    assert found == infiller.augment(SENTENCES, n=3, change=0.3, seed=0, action=action)


def test_an_insert_is_no_neighbour_again_and_never_splits_what_is_protected(infiller):
    source = "He met Claudia Augusta and three friends near the big old station today."
    for v in infiller.augment(source, n=4, change=0.3, seed=1, action="insert"):
        assert "Claudia Augusta" in v.text and "three friends" in v.text
        words = v.text.lower().split()
        assert all(a != b for a, b in zip(words, words[1:]))


def test_delete_from_the_command_line(tiny_model_dir, capsys):
    assert main(["augment", SENTENCES[0], "-n", "2", "--action", "delete", "--model", str(tiny_model_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(len(line.split()) < len(SENTENCES[0].split()) for line in lines)
    assert main(["augment", "x", "--action", "delete", "--keep-close", "1", "--model", "/no/such/model"]) != 0
    assert "keep_close weighs substituted words" in capsys.readouterr().err  # refused before a model loads


@pytest.mark.parametrize(
    "options, fragment",
    [({"pll": "no"}, "pll must be true or false"), ({"keep_close": 1, "action": "insert"}, "keep_close weighs")],
)
def test_the_module_level_augment_refuses_options_before_a_model_loads(options, fragment):
    with pytest.raises(InfillError, match=fragment):
        infill.augment("a b c", model="/no/such/model", **options)
    with pytest.raises(InfillError, match=fragment):
        infill.AugmentBatches(model="/no/such/model", **options)


def test_a_delete_reports_the_label_probability_of_its_own_text(infiller):
    source = "We saw the the old dog run very fast down the long road today."  # two deletions give one text
    for v in infiller.augment(source, n=8, change=0.1, seed=0, action="delete", classifier=parity, label=1):
        assert v.label_probability == parity([v.text])[0][1]
