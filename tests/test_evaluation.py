"""Batch corpus evaluation: protocol checks, task selection, resumable units, report; a fake sampler
stands in for the model except in the slow end-to-end test."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from infill import metrics
from infill.cli import main
from infill.errors import InfillError
from infill.evaluation import evaluate, load_protocol
from infill.evaluation.compute import matched
from infill.evaluation.corpora import normalize
from infill.evaluation.runner import Draw, Sampling
from infill.evaluation.tasks import Task, make_tasks, references
from infill.pipeline.policy import for_blanks

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared"
CORPORA = SHARED / "corpora" / "bert-gen"
DEV_MODEL = SHARED / "models" / "infill-dev-minilm-mlm"

PROTOCOL = """\
name = "tiny"
seed = 3

[[corpora]]
name = "wt103"
path = "wiki.txt"
convention = "wikitext103"
sentences = {wiki}

[[corpora]]
name = "tbc"
path = "tbc.txt"
convention = "tbc"
sentences = {tbc}

[selection]
min_words = 15
max_words = 25

[mask]
{mask}

[sampling]
samplers = ["gibbs", "dmala"]
chains = 6
steps = 2
top = 3
{extra}
"""


def _real_lines(name: str, count: int) -> list[str]:
    path = CORPORA / name
    if not path.exists():
        pytest.skip(f"corpus {path} not available")
    return path.read_text(encoding="utf-8").splitlines()[:count]


def _protocol(tmp_path: Path, wiki=3, tbc=2, mask="fraction = 0.25", extra="", lines=300) -> Path:
    """A protocol over real corpus lines, each followed by a near copy (so fillings meet their 4-grams)."""
    for file, corpus in (("wiki.txt", "wiki103.5k.txt"), ("tbc.txt", "tbc.5k.txt")):
        real = _real_lines(corpus, lines)
        text = "".join(f"{line}\n{line} indeed\n" for line in real)
        (tmp_path / file).write_text(text, encoding="utf-8")
    path = tmp_path / "tiny.toml"
    path.write_text(PROTOCOL.format(wiki=wiki, tbc=tbc, mask=mask, extra=extra), encoding="utf-8")
    return path


class FakeSampler:
    """Draws words from a small vocabulary, seeded like a real sampler; optionally dies after some calls."""

    WORDS = ["the", "a", "house", "river", "said", "old", "of", "and", "night", "was"]

    def __init__(self, fail_after: int | None = None):
        self.calls: list[tuple[str, str]] = []
        self.fail_after = fail_after

    def __call__(self, template, config):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt
        self.calls.append((template, config.method))
        rng = random.Random(f"{config.seed}-{config.method}")
        blanks = template.split().count("[MASK]")
        n = for_blanks(config, blanks).num_samples  # a budget sets a baseline's draws
        draws = [Draw([rng.choice(self.WORDS) for _ in range(blanks)], rng.uniform(-50, -10)) for _ in range(n)]
        if config.is_baseline:  # the shared first pass, a left-to-right draw's later passes, the PLL of each distinct
            sequences = 1 + (blanks - 1) * n + blanks * len({tuple(d.fills) for d in draws})
        else:
            sequences = config.num_samples * (10 * config.steps + blanks)
        return Sampling(
            draws,
            {
                "energy_evaluations": config.num_samples * (config.steps or 0),  # a one-pass method takes no steps
                "acceptance_rate": 0.5,
                "mean_hops": 1.0,
                "encoder_sequences": sequences,
            },
        )


def _error_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("infill: error: ") and "\n" not in err
    return err


def test_normalize_maps_the_corpora_conventions():
    assert normalize("Police drove the @@UNKNOWN@@ back", "wikitext103") == ["police", "drove", "the", "[UNK]", "back"]
    assert normalize("`` claudia ! ''", "tbc") == ['"', "claudia", "!", '"']
    assert normalize("Hello World", "plain", lowercase=False) == ["Hello", "World"]


def test_task_template_and_fill_keep_corpus_tokenization():
    task = Task("x-1", "x", ("he", "walked", "home", "."), (1, 3))
    assert task.template == "he [MASK] home [MASK]"
    assert task.fill(["ran", "!"]) == "he ran home !"
    assert task.fill(["walk", "##ing"]) == "he walk homeing"
    with pytest.raises(ValueError):
        task.fill(["one"])


def test_tasks_are_seeded_in_range_and_masked_as_asked(tmp_path):
    protocol = load_protocol(_protocol(tmp_path, mask="count = 4\nexclude_ends = true"))
    from infill.evaluation.corpora import load_corpus

    corpora = {spec.name: load_corpus(spec) for spec in protocol.corpora}
    tasks = make_tasks(protocol, corpora)
    assert tasks == make_tasks(protocol, corpora)
    assert [t.corpus for t in tasks] == ["wt103"] * 3 + ["tbc"] * 2
    for task in tasks:
        assert 15 <= len(task.words) <= 25
        assert len(task.masked) == 4 and 0 not in task.masked and len(task.words) - 1 not in task.masked
    refs = references(corpora, tasks)
    assert sum(len(v) for v in refs.values()) <= sum(len(v) for v in corpora.values()) - len(tasks)
    assert not {t.words for t in tasks} & {tuple(s) for v in refs.values() for s in v}

    quarter = load_protocol(_protocol(tmp_path, mask="fraction = 0.25"))
    for task in make_tasks(quarter, corpora):
        assert len(task.masked) == max(1, int(0.25 * len(task.words) + 0.5))


def test_evaluate_writes_report_matching_direct_metrics(tmp_path):
    protocol = _protocol(tmp_path)
    fake = FakeSampler()
    report = evaluate(protocol, tmp_path / "out", model="fake", make_sample_fn=lambda: fake, progress=False)
    out = tmp_path / "out"
    for name in ("units.jsonl", "samples.jsonl", "report.json", "report.md", "report.png", "tasks.jsonl", "run.json"):
        assert (out / name).stat().st_size > 0
    assert len(fake.calls) == 5 * 2
    units = [json.loads(line) for line in (out / "units.jsonl").read_text().splitlines()]
    assert len(units) == 10 and all(len(u["fillings"]) <= 3 for u in units)
    for unit in units:  # kept fillings: distinct, best energy first, text = template filled
        energies = [f["energy"] for f in unit["fillings"]]
        assert energies == sorted(energies, reverse=True)
        assert len({f["text"] for f in unit["fillings"]}) == len(unit["fillings"])
        assert all(len(f["text"].split()) == len(unit["original"].split()) for f in unit["fillings"])

    refs = {}
    for name, spec_file, convention in (("wt103", "wiki.txt", "wikitext103"), ("tbc", "tbc.txt", "tbc")):
        chosen = {u["original"] for u in units}
        raw = (tmp_path / spec_file).read_text().splitlines()
        lines = [normalize(line, convention) for line in raw if line.strip()]
        refs[name] = [w for w in lines if " ".join(w) not in chosen]
    texts = [f["text"] for u in units if u["sampler"] == "gibbs" for f in u["fillings"]]
    row = report["samplers"]["gibbs"]
    assert row["self_bleu"] == pytest.approx(100 * metrics.self_bleu(texts))
    assert row["unique_2_self"] == pytest.approx(100 * metrics.unique_ngrams(texts, 2))
    assert row["unique_3_tbc"] == pytest.approx(100 * metrics.unique_ngrams(texts, 3, refs["tbc"]))
    assert row["unique_2_wt103"] == pytest.approx(100 * metrics.unique_ngrams(texts, 2, refs["wt103"]))
    assert row["corpus_bleu"] == pytest.approx(100 * metrics.corpus_bleu(texts, refs["wt103"] + refs["tbc"]))
    assert row["corpus_bleu"] > 1 and 0 < row["self_bleu"] < 100
    assert row["energy_evaluations"] == 5 * 6 * 2
    saved = json.loads((out / "report.json").read_text())
    assert saved["samplers"]["dmala"] == pytest.approx(report["samplers"]["dmala"])
    assert saved["signature"]["protocol"]["sha256"] and saved["signature"]["versions"]["nltk"]
    assert "| gibbs |" in (out / "report.md").read_text()
    assert (out / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert len((out / "samples.jsonl").read_text().splitlines()) == sum(len(u["fillings"]) for u in units)


def test_killed_run_resumes_without_redoing_or_duplicating_units(tmp_path):
    protocol = _protocol(tmp_path)
    out = tmp_path / "out"
    dying = FakeSampler(fail_after=4)
    with pytest.raises(KeyboardInterrupt):
        evaluate(protocol, out, model="fake", make_sample_fn=lambda: dying, progress=False)
    assert not (out / "report.json").exists()
    with open(out / "units.jsonl", "ab") as handle:  # a kill in the middle of an append
        handle.write(b'{"sentence_id": "wt103-1", "sam')
    resumed = FakeSampler()
    evaluate(protocol, out, model="fake", make_sample_fn=lambda: resumed, progress=False)
    assert len(resumed.calls) == 10 - 4
    assert not set(resumed.calls) & set(dying.calls)
    keys = [(u["sentence_id"], u["sampler"]) for u in map(json.loads, (out / "units.jsonl").read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 10
    again = FakeSampler()
    evaluate(protocol, out, model="fake", make_sample_fn=lambda: again, progress=False)
    assert again.calls == []
    with pytest.raises(InfillError, match="other settings"):
        evaluate(protocol, out, model="another-model", make_sample_fn=FakeSampler, progress=False)


def test_resume_refuses_units_sampled_with_other_hyperparameters(tmp_path):
    protocol, out = _protocol(tmp_path), tmp_path / "out"
    evaluate(protocol, out, model="fake", make_sample_fn=FakeSampler, progress=False)
    units = [json.loads(line) for line in (out / "units.jsonl").read_text().splitlines()]
    for unit in units:
        unit["config"] = (
            {**unit["config"], "options": {"step_size": 9.0}} if unit["sampler"] == "dmala" else unit["config"]
        )
    (out / "units.jsonl").write_text("".join(json.dumps(u) + "\n" for u in units))
    with pytest.raises(InfillError, match="dmala units sampled with"):
        evaluate(protocol, out, model="fake", make_sample_fn=FakeSampler, progress=False)


def test_limit_and_samplers_select_a_prefix_of_the_units(tmp_path):
    fake = FakeSampler()
    report = evaluate(
        _protocol(tmp_path),
        tmp_path / "out",
        model="fake",
        samplers=["dmala"],
        limit=1,
        make_sample_fn=lambda: fake,
        progress=False,
    )
    assert list(report["samplers"]) == ["dmala"] and report["signature"]["sentences"] == {
        "dmala": {"wt103": 1, "tbc": 1}
    }
    assert len(fake.calls) == 2


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda p: p.replace("seed = 3", 'seed = 3\ncolour = "red"'), "unknown key 'colour'"),
        (lambda p: p.replace("fraction = 0.25", "fraction = 1.5"), "between 0 and 1"),
        (lambda p: p.replace("top = 3", 'top = 9\ndecode = "final"'), "cannot exceed num_samples"),
        (lambda p: p.replace("max_words = 25", "max_words = 5"), "below min_words"),
        (lambda p: p.replace("fraction = 0.25", "count = 14\nexclude_ends = true"), "cannot have 14 word(s) masked"),
        (lambda p: p.replace("fraction = 0.25", "count = 15"), "some left unmasked"),
        (lambda p: p.replace("min_words = 15", "min_words = 2"), "at least 3"),
        (
            lambda p: p.replace("top = 3", 'top = 3\n[sampling.options.dmala]\nstep_size = "x"'),
            "step_size must be a finite number",
        ),
        (
            lambda p: p.replace("top = 3", "top = 3\n[sampling.options.gwg]\nstep_size = 1.0"),
            "which is not in [sampling] samplers",
        ),
        (lambda p: p.replace("top = 3", 'top = 3\ninit = "zeros"'), "init must be one of"),
        (lambda p: p.replace("top = 3", "top = 3\ntemperature = 0"), "temperature must be positive"),
        (lambda p: p.replace('path = "tbc.txt"', 'path = "missing.txt"'), "not found"),
        (lambda p: p.replace("sentences = 2", "sentences = 5000"), "fewer than the 5000 asked"),
        (lambda p: p.replace('"gibbs", "dmala"', '"gibbs", "nosuch"'), "unknown sampler"),
        (lambda p: p.replace("chains = 6", "chains = 0"), "at least 1"),
        (lambda p: p.replace("chains = 6", 'chains = "six"'), "must be int"),
        (
            lambda p: p.replace("top = 3", 'top = 3\n[sampling.options.dmala]\nequal_sequences = "gwg"'),
            "'equal_sequences' must name another row",
        ),
    ],
)
def test_bad_protocols_fail_with_one_line_and_write_nothing(tmp_path, capsys, edit, message):
    path = _protocol(tmp_path)
    path.write_text(edit(path.read_text()), encoding="utf-8")
    out = tmp_path / "out"
    err = _error_line(capsys, ["eval", str(path), "--model", "fake", "--out", str(out)])
    assert message in err
    assert not out.exists()


def test_empty_corpus_and_missing_protocol_fail_cleanly(tmp_path, capsys):
    path = _protocol(tmp_path)
    (tmp_path / "tbc.txt").write_text("\n\n", encoding="utf-8")
    out = tmp_path / "out"
    assert "is empty" in _error_line(capsys, ["eval", str(path), "--model", "fake", "--out", str(out)])
    assert "cannot read protocol" in _error_line(
        capsys, ["eval", str(tmp_path / "nope.toml"), "--model", "m", "--out", str(out)]
    )
    assert not out.exists()


def test_shipped_protocol_is_valid():
    protocol = load_protocol(ROOT / "eval" / "dlp-table3-minilm" / "dlp-table3.toml")
    assert [c.sentences for c in protocol.corpora] == [10, 10]
    assert (protocol.chains, protocol.steps, protocol.top, protocol.mask.fraction) == (25, 50, 5, 0.25)
    assert all(c.path.resolve().parent == CORPORA.resolve() for c in protocol.corpora)
    if not CORPORA.exists():
        pytest.skip("corpora not available")
    from infill.evaluation.corpora import load_corpus

    tasks = make_tasks(protocol, {spec.name: load_corpus(spec) for spec in protocol.corpora})
    manifest = [json.loads(line) for line in (ROOT / "corpora" / "dlp-table3.tasks.jsonl").read_text().splitlines()]
    assert [(m["sentence_id"], m["template"]) for m in manifest] == [(t.sentence_id, t.template) for t in tasks]


@pytest.mark.slow
def test_cli_eval_end_to_end_with_the_dev_model(tmp_path, capsys):
    if not DEV_MODEL.exists():
        pytest.skip("dev model not available")
    path = _protocol(tmp_path, wiki=1, tbc=1)
    path.write_text(
        path.read_text()
        .replace("chains = 6", "chains = 3")
        .replace("steps = 2", "steps = 1")
        .replace("top = 3", "top = 2")
        .replace('"gibbs", "dmala"', '"gibbs", "dmala", "left-to-right@e"')
        + '[sampling.options."left-to-right@e"]\nequal_sequences = "gibbs"\n'
    )
    out = tmp_path / "out"
    argv = [
        "eval",
        str(path),
        "--model",
        str(DEV_MODEL),
        "--samplers",
        "gibbs,dmala",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert list(report["samplers"]) == ["gibbs", "dmala"]
    assert report["samplers"]["dmala"]["energy_evaluations"] > 0
    assert main(argv[:5] + ["gibbs,left-to-right@e"] + argv[6:]) == 0  # at gibbs' encoder sequences
    report = json.loads((out / "report.json").read_text())
    assert list(report["samplers"]) == ["gibbs", "dmala", "left-to-right@e"]
    (comparison,) = report["equal_compute"]
    assert comparison["templates"] == 2 and 0.6 < comparison["sequences_ratio"] <= 1.0  # never over; within a draw
    from infill.samplers import sampler_options

    assert report["signature"]["samplers"]["dmala"]["options"] == {} and sampler_options("dmala")
    units = [json.loads(line) for line in (out / "units.jsonl").read_text().splitlines()]
    assert len(units) == 6
    for unit in units:
        for filling in unit["fillings"]:
            words, original = filling["text"].split(), unit["original"].split()
            assert [w for i, w in enumerate(words) if i not in unit["masked"]] == [
                w for i, w in enumerate(original) if i not in unit["masked"]
            ]


def test_bad_model_fails_with_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    err = _error_line(
        capsys, ["eval", str(_protocol(tmp_path)), "--model", str(tmp_path / "nomodel"), "--out", str(out)]
    )
    assert "does not exist; give the path of a local checkpoint" in err
    assert not out.exists()


def test_unwritable_out_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InfillError, match="cannot use --out"):
        evaluate(
            _protocol(tmp_path), tmp_path / "file" / "sub", model="fake", make_sample_fn=FakeSampler, progress=False
        )


def test_a_row_added_to_the_protocol_keeps_the_finished_units(tmp_path):
    protocol, out = _protocol(tmp_path), tmp_path / "out"
    evaluate(protocol, out, model="fake", make_sample_fn=FakeSampler, progress=False)
    protocol.write_text(protocol.read_text().replace('"gibbs", "dmala"', '"gibbs", "dmala", "argmax"'))
    added = FakeSampler()
    report = evaluate(protocol, out, model="fake", make_sample_fn=lambda: added, progress=False)
    assert {sampler for _, sampler in added.calls} == {"argmax"} and list(report["samplers"]) == [
        "gibbs",
        "dmala",
        "argmax",
    ]
    protocol.write_text(protocol.read_text().replace("fraction = 0.25", "fraction = 0.2"))  # other masks: refused
    with pytest.raises(InfillError, match="other settings"):
        evaluate(protocol, out, model="fake", make_sample_fn=FakeSampler, progress=False)


def test_the_report_holds_every_stored_row_and_sentence(tmp_path):
    protocol, out = _protocol(tmp_path), tmp_path / "out"
    evaluate(protocol, out, model="fake", samplers=["gibbs"], make_sample_fn=FakeSampler, progress=False)
    report = evaluate(
        protocol, out, model="fake", samplers=["dmala"], limit=1, make_sample_fn=FakeSampler, progress=False
    )
    assert list(report["samplers"]) == ["gibbs", "dmala"]
    assert [report["samplers"][row]["sentences"] for row in ("gibbs", "dmala")] == [5, 2]
    assert report["signature"]["sentences"] == {"gibbs": {"wt103": 3, "tbc": 2}, "dmala": {"wt103": 1, "tbc": 1}}
    assert set(report["signature"]["samplers"]) == {"gibbs", "dmala"}
    markdown = (out / "report.md").read_text()
    assert "| gibbs | 5 |" in markdown and "| dmala | 2 |" in markdown
    units = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert {u["sampler"] for u in units} == {"gibbs", "dmala"}


def test_progress_is_a_bar_on_a_terminal_and_a_line_per_unit_elsewhere(tmp_path, capsys, monkeypatch):
    protocol = _protocol(tmp_path)
    evaluate(protocol, tmp_path / "piped", model="fake", make_sample_fn=FakeSampler, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10 and all(
        line.startswith(f"infill eval: unit {n}/10 done (") for n, line in enumerate(lines, 1)
    )

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    evaluate(protocol, tmp_path / "terminal", model="fake", make_sample_fn=FakeSampler, progress=True)
    assert "infill eval" in terminal.getvalue() and "\r" in terminal.getvalue() and "done (" not in terminal.getvalue()


def test_an_out_that_is_a_file_fails_at_once_without_torch(tmp_path):
    (tmp_path / "file").write_text("x")
    code = (
        "import sys; from infill.cli import main; "
        f"code = main(['eval', {str(_protocol(tmp_path))!r}, '--out', {str(tmp_path / 'file')!r}]); "
        "print(code, 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["2", "False"]
    assert done.stderr == f"infill: error: --out {tmp_path / 'file'} exists and is not a directory\n"


def test_eval_summarization_refuses_an_output_in_a_missing_directory(tmp_path, capsys):
    err = _error_line(capsys, ["eval-summarization", "--output", str(tmp_path / "no" / "dir" / "x"), "--limit", "1"])
    assert f"cannot write the report to {tmp_path / 'no' / 'dir'}: no such directory" in err
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    "method, blanks, budget, given",
    [
        ("left-to-right", 3, 100, 100),
        ("confident-first", 8, 1000, 1000),
        ("left-to-right", 3, 7, 1 + 5 * 5),
        ("independent", 1, 1, 1 + 5 * 1),
    ],
)
def test_matched_gives_the_budget_or_the_least_that_buys_top_draws(method, blanks, budget, given):
    result, match = matched(lambda b: {"budget": b}, budget, method, blanks, top=5)
    assert result == {"budget": given} and match == {"budget": given}


def test_a_baseline_row_matches_the_encoder_sequences_of_its_reference(tmp_path):
    protocol, out = _protocol(tmp_path), tmp_path / "out"
    protocol.write_text(
        protocol.read_text()
        .replace('"gibbs", "dmala"', '"gibbs", "left-to-right@equal-sequences"')
        .replace("top = 3", 'top = 3\n[sampling.options."left-to-right@equal-sequences"]\nequal_sequences = "gibbs"')
    )
    with pytest.raises(InfillError, match="run gibbs with it"):
        evaluate(protocol, out, model="fake", samplers=["left-to-right@equal-sequences"], make_sample_fn=FakeSampler)
    fake = FakeSampler()
    report = evaluate(protocol, out, model="fake", make_sample_fn=lambda: fake, progress=False)
    units = {
        (u["sentence_id"], u["sampler"]): u for u in map(json.loads, (out / "units.jsonl").read_text().splitlines())
    }
    for (sentence, row), unit in units.items():
        if row == "gibbs":
            continue
        budget = units[sentence, "gibbs"]["encoder_sequences"]
        assert unit["budget"] == budget and unit["draws"] != 6 and unit["config"]["equal_sequences"] == "gibbs"
        assert unit["encoder_sequences"] <= budget and unit["draws"] == (budget - 1) // (2 * len(unit["masked"]) - 1)
    assert [method for _, method in fake.calls[:5]] == ["gibbs"] * 5  # every budget is known before it is used
    (comparison,) = report["equal_compute"]
    assert (comparison["row"], comparison["reference"], comparison["templates"]) == (
        "left-to-right@equal-sequences",
        "gibbs",
        5,
    )
    assert comparison["reference_wins"] + comparison["row_wins"] == 5
    assert "gibbs against left-to-right@equal-sequences, at equal encoder sequences" in (out / "report.md").read_text()


def test_the_signature_lists_only_the_settings_each_method_takes(tmp_path):
    """A one-pass row has no steps, chain start, annealing or (but smc) options in the report's signature, though
    the protocol sets steps and init for every row; units stored with them resume and report the same."""
    protocol, out = _protocol(tmp_path), tmp_path / "out"
    protocol.write_text(
        protocol.read_text()
        .replace('"gibbs", "dmala"', '"gibbs", "argmax", "left-to-right", "smc"')
        .replace("top = 3", 'top = 3\ninit = "uniform"\n[sampling.options.smc]\ntilt = 2.0')
    )
    report = evaluate(protocol, out, model="fake", make_sample_fn=FakeSampler, progress=False)
    rows = report["signature"]["samplers"]
    assert rows["gibbs"]["steps"] == 2 and rows["gibbs"]["init"] == "uniform" and "options" in rows["gibbs"]
    for row in ("argmax", "left-to-right", "smc"):
        assert not {"steps", "init", "anneal_from"} & set(rows[row]) and rows[row]["num_samples"] == 6, rows[row]
    assert "options" not in rows["argmax"] and rows["smc"]["options"] == {"tilt": 2.0}
    assert '"steps"' not in (out / "report.md").read_text().split('"argmax": {')[1].split("}")[0]
    units = [json.loads(line) for line in (out / "units.jsonl").read_text().splitlines()]
    for unit in units:  # as units were stored before: every setting with every row
        unit["config"] = {"steps": 2, "init": "uniform", "anneal_from": None, "options": {}, **unit["config"]}
    (out / "units.jsonl").write_text("".join(json.dumps(u) + "\n" for u in units))
    again = FakeSampler()
    assert evaluate(protocol, out, model="fake", make_sample_fn=lambda: again, progress=False) is not None
    assert again.calls == [] and json.loads((out / "report.json").read_text())["signature"]["samplers"] == rows
