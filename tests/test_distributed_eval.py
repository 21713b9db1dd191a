"""``torchrun --nproc-per-node 2 -m infill eval`` on CPU (gloo) gives the single-process report."""

import json
import os
import subprocess
import sys

from test_evaluation import _protocol

TIMING = {"seconds", "wall_seconds"}


def _eval(args, out, launcher):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, *launcher, "-m", "infill", "eval", *args, "--out", str(out), "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _without_timing(value):
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def _units(out):
    units = [json.loads(line) for line in (out / "units.jsonl").read_text().splitlines()]
    return sorted((_without_timing(u) for u in units), key=lambda u: (u["sentence_id"], u["sampler"]))


def test_two_processes_give_the_single_process_report(tmp_path, tiny_model_dir):
    path = _protocol(tmp_path, wiki=2, tbc=1)
    args = [str(path), "--model", str(tiny_model_dir), "--samplers", "gibbs,dmala"]
    _eval(args, tmp_path / "one", [])
    two = _eval(args, tmp_path / "two", ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"])
    assert two.stdout.count("wrote") == 1  # only rank 0 reports
    assert len(_units(tmp_path / "one")) == 6
    assert _units(tmp_path / "two") == _units(tmp_path / "one")
    reports = [json.loads((tmp_path / name / "report.json").read_text()) for name in ("one", "two")]
    assert _without_timing(reports[1]) == _without_timing(reports[0])
