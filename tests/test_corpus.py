"""A corpus filled into OUT.jsonl (``infill sample -f FILE --out OUT``): records in input order, a run killed with
SIGKILL and resumed giving OUT byte for byte, OUT locked while written, another input refused, the file read
lazily, two torchrun processes giving one process's OUT; and the Python calls for iterables and datasets."""
from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infill import Infiller
from infill.cli import main
from infill.cli.sample import iter_jobs
from infill.pipeline import corpus

ROOT = Path(__file__).resolve().parents[1]
WORDS = "river city war music story garden morning letter".split()


def _corpus(path: Path, n: int) -> Path:
    lines = [f"the {w} [MASK] near the [MASK] ." if i % 3 else f"a [MASK] {w} ." for i, w in
             zip(range(n), itertools.cycle(WORDS))]
    lines.insert(2, "")  # an empty line: skipped, and the line numbers still count it
    lines.insert(4, json.dumps({"template": "she [MASK] it .", "seed": 5}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _command(model: Path, source: Path, out: Path) -> list[str]:
    return ["sample", "-f", str(source), "--out", str(out), "--model", str(model), "--sampler", "gibbs-mh",
            "--steps", "2", "-n", "3", "--top", "2", "-q"]


def _process(argv: list[str], launcher: tuple = ()) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, *launcher, "-m", "infill", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def test_records_come_in_input_order_with_their_line_numbers(tmp_path, tiny_model_dir, capsys):
    source = _corpus(tmp_path / "in.txt", 5)
    assert main(_command(tiny_model_dir, source, tmp_path / "out.jsonl")) == 0
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 4, 5, 6, 7]
    assert records[3]["template"] == "she [MASK] it ." and records[3]["diagnostics"]["seed"] == 5
    assert records[0]["diagnostics"]["seed"] == 0  # lines without a seed: seed 0, so a resumed run goes on alike
    assert all(len(r["fillings"]) == 2 and "seconds" not in r["diagnostics"] for r in records)
    assert capsys.readouterr().out == ""


@pytest.mark.slow
def test_a_run_killed_at_a_random_line_and_resumed_gives_the_uninterrupted_out(tmp_path, tiny_model_dir):
    source = _corpus(tmp_path / "in.txt", 40)
    whole, killed = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    assert main(_command(tiny_model_dir, source, whole)) == 0
    expected = whole.read_bytes()
    at = random.Random(0).randrange(3, 30)
    process = _process(_command(tiny_model_dir, source, killed))
    while process.poll() is None and (not killed.exists() or killed.read_bytes().count(b"\n") < at):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert 0 < killed.read_bytes().count(b"\n") < expected.count(b"\n")  # killed part way
    with open(killed, "ab") as f:
        f.write(b'{"line": 99, "template": "a half-written rec')  # as a kill in the middle of a write leaves it
    assert main(_command(tiny_model_dir, source, killed)) == 0
    assert killed.read_bytes() == expected


def test_out_is_locked_while_a_run_writes_it(tmp_path, tiny_model_dir, capsys):
    source, out = _corpus(tmp_path / "in.txt", 3), tmp_path / "out.jsonl"
    with corpus.Out(str(out)):
        assert main(_command(tiny_model_dir, source, out)) == 2
    err = capsys.readouterr().err.strip()
    assert "is being written by another run" in err and len(err.splitlines()) == 1
    assert out.read_bytes() == b""
    assert main(_command(tiny_model_dir, source, out)) == 0  # the lock goes with the run that held it


def test_an_out_of_another_input_is_refused(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "out.jsonl"
    assert main(_command(tiny_model_dir, _corpus(tmp_path / "a.txt", 3), out)) == 0
    written = out.read_bytes()
    (tmp_path / "b.txt").write_text("the [MASK] is green .\nthe [MASK] is red .\nthe [MASK] is blue .\n" * 2)
    assert main(_command(tiny_model_dir, tmp_path / "b.txt", out)) == 2
    assert "holds the fillings of another input" in capsys.readouterr().err and out.read_bytes() == written
    out.write_text("not a record\n")
    assert main(_command(tiny_model_dir, tmp_path / "b.txt", out)) == 2
    assert "line 1 is not a record" in capsys.readouterr().err


def test_a_bad_line_fails_before_anything_is_written(tmp_path, tiny_model_dir, capsys):
    source = _corpus(tmp_path / "in.txt", 4)
    source.write_text(source.read_text() + "no blank here\n")
    assert main(_command(tiny_model_dir, source, tmp_path / "out.jsonl")) == 2
    err = capsys.readouterr().err
    assert f"{source}:7:" in err and not (tmp_path / "out.jsonl").exists()
    assert main(["sample", "a [MASK] .", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "--out fills the lines of --file FILE" in capsys.readouterr().err


def test_the_input_is_read_as_it_is_needed():
    lines = itertools.chain(["a [MASK] ."], itertools.repeat("the [MASK] ."))  # endless: a list would never end
    jobs = iter_jobs(lines, "endless", {})
    assert [job.line for job in itertools.islice(jobs, 3)] == [1, 2, 3]


@pytest.mark.slow
def test_two_torchrun_processes_write_one_process_out(tmp_path, tiny_model_dir):
    source = _corpus(tmp_path / "in.txt", 7)
    assert main(_command(tiny_model_dir, source, tmp_path / "one.jsonl")) == 0
    process = _process(_command(tiny_model_dir, source, tmp_path / "two.jsonl"),
                       ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"))
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-2000:]
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_an_iterable_and_a_dataset_get_what_sample_many_gives(tiny_model_dir):
    datasets = pytest.importorskip("datasets")
    infiller = Infiller(str(tiny_model_dir))
    templates = [f"the {w} [MASK] near the [MASK] ." for w in WORDS[:3]] + ["a [MASK] ."]
    options = dict(sampler="gibbs-mh", steps=2, num_samples=3, top=2, seed=0)
    expected = infiller.sample_many(templates, **options)
    got = list(corpus.fill_iterable(infiller, iter(templates), **options))
    assert [r.texts for r in got] == [r.texts for r in expected]
    filled = corpus.fill_dataset(infiller, datasets.Dataset.from_dict({"template": templates}), **options)
    assert filled["fillings"] == [r.texts for r in expected]
    assert filled["energies"] == [[s.energy for s in r.samples] for r in expected]
    with pytest.raises(Exception, match="no column 'text'"):
        corpus.fill_dataset(infiller, datasets.Dataset.from_dict({"template": templates}), column="text", **options)
