"""Runs that are interrupted or overlap: ``infill eval`` takes an exclusive lock on ``--out`` and keeps
its finished units on Ctrl-C; Ctrl-C ends every long subcommand with one line and exit status 130."""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from infill.cli import main
from infill.errors import InfillError
from infill.evaluation.store import UnitStore

WORDS = (
    "the old man walked slowly along the river and sat down on a bench near the small house "
    "while his dog ran after birds in the cold morning light"
).split()

PROTOCOL = """\
name = "reliability"
seed = 1

[[corpora]]
name = "plain"
path = "corpus.txt"
convention = "plain"
sentences = {sentences}

[selection]
min_words = 15
max_words = 25

[mask]
count = 2

[sampling]
samplers = ["gibbs"]
chains = 2
steps = {steps}
top = 1
"""

HOLD_LOCK = """\
import sys
from infill.evaluation.store import lock_directory
lock_directory(sys.argv[1])
print("locked", flush=True)
sys.stdin.read()
"""


CORPUS = "".join(" ".join(WORDS[i : i + 16]) + "\n" for i in range(12))  # 12 sentences of 16 words


def write_protocol(tmp_path: Path, sentences: int = 2, steps: int = 2) -> Path:
    """A protocol over ``CORPUS`` (plain text)."""
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    path = tmp_path / "protocol.toml"
    path.write_text(PROTOCOL.format(sentences=sentences, steps=steps), encoding="utf-8")
    return path


def _infill(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "infill", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        **kwargs,
    )


def _units(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "units.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_busy_out_stops_a_second_run_at_once_and_a_killed_holder_never_blocks(tmp_path, tiny_model_dir, capsys):
    protocol, out = write_protocol(tmp_path), tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(out)], text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        second = _infill("eval", str(protocol), "--out", str(out), "--model", str(tiny_model_dir))
        _, err = second.communicate(timeout=120)
        with pytest.raises(InfillError, match="is in use by another infill eval"):  # the API's store too
            UnitStore(out, {"protocol": "reliability"})
    finally:
        holder.kill()  # SIGKILL: its lock file stays behind, its lock goes
        holder.wait()
    assert second.returncode == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{out} is in use by another infill eval (process {holder.pid})" in err
    assert sorted(os.listdir(out)) == [".lock"]  # the second run wrote nothing
    assert main(["eval", str(protocol), "--out", str(out), "--model", str(tiny_model_dir), "--no-progress"]) == 0
    assert len(_units(out)) == 2
    capsys.readouterr()


def test_ctrl_c_during_eval_is_one_line_exit_130_and_keeps_the_finished_units(tmp_path, tiny_model_dir, capsys):
    protocol, out = write_protocol(tmp_path, sentences=3, steps=150), tmp_path / "out"
    run = _infill("eval", str(protocol), "--out", str(out), "--model", str(tiny_model_dir), "--no-progress")
    try:
        deadline = time.monotonic() + 120
        while not ((out / "units.jsonl").exists() and _units(out)) and time.monotonic() < deadline:
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        stdout, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert (run.returncode, stdout) == (130, "")
    assert err == f"infill: interrupted; finished units are kept in {out}; the same command resumes\n"
    finished = _units(out)
    assert 1 <= len(finished) < 3 and not (out / "report.md").exists()
    assert main(["eval", str(protocol), "--out", str(out), "--model", str(tiny_model_dir), "--no-progress"]) == 0
    resumed = _units(out)
    assert resumed[: len(finished)] == finished  # kept, not redone
    assert len({(u["sentence_id"], u["sampler"]) for u in resumed}) == len(resumed) == 3
    capsys.readouterr()


LONG_TEXT = "".join(f"Sentence number {i} tells something new about the topic at hand. " for i in range(12))


@pytest.mark.parametrize(
    "argv",
    [
        ["sample", "a [MASK] day [MASK] .", "--model", "{model}", "--sampler", "gibbs", "--steps", "1000000", "-q"],
        ["summarize", "{dir}/doc.txt", "--sampler", "mana", "--steps", "1000000", "--sentences", "2"],
        [
            "eval-summarization",
            "--limit",
            "1",
            "--methods",
            "una",
            "--steps",
            "1000000",
            "--output",
            "{dir}/r",
            "--quiet",
        ],
    ],
    ids=["sample", "summarize", "eval-summarization"],
)
def test_ctrl_c_ends_a_long_run_with_one_line_and_exit_130(argv, tmp_path, tiny_model_dir, capsys):
    (tmp_path / "doc.txt").write_text(LONG_TEXT, encoding="utf-8")
    argv = [a.replace("{dir}", str(tmp_path)).replace("{model}", str(tiny_model_dir)) for a in argv]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    ctrl_c = threading.Timer(4, _thread.interrupt_main)
    ctrl_c.start()
    try:
        code = main(argv)
    finally:
        ctrl_c.cancel()
        signal.signal(signal.SIGINT, previous)
    assert (code, capsys.readouterr()) == (130, ("", "infill: interrupted\n"))
