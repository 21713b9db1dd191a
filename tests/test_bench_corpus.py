"""scripts/bench_corpus.py smoke-run at a tiny size on the tiny random BERT, so that the benchmark cannot rot."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_corpus_benchmark_runs_end_to_end(tiny_model_dir, tmp_path):
    out = tmp_path / "report"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(ROOT / "scripts" / "bench_corpus.py"), "--model", str(tiny_model_dir),
               "--lines", "8", "--chunk", "4", "--default-lines", "2", "--check-lines", "6", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["lines"] == 8 and set(report["one_blank_per_second"]) >= {"argmax", "independent", "fill-mask/64"}
    assert set(report["two_blank_per_second"]) == {"confident-first", "auto"}
    assert report["processes"]["same_out"] and report["processes"]["processes"] == 2
    exact = report["first_pass_exact"]
    assert exact["lines"] == 6 and exact["bitwise_equal"] == 6
    assert "fill-mask" in (out / "report.md").read_text()
