"""A corpus augmented into OUT.jsonl (``infill augment -f FILE --out OUT``) with ``infill sample --out``'s
guarantees: the same OUT for any chunk size and for two torchrun processes, a run killed with SIGKILL and resumed
giving OUT byte for byte, OUT locked while written (a second run refused at once, before torch is imported),
another input refused, FILE checked whole before anything is written, stdin's bad lines as error records."""

from __future__ import annotations

import io
import json
import random
import signal
import sys
import time
from pathlib import Path

import pytest
import torch.distributed
from test_augment import SENTENCES
from test_corpus_stream import _process, refused_at_once

from infill import Infiller
from infill.cli import main
from infill.pipeline import corpus

LONG = 2 * corpus.CHUNK + 10  # three chunks in one process, two rounds of two
TWO = ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2")


def _corpus(path: Path, n: int) -> Path:
    """``n`` sentences (numbered past the first seven, so each is its own), an empty line among them."""
    lines = [s if k < len(SENTENCES) else f"{k}. {s}" for k, s in zip(range(n), SENTENCES * (n // 7 + 1))]
    lines.insert(2, "")  # skipped, and the line numbers still count it
    path.write_text("\n".join(lines) + "\n")
    return path


def _command(model: Path, source, out: Path) -> list[str]:
    given = ["-"] if source == "-" else ["-f", str(source)]
    return ["augment", *given, "--out", str(out), "--model", str(model), "-n", "2", "--no-pll", "-q"]


def test_a_chunk_of_one_seven_or_sixty_four_gives_the_same_out_each_record_what_its_sentence_gets_alone(
    tmp_path, tiny_model_dir, monkeypatch
):
    source, outs = _corpus(tmp_path / "in.txt", 16), []
    for chunk in (1, 7, 64):
        monkeypatch.setattr(corpus, "CHUNK", chunk)
        outs.append(tmp_path / f"out-{chunk}.jsonl")
        assert main(_command(tiny_model_dir, source, outs[-1])) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes() == outs[2].read_bytes()
    records = [json.loads(line) for line in outs[0].read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, *range(4, 18)]
    alone = Infiller(str(tiny_model_dir)).augment(records[5]["source"], n=2, pll=False)
    assert records[5] == {"line": 7, **alone.to_dict()}


@pytest.mark.slow
def test_two_torchrun_processes_write_one_process_out(tmp_path, tiny_model_dir):
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    source = _corpus(tmp_path / "in.txt", LONG)
    assert main(_command(tiny_model_dir, source, tmp_path / "one.jsonl")) == 0
    process = _process(_command(tiny_model_dir, source, tmp_path / "two.jsonl"), TWO)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-2000:]
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


@pytest.mark.slow
def test_a_run_killed_at_a_random_line_and_resumed_gives_the_uninterrupted_out(tmp_path, tiny_model_dir):
    source = _corpus(tmp_path / "in.txt", LONG)
    whole, killed = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    assert main(_command(tiny_model_dir, source, whole)) == 0
    expected = whole.read_bytes()
    at = random.Random(0).randrange(3, LONG - corpus.CHUNK)
    process = _process(_command(tiny_model_dir, source, killed))
    while process.poll() is None and (not killed.exists() or killed.read_bytes().count(b"\n") < at):
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert 0 < killed.read_bytes().count(b"\n") < expected.count(b"\n")  # killed part way
    with open(killed, "ab") as f:
        f.write(b'{"line": 99, "source": "a half-written rec')  # as a kill in the middle of a write leaves it
    assert main(_command(tiny_model_dir, source, killed)) == 0
    assert killed.read_bytes() == expected


def test_an_out_of_another_input_is_refused(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "out.jsonl"
    assert main(_command(tiny_model_dir, _corpus(tmp_path / "a.txt", 3), out)) == 0
    written = out.read_bytes()
    (tmp_path / "b.txt").write_text("\n".join(SENTENCES[3:]) + "\n")
    assert main(_command(tiny_model_dir, tmp_path / "b.txt", out)) == 2
    err = capsys.readouterr().err
    assert "holds the variants of another input" in err and len(err.strip().splitlines()) == 1
    assert out.read_bytes() == written
    out.write_text(json.dumps({"line": 1, "template": "a [MASK] .", "fillings": []}) + "\n")  # sample's OUT
    assert main(_command(tiny_model_dir, tmp_path / "b.txt", out)) == 2
    assert "holds the variants of another input" in capsys.readouterr().err
    out.write_text("not a record\n")
    assert main(_command(tiny_model_dir, tmp_path / "b.txt", out)) == 2
    assert "line 1 is not a record of infill augment --out" in capsys.readouterr().err


@pytest.mark.parametrize(
    "bad, why",
    [("42 NASA x9", "nothing to change"), ("the " + "word " * 80, "longer than the model's maximum")],
    ids=["no-model", "tokenizer"],
)
def test_a_bad_line_fails_naming_it_before_anything_is_written(tmp_path, tiny_model_dir, monkeypatch, capsys, bad, why):
    monkeypatch.setattr(corpus, "CHUNK", 4)  # the bad line in the third chunk, after good ones
    source, out = _corpus(tmp_path / "in.txt", 12), tmp_path / "out.jsonl"
    lines = source.read_text().splitlines()
    lines[9] = bad
    source.write_text("\n".join(lines) + "\n")
    assert main(_command(tiny_model_dir, source, out)) == 2
    err = capsys.readouterr().err
    assert f"{source}:10: " in err and why in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    out.write_bytes(b"")
    assert main(_command(tiny_model_dir, source, out)) == 2 and out.read_bytes() == b""


def test_a_second_writer_of_a_locked_out_is_refused_at_once_before_torch_is_imported(tmp_path, tiny_model_dir):
    source, out = _corpus(tmp_path / "in.txt", 3), tmp_path / "out.jsonl"
    source.write_text(source.read_text() + "42 NASA\n")  # a bad line: FILE's check would fail on it
    refused_at_once(out, _command(tiny_model_dir, source, out))
    assert out.read_bytes() == b""


def test_stdin_bad_lines_become_error_records_and_the_run_goes_on(tmp_path, tiny_model_dir, monkeypatch, capsys):
    lines = f"{SENTENCES[0]}\n42 NASA\n\n{SENTENCES[1]}\n"
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    assert main(_command(tiny_model_dir, "-", out)[:-1]) == 0  # progress on: a line per chunk, no total known
    assert "sentence 3 done" in capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 4]
    assert records[1] == {"line": 2, "source": "42 NASA", "error": records[1]["error"]}
    assert records[1]["error"].startswith("nothing to change") and len(records[2]["variants"]) == 2
    written = out.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines + f"{SENTENCES[2]}\n"))  # resumed: only the new line
    assert main(_command(tiny_model_dir, "-", out)) == 0
    assert out.read_bytes().startswith(written) and json.loads(out.read_text().splitlines()[-1])["line"] == 5
    assert main(["augment", SENTENCES[0], "--out", str(out)]) == 2
    assert "--out augments the lines of --file FILE or of stdin" in capsys.readouterr().err
