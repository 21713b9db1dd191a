"""What a record of ``infill sample --out`` holds: without ``--top``, each distinct filling once with the count of
draws that reached it, most drawn first (ties by energy, then text); with ``--top``, the top fillings with the
same keys, uncounted. The same OUT for a seed, resumed byte for byte, loaded by ``datasets``; ``fill_dataset`` gives
the records' fillings."""

from __future__ import annotations

import io
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from infill import Infiller
from infill.cli import main
from infill.pipeline import corpus
from infill.pipeline.results import InfillResult, Sample

WORDS = "river city war music".split()
DRAWS = dict(sampler="independent", num_samples=12, temperature=0.01)  # the tiny model: a few texts, drawn unevenly


def _source(path: Path) -> Path:
    lines = [f"the {w} [MASK] near the [MASK] ." for w in WORDS] + [json.dumps({"template": "a [MASK] .", "top": 2})]
    path.write_text("\n".join(lines) + "\n")
    return path


def _command(model: Path, source, out: Path, *extra: str) -> list[str]:
    files = ["-", "--out", str(out)] if source == "-" else ["-f", str(source), "--out", str(out)]
    draws = ["--sampler", DRAWS["sampler"], "-n", str(DRAWS["num_samples"]), "--temperature", str(DRAWS["temperature"])]
    return ["sample", *files, "--model", str(model), *draws, "-q", *extra]


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_each_distinct_filling_once_with_the_count_of_its_draws_most_drawn_first(tmp_path, tiny_model_dir):
    out = tmp_path / "out.jsonl"
    assert main(_command(tiny_model_dir, _source(tmp_path / "in.txt"), out)) == 0
    *counted, top = _records(out)
    infiller = Infiller(str(tiny_model_dir))
    for r in counted:
        alone = infiller.sample(r["template"], seed=r["diagnostics"]["seed"], **DRAWS)
        assert {f["text"]: f["count"] for f in r["fillings"]} == Counter(alone.texts)  # every draw, once per text
        assert len({f["text"] for f in r["fillings"]}) == len(r["fillings"])
        assert sum(f["count"] for f in r["fillings"]) == DRAWS["num_samples"]
        keys = [(-f["count"], -f["energy"], f["text"]) for f in r["fillings"]]
        assert keys == sorted(keys) and all(list(f) == ["text", "count", "fills", "energy"] for f in r["fillings"])
    assert any(len(r["fillings"]) > 1 for r in counted) and any(r["fillings"][0]["count"] > 1 for r in counted)
    alone = infiller.sample("a [MASK] .", top=2, seed=0, **DRAWS)
    assert top["fillings"] == [
        {"text": s.text, "count": None, "fills": s.fills, "energy": s.energy} for s in alone.samples
    ]


def _sample(text: str, energy: float) -> Sample:
    return Sample(text, [text], [text], [], energy, 0)


def test_ties_go_to_the_higher_energy_then_the_text_whatever_the_order_of_the_draws():
    draws = [("b", -1.0), ("a", -2.0), ("c", -0.5), ("a", -1.0), ("d", 0.0), ("b", -1.0), ("c", -0.5)]
    expected = [("c", 2, -0.5), ("a", 2, -1.0), ("b", 2, -1.0), ("d", 1, 0.0)]  # "a": its best draw's energy
    for order in (draws, draws[::-1]):
        result = InfillResult("[MASK]", [_sample(*d) for d in order], diagnostics=None)
        assert [(f["text"], f["count"], f["energy"]) for f in corpus.fillings(result, None)] == expected
        assert [f["text"] for f in corpus.fillings(result, 7)] == [text for text, _ in order]  # top: as they come


def test_a_seed_gives_the_same_out_and_a_cut_out_resumes_to_it_byte_for_byte(tmp_path, tiny_model_dir):
    source, first, again = _source(tmp_path / "in.txt"), tmp_path / "first.jsonl", tmp_path / "again.jsonl"
    assert main(_command(tiny_model_dir, source, first)) == 0
    assert main(_command(tiny_model_dir, source, again)) == 0
    assert again.read_bytes() == first.read_bytes()
    assert main(_command(tiny_model_dir, source, tmp_path / "other.jsonl", "--seed", "1")) == 0
    assert (tmp_path / "other.jsonl").read_bytes() != first.read_bytes()
    lines = first.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # as a kill in a write leaves it
    assert main(_command(tiny_model_dir, source, cut)) == 0
    assert cut.read_bytes() == first.read_bytes()


def test_datasets_loads_an_out_of_counted_top_and_error_records(tmp_path, tiny_model_dir, monkeypatch):
    datasets, pa = pytest.importorskip("datasets"), pytest.importorskip("pyarrow")
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(sys, "stdin", io.StringIO(_source(tmp_path / "in.txt").read_text() + "no blank here\n"))
    assert main(_command(tiny_model_dir, "-", out)) == 0
    records = _records(out)
    loaded = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == len(records) == 6 and loaded[5]["error"] == records[5]["error"]
    kept = loaded.data.schema.field("fillings").type.value_type  # typed (fillings of mixed keys: JSON text)
    assert pa.types.is_struct(kept) and [f.name for f in kept] == list(records[0]["fillings"][0])
    for row, record in zip(loaded.select(range(5)), records):  # energies to 12 digits (an empty dict in a record)
        assert row["fillings"] == [{**f, "energy": pytest.approx(f["energy"], rel=1e-9)} for f in record["fillings"]]


def test_fill_dataset_without_top_adds_the_records_fillings_and_counts(tiny_model_dir):
    datasets = pytest.importorskip("datasets")
    infiller = Infiller(str(tiny_model_dir))
    templates = [f"the {w} [MASK] near the [MASK] ." for w in WORDS]
    filled = corpus.fill_dataset(infiller, datasets.Dataset.from_dict({"template": templates}), seed=0, **DRAWS)
    expected = [corpus.fillings(r, None) for r in infiller.sample_many(templates, seed=0, **DRAWS)]
    assert filled["fillings"] == [[f["text"] for f in row] for row in expected]
    assert filled["counts"] == [[f["count"] for f in row] for row in expected]
    assert filled["energies"] == [[f["energy"] for f in row] for row in expected]
    assert all(sum(counts) == DRAWS["num_samples"] for counts in filled["counts"])
