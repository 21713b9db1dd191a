"""infill.compat.nlpaug: nlpaug's README code for ContextualWordEmbsAug runs with one import changed, and
returns lists of distinct variants that keep the sentence outside the changed words."""

from __future__ import annotations

import pytest

import infill.compat.nlpaug as naw
from infill.errors import InfillError

TEXT = "The quick brown fox jumps over the lazy dog ."


@pytest.fixture(scope="module")
def model_path(tiny_model_dir):
    return str(tiny_model_dir)


def test_the_readme_example_runs_with_one_import_changed(model_path):
    # nlpaug's README / example notebook, ContextualWordEmbsAug, substitute (model_path: the tiny test model)
    aug = naw.ContextualWordEmbsAug(model_path=model_path, action="substitute")
    augmented_text = aug.augment(TEXT)
    assert isinstance(augmented_text, list) and len(augmented_text) == 1 and augmented_text[0] != TEXT

    aug = naw.ContextualWordEmbsAug(model_path=model_path, action="substitute", aug_p=0.3, aug_min=1, aug_max=10)
    augmented_texts = aug.augment(TEXT, n=3)
    assert len(augmented_texts) == 3 and len(set(augmented_texts)) == 3 and TEXT not in augmented_texts


def test_insert_as_nlpaug_names_it(model_path):
    aug = naw.ContextualWordEmbsAug(model_path=model_path, action="insert", aug_p=0.2)
    for variant in aug.augment(TEXT, n=3):
        assert len(variant.split()) == len(TEXT.split()) + 2 and variant != TEXT


def test_a_list_gives_a_list_of_lists_in_order_and_the_same_seed_the_same_variants(model_path):
    texts = [TEXT, "She bought three apples and a loaf of bread ."]
    aug = naw.ContextualWordEmbsAug(model_path=model_path, aug_p=0.2)
    found = aug.augment(texts, n=2)
    assert [len(v) for v in found] == [2, 2]
    assert found[1] == naw.ContextualWordEmbsAug(model_path=model_path, aug_p=0.2).augment(texts[1], n=2)
    assert found == aug.augment(texts, n=2)


def test_stopwords_are_never_changed(model_path):
    aug = naw.ContextualWordEmbsAug(model_path=model_path, aug_p=0.5, stopwords=["fox", "dog"])
    for variant in aug.augment(TEXT, n=4):
        assert "fox" in variant.split() and "dog" in variant.split()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"action": "delete"}, "action='delete' is not served"),
        ({"aug_p": 1.5}, "share"),
    ],
)
def test_what_it_does_not_serve_is_refused_in_one_line(model_path, options, message):
    with pytest.raises(InfillError, match=message):
        naw.ContextualWordEmbsAug(model_path=model_path, **options)
