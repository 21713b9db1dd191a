"""Extractive summarization: the Lin & Bilmes objective, baselines, decoding, data and the CLI."""

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from infill.cli import main
from infill.errors import InfillError
from infill.summarize import (
    Budget,
    ChainSettings,
    ObjectiveConfig,
    SummaryObjective,
    brute_force,
    decode_text,
    greedy,
    lead,
    run_chains,
    split_sentences,
)
from infill.summarize.aclsum_data import detokenize, load_aclsum
from infill.summarize.chain_stats import effective_sample_size
from infill.summarize.decoding import auto_step_size, dimension_vote, sample_vote
from infill.summarize.peers import peer_summary
from infill.summarize.sentences import clean_sentences

DOC = [
    "Markov chain Monte Carlo samplers for discrete distributions are slow when they change one variable.",
    "Gradient-based proposals use the gradient of the energy to change many variables at once.",
    "The discrete Langevin proposal is a gradient-based proposal for discrete distributions.",
    "Many discrete energies have no gradient, such as summarization objectives built from set functions.",
    "Newton's series approximation replaces the gradient by finite differences of the energy.",
    "The finite differences are computed in one batched evaluation of all neighbouring states.",
    "Experiments on Ising models and summarization show gains in sampling efficiency.",
    "The weather was sunny on the day the experiments finished.",
]
TEXT = " ".join(DOC)
PAPER = ObjectiveConfig(a=5.0, lam=6.0)  # Lin & Bilmes (2011)


def slow_f(obj, subset):
    """F(S) straight from the formula, in Python loops."""
    w = obj.w.double().numpy()
    n = len(w)
    alpha = min(1.0, 5.0 / n)
    coverage = sum(min(sum(w[i, j] for j in subset), alpha * sum(w[i, j] for j in range(n))) for i in range(n))
    r = [sum(w[i, j] for i in range(n)) / n for j in range(n)]
    labels = obj.labels.tolist()
    diversity = sum(math.sqrt(sum(r[j] for j in subset if labels[j] == k)) for k in set(labels))
    return coverage + 6.0 * diversity


def test_objective_matches_the_formula():
    obj = SummaryObjective(DOC, Budget(3, "sentences"), PAPER)
    assert obj.alpha == pytest.approx(5 / 8) and obj.config.lam == 6.0
    assert obj.clusters.shape[0] == round(0.2 * 8)
    assert torch.allclose(obj.w.diagonal(), torch.ones(8), atol=1e-5)  # cosine of tf-idf vectors
    subsets = [(), (0,), (1, 4), (0, 2, 5, 7), tuple(range(8))]
    masks = torch.tensor([[1.0 if j in s else 0.0 for j in range(8)] for s in subsets])
    fast = obj.value(masks)
    for s, value in zip(subsets, fast):
        assert float(value) == pytest.approx(slow_f(obj, s), abs=2e-4)
    # the energy is the same value scaled, on one-hot (B, N, 2) input
    energy = obj(torch.nn.functional.one_hot(masks.long(), 2).float())
    assert torch.allclose(energy[:3], fast[:3] / (0.1 * obj.f1), atol=1e-4)  # feasible ones: no penalty


def test_budget_penalty_rule():
    obj = SummaryObjective(DOC, Budget(25, "words"), ObjectiveConfig(a=5.0, lam=6.0, penalty=1.0))
    masks = torch.tensor(list(itertools.product((0.0, 1.0), repeat=8)))
    feasible = obj.feasible(masks)
    assert torch.all(obj.penalty(masks[feasible]) == 0)
    energy = obj(torch.nn.functional.one_hot(masks.long(), 2).float())
    # adding any sentence that breaks the budget lowers the energy
    index = {tuple(m.tolist()): e for m, e in zip(masks, energy)}
    for m, ok in zip(masks, feasible):
        if not ok:
            continue
        for j in range(8):
            if m[j] == 0:
                bigger = m.clone()
                bigger[j] = 1
                if not obj.feasible(bigger[None])[0]:
                    assert index[tuple(bigger.tolist())] < index[tuple(m.tolist())]


@pytest.mark.parametrize("budget", [Budget(3, "sentences"), Budget(40, "words")])
def test_greedy_against_brute_force_and_sampler(budget):
    obj = SummaryObjective(DOC, budget, PAPER)
    best = brute_force(obj)
    opt = float(obj.value(best[None]))
    g = greedy(obj)
    assert bool(obj.feasible(g[None])[0])
    bound = (1 - math.exp(-1)) if budget.unit == "sentences" else (1 - math.exp(-0.5))
    assert bound * opt <= float(obj.value(g[None])) <= opt + 1e-5
    result = run_chains(obj, ChainSettings("mana", steps=200, chains=8, start="empty"), seed=0)
    for name, selection in result.selections.items():
        assert bool(obj.feasible(selection[None])[0]), name
    assert float(obj.value(result.selections["best"][None])) == pytest.approx(opt, abs=1e-4)


def test_lead_takes_the_longest_prefix():
    obj = SummaryObjective(DOC, Budget(30, "words"))
    assert lead(obj).tolist() == [1, 1, 0, 0, 0, 0, 0, 0]  # 14 + 15 words; the third would exceed 30
    assert lead(SummaryObjective(DOC, Budget(2, "sentences"))).tolist()[:3] == [1, 1, 0]


def test_votes():
    obj = SummaryObjective(DOC, Budget(2, "sentences"))
    samples = torch.tensor(
        [[1, 1, 0, 0, 0, 0, 0, 0]] * 3 + [[0, 0, 1, 0, 0, 0, 0, 1]] * 2 + [[1, 0, 1, 0, 0, 0, 0, 0]] * 2
    )
    assert sample_vote(obj, samples).tolist() == [1, 1, 0, 0, 0, 0, 0, 0]
    # frequencies: sentence 0 and 2 in 5 of 7, 1 in 3, 7 in 2: top two within the budget
    assert dimension_vote(obj, samples).tolist() == [1, 0, 1, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("sampler", ["gibbs", "lb", "una"])
def test_every_sampler_runs_on_the_same_energy(sampler):
    obj = SummaryObjective(DOC, Budget(2, "sentences"))
    result = run_chains(obj, ChainSettings(sampler, steps=60, chains=4), seed=1)
    assert result.objective_trace.shape == (60, 4)
    assert result.ess >= 1 and 0 <= result.acceptance_rate <= 1
    assert all(float(s.sum()) <= 2 for s in result.selections.values())


def test_effective_sample_size():
    rng = np.random.default_rng(0)
    assert effective_sample_size(rng.normal(size=4000)) == pytest.approx(4000, rel=0.15)
    x = np.zeros(20000)
    for t in range(1, len(x)):
        x[t] = 0.9 * x[t - 1] + rng.normal()
    assert effective_sample_size(x) == pytest.approx(20000 * 0.1 / 1.9, rel=0.3)
    assert effective_sample_size(np.ones(100)) == 1.0


def test_sentences_and_text_checks():
    assert split_sentences("First one here. Second one, e.g. this one! Third?\n\nA heading\n\nLast.") == [
        "First one here.",
        "Second one, e.g. this one!",
        "Third?",
        "A heading",
        "Last.",
    ]
    assert split_sentences(" \n\n ") == []
    with pytest.raises(InfillError, match="binary"):
        decode_text(b"\x7fELF\x00\x01")
    with pytest.raises(InfillError, match="UTF-8"):
        decode_text(b"caf\xe9 au lait")
    assert decode_text("café".encode()) == "café"


def test_aclsum_loading_and_detokenization():
    assert (
        detokenize("setup for NER ( named entities ) , within 1 - 5 F 1 .")
        == "setup for NER (named entities), within 1 - 5 F 1."
    )
    docs = load_aclsum("val", limit=2)
    assert len(docs) == 2 and all(len(d.sentences) > 5 and d.reference for d in docs)
    assert " ." not in docs[0].reference and " ," not in docs[0].sentences[0]
    with pytest.raises(InfillError):
        load_aclsum("dev")


def test_objective_bad_input():
    with pytest.raises(InfillError):
        SummaryObjective([], Budget(3, "sentences"))
    with pytest.raises(InfillError):
        Budget(0, "words")
    with pytest.raises(InfillError):
        ObjectiveConfig(temperature=0)
    with pytest.raises(InfillError, match="no words"):
        SummaryObjective(["...", "!!"], Budget(1, "sentences"))


def cli(args, capsys, stdin=None, monkeypatch=None):
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    try:
        code = main(args)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_summarize(tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text(TEXT)
    code, out, err = cli(["summarize", str(doc), "--sentences", "2", "--steps", "100"], capsys)
    assert code == 0 and err == ""
    lines = out.strip().split("\n")
    assert len(lines) == 2 and all(line in DOC for line in lines)
    assert [DOC.index(line) for line in lines] == sorted(DOC.index(line) for line in lines)  # document order
    code, out, _ = cli(["summarize", str(doc), "--words", "30", "--json", "--sampler", "greedy"], capsys)
    result = json.loads(out)
    assert code == 0 and result["words"] <= 30 and result["sentences"]
    code, out, _ = cli(["summarize", str(doc), "--words", "30", "--json", "--method", "mana", "--steps", "30"], capsys)
    result = json.loads(out)
    assert code == 0 and result["objective"] >= result["start_objective"] and result["words"] <= 30


@pytest.mark.parametrize(
    "content,args,message",
    [
        (b"", [], "no sentences"),
        (b"   \n\n  ", [], "no sentences"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00", [], "binary"),
        (b"\xff\xfe\xfa bad bytes", [], "UTF-8"),
        (TEXT.encode(), ["--words", "3"], "no sentence fits in 3 words"),
        (TEXT.encode(), ["--sentences", "0"], "positive integer"),
        (TEXT.encode(), ["--sampler", "nope"], "unknown method"),
        (b". \n\n \xe2\x80\xa2 \n\n It is.", [], "no sentence with a content word"),
        (TEXT.encode(), ["--step-size", "inf"], "positive number"),
        (TEXT.encode(), ["--anneal", "2"], "(0, 1]"),
        (TEXT.encode(), ["--similarity", "bert"], "invalid choice"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, capsys, content, args, message):
    path = tmp_path / "input"
    path.write_bytes(content)
    code, out, err = cli(["summarize", str(path), *args], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("infill: error:") and message in err
    assert "Traceback" not in err


def test_cli_whole_document_and_single_sentence(tmp_path, capsys, monkeypatch):
    path = tmp_path / "doc.txt"
    path.write_text(TEXT)
    code, out, err = cli(["summarize", str(path), "--sentences", "50"], capsys)
    assert code == 0 and out.strip().split("\n") == DOC and "whole document" in err
    code, out, err = cli(["summarize", "-"], capsys, stdin=b"Only one sentence here.", monkeypatch=monkeypatch)
    assert code == 0 and out == "Only one sentence here.\n"
    code, out, err = cli(["summarize", str(tmp_path / "missing.txt")], capsys)
    assert code == 2 and "cannot read" in err


def test_cli_subprocess_no_traceback(tmp_path):
    path = tmp_path / "binary"
    path.write_bytes(bytes(range(256)) * 4)
    proc = subprocess.run([sys.executable, "-m", "infill", "summarize", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("infill: error:") and "Traceback" not in proc.stderr


def test_cli_eval_summarization_small(tmp_path, capsys):
    out = tmp_path / "report.v2"  # a dotted name keeps its dot
    code, stdout, err = cli(
        [
            "eval-summarization",
            "--split",
            "train",
            "--limit",
            "1",
            "--steps",
            "20",
            "--chains",
            "2",
            "--methods",
            "lead,greedy,lexrank,mana,lb",
            "--output",
            str(out),
            "--quiet",
        ],
        capsys,
    )
    assert code == 0 and "wrote" in err
    report = json.loads((tmp_path / "report.v2.json").read_text())
    assert list(report["summary"]) == ["lead", "greedy", "lexrank", "mana", "lb"]
    assert report["summary"]["mana"]["below_greedy"] == 0 and report["summary"]["mana"]["best"]["empty"] == 0
    assert "| mana |" in (tmp_path / "report.v2.md").read_text() and "method:mana" in report["signatures"]["mana"]
    code, _, err = cli(["eval-summarization", "--methods", "lead,bogus", "--output", str(out)], capsys)
    assert code == 2 and "unknown method" in err


def test_eval_summarization_never_overwrites_by_default(tmp_path, capsys, monkeypatch):
    import infill.summarize.evaluation as evaluation

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(evaluation, "available", lambda: False)  # as without sumy
    args = ["eval-summarization", "--split", "train", "--limit", "1", "--methods", "greedy,lexrank", "--quiet"]
    assert cli(args, capsys)[0] == 0 and cli(args, capsys)[0] == 0
    reports = sorted((tmp_path / "runs").glob("summarization-aclsum-train-*.json"))
    assert len(reports) == 2
    report = json.loads(reports[0].read_text())
    assert list(report["summary"]) == ["greedy"] and "sumy is not installed" in report["notes"][0]
    code, _, err = cli(args + ["--output", str(reports[0].with_suffix(""))], capsys)
    assert code == 0 and err.startswith("replaced ")


def test_cli_empty_start_falls_back_to_greedy_when_the_chains_select_nothing(tmp_path, capsys):
    path = tmp_path / "doc.txt"
    path.write_text(TEXT)
    code, out, _ = cli(
        [
            "summarize",
            str(path),
            "--method",
            "mana",
            "--sentences",
            "1",
            "--steps",
            "1",
            "--start",
            "empty",
            "--step-size",
            "0.01",
            "--json",
        ],
        capsys,
    )
    result = json.loads(out)
    assert code == 0 and result["method"] == "greedy (fallback)" and len(result["indices"]) == 1


def test_clean_sentences_and_json_lists_the_dropped(tmp_path, capsys):
    cleaned = clean_sentences(["EQUATION", ".", "The cat sat.", "•", "The cat sat.", "1.", "It is."])
    assert cleaned.kept == ["EQUATION", "The cat sat."] and cleaned.indices == [0, 2]
    assert [(i, reason) for i, _, reason in cleaned.dropped] == [
        (1, "no content word"),
        (3, "no content word"),
        (4, "duplicate"),
        (5, "no content word"),
        (6, "no content word"),
    ]
    path = tmp_path / "doc.txt"
    path.write_text(DOC[0] + " •\n\n" + " ".join(DOC[1:]) + " " + DOC[2])
    code, out, _ = cli(["summarize", str(path), "--words", "40", "--json", "--steps", "20"], capsys)
    result = json.loads(out)
    assert code == 0 and [d["reason"] for d in result["dropped"]] == ["no content word", "duplicate"]
    assert result["document_sentences"] == 10 and all(s in DOC for s in result["sentences"])


@pytest.fixture(scope="module")
def long_document():
    """The longest train document (106 sentences): a large neighbourhood for una/mana."""
    return max(load_aclsum("train"), key=lambda d: len(d.sentences))


@pytest.mark.parametrize("sampler", ["mana", "una"])
def test_newton_samplers_move_on_a_long_document(long_document, sampler):
    obj = SummaryObjective(clean_sentences(long_document.sentences).kept, Budget(150, "words"))
    assert len(obj) > 90
    g = float(obj.value(greedy(obj)[None]))
    result = run_chains(obj, ChainSettings(sampler), seed=0)  # the default run, from greedy
    assert result.acceptance_rate > 0.05 and result.mean_hops > 0.05
    assert float(obj.value(result.selections["best"][None])) >= g
    # from the empty selection too, the auto step size keeps proposals small enough to be accepted
    result = run_chains(obj, ChainSettings(sampler, start="empty", steps=100), seed=0)
    assert result.acceptance_rate > 0.05 and result.selections["best"].sum() > 0
    assert all(bool(obj.feasible(s[None])[0]) for s in result.selections.values())


def test_auto_step_size_gives_the_expected_flips():
    delta = torch.tensor([[-20.0, -3.0, -1.0, 2.0, -8.0] * 20])
    alpha = auto_step_size(delta, 1.0)
    assert float(torch.sigmoid(0.5 * delta - 1 / alpha).sum()) == pytest.approx(1.0, rel=1e-3)
    assert auto_step_size(torch.full((1, 3), -50.0), 1.0) == 1e3  # cannot reach one flip: the largest step


def test_sampling_never_below_greedy_and_annealing(long_document):
    obj = SummaryObjective(clean_sentences(long_document.sentences).kept[:40], Budget(100, "words"))
    g = float(obj.value(greedy(obj)[None]))
    for settings in (ChainSettings("lb", steps=50), ChainSettings("mana", steps=50, anneal=0.2, segments=2)):
        result = run_chains(obj, settings, seed=3)
        assert float(obj.value(result.selections["best"][None])) >= g - 1e-6
        assert result.objective_trace.shape == (50, 4)
    assert len(result.step_sizes) == 2 and result.step_sizes[0] != result.step_sizes[1]


@pytest.mark.parametrize("method", ["lexrank", "textrank", "luhn", "lsa"])
def test_sumy_peers_fit_the_budget(method):
    pytest.importorskip("sumy")
    obj = SummaryObjective(DOC, Budget(30, "words"))
    selection = peer_summary(obj, method)
    assert 0 < float(obj.cost(selection[None])) <= 30


def test_large_document_sampler_refused_greedy_runs(tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = " ".join(DOC).replace(".", "").split()
    path = tmp_path / "long.txt"
    path.write_text(" ".join(" ".join(rng.choice(words, 12)).capitalize() + "." for _ in range(2000)))
    code, out, err = cli(["summarize", str(path), "--method", "mana"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "at most 500" in err
    code, out, err = cli(["summarize", str(path), "--json"], capsys)  # the default: greedy
    result = json.loads(out)
    assert code == 0 and 0 < result["words"] <= 150 and result["method"] == "greedy"


def test_eval_summarization_unwritable_output_fails_before_the_run(tmp_path, capsys):
    code, out, err = cli(["eval-summarization", "--limit", "1", "--output", "/proc/no-such-dir/report"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "cannot write the report" in err


def test_run_signature_line():
    from infill.pipeline.signature import RunSignature

    sig = RunSignature(
        {"data": "aclsum:val", "budget": "150 words"},
        "mana",
        {"steps": 200, "start": "greedy"},
        0,
        None,
        {"torch": "2.13.0"},
    )
    assert str(sig) == "data:aclsum:val|budget:150 words|method:mana|steps:200|start:greedy|seed:0|torch:2.13.0"
    assert sig.as_dict()["hyperparameters"] == {"steps": 200, "start": "greedy"}
