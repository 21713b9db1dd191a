"""infill.AugmentBatches: the documented datasets and Ray Data recipes give, sentence for sentence, what one
process gives on the whole list (seeds are the sentence's own, whatever the batch, shard or worker)."""

from __future__ import annotations

import pytest
from test_augment import SENTENCES

import infill
from infill.augmentation import edits
from infill.augmentation.edits import Edit
from infill.errors import InfillError

OPTIONS = {"n": 3, "change": 0.2, "seed": 1}


@pytest.fixture(scope="module")
def alone(tiny_model_dir):
    """Each sentence's variants from one call on the whole list, in one process."""
    found = infill.augment(SENTENCES, model=str(tiny_model_dir), **OPTIONS)
    return {v.source: [x.text for x in v] for v in found}


def test_a_batch_gets_variants_edits_and_shortfall_beside_its_columns(tiny_model_dir, alone):
    out = infill.AugmentBatches(model=str(tiny_model_dir), **OPTIONS)({"text": SENTENCES[:2], "label": [0, 1]})
    assert out["label"] == [0, 1] and out["variants"] == [alone[s] for s in SENTENCES[:2]]
    for source, variants, changes in zip(SENTENCES, out["variants"], out["edits"]):
        for text, these in zip(variants, changes):
            kept = [Edit(tuple(e["source_span"]), tuple(e["variant_span"]), e["old"], e["new"]) for e in these]
            assert edits.apply(source, kept) == text
    assert all(isinstance(k, int) for k in out["shortfall"])


def test_the_datasets_recipe_at_any_batch_size(tiny_model_dir, alone):
    from datasets import Dataset

    ds = Dataset.from_dict({"text": SENTENCES, "label": list(range(len(SENTENCES)))})
    for batch_size in (1, 3, 64):
        out = ds.map(infill.AugmentBatches(model=str(tiny_model_dir), **OPTIONS), batched=True, batch_size=batch_size)
        assert out["label"] == list(range(len(SENTENCES)))
        assert out["variants"] == [alone[s] for s in SENTENCES]


def test_the_ray_recipe_with_two_workers_gives_the_one_process_result(tiny_model_dir, alone):
    ray = pytest.importorskip("ray", reason="the ray extra (infill-mcmc[ray]) is not installed")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        ds = ray.data.from_items([{"text": s} for s in SENTENCES])
        out = ds.map_batches(
            infill.AugmentBatches,
            fn_constructor_kwargs={"model": str(tiny_model_dir), **OPTIONS},
            concurrency=2,
            batch_size=2,
        ).take_all()
    finally:
        ray.shutdown()
    assert sorted(row["text"] for row in out) == sorted(SENTENCES)
    assert {row["text"]: list(row["variants"]) for row in out} == alone


@pytest.mark.parametrize("options", [{"n": 0}, {"change": 1.5}, {"sampler": "gibbs"}])
def test_bad_settings_are_refused_before_any_batch(options):
    with pytest.raises(InfillError):
        infill.AugmentBatches(**{**OPTIONS, **options})
