"""Every module of ``scripts/`` smoke-run at its smallest real size through its command, from one table.

A row runs ``python -m scripts.NAME ARGS`` from the repository root, offline, on one thread, and checks what it
wrote. Study scripts that write into ``eval/`` (their ``OUT``) or load the dev MLM (their ``MODEL``) run with
those module constants set to a temporary folder and the tiny model first (``patch``: the same ``main()``, its
arguments from the command line). ``test_the_table_names_every_script`` fails when a script has no row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from scripts.harness import load_model

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = '{"id": "t", "template": "the [MASK] sat on the [MASK] .", "removed": ["cat", "mat"], "regime": "2-4"}'
HELPERS = {"__init__", "harness"}
"""Modules of ``scripts/`` that are imported by the others, not run."""


def run(name: str, *args, patch: dict[str, str] | None = None) -> str:
    """``python -m scripts.NAME ARGS`` from the repository root, offline, on one thread; its stdout. With
    ``patch`` ({"module.ATTR": python expression}), the attributes are set before the module's ``main()`` runs."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    if patch:
        lines = ["import sys, importlib", "from pathlib import Path", "import scripts.harness"]
        for target, value in patch.items():
            module, attr = target.rsplit(".", 1)
            lines.append(f"setattr(importlib.import_module({module!r}), {attr!r}, {value})")
        lines.append(f"sys.argv = ['scripts.{name}', *{list(map(str, args))!r}]")
        lines.append(f"sys.exit(importlib.import_module('scripts.{name}').main())")
        command = [sys.executable, "-c", "\n".join(lines)]
    else:
        command = [sys.executable, "-m", f"scripts.{name}", *map(str, args)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    last = (done.stderr.strip().splitlines() or [""])[-1]
    assert done.returncode == 0, f"{last}\n{done.stderr[-3000:]}"  # the error first: pytest cuts the rest
    return done.stdout


@dataclass(frozen=True)
class Smoke:
    """One row: ``steps`` run in turn (each the arguments of one command, ``{tmp}``, ``{tiny}``, ``{proxy}``,
    ``{dev}`` and ``{root}`` filled in; or a callable of the context, to write an input), then ``check`` on the
    context (``ctx.out``: the last command's stdout)."""

    module: str
    steps: list
    check: Callable[[SimpleNamespace], None]
    patch: dict[str, str] = field(default_factory=dict)
    slow: bool = False
    id: str = ""


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_bench(c):
    report = json.loads(c.out)
    assert report["models"][0]["model"] == "proxy" and report["dmala_peak_rss_gb"] > 0
    assert report["pipeline"]["templates"] == 1 and report["corpus_bleu"]["n_ref"] == 100


def _check_bench_score_window(c):
    result = _json(c.tmp / "window" / "results.json")
    assert set(result["summary"]) == {"16", "32", "full"} and result["summary"]["full"]["window"] == 62
    assert result["summary"]["full"]["mean_abs_change"] == 0 and result["summary"]["full"]["kendall_tau"] == 1
    assert [len(row["positions"]) for row in result["rows"]] == [5, 5, 5] and result["shift"]["offset"] == 8
    assert (c.tmp / "window" / "README.md").read_text().startswith("# `infill score --window N`")


def _check_bench_augment(c):
    report = json.loads(c.out)
    assert report["sentences"] == 2 and set(report["methods"]) == {"confident-first", "independent", "nlpaug"}
    assert report["wins"]["confident-first vs nlpaug"]["untied"] <= 2
    rows = _lines(c.tmp / "augment" / "tune.jsonl")
    assert [row["index"] for row in rows] == [0, 1] and all(len(r["methods"]["nlpaug"]["pll"]) for r in rows)


def _check_gpu_augment(c):
    report = json.loads(c.out)
    assert set(report["methods"]) == {"independent", "independent/no-pll", "nlpaug"}
    assert report["settings"]["device"] == "cpu" and report["settings"]["half"] == "check"
    assert len(_lines(c.tmp / "gpu-augment" / "check.jsonl")) == 2


def _check_bench_compute(c):
    summary = _json(c.tmp / "report.json")["summary"]
    assert summary["runs"] == 1 and summary["identical_top5"] == 1  # the same tree on both sides
    assert "encoder sequences" in (c.tmp / "report.md").read_text()


def _check_bench_corpus(c):
    report = _json(c.tmp / "corpus" / "report.json")
    assert report["lines"] == 8 and set(report["one_blank_per_second"]) >= {"argmax", "independent", "fill-mask/64"}
    assert (
        set(report["two_blank_per_second"])
        == set(report["two_blank_ceiling_per_second"])
        == {"confident-first", "auto"}
    )
    assert report["bare_sequences_per_second"] > 0
    assert report["processes"]["lines"] == 4 and report["processes"]["same_out"]  # the second call's
    assert len(report["processes"]["startup"]["1"]) == 2  # each side's start-up, in both rounds
    exact = report["first_pass_exact"]
    assert exact["lines"] == 6 and exact["bitwise_equal"] == 6
    assert "fill-mask" in (c.tmp / "corpus" / "report.md").read_text()


def _check_fill_mask(c):
    report = _json(c.tmp / "fill-mask" / "report.json")
    assert set(report["sets"]) == {"long (wiki103)", "short (tbc)"}
    for part in report["sets"].values():
        assert part["lines"] == 6 and set(part["per_second"]) >= {"argmax", "independent", "fill-mask/8"}
        assert 0 <= part["answers"]["differ"] <= 1 and 0 <= part["answers_with_punctuation"]["differ"] <= 1
    assert "short (tbc)" in (c.tmp / "fill-mask" / "report.md").read_text()


def _check_fill_mask_cli(c):
    report = _json(c.tmp / "fill-mask" / "cli.json")
    assert set(report["sets"]) == {"long (wiki103)", "short (tbc)"} and report["rounds"] == 2
    for part in report["sets"].values():
        assert part["lines"] == 3 and all(len(s) == 2 for s in part["seconds"].values())
        assert set(part["seconds"]) == {"cli", "fill-mask/1", "fill-mask/8"}
    assert "CLI over fill-mask's best" in (c.tmp / "fill-mask" / "cli.md").read_text()


def _check_bench_host(c):
    report = _json(c.tmp / "host" / "report.json")
    assert sorted(row["blanks"] for row in report["calls"]) == [2, 3, 4, 6, 8]
    assert all(row["calls"] > 0 and row["sequences"] > 0 for row in report["calls"])
    assert sorted(row["blanks"] for row in report["walls"]) == [2, 3, 4, 6, 8]
    assert all(row["default_per_sequence"] > 0 and row["bare_per_sequence"] > 0 for row in report["walls"])
    assert report["environment"]["cpu"] and "host calls / sequence" in (c.tmp / "host" / "report.md").read_text()
    assert len(report["summary"]["functions"]) == 2  # re-summarized from the JSON by --markdown-only --sites 2


def _check_bench_cache(c):
    report = _json(c.tmp / "cache" / "report.json")
    assert set(report["summary"]) == {"all", "2", "3"} and report["summary"]["all"]["rows"] == 4
    for row in report["rows"]:
        assert all(
            row[side]["sequences"] > 0 and 0 < row[side]["encoder_cpu"] < row[side]["cpu"] for side in ("on", "off")
        )
    assert {row["first"] for row in report["rows"]} == {"on", "off"}  # the order alternates
    assert "cache off" in (c.tmp / "cache" / "profile-2.txt").read_text()


def _check_bleu(c):
    result = _json(c.tmp / "bleu.json")
    recorded = _json(ROOT / "eval" / "bleu-dlp-table3" / "bleu-dlp-table3.json")
    assert result["figures"] == recorded["figures"]  # the figures do not depend on the machine


def _check_calibration_suite(c):
    for half in ("tune", "check"):
        written = (ROOT / "corpora" / "calibration" / f"{half}.jsonl").read_text(encoding="utf-8")
        assert (c.tmp / f"{half}.jsonl").read_text(encoding="utf-8") == written, half


def _blind_runs(c):
    """Two rows' runs on one check template, as the reader study writes them, for ``reader_blind``."""
    from scripts.harness import load_half

    task = load_half("check")[0]
    rows = [
        {"phase": "check", "seed": 0, "id": task["id"], "row": row, "regime": "2", "texts": [f"{row} one", "two"]}
        for row in ("ours", "theirs")
    ]
    (c.tmp / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _blind_verdicts(c):
    (c.tmp / "packets" / "verdicts-r1.json").write_text(
        json.dumps({"item-01": {"prefer": "A", "keep_a": 1, "keep_b": 0}})
    )


def _check_blind(c):
    assert len(_json(c.tmp / "packets" / "packet.json")["items"]) == 1
    assert "| r1 |" in (c.tmp / "packets" / "tally.md").read_text()


def _augment_rows(c):
    """Two sentences' variants by two methods, as ``bench_augment`` writes them (the second the same on both)."""
    rows = [
        {"index": i, "source": "A dog ran .", "methods": {m: {"variants": v} for m, v in zip(("ours", "theirs"), vs)}}
        for i, vs in enumerate([(["a cat ran ."], ["A dog sat."]), (["a dog sat ."], ["a dog sat ."])])
    ]
    (c.tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _augment_verdicts(c):
    key = _json(c.tmp / "readers" / "key.json")
    prefer = "A" if key["item-001"]["A"] == "ours" else "B"  # the reader prefers ours
    verdict = {"item-001": {"prefer": prefer, "keep_a": 1, "keep_b": 0}}
    (c.tmp / "readers" / "verdicts-r1.json").write_text(json.dumps(verdict))


def _check_augment_readers(c):
    items = _json(c.tmp / "readers" / "packet.json")["items"]
    assert list(items) == ["item-001"] and "a dog sat ." in items["item-001"]["A"] + items["item-001"]["B"]
    assert "| r1 | 1 / 0 / 0 | 100% (1 of 1) |" in (c.tmp / "readers" / "tally.md").read_text()


TMP_OUT = {"OUT": "Path({tmp!r})"}


def _out(module: str, **extra: str) -> dict[str, str]:
    return {f"scripts.{module}.{k}": v for k, v in {**TMP_OUT, **extra}.items()}


SMOKES = [
    Smoke(
        "augment_readers",
        [
            _augment_rows,
            [
                "packets",
                "--rows",
                "{tmp}/rows.jsonl",
                "--ours",
                "ours",
                "--against",
                "theirs",
                "--out",
                "{tmp}/readers",
            ],
            _augment_verdicts,
            ["tally", "--ours", "ours", "--against", "theirs", "--out", "{tmp}/readers"],
        ],
        _check_augment_readers,
    ),
    Smoke(
        "augment_stream_check",
        [["--sizes", "3", "--model", "{tiny}", "--rows", "{tmp}/rows.jsonl"]],
        lambda c: "| 3 |" in c.out and _lines(c.tmp / "rows.jsonl")[0]["peak_rss_mb"] > 0 or pytest.fail(),
    ),
    Smoke(
        "auto_rule",
        [["capture", "--kind", "smc", "--blanks", "2-2", "--half", "tune", "--seeds", "0", "--shard", "0/40"]],
        lambda c: _lines(c.tmp / "captures.jsonl"),
        patch=_out("auto_rule", MODEL="Path({tiny!r})"),
    ),
    Smoke(
        "bench",
        [
            ["--models", "proxy", "--rss-model", "proxy", "--repeat", "1", "--steps", "1", "--templates", "1"]
            + ["--bleu-refs", "100", "--json"]
        ],
        _check_bench,
        slow=True,
    ),
    Smoke(
        "bench_bleu",
        [["--repeats", "1", "--direct", "1", "--out", "{tmp}/bleu"]],
        _check_bleu,
        slow=True,
    ),
    Smoke(
        "bench_augment",
        [
            ["--model", "{tiny}", "--sentences", "2", "--chunk", "1", "--n", "2"]
            + ["--methods", "confident-first,independent,nlpaug", "--out", "{tmp}/augment"]
        ],
        _check_bench_augment,
    ),
    Smoke(
        "bench_cache",
        [
            ["--model", "{tiny}", "--blanks", "2,3", "--templates", "1", "--rounds", "2", "--out", "{tmp}/cache"],
            ["--model", "{tiny}", "--profile", "2", "--out", "{tmp}/cache"],
        ],
        _check_bench_cache,
    ),
    Smoke(
        "bench_score_window",
        [
            ["--model", "{tiny}", "--texts", "3", "--tokens", "5", "--windows", "16,32", "--shift", "16,8"]
            + ["--out", "{tmp}/window"]
        ],
        _check_bench_score_window,
    ),
    Smoke(
        "bench_compute",
        [
            [
                "--before",
                "{root}",
                "--model",
                "{proxy}",
                "--suite",
                "{tmp}/suite.jsonl",
                "--seeds",
                "0",
                "--passes",
                "32",
            ]
            + ["--bf16-templates", "1", "--out", "{tmp}"]
        ],
        _check_bench_compute,
        slow=True,
    ),
    Smoke(
        "bench_corpus",
        [
            ["--model", "{tiny}", "--lines", "8", "--chunk", "4", "--default-lines", "2", "--check-lines", "6"]
            + ["--out", "{tmp}/corpus"],
            ["--model", "{tiny}", "--lines", "4", "--only-processes", "--out", "{tmp}/corpus"],
        ],
        _check_bench_corpus,
        slow=True,
    ),
    Smoke(
        "bench_families",
        [
            ["--families", "electra", "--repeats", "1", "--chains", "1", "--blanks", "1", "--length", "4"]
            + ["--out", "{tmp}/families.json"]
        ],
        lambda c: [r["family"] for r in _json(c.tmp / "families.json")["rows"]] == ["electra"] or pytest.fail(),
        slow=True,
    ),
    Smoke(
        "bench_fill_mask",
        [["--model", "{tiny}", "--lines", "6", "--chunk", "3", "--out", "{tmp}/fill-mask"]],
        _check_fill_mask,
    ),
    Smoke(
        "bench_fill_mask",
        [["--cli", "--model", "{tiny}", "--lines", "3", "--rounds", "2", "--out", "{tmp}/fill-mask"]],
        _check_fill_mask_cli,
        slow=True,
        id="bench_fill_mask-cli",
    ),
    Smoke(
        "bench_gpu",
        [
            ["--proxy", "--templates", "1", "--batch", "1", "--batch-repeats", "1", "--min-bare-seconds", "0.01"]
            + ["--threads", "1", "--out", "{tmp}/cpu-proxy"]
        ],
        lambda c: (
            (
                _json(c.tmp / "cpu-proxy.json")["settings"]["proxy"]
                and (c.tmp / "cpu-proxy.md").read_text().startswith("# `scripts.bench_gpu` on cpu")
            )
            or pytest.fail()
        ),
        slow=True,
    ),
    Smoke(
        "bench_gpu",
        [["--augment", "2", "--model", "{tiny}", "--out", "{tmp}/gpu-augment"]],
        _check_gpu_augment,
        id="bench_gpu-augment",
    ),
    Smoke(
        "bench_host",
        [
            ["--model", "{tiny}", "--templates", "1", "--rounds", "1", "--sites", "5", "--out", "{tmp}/host"],
            ["--markdown-only", "--sites", "2", "--out", "{tmp}/host"],
        ],
        _check_bench_host,
    ),
    Smoke(
        "bench_layout",
        [["--before", "{root}", "--rounds", "1", "--templates", "1", "--model", "{proxy}", "--out", "{tmp}/layout.md"]],
        lambda c: "after / before: median" in (c.tmp / "layout.md").read_text() or pytest.fail(),
        slow=True,
    ),
    Smoke(
        "bench_startup",
        [
            ["--base", "{root}", "--new", "{root}", "--pairs", "1", "--stages", "1", "--model", "{tiny}"]
            + ["--out", "{tmp}/startup"]
        ],
        lambda c: _json(c.tmp / "startup.json")["same_fillings"] or pytest.fail(),
        slow=True,
    ),
    Smoke(
        "bf16_cpu",
        [["--model", "{tiny}", "--templates", "1", "--seeds", "1", "--budget", "100", "--out", "{tmp}/runs.jsonl"]],
        lambda c: "same top-5 set: " in c.out and len(_lines(c.tmp / "runs.jsonl")) == 1 or pytest.fail(),
    ),
    Smoke(
        "calibration_suite",
        [["--tokenizer", "{dev}", "--out", "{tmp}"]],
        _check_calibration_suite,
    ),
    Smoke(
        "constraints",
        [
            ["--model", "{tiny}", "--out", "{tmp}", "--keywords", "0", "--rewrites", "1", "--changes", "0.2"]
            + ["--rewrite-chains", "2"]
        ],
        lambda c: "rewrite" in (c.tmp / "report.md").read_text().lower() or pytest.fail(),
        slow=True,
    ),
    Smoke(
        "corpus_stream_check",
        [
            ["--reader-lines", "10", "--command-lines", "10", "--repeats", "1", "--skip", "processes"]
            + ["--model", "{tiny}", "--out", "{tmp}"]
        ],
        lambda c: (c.tmp / "report.md").is_file() or pytest.fail(),
    ),
    Smoke(
        "default_runs",
        [
            ["--model", "{tiny}", "--limit", "3", "--out", "{tmp}/runs.json"],
            ["--model", "{tiny}", "--limit", "3", "--check", "{tmp}/runs.json"],
        ],
        lambda c: "3 of 3 runs bit-identical" in c.out or pytest.fail(),
    ),
    Smoke(
        "doubled_words",
        [["templates", "--count", "2", "--templates", "{tmp}/templates.txt"]],
        lambda c: len((c.tmp / "templates.txt").read_text().splitlines()) == 2 or pytest.fail(),
    ),
    Smoke(
        "equal_compute",
        [
            ["tune", "--model", "{tiny}", "--out", "{tmp}", "--seeds", "0", "--templates", "2-4=1,6-10=0"]
            + ["--grid", "gibbs:4x2:confident-first", "--tune-orders", "confident-first"],
            ["report", "--out", "{tmp}"],
        ],
        lambda c: (c.tmp / "report.md").is_file() and _lines(c.tmp / "runs.jsonl") or pytest.fail(),
    ),
    Smoke(
        "frontier",
        [
            ["--model", "{tiny}", "--out", "{tmp}", "--limit", "1", "--temperatures", "1", "--rows", "left-to-right"]
            + ["--equal-sequences", "independent"]
        ],
        lambda c: "auto@T=1 (default)" in (c.tmp / "report.md").read_text() or pytest.fail(),
    ),
    Smoke(
        "keep_rule",
        [["capture", "--half", "check", "--seeds", "0", "--shard", "0/30", "--blanks", "5-5"]],
        lambda c: len(_lines(c.tmp / "captures-check.jsonl")) == 1 or pytest.fail(),
        patch=_out("keep_rule", MODEL="Path({tiny!r})"),
    ),
    Smoke(
        "load_serve",
        [["--model", "{tiny}", "--clients", "1", "--requests", "6", "--page-tries", "0", "--out", "{tmp}/serve-load"]],
        lambda c: (
            ((r := _json(c.tmp / "serve-load.json"))["lost"] == 0 and r["mixed_up"] == 0 and r["alive_after"])
            or pytest.fail()
        ),
        slow=True,
    ),
    Smoke(
        "long_texts",
        [["--words", "5", "12", "--out", "{tmp}"]],
        lambda c: len((c.tmp / "wiki103-12w.txt").read_text().split()) == 12 or pytest.fail(),
    ),
    Smoke(
        "particles",
        [["tune", "--templates", "1", "--seeds", "0", "--regime", "2-4", "--grid", "smc"]],
        lambda c: {r["row"] for r in _lines(c.tmp / "runs.jsonl")} >= {"smc"} or pytest.fail(),
        patch=_out(
            "particles",
            RUNS="scripts.harness.Rows(Path({tmp!r}) / 'runs.jsonl', scripts.harness.run_key)",
            DEV_MODEL="Path({tiny!r})",
        ),
    ),
    Smoke(
        "promises",
        [
            ["--model", "{tiny}", "--limit", "1", "--targets", "include,budget,huge", "--methods", "auto"]
            + ["--budgets", "50", "--out", "{tmp}"]
        ],
        lambda c: _json(c.tmp / "report.json")["environment"]["cpu"] or pytest.fail(),
        slow=True,
    ),
    Smoke(
        "reader_blind",
        [
            _blind_runs,
            ["packets", "--row", "ours", "--against", "theirs", "--out", "{tmp}/packets"],
            _blind_verdicts,
            ["tally", "--row", "ours", "--against", "theirs", "--out", "{tmp}/packets"],
        ],
        _check_blind,
        patch={"scripts.reader_blind.READER": "Path({tmp!r})"},
    ),
    Smoke(
        "reader_study",
        [["tune", "--templates", "1", "--seeds", "0", "--rows", "2=auto", "--orders", "confident-first"]],
        lambda c: {r["row"] for r in _lines(c.tmp / "runs.jsonl")} >= {"auto"} or pytest.fail(),
        patch=_out("reader_study", MODEL="Path({tiny!r})"),
    ),
    Smoke(
        "search_stop",
        [["run", "--label", "smoke", "--half", "tune", "--seeds", "0"]],
        lambda c: len(_lines(c.tmp / "runs-smoke.jsonl")) == 1 or pytest.fail(),
        patch=_out(
            "search_stop",
            load_half="lambda half, f=scripts.harness.load_half: [t for t in f(half) if len(t['removed']) == 2][:1]",
        )
        | {"scripts.reader_study.MODEL": "Path({tiny!r})"},
    ),
    Smoke(
        "spans",
        [["--model", "{proxy}", "--tasks", "2", "--full-every", "2", "--out", "{tmp}"]],
        lambda c: (c.tmp / "report.md").is_file() and len(_lines(c.tmp / "tasks.jsonl")) == 2 or pytest.fail(),
        slow=True,
    ),
    Smoke(
        "spans_calibration",
        [
            ["--model", "{proxy}", "--tasks", "2", "--draws", "1", "--sampler-tasks", "1", "--chains", "4"]
            + ["--steps", "2", "--out", "{tmp}/calibration.md"]
        ],
        lambda c: (c.tmp / "calibration.md").is_file() or pytest.fail(),
    ),
]


@pytest.fixture(scope="module")
def proxy_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """The harness's proxy BERT (512 positions: span templates fit) saved as a checkpoint directory."""
    path = tmp_path_factory.mktemp("proxy")
    load_model("proxy", vocab_size=bert_tokenizer.vocab_size).save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return path


def test_the_table_names_every_script():
    scripts = {p.stem for p in (ROOT / "scripts").glob("*.py")} - HELPERS
    assert {s.module for s in SMOKES} == scripts


@pytest.mark.parametrize(
    "smoke", [pytest.param(s, marks=[pytest.mark.slow] if s.slow else [], id=s.id or s.module) for s in SMOKES]
)
def test_script_runs_small(smoke: Smoke, tmp_path, tiny_model_dir, proxy_dir, dev_model_path):
    names = {"tmp": str(tmp_path), "tiny": str(tiny_model_dir), "proxy": str(proxy_dir), "dev": str(dev_model_path)}
    names["root"] = str(ROOT)
    (tmp_path / "suite.jsonl").write_text(TEMPLATE + "\n")
    ctx = SimpleNamespace(tmp=tmp_path, out="")
    patch = {k: v.format(**names) for k, v in smoke.patch.items()}
    for step in smoke.steps:
        if callable(step):
            step(ctx)
        else:
            ctx.out = run(smoke.module, *(a.format(**names) for a in step), patch=patch)
    smoke.check(ctx)
