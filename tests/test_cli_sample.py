"""``infill sample`` and ``infill samplers``: in-process on the tiny checkpoint, plus a few real processes."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infill.cli import main
from infill.pipeline.config import RunConfig
from infill.pipeline.policy import for_blanks

ROOT = Path(__file__).resolve().parents[1]


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def start_process(*argv) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "infill", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def finish(process: subprocess.Popen, stdin: str = "") -> tuple[int, str, str]:
    out, err = process.communicate(stdin, timeout=120)
    return process.returncode, out, err


@pytest.fixture
def tiny(tiny_model_dir):
    return ["--model", str(tiny_model_dir), "--steps", "2", "-n", "3", "--seed", "0", "-q"]


def test_plain_output_one_line_per_sample(capsys, tiny):
    code, out, err = run_main(capsys, "sample", "The [MASK] sat on the [MASK].", *tiny)
    lines = out.splitlines()
    assert code == 0 and err == "" and len(lines) == 3
    assert all(line.startswith("The ") and " sat on the " in line and line.endswith(".") for line in lines)


def test_json_lines_parse(capsys, tiny):
    code, out, _ = run_main(
        capsys, "sample", "I [MASK*2] you.", *tiny, "--json", "--top", "2", "--sampler", "dmala", "--step-size", "0.25"
    )
    records = [json.loads(line) for line in out.splitlines()]
    samples, diagnostics = records[:-1], records[-1]["diagnostics"]
    assert code == 0 and 1 <= len(samples) <= 2
    assert diagnostics["tuned"]["value"] > 0 and diagnostics["tuned"]["adapt_steps"] == 1  # half of 2 steps
    for r in samples:
        assert r["template"] == "I [MASK*2] you." and len(r["fills"]) == 1 and len(r["fills"][0].split()) == 2
        assert r["text"] == f"I {r['fills'][0]} you." and isinstance(r["energy"], float) and 0 <= r["chain"] < 3
    assert diagnostics["hyperparameters"]["step_size"] == 0.25 and diagnostics["steps"] == 2
    assert {"acceptance_rate", "mean_hops", "evaluations", "seconds", "seed"} <= set(diagnostics)


def test_list_option_reaches_the_sampler(capsys, tiny):
    code, out, _ = run_main(
        capsys, "sample", "I [MASK*2] you.", *tiny, "--json", "--sampler", "dmala", "-o", "preconditioner=[1, 2.5]"
    )
    diagnostics = json.loads(out.splitlines()[-1])["diagnostics"]
    assert code == 0 and diagnostics["hyperparameters"]["preconditioner"] == [1, 2.5]


def test_file_with_jsonl_options_and_empty_lines(capsys, tiny, tmp_path):
    path = tmp_path / "templates.txt"
    path.write_text(
        "A [MASK] day.\n\n   \n"
        + json.dumps({"template": "My [MASK] cat.", "num_samples": 2, "sampler": "gibbs"})
        + "\nThe [MASK] end.\n"
    )
    code, out, _ = run_main(capsys, "sample", "--file", str(path), *tiny, "--json")
    records = [json.loads(line) for line in out.splitlines()]
    counts = {}
    for r in records:
        if "text" in r:
            counts[r["template"]] = counts.get(r["template"], 0) + 1
    assert code == 0 and counts == {"A [MASK] day.": 3, "My [MASK] cat.": 2, "The [MASK] end.": 3}
    order = ["A [MASK] day.", "My [MASK] cat.", "The [MASK] end."]
    assert [r["template"] for r in records if "diagnostics" in r] == order
    default = for_blanks(RunConfig.create(), 1).method  # auto reports what it ran
    assert [r["diagnostics"]["sampler"] for r in records if "diagnostics" in r] == [default, "gibbs", default]


def test_plain_batch_output_heads_each_template_s_fillings_with_its_line(capsys, tiny, tmp_path, monkeypatch):
    import io

    path = tmp_path / "templates.txt"
    path.write_text("A [MASK] day.\n\nThe [MASK] end.\n")
    code, out, _ = run_main(capsys, "sample", "--file", str(path), *tiny)
    lines = out.splitlines()
    assert code == 0 and [lines[0], lines[4]] == ["# line 1", "# line 3"] and len(lines) == 8
    assert all(line.endswith("day.") for line in lines[1:4]) and all(line.endswith("end.") for line in lines[5:])
    monkeypatch.setattr("sys.stdin", io.StringIO(path.read_text()))
    assert run_main(capsys, "sample", "-", *tiny)[1] == out
    records = [
        json.loads(line) for line in run_main(capsys, "sample", "--file", str(path), *tiny, "--json")[1].splitlines()
    ]  # JSONL unchanged: every line a record
    assert len(records) == 8 and [r["template"] for r in records if "diagnostics" in r] == [
        "A [MASK] day.",
        "The [MASK] end.",
    ]
    assert not run_main(capsys, "sample", "A [MASK] day.", *tiny)[1].startswith("#")  # one TEMPLATE: no header


def test_samplers_lists_options(capsys):
    code, out, _ = run_main(capsys, "samplers")
    assert code == 0 and "dmala" in out and "step_size=0.1" in out and "gibbs" in out
    code, out, _ = run_main(capsys, "samplers", "--json")
    by_name = {r["name"]: r for r in map(json.loads, out.splitlines())}
    assert by_name["dmala"]["options"]["step_size"] == 0.1 and by_name["gibbs"]["options"] == {"proposal": "model"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["sample", "no blanks here"], "no [MASK] blank"),
        (["sample", "[MASK*2]"], "only blanks"),
        (["sample", "word " * 70 + "[MASK]"], "longer than the model's maximum of 64"),
        (["sample", "A [MASK].", "--sampler", "nope"], "unknown sampler 'nope'"),
        (["sample", "A [MASK].", "--option", "bogus=1"], "unknown key 'bogus'"),
        (["sample", "A [MASK].", "--option", "bogus"], "KEY=VALUE"),
        (["sample", "A [MASK].", "--sampler", "gibbs", "--step-size", "0.1"], "has no option 'step_size'"),
        (["sample", "A [MASK].", "--steps", "0"], "steps must be a positive integer"),
        (["sample", "A [MASK].", "-n", "-2"], "num_samples must be a positive integer"),
        (
            ["sample", "A [MASK].", "-n", "3", "--top", "5", "--decode", "final"],
            "top (5) cannot exceed num_samples (3)",
        ),
        (
            ["sample", "A [MASK].", "--sampler", "dmala", "-o", "step_size=abc"],
            "step_size must be a finite number, got 'abc'",
        ),
        (
            ["sample", "A [MASK].", "--sampler", "dmala", "--step-size", "inf"],
            "step_size must be a finite number, got inf",
        ),
        (["sample", "A [MASK].", "--sampler", "dmala", "--adapt-steps", "1.5"], "adapt_steps must be 0 or more"),
        (["sample", "A [MASK].", "--init", "zeros"], "init must be one of"),
        (["sample", "A [MASK].", "--temperature", "-1"], "temperature must be positive"),
        (["sample", "A [MASK].", "--model", "./no/such/dir"], "does not exist; give the path of a local checkpoint"),
        (["sample", "A [MASK].", "--model", "no such/model!"], "is no local folder and no hub id"),
        (["sample", "--file", "/no/such/file.txt"], "cannot read /no/such/file.txt"),
        (["sample"], "give a TEMPLATE"),
        (["sample", ""], "the template is empty; give one with a [MASK] blank"),
        (["sample", " "], "the template is empty"),
        (["sample", "A [MASK].", "--device", "nonsense"], "unknown device"),
    ],
)
def test_bad_input_is_one_line(capsys, tiny, args, message):
    argv = args[:1] + tiny + args[1:]  # later flags win
    code, out, err = run_main(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("infill: error: ") and message in err


def test_bad_batch_file_lines(capsys, tiny, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    code, _, err = run_main(capsys, "sample", *tiny, "--file", str(empty))
    assert code == 2 and "no templates" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('A [MASK].\n{"template": "B [MASK].", "steps": 0}\n')
    code, _, err = run_main(capsys, "sample", *tiny, "--file", str(bad))
    assert code == 2 and f"{bad}:2: steps must be a positive integer" in err
    bad.write_text("A [MASK].\n\n{not json}\n")
    code, _, err = run_main(capsys, "sample", *tiny, "--file", str(bad))
    assert code == 2 and f"{bad}:3: invalid JSON" in err
    bad.write_text('{"text": "B [MASK]."}\n')
    code, _, err = run_main(capsys, "sample", *tiny, "--file", str(bad))
    assert code == 2 and f'{bad}:1: a JSON line needs a "template" string' in err
    bad.write_text("A [MASK].\nno blanks here\n")
    code, out, err = run_main(capsys, "sample", *tiny, "--file", str(bad))
    assert code == 2 and f"{bad}:2: template has no [MASK] blank" in err and out == ""


def test_same_seed_same_output_across_processes(tiny_model_dir):
    argv = ["sample", "-", "--model", str(tiny_model_dir), "--steps", "3", "-n", "4", "--seed", "11", "--json", "-q"]
    stdin = "The [MASK] sat on the [MASK].\nA [MASK] day.\n"
    processes = [start_process(*argv), start_process(*argv)]  # concurrently: two cores
    (code, first, err), (_, second, _) = [finish(p, stdin) for p in processes]
    assert code == 0 and err == ""
    samples = lambda out: [r for r in map(json.loads, out.splitlines()) if "text" in r]  # noqa: E731
    assert len(samples(first)) == 8 and samples(first) == samples(second)


OFFLINE_HINT = (
    "to run offline, give --model the path of a saved checkpoint (or set INFILL_MODEL to it), or set "
    "HF_HUB_OFFLINE=1 with the model in the cache"
)
OFFLINE_SET_HINT = (  # HF_HUB_OFFLINE already set: not suggested again
    "to run offline, give --model the path of a saved checkpoint (or set INFILL_MODEL to it), or fetch the model "
    "into the cache once with the hub reachable and HF_HUB_OFFLINE unset"
)


def test_hf_hub_offline_is_one_line_that_says_how_to_run_offline():
    code, _, err = finish(start_process("sample", "A [MASK].", "--model", "no-such-org/no-such-model", "-q"))
    assert code == 2 and err.splitlines() == [
        "infill: error: cannot load model 'no-such-org/no-such-model': it is not in the local cache and "
        f"HF_HUB_OFFLINE is set; {OFFLINE_SET_HINT}"
    ]


def test_an_unreachable_hub_is_one_line_at_once_without_a_request(capsys, monkeypatch):
    from huggingface_hub import constants

    from infill.lm import hub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "hub_reachable", lambda: False)
    monkeypatch.setattr("socket.socket.connect", lambda *a: pytest.fail("a request went out"))
    start = time.perf_counter()
    code, out, err = run_main(capsys, "sample", "a [MASK] day", "--model", "no-such-org/no-such-model")
    assert time.perf_counter() - start < 5
    assert (
        code == 2
        and out == ""
        and err.splitlines()
        == [
            f"infill: error: cannot load model 'no-such-org/no-such-model': it is not in the local cache and the hub "
            f"({constants.ENDPOINT}) is unreachable; {OFFLINE_HINT}"
        ]
    )


def test_the_reachability_check_is_one_short_request_and_a_path_pays_none(capsys, monkeypatch, tiny):
    from infill.lm import hub

    hub.hub_reachable.cache_clear()
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")  # nothing listens: refused
    assert hub.hub_reachable() is False and hub.hub_reachable.cache_info().misses == 1
    hub.hub_reachable.cache_clear()
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "hub_reachable", lambda: pytest.fail("a local path asked the hub"))
    assert run_main(capsys, "sample", "a [MASK] day", *tiny)[0] == 0


@pytest.mark.slow
def test_dev_model_cli(capsys, dev_model_path):
    code, out, _ = run_main(
        capsys,
        "sample",
        "I drank a cup of [MASK].",
        "--model",
        str(dev_model_path),
        "--sampler",
        "gibbs",
        "-n",
        "3",
        "--steps",
        "3",
        "--seed",
        "0",
        "--top",
        "2",
    )
    lines = out.splitlines()
    assert code == 0 and 1 <= len(lines) <= 2
    assert all(line.startswith("I drank a cup of ") and line.endswith(".") for line in lines)


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"template": "a [MASK] b", "seed": "abc"}', "seed must be an integer"),
        ('{"template": "a [MASK] b", "seed": 1.5}', "seed must be an integer"),
        ('{"template": "a [MASK] b", "forbid": 5}', "forbid must be"),
        ('{"template": "a [MASK] b", "allow_subwords": "no"}', "allow_subwords must be"),
    ],
)
def test_bad_per_line_options_are_one_line(tmp_path, capsys, line, message):
    path = tmp_path / "jobs.jsonl"
    path.write_text(line + "\n")
    assert main(["sample", "--file", str(path), "--model", "unused"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("infill: error: ") and message in err and "\n" not in err
