"""``infill.pipeline(model)``, the joint fill-mask pipeline: fill-mask's inputs and output keys, joint fillings
for several masks, the model's own mask token, transformers' registry, one-line errors; and the package
``infill.pipeline`` still imports and patches as a package."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from unittest import mock

import pytest
import transformers
from families import build

import infill
from infill.errors import InfillError
from infill.pipeline.fill_mask import TASK, JointFillMaskPipeline

KEYS = {"score", "token", "token_str", "sequence"}


@pytest.fixture(scope="module")
def fill(tiny_model_dir):
    return infill.pipeline(model=str(tiny_model_dir), device="cpu", chunk_size=8)  # the Infiller's keywords


def test_the_package_stays_a_package_and_import_infill_stays_light():
    import infill.pipeline.config as config
    from infill.pipeline.config import RunConfig

    assert callable(infill.pipeline) and config.RunConfig is RunConfig
    with mock.patch("infill.pipeline.config.STEPS", 3):
        assert config.STEPS == 3
    probe = "import sys, infill; infill.pipeline; import infill.pipeline.config; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def test_one_mask_gives_fill_masks_dicts_with_its_probabilities_renormalised(fill):
    out = fill("a [MASK] day.")
    assert fill.infiller.chunk_size == 8 and len(out) == 5 and all(set(item) == KEYS for item in out)
    inputs = fill.tokenizer("a [MASK] day.", return_tensors="pt")
    logits = fill.model(**inputs).logits[0, inputs["input_ids"][0].tolist().index(fill.tokenizer.mask_token_id)]
    allowed = fill.infiller.category_ids()
    assert [item["token"] for item in out] == allowed[logits[allowed].topk(5).indices].tolist()
    assert all(item["token_str"] == fill.tokenizer.decode([item["token"]]) for item in out)
    assert all(item["sequence"] == f"a {item['token_str']} day." for item in out)
    fill_mask = transformers.pipeline("fill-mask", model=fill.model, tokenizer=fill.tokenizer, device="cpu")
    theirs = {
        r["token"]: r["score"]
        for r in fill_mask("a [MASK] day.", targets=[fill.tokenizer.convert_ids_to_tokens(i["token"]) for i in out])
    }
    ratios = [theirs[item["token"]] / item["score"] for item in out]  # the share of the tokens a blank may take
    assert max(ratios) <= 1 and max(ratios) == pytest.approx(min(ratios), rel=1e-4)
    assert [item["score"] for item in out] == sorted((item["score"] for item in out), reverse=True)


def test_two_masks_give_distinct_joint_fillings_best_first(fill):
    out = fill("the [MASK] sat on the [MASK].", top_k=4, seed=0)
    assert 1 < len(out) <= 4 and all(set(item) == KEYS for item in out)
    for item in out:
        assert len(item["token"]) == len(item["token_str"]) == 2
        assert item["token_str"] == [fill.tokenizer.decode([t]) for t in item["token"]]
        first, second = item["token_str"]
        assert item["sequence"] == f"the {first} sat on the {second}."
    assert len({tuple(item["token"]) for item in out}) == len(out)
    scores = [item["score"] for item in out]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)


def test_fillings_come_best_first_in_whatever_order_the_run_keeps_them(fill):
    sample_many = fill.infiller.sample_many

    def reversed_samples(*args, **kwargs):  # auto keeps fillings for diversity too, not best first
        return [dataclasses.replace(r, samples=r.samples[::-1]) for r in sample_many(*args, **kwargs)]

    with mock.patch("infill.pipeline.infiller.Infiller.sample_many", side_effect=reversed_samples) as patched:
        out = fill("the [MASK] sat on the [MASK].", top_k=4, seed=0)
    assert patched.called and out == fill("the [MASK] sat on the [MASK].", top_k=4, seed=0)


def test_run_options_go_per_call_or_as_the_pipelines_defaults(fill, tiny_model_dir):
    best = fill("a [MASK] day.", top_k=1)[0]["token_str"]
    forbidding = infill.pipeline(model=str(tiny_model_dir), forbid=[best], top_k=2)
    assert forbidding("a [MASK] day.") == fill("a [MASK] day.", top_k=2, forbid=[best])
    assert best not in [item["token_str"] for item in forbidding("a [MASK] day.")]


def test_a_list_gives_each_inputs_output(fill):
    texts = ["a [MASK] day.", "the [MASK] sat on the [MASK]."]
    assert fill(texts, top_k=2, seed=0) == [fill(text, top_k=2, seed=0) for text in texts]
    assert fill(texts[:1], top_k=2) == [fill(texts[0], top_k=2)]  # fill-mask would unwrap a list of one


def test_the_models_own_mask_token_and_mask_fill_alike():
    model, tokenizer = build("roberta")
    fill = infill.pipeline(model=model, tokenizer=tokenizer, top_k=3)
    own = fill("Hello <mask> world, <mask> day.", seed=0)
    assert own == fill("Hello [MASK] world, [MASK] day.", seed=0)
    assert len(own) == 3 and all(item["sequence"].startswith("Hello ") for item in own)


def test_transformers_pipeline_builds_it_by_task_name(fill, tiny_model_dir):
    built = transformers.pipeline(TASK, model=str(tiny_model_dir), device="cpu", top_k=2)
    assert isinstance(built, JointFillMaskPipeline)
    assert built("a [MASK] day.") == fill("a [MASK] day.", top_k=2)


@pytest.mark.parametrize(
    "inputs, kwargs, message",
    [
        ("a sunny day.", {}, "no mask token in 'a sunny day.'"),
        ("", {}, "a text to fill is empty"),
        ("   ", {}, "a text to fill is empty"),
        (7, {}, "fill a string or a non-empty list of strings, got 7"),
        ([], {}, "fill a string or a non-empty list of strings, got []"),
        (["a [MASK] day.", 7], {}, "a text to fill must be a string, got int"),
        ("a [MASK] day.", {"top_k": 0}, "top_k must be a positive integer, got 0"),
        ("a [MASK] day.", {"top_k": 2.5}, "top_k must be a positive integer, got 2.5"),
        ("a [MASK] day.", {"top_k": "3"}, "top_k must be a positive integer, got '3'"),
        ("a [MASK] day.", {"top": 3}, "the pipeline takes top_k"),
        ("a [MASK] day.", {"targets": ["good"]}, "unknown key 'targets'"),
        ("a [MASK] day " + "and night " * 40, {}, "longer than the model's maximum of 64"),
        ("a [MASK*1-2] day.", {}, "has a word span"),
        ("un[MASK] day.", {}, "glued to 'n'"),
    ],
)
def test_bad_input_is_one_line(fill, inputs, kwargs, message):
    with pytest.raises(InfillError) as error:
        fill(inputs, **kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_bad_pipeline_settings_are_one_line(tiny_model_dir):
    with pytest.raises(InfillError, match="top_k must be a positive integer, got -1"):
        infill.pipeline(model=str(tiny_model_dir), top_k=-1)


@pytest.mark.slow
def test_dev_model_tops_fill_masks_tokens_that_a_blank_may_take(dev_model_path):
    fill = infill.pipeline(model=str(dev_model_path))
    ours = fill("a [MASK] day.", allow_punctuation=True)
    fill_mask = transformers.pipeline("fill-mask", model=fill.model, tokenizer=fill.tokenizer, device="cpu")
    allowed = set(fill.infiller.category_ids(allow_punctuation=True).tolist())
    theirs = [r for r in fill_mask("a [MASK] day.", top_k=50) if r["token"] in allowed][:5]
    assert all(set(item) == KEYS for item in ours)
    assert [item["token"] for item in ours] == [r["token"] for r in theirs]
    assert [item["sequence"] for item in ours] == [r["sequence"] for r in theirs]
