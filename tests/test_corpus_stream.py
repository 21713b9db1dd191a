"""A corpus filled into OUT.jsonl (``infill sample -f FILE --out OUT``): records in input order, each what its
template gets alone, a run killed with SIGKILL and resumed giving OUT byte for byte, OUT locked while written (a
second run refused at once, before torch is imported), another input refused, the input read lazily, stdin's bad
lines as error records, two torchrun processes giving one process's OUT; and the Python calls for iterables and
datasets."""

from __future__ import annotations

import io
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
import torch.distributed

from infill import Infiller
from infill.cli import main
from infill.cli import sample as sample_cli
from infill.onepass.methods import ONE_PASS
from infill.pipeline import corpus

ROOT = Path(__file__).resolve().parents[1]
WORDS = "river city war music story garden morning letter".split()
LONG = 2 * corpus.CHUNK + 22  # three chunks in one process, two rounds of two


def _corpus(path: Path, n: int) -> Path:
    lines = [
        f"the {w} [MASK] near the [MASK] ." if i % 3 else f"a [MASK] {w} ."
        for i, w in zip(range(n), itertools.cycle(WORDS))
    ]
    lines.insert(2, "")  # an empty line: skipped, and the line numbers still count it
    lines.insert(4, json.dumps({"template": "she [MASK] it .", "seed": 5}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _command(model: Path, source, out: Path, sampler: str = "gibbs-mh") -> list[str]:
    return [
        "sample",
        str(source) if source == "-" else "-f",
        *([] if source == "-" else [str(source)]),
        "--out",
        str(out),
        "--model",
        str(model),
        "--sampler",
        sampler,
        *([] if sampler in ONE_PASS else ["--steps", "2"]),  # a one-pass method takes no steps
        "-n",
        "3",
        "--top",
        "2",
        "-q",
    ]


def _process(argv: list[str], launcher: tuple = ()) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, *launcher, "-m", "infill", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def test_records_come_in_input_order_each_what_its_template_gets_alone(tmp_path, tiny_model_dir, capsys):
    source = _corpus(tmp_path / "in.txt", 5)
    assert main(_command(tiny_model_dir, source, tmp_path / "out.jsonl")) == 0
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 4, 5, 6, 7]
    assert records[3]["template"] == "she [MASK] it ." and records[3]["diagnostics"]["seed"] == 5
    assert records[0]["diagnostics"]["seed"] == 0  # lines without a seed: seed 0, so a resumed run goes on alike
    assert all(len(r["fillings"]) == 2 and "seconds" not in r["diagnostics"] for r in records)
    assert capsys.readouterr().out == ""
    infiller = Infiller(str(tiny_model_dir))
    for r in records:  # the chunk's templates share calls of the batch API; each gets what it gets alone
        alone = infiller.sample(r["template"], "gibbs-mh", 3, 2, 2, r["diagnostics"]["seed"])
        assert r["fillings"] == corpus.fillings(alone, 2)


@pytest.mark.slow
def test_a_run_killed_at_a_random_line_and_resumed_gives_the_uninterrupted_out(tmp_path, tiny_model_dir):
    source = _corpus(tmp_path / "in.txt", LONG)
    whole, killed = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    assert main(_command(tiny_model_dir, source, whole, "independent")) == 0
    expected = whole.read_bytes()
    at = random.Random(0).randrange(3, LONG - corpus.CHUNK)
    process = _process(_command(tiny_model_dir, source, killed, "independent"))
    while process.poll() is None and (not killed.exists() or killed.read_bytes().count(b"\n") < at):
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert 0 < killed.read_bytes().count(b"\n") < expected.count(b"\n")  # killed part way
    assert Path(f"{killed}.lock").exists()  # left behind by the kill: the OS lock went with the process
    with open(killed, "ab") as f:
        f.write(b'{"line": 99, "template": "a half-written rec')  # as a kill in the middle of a write leaves it
    assert main(_command(tiny_model_dir, source, killed, "independent")) == 0
    assert killed.read_bytes() == expected


HOLD = """import sys
from infill.pipeline.corpus import Out
with Out(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_second_writer_of_a_locked_out_fails_in_one_line(tmp_path, tiny_model_dir, capsys):
    source, out = _corpus(tmp_path / "in.txt", 3), tmp_path / "out.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == "held\n"
        assert main(_command(tiny_model_dir, source, out)) == 2
    finally:
        holder.communicate("")
    err = capsys.readouterr().err.strip()
    assert "is being written by another run" in err and len(err.splitlines()) == 1
    assert out.read_bytes() == b""
    assert main(_command(tiny_model_dir, source, out)) == 0  # the lock goes with the run that held it
    assert out.read_bytes().count(b"\n") == 4


REFUSED = """import sys
from infill.cli import main
code = main(sys.argv[1:])
print(code, "torch" in sys.modules)
"""


def refused_at_once(out: Path, argv: list[str]) -> None:
    """``infill ARGV`` run while another process holds OUT is refused in one line, before torch is imported, in
    under 3 s for the whole process (Python's start-up included: generous, for a loaded machine)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == "held\n"
        start = time.perf_counter()
        refused = subprocess.run([sys.executable, "-c", REFUSED, *argv], capture_output=True, text=True, cwd=ROOT)
        seconds = time.perf_counter() - start
    finally:
        holder.communicate("")
    assert refused.stdout.split() == ["2", "False"]
    assert len(refused.stderr.strip().splitlines()) == 1 and "is being written by another run" in refused.stderr
    assert seconds < 3


def test_a_locked_out_is_refused_at_once_before_file_is_checked_or_torch_imported(tmp_path, tiny_model_dir):
    source, out = _corpus(tmp_path / "in.txt", 3), tmp_path / "out.jsonl"
    source.write_text(source.read_text() + "no blank here\n")  # a bad line: FILE's check would fail on it
    refused_at_once(out, _command(tiny_model_dir, source, out))


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


def test_a_bad_line_of_a_file_fails_before_anything_is_written(tmp_path, tiny_model_dir, capsys):
    source = _corpus(tmp_path / "in.txt", 4)
    source.with_name("good.txt").write_text(source.read_text())
    source.write_text(source.read_text() + "no blank here\n")
    assert main(_command(tiny_model_dir, source, tmp_path / "out.jsonl")) == 2
    err = capsys.readouterr().err
    assert f"{source}:7:" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "out.jsonl").exists()
    assert main(_command(tiny_model_dir, source.with_name("good.txt"), tmp_path / "no" / "out.jsonl")) == 2
    assert "cannot write --out" in capsys.readouterr().err and not (tmp_path / "no").exists()
    assert main(["sample", "a [MASK] .", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "--out fills the lines of --file FILE or of stdin" in capsys.readouterr().err


def test_stdin_bad_lines_become_error_records_and_the_run_goes_on(tmp_path, tiny_model_dir, monkeypatch, capsys):
    lines = "a [MASK] river .\nno blank here\n{not json\n\nthe [MASK] city .\n"
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    assert main(_command(tiny_model_dir, "-", out)[:-1]) == 0  # progress on: a line per chunk, no total known
    assert "template 4 done" in capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3, 5]
    assert "fillings" in records[0] and "fillings" in records[3]
    assert records[1]["template"] == "no blank here" and "[MASK]" in records[1]["error"]
    assert records[2]["error"].startswith("invalid JSON")
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines + "the [MASK] war .\n"))  # resumed: only the new line
    written = out.read_bytes()
    assert main(_command(tiny_model_dir, "-", out)) == 0
    assert out.read_bytes().startswith(written) and json.loads(out.read_text().splitlines()[-1])["line"] == 6


def test_the_input_is_read_as_it_is_filled(tmp_path, tiny_model_dir, monkeypatch):
    source = _corpus(tmp_path / "in.txt", LONG)
    passes, seen = [], []
    file_lines, write = sample_cli.file_lines, corpus.Out.write

    def counted(path):  # a count of the lines read per pass over FILE
        passes.append(0)
        for line in file_lines(path):
            passes[-1] += 1
            yield line

    def written(self, entries):
        seen.append(passes[-1])
        write(self, entries)

    monkeypatch.setattr(sample_cli, "file_lines", counted)
    monkeypatch.setattr(corpus.Out, "write", written)
    assert main(_command(tiny_model_dir, source, tmp_path / "out.jsonl", "independent")) == 0
    assert passes[:2] == [LONG + 2] * 2  # checked whole first, twice, as it goes
    assert len(seen) == 3 and seen[0] <= corpus.CHUNK + 3  # then filled a chunk at a time as it is read


def test_the_shards_take_a_round_at_a_time_and_give_it_in_input_order():
    from infill.pipeline.distributed import World

    def endless():
        for i in itertools.count():
            taken.append(i)
            yield i

    taken = []
    rounds = corpus.shards(endless(), lambda part: [10 * i for i in part], World(), chunk=4)
    assert next(rounds) == [0, 10, 20, 30] and len(taken) == 4
    assert next(rounds) == [40, 50, 60, 70] and len(taken) == 8


def test_rank_zero_merges_a_round_of_two_ranks_into_input_order():
    class TwoRanks:  # rank 0 of two; rank 1's part of a round of 0, 1, 2... is rank 0's plus one
        rank, size = 0, 2

        @staticmethod
        def gather(part):
            return [part, [x + 1 for x in part]]

    assert list(corpus.shards(range(12), list, TwoRanks(), chunk=3)) == [list(range(6)), list(range(6, 12))]


@pytest.mark.slow
def test_two_torchrun_processes_write_one_process_out(tmp_path, tiny_model_dir):
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    source = _corpus(tmp_path / "in.txt", LONG)
    assert main(_command(tiny_model_dir, source, tmp_path / "one.jsonl", "independent")) == 0
    process = _process(
        _command(tiny_model_dir, source, tmp_path / "two.jsonl", "independent"),
        ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"),
    )
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-2000:]
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_a_bad_line_in_the_second_ranks_chunk_fails_both_ranks_before_anything_is_written(tmp_path, tiny_model_dir):
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    source = _corpus(tmp_path / "in.txt", LONG)
    lines = source.read_text().splitlines()
    lines[corpus.CHUNK + 10] = "the [MASK] " + "word " * 80  # too long for the model: the tokenizer's check finds it
    source.write_text("\n".join(lines) + "\n")
    where = f"{source}:{corpus.CHUNK + 11}:"  # in the second chunk of templates: rank 1's to check
    for name, launcher in (
        ("one", ()),
        ("two", ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2")),
    ):
        process = _process(_command(tiny_model_dir, source, tmp_path / f"{name}.jsonl", "independent"), launcher)
        _, err = process.communicate(timeout=300)
        assert process.returncode != 0 and where in err, err[-2000:]
        assert not (tmp_path / f"{name}.jsonl").exists()


FILL_ON_EVERY_RANK = """import json, sys
from pathlib import Path
from infill import Infiller
from infill.pipeline.distributed import close_world, init_world
from infill.pipeline.corpus import fill_iterable
world = init_world("cpu")[0]
templates = [f"the {w} [MASK] near the [MASK] ." for w in sys.argv[3:]] * 3
got = [r.texts for r in fill_iterable(Infiller(sys.argv[1]), templates, world, sampler="independent", top=2, seed=0)]
(Path(sys.argv[2]) / f"rank{world.rank}.json").write_text(json.dumps(got))
close_world(world)
"""


@pytest.mark.slow
def test_fill_iterable_under_torchrun_gives_every_rank_every_result(tmp_path, tiny_model_dir):
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    script = tmp_path / "fill.py"
    script.write_text(FILL_ON_EVERY_RANK)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(script),
            str(tiny_model_dir),
            str(tmp_path),
            *WORDS,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    templates = [f"the {w} [MASK] near the [MASK] ." for w in WORDS] * 3
    expected = [
        r.texts for r in Infiller(str(tiny_model_dir)).sample_many(templates, sampler="independent", top=2, seed=0)
    ]
    assert [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)] == [expected, expected]


def test_an_iterable_and_a_dataset_get_what_sample_many_gives(tiny_model_dir):
    datasets = pytest.importorskip("datasets")
    infiller = Infiller(str(tiny_model_dir))
    templates = [f"the {w} [MASK] near the [MASK] ." for w in WORDS[:3]] + ["a [MASK] ."]
    options = dict(sampler="gibbs-mh", steps=2, num_samples=3, top=2, seed=0)
    expected = infiller.sample_many(templates, **options)
    got = list(corpus.fill_iterable(infiller, iter(templates), **options))
    assert [r.texts for r in got] == [r.texts for r in expected]
    endless = itertools.chain(templates[:1] * corpus.CHUNK, iter(lambda: pytest.fail("read past a chunk"), None))
    assert next(corpus.fill_iterable(infiller, endless, **options)).texts == expected[0].texts
    filled = corpus.fill_dataset(infiller, datasets.Dataset.from_dict({"template": templates}), **options)
    assert filled["fillings"] == [r.texts for r in expected]
    assert filled["energies"] == [[s.energy for s in r.samples] for r in expected]
    with pytest.raises(Exception, match="no column 'text'"):
        corpus.fill_dataset(infiller, datasets.Dataset.from_dict({"template": templates}), column="text", **options)
