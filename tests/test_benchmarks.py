"""Every re-run benchmark of ``scripts/`` smoke-run at a tiny size through its command (``python -m
scripts.NAME``), and the harness's one-file store of a study's rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.harness import Rows, load_model, run_key

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = '{"id": "t", "template": "the [MASK] sat on the [MASK] .", "removed": ["cat", "mat"], "regime": "2-4"}'


def run(name: str, *args) -> str:
    """``python -m scripts.NAME ARGS`` from the repository root, offline, on one thread; its stdout."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", f"scripts.{name}", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def proxy_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """The harness's proxy BERT (512 positions: span templates fit) saved as a checkpoint directory."""
    path = tmp_path_factory.mktemp("proxy")
    load_model("proxy", vocab_size=bert_tokenizer.vocab_size).save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return path


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


# ---------------------------------------------------------------- each re-run benchmark, tiny


@pytest.mark.slow
def test_bench(dev_model_path):
    report = json.loads(
        run(
            "bench",
            "--models",
            "proxy",
            "--rss-model",
            "proxy",
            "--repeat",
            "1",
            "--steps",
            "1",
            "--templates",
            "1",
            "--bleu-refs",
            "100",
            "--json",
        )
    )
    assert report["models"][0]["model"] == "proxy" and report["dmala_peak_rss_gb"] > 0
    assert report["pipeline"]["templates"] == 1 and report["corpus_bleu"]["n_ref"] == 100


@pytest.mark.slow
def test_bench_compute(tmp_path, proxy_dir):
    suite = tmp_path / "suite.jsonl"
    suite.write_text(TEMPLATE + "\n")
    run(
        "bench_compute",
        "--before",
        ROOT,
        "--model",
        proxy_dir,
        "--suite",
        suite,
        "--seeds",
        "0",
        "--passes",
        "32",
        "--bf16-templates",
        "1",
        "--out",
        tmp_path,
    )
    summary = json.loads((tmp_path / "report.json").read_text())["summary"]
    assert summary["runs"] == 1 and summary["identical_top5"] == 1  # the same tree on both sides
    assert "encoder sequences" in (tmp_path / "report.md").read_text()


@pytest.mark.slow
def test_bench_families(tmp_path):
    run(
        "bench_families",
        "--families",
        "electra",
        "--repeats",
        "1",
        "--chains",
        "1",
        "--blanks",
        "1",
        "--length",
        "4",
        "--out",
        tmp_path / "families.json",
    )
    result = json.loads((tmp_path / "families.json").read_text())
    assert [r["family"] for r in result["rows"]] == ["electra"] and result["setup"]["cpu"]


@pytest.mark.slow
def test_bench_gpu(tmp_path, dev_model_path):
    run(
        "bench_gpu",
        "--proxy",
        "--templates",
        "1",
        "--batch",
        "1",
        "--batch-repeats",
        "1",
        "--min-bare-seconds",
        "0.01",
        "--threads",
        "1",
        "--out",
        tmp_path / "cpu-proxy",
    )
    report = json.loads((tmp_path / "cpu-proxy.json").read_text())
    assert report["settings"]["proxy"] and len(report["one_a_call"]) == 1
    assert (tmp_path / "cpu-proxy.md").read_text().startswith("# `scripts.bench_gpu` on cpu")


@pytest.mark.slow
def test_bench_layout(tmp_path, proxy_dir):
    out = tmp_path / "layout.md"
    run("bench_layout", "--before", ROOT, "--rounds", "1", "--templates", "1", "--model", proxy_dir, "--out", out)
    assert "after / before: median" in out.read_text()


@pytest.mark.slow
def test_bench_startup(tmp_path, tiny_model_dir):
    run(
        "bench_startup",
        "--base",
        ROOT,
        "--new",
        ROOT,
        "--pairs",
        "1",
        "--stages",
        "1",
        "--model",
        tiny_model_dir,
        "--out",
        tmp_path / "startup",
    )
    results = json.loads((tmp_path / "startup.json").read_text())
    assert results["same_fillings"] and results["pairs"] == 1


@pytest.mark.slow
def test_bench_bleu(tmp_path):
    run("bench_bleu", "--repeats", "1", "--direct", "1", "--out", tmp_path / "bleu")
    result = json.loads((tmp_path / "bleu.json").read_text())
    recorded = json.loads((ROOT / "eval" / "bleu-dlp-table3.json").read_text())
    assert result["figures"] == recorded["figures"]  # the figures do not depend on the machine


@pytest.mark.slow
def test_load_serve(tmp_path, tiny_model_dir):
    run(
        "load_serve",
        "--model",
        tiny_model_dir,
        "--clients",
        "1",
        "--requests",
        "6",
        "--page-tries",
        "0",
        "--out",
        tmp_path / "serve-load",
    )
    report = json.loads((tmp_path / "serve-load.json").read_text())
    assert report["lost"] == 0 and report["mixed_up"] == 0 and report["alive_after"]


@pytest.mark.slow
def test_promises(tmp_path, tiny_model_dir):
    run(
        "promises",
        "--model",
        tiny_model_dir,
        "--limit",
        "1",
        "--targets",
        "include,budget,huge",
        "--methods",
        "auto",
        "--budgets",
        "50",
        "--out",
        tmp_path,
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert {t["target"].split()[0] for t in report["targets"]} and report["environment"]["cpu"]


def test_bench_corpus(tmp_path, tiny_model_dir):
    out = tmp_path / "corpus"
    run(
        "bench_corpus",
        "--model",
        tiny_model_dir,
        "--lines",
        "8",
        "--chunk",
        "4",
        "--default-lines",
        "2",
        "--check-lines",
        "6",
        "--out",
        out,
    )
    report = json.loads((out / "report.json").read_text())
    assert report["lines"] == 8 and set(report["one_blank_per_second"]) >= {"argmax", "independent", "fill-mask/64"}
    assert (
        set(report["two_blank_per_second"])
        == set(report["two_blank_ceiling_per_second"])
        == {"confident-first", "auto"}
    )
    assert report["bare_sequences_per_second"] > 0
    assert report["processes"]["same_out"] and report["processes"]["processes"] == 2
    assert len(report["processes"]["startup"]["1"]) == 2  # each side's start-up, in both rounds
    exact = report["first_pass_exact"]
    assert exact["lines"] == 6 and exact["bitwise_equal"] == 6
    assert "fill-mask" in (out / "report.md").read_text()
    run("bench_corpus", "--model", tiny_model_dir, "--lines", "4", "--only-processes", "--out", out)
    again = json.loads((out / "report.json").read_text())
    assert again["processes"]["lines"] == 4 and again["processes"]["same_out"] and again["lines"] == 8


def test_bench_fill_mask(tmp_path, tiny_model_dir):
    out = tmp_path / "fill-mask"
    run("bench_fill_mask", "--model", tiny_model_dir, "--lines", "6", "--chunk", "3", "--out", out)
    report = json.loads((out / "report.json").read_text())
    assert set(report["sets"]) == {"long (wiki103)", "short (tbc)"}
    for part in report["sets"].values():
        assert part["lines"] == 6 and set(part["per_second"]) >= {"argmax", "independent", "fill-mask/8"}
        assert 0 <= part["answers"]["differ"] <= 1 and 0 <= part["answers_with_punctuation"]["differ"] <= 1
    assert "short (tbc)" in (out / "report.md").read_text()


def test_bench_fill_mask_cli(tmp_path, tiny_model_dir):
    out = tmp_path / "fill-mask"
    run("bench_fill_mask", "--cli", "--model", tiny_model_dir, "--lines", "3", "--rounds", "2", "--out", out)
    report = json.loads((out / "cli.json").read_text())
    assert set(report["sets"]) == {"long (wiki103)", "short (tbc)"} and report["rounds"] == 2
    for part in report["sets"].values():
        assert part["lines"] == 3 and all(len(s) == 2 for s in part["seconds"].values())
        assert set(part["seconds"]) == {"cli", "fill-mask/1", "fill-mask/8"}
    assert "CLI over fill-mask's best" in (out / "cli.md").read_text()


def test_bench_host(tmp_path, tiny_model_dir):
    out = tmp_path / "host"
    run("bench_host", "--model", tiny_model_dir, "--templates", "1", "--rounds", "1", "--sites", "5", "--out", out)
    report = json.loads((out / "report.json").read_text())
    assert set(report["summary"]["blanks"]) == {"2", "3", "4", "6", "8"}
    assert sorted(row["blanks"] for row in report["calls"]) == [2, 3, 4, 6, 8]
    assert all(row["calls"] > 0 and row["sequences"] > 0 for row in report["calls"])
    assert sorted(row["blanks"] for row in report["walls"]) == [2, 3, 4, 6, 8]
    assert all(row["default_per_sequence"] > 0 and row["bare_per_sequence"] > 0 for row in report["walls"])
    assert len(report["summary"]["functions"]) == 5 and report["environment"]["cpu"]
    assert "host calls / sequence" in (out / "report.md").read_text()
    run("bench_host", "--markdown-only", "--sites", "2", "--out", out)  # re-summarized from the JSON
    assert len(json.loads((out / "report.json").read_text())["summary"]["functions"]) == 2


def test_bench_cache(tmp_path, tiny_model_dir):
    out = tmp_path / "cache"
    run("bench_cache", "--model", tiny_model_dir, "--blanks", "2,3", "--templates", "1", "--rounds", "2", "--out", out)
    report = json.loads((out / "report.json").read_text())
    assert set(report["summary"]) == {"all", "2", "3"} and report["summary"]["all"]["rows"] == 4
    for row in report["rows"]:
        assert all(
            row[side]["sequences"] > 0 and 0 < row[side]["encoder_cpu"] < row[side]["cpu"] for side in ("on", "off")
        )
    assert {row["first"] for row in report["rows"]} == {"on", "off"}  # the order alternates
    run("bench_cache", "--model", tiny_model_dir, "--profile", "2", "--out", out)
    assert "cache off" in (out / "profile-2.txt").read_text()


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


def test_bench_score_window(tmp_path, tiny_model_dir):
    out = tmp_path / "window"
    argv = ["--model", tiny_model_dir, "--texts", "3", "--tokens", "5", "--windows", "16,32", "--shift", "16,8"]
    run("bench_score_window", *argv, "--out", out)
    result = json.loads((out / "results.json").read_text())
    assert set(result["summary"]) == {"16", "32", "full"} and result["summary"]["full"]["window"] == 62
    assert result["summary"]["full"]["mean_abs_change"] == 0 and result["summary"]["full"]["kendall_tau"] == 1
    assert [len(row["positions"]) for row in result["rows"]] == [5, 5, 5] and result["shift"]["offset"] == 8
    assert (out / "README.md").read_text().startswith("# `infill score --window N`")


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
