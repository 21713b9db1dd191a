"""The harness's one-file store of a study's rows, and the study scripts' own checks (each script's smoke run is
a row of ``tests/test_scripts.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.harness import Rows, run_key

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the rows of a study


def rows(tmp_path) -> Rows:
    return Rows(tmp_path / "runs.jsonl", run_key)


def row(template: str, seed: int, name: str) -> dict:
    return {"phase": "tune", "id": template, "seed": seed, "row": name}


def test_rows_read_back_in_key_order_and_resume(tmp_path):
    store = rows(tmp_path)
    for r in [row("b", 0, "gibbs"), row("a", 1, "auto"), row("a", 0, "auto")]:
        store.append(r)
    assert [(r["id"], r["seed"]) for r in store.read()] == [("a", 0), ("a", 1), ("b", 0)]
    assert run_key(row("a", 0, "auto")) in store.done()
    assert run_key(row("a", 0, "gibbs")) not in store.done()  # another row of the same run is not done
    assert run_key(row("a", 2, "auto")) not in store.done()


def test_rows_drop_a_line_cut_short_and_append_after_it(tmp_path):
    store = rows(tmp_path)
    store.append(row("a", 0, "auto"))
    with open(store.path, "a") as f:
        f.write('{"phase": "tune", "id": "b", "se')  # a run killed mid-write
    assert [r["id"] for r in store.read()] == ["a"]
    store.append(row("c", 0, "auto"))
    assert [r["id"] for r in store.read()] == ["a", "c"]
    assert all(json.loads(line) for line in store.path.read_text().splitlines())


@pytest.mark.slow
def test_particles_report_from_its_rows_equals_the_committed_one(tmp_path, monkeypatch):
    import scripts.particles as particles

    monkeypatch.setattr(particles, "OUT", tmp_path)
    particles.report()
    assert (tmp_path / "report.md").read_text() == (ROOT / "eval" / "particles-minilm" / "report.md").read_text()


def test_the_suites_are_what_their_scripts_write(dev_model_path):
    """The calibration halves and the promises' held-out suite are written again byte for byte from the corpora:
    a regime added to one suite must not move the other's templates."""
    from transformers import AutoTokenizer

    from scripts import calibration_suite, promises
    from scripts.harness import CORPORA, ROOT

    tokenizer = AutoTokenizer.from_pretrained(str(dev_model_path))
    for half, rows in calibration_suite.build(tokenizer, CORPORA, 0).items():
        written = (ROOT / "corpora" / "calibration" / f"{half}.jsonl").read_text(encoding="utf-8")
        assert "".join(json.dumps(r) + "\n" for r in rows) == written, half
    held_out = promises.SUITE.read_text(encoding="utf-8").splitlines()
    assert promises.build_suite(tokenizer) == [json.loads(line) for line in held_out]


def test_keep_rule_replays_what_the_product_kept_and_tallies_blind_readers(tmp_path, monkeypatch, tiny_model_dir):
    """``scripts/keep_rule.py``: the product's rule replayed on a captured run's candidates gives the five the run
    kept (so the tuning table judges what the product would do), top runs capture other candidates, and the
    tally unblinds the readers' verdicts."""
    import scripts.keep_rule as keep_rule

    monkeypatch.setattr(keep_rule, "OUT", tmp_path)
    monkeypatch.setattr(keep_rule, "MODEL", tiny_model_dir)
    for runs in ("one-run", "top"):
        keep_rule.capture("check", [0], "0/30", runs, range(5, 6))
    (run,), (top,) = (Rows(keep_rule.captures("check", r), keep_rule.key).read() for r in ("one-run", "top"))
    assert len(run["words"]) > 5 and run["kept"] == keep_rule.replay(run, keep_rule.rules()[keep_rule.PRODUCT])[0]
    assert top["words"] != run["words"]
    folder = tmp_path / "readers" / "a-vs-b"
    folder.mkdir(parents=True)
    key = {"item-001": {"regime": "5", "A": "auto"}, "item-002": {"regime": "5", "A": "b"}}
    (folder / "key.json").write_text(json.dumps(key))
    verdicts = {
        "item-001": {"prefer": "A", "keep_a": 2, "keep_b": 0},
        "item-002": {"prefer": "A", "keep_a": 1, "keep_b": 3},
    }
    (folder / "verdicts-r1.json").write_text(json.dumps(verdicts))
    keep_rule.tally()
    assert (
        "| `a-vs-b` | - | - | - | 1 of 2 (50%), 0 ties; kept 5 vs 1 |"
        in (tmp_path / "readers" / "tally.md").read_text()
    )


@pytest.mark.parametrize("window", [16, 62, None])
def test_bench_score_window_scores_as_score(tiny_model_dir, window):
    """The study's sampled tokens score as ``infill.lm.scoring.score`` scores them, a long text and one that fits."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from infill.lm.scoring import score
    from scripts.bench_score_window import sampled, shifted, texts

    model = AutoModelForMaskedLM.from_pretrained(tiny_model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    long = texts(1, (70, 70))[0]
    for text in (long, " ".join(long.split()[:12])):
        want = [v for _, v in score(model, tokenizer, [text], window=window)[0].tokens]
        positions = torch.tensor([0, 3, len(want) // 2, len(want) - 1])
        got = sampled(model, tokenizer, text, window, positions)
        assert got == pytest.approx([want[p] for p in positions], abs=1e-5)
        assert shifted(model, tokenizer, text, window, positions, 0) == pytest.approx(got, abs=1e-5)
