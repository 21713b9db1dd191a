"""Long commands report progress where stderr is not a terminal: a line per unit done, with the time spent
and an estimate of the time left."""

import io
import re

from test_cli_reliability import write_protocol

from infill.cli import main
from infill.pipeline.progress import Lines, duration

LINE = r"{}: {} {}/{} done \(.+\), \d+ s elapsed{}"


def test_a_line_per_unit_with_the_time_left_from_this_run_s_units(monkeypatch):
    clock = iter([100.0, 141.0, 182.0])
    monkeypatch.setattr("time.perf_counter", lambda: next(clock))
    out = io.StringIO()
    lines = Lines(12, "infill eval", "unit", initial=1, file=out)
    lines.set_postfix_str("s3 gibbs")
    lines.update()
    lines.update(10)
    assert out.getvalue().splitlines() == [
        "infill eval: unit 2/12 done (s3 gibbs), 41 s elapsed, about 7 min left",
        "infill eval: unit 12/12 done (s3 gibbs), 82 s elapsed",
    ]
    assert [duration(s) for s in (41.4, 240, 7500)] == ["41 s", "4 min", "2 h 05 min"]


def test_eval_prints_a_line_per_unit_when_stderr_is_not_a_terminal(tmp_path, tiny_model_dir, capsys):
    protocol = write_protocol(tmp_path)
    assert main(["eval", str(protocol), "--model", str(tiny_model_dir), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert re.fullmatch(LINE.format("infill eval", "unit", 1, 2, r", about \d+ s left"), err[0]), err
    assert re.fullmatch(LINE.format("infill eval", "unit", 2, 2, ""), err[1]), err
    assert (
        main(["eval", str(protocol), "--model", str(tiny_model_dir), "--out", str(tmp_path / "quiet"), "--no-progress"])
        == 0
    )
    assert capsys.readouterr().err == ""


def test_sample_prints_a_line_per_template_of_several(tmp_path, tiny_model_dir, capsys):
    path = tmp_path / "t.txt"
    path.write_text("a [MASK] day .\n\nthe [MASK] sat .\n")
    tiny = ["--model", str(tiny_model_dir), "--steps", "2", "-n", "2", "--seed", "0"]
    assert main(["sample", "-f", str(path), *tiny]) == 0
    err = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"infill sample: template 1/2 done \(.+t\.txt:1\), \d+ s elapsed, about \d+ s left", err[0])
    assert re.fullmatch(r"infill sample: template 2/2 done \(.+t\.txt:3\), \d+ s elapsed", err[1]) and len(err) == 2
    assert main(["sample", "-f", str(path), *tiny, "-q"]) == 0 and capsys.readouterr().err == ""
    assert main(["sample", "a [MASK] day .", *tiny]) == 0 and capsys.readouterr().err == ""


def test_eval_summarization_prints_a_line_per_document(tmp_path, capsys):
    argv = [
        "eval-summarization",
        "--split",
        "train",
        "--limit",
        "2",
        "--methods",
        "lead",
        "--output",
        str(tmp_path / "report"),
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert re.fullmatch(LINE.format("infill eval-summarization", "document", 1, 2, r", about \d+ s left"), err[0])
    assert re.fullmatch(LINE.format("infill eval-summarization", "document", 2, 2, ""), err[1]), err
    assert main(argv + ["--quiet"]) == 0 and capsys.readouterr().err.startswith("replaced ")
