"""BLEU by sacrebleu beside the papers' nltk definition: equal to direct sacrebleu calls on small cases, the
nltk figures of the recorded DLP Table 3 run unchanged, the report's signature, rewrite's BLEU to the source."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import sacrebleu

from infill import metrics
from infill.constraints.rewrite import source_bleu
from infill.errors import InfillError
from infill.evaluation import evaluate
from infill.evaluation.report import write_report

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / ".." / "shared" / "corpora" / "bert-gen"
RUN = ROOT / "eval" / "dlp-table3-minilm"


@pytest.fixture(scope="module")
def lines():
    path = CORPORA / "tbc.5k.txt"
    if not path.exists():
        pytest.skip(f"corpus {path} not available")
    return path.read_text(encoding="utf-8").splitlines()


def _direct_self_bleu(sentences, **options):
    others = [sentences[:i] + sentences[i + 1 :] for i in range(len(sentences))]
    return sacrebleu.corpus_bleu(sentences, [list(stream) for stream in zip(*others)], **options).score / 100


def test_corpus_bleu_equals_sacrebleu_with_every_reference_for_every_hypothesis(lines):
    refs, hyps = lines[:200], lines[1000:1030]
    expected = sacrebleu.corpus_bleu(hyps, [[ref] * len(hyps) for ref in refs]).score / 100
    assert expected > 0.01
    corpus = metrics.ReferenceCorpus(refs)
    assert metrics.corpus_bleu(hyps, corpus, bleu="sacrebleu") == pytest.approx(expected, abs=1e-12)
    assert metrics.corpus_bleu(hyps, [r.split() for r in refs], bleu="sacrebleu") == pytest.approx(expected, abs=1e-12)
    trigrams = sacrebleu.BLEU(max_ngram_order=3).corpus_score(hyps, [[ref] * len(hyps) for ref in refs]).score / 100
    assert metrics.corpus_bleu(hyps, corpus, max_n=3, bleu="sacrebleu") == pytest.approx(trigrams, abs=1e-12)


def test_self_bleu_equals_sacrebleu_with_the_other_sentences_as_references(lines):
    for sentences in (lines[200:240], lines[10:30] + lines[10:13]):  # duplicates exercise ties
        assert metrics.self_bleu(sentences, bleu="sacrebleu") == pytest.approx(_direct_self_bleu(sentences), abs=1e-12)
    sentences = lines[300:330]
    others = [sentences[:i] + sentences[i + 1 :] for i in range(len(sentences))]
    trigrams = sacrebleu.BLEU(max_ngram_order=3).corpus_score(sentences, [list(s) for s in zip(*others)]).score
    assert metrics.self_bleu([s.split() for s in sentences], max_n=3, bleu="sacrebleu") == pytest.approx(
        trigrams / 100, abs=1e-12
    )


def test_sacrebleu_smooths_where_nltk_gives_zero_and_tokenizes_by_13a():
    sentences = ["a b c d e", "a b c x y", "v w c d z"]  # no 4-gram shared: nltk's BLEU-4 is 0
    assert metrics.self_bleu(sentences) == 0.0
    smoothed = metrics.self_bleu(sentences, bleu="sacrebleu")
    assert 0 < smoothed == pytest.approx(_direct_self_bleu(sentences), abs=1e-12)
    assert metrics.corpus_bleu(["the cat, too."], ["the cat , too ."], bleu="sacrebleu") == pytest.approx(1.0)
    assert metrics.corpus_bleu(["the cat, too."], ["the cat , too ."]) < 1.0  # whitespace tokens differ


def test_sentence_bleu_and_signatures_are_sacrebleus(lines):
    for hypothesis, reference in zip(lines[:10], lines[3:13]):
        expected = sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100
        assert metrics.sentence_bleu(hypothesis, reference) == pytest.approx(expected, abs=1e-12)
    version = sacrebleu.__version__
    assert metrics.sacrebleu_signature(7) == f"nrefs:7|case:mixed|eff:no|tok:13a|smooth:exp|version:{version}"
    assert metrics.sacrebleu_signature("var", effective_order=True).startswith("nrefs:var|case:mixed|eff:yes|")


def test_an_unknown_bleu_is_one_line_before_anything_runs(tmp_path):
    with pytest.raises(InfillError, match="^unknown BLEU 'bleurt'; use one of: nltk, sacrebleu$"):
        metrics.self_bleu(["a b", "a c"], bleu="bleurt")
    with pytest.raises(InfillError, match="unknown BLEU"):
        metrics.corpus_bleu(["a b"], ["a c"], bleu="NLTK")
    with pytest.raises(InfillError, match="unknown BLEU"):
        evaluate(
            ROOT / "eval" / "dlp-table3-minilm" / "dlp-table3.toml", tmp_path / "out", model="unused", bleu="bleurt"
        )
    assert not (tmp_path / "out").exists()


def test_a_missing_sacrebleu_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sacrebleu.metrics", None)
    with pytest.raises(InfillError, match=r"sacrebleu is not installed; .*infill-mcmc\[eval\]"):
        metrics.self_bleu(["a b", "a c"], bleu="sacrebleu")
    assert source_bleu(["a b"], "a c") == ([None], None)


def _recorded() -> tuple[dict[str, list[str]], dict]:
    rows: dict[str, list[str]] = {}
    for line in (RUN / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        rows.setdefault(sample["sampler"], []).append(sample["text"])
    return rows, json.loads((RUN / "report.json").read_text())["samplers"]


def test_the_recorded_dlp_table3_self_bleu_is_unchanged():
    rows, report = _recorded()
    assert len(rows) == 8
    for row, texts in rows.items():
        assert 100 * metrics.self_bleu(texts) == pytest.approx(report[row]["self_bleu"], abs=1e-9)


def test_the_recorded_dlp_table3_corpus_bleu_is_unchanged():
    from infill.evaluation import load_protocol
    from infill.evaluation.corpora import load_corpus
    from infill.evaluation.tasks import make_tasks, references

    protocol = load_protocol(ROOT / "eval" / "dlp-table3-minilm" / "dlp-table3.toml")
    if not all(spec.path.exists() for spec in protocol.corpora):
        pytest.skip("the bert-gen corpora are not available")
    corpora = {spec.name: load_corpus(spec, protocol.lowercase) for spec in protocol.corpora}
    corpus = metrics.ReferenceCorpus(
        s for sentences in references(corpora, make_tasks(protocol, corpora)).values() for s in sentences
    )
    rows, report = _recorded()
    for row in ("gibbs", "argmax", "infill-default"):
        assert 100 * metrics.corpus_bleu(rows[row], corpus) == pytest.approx(report[row]["corpus_bleu"], abs=1e-9)


def _unit(sampler: str, sentence: int, texts: list[str]) -> dict:
    return {
        "sentence_id": f"tbc-{sentence}",
        "corpus": "tbc",
        "sampler": sampler,
        "seconds": 1.0,
        "distinct": len(texts),
        "config": {},
        "original": texts[0],
        "template": texts[0],
        "fillings": [{"text": t, "fills": [], "energy": -1.0} for t in texts],
    }


@pytest.mark.parametrize("bleu", ["nltk", "sacrebleu"])
def test_the_report_computes_and_signs_its_bleu(tmp_path, lines, bleu):
    units = [_unit("gibbs", i, lines[100 + 3 * i : 103 + 3 * i]) for i in range(4)]
    refs = {"tbc": [line.split() for line in lines[2000:2300]]}
    report = write_report(tmp_path, units, refs, {"protocol": {"name": "tiny"}, "model": "m"}, bleu=bleu)
    texts = [t for u in units for t in (f["text"] for f in u["fillings"])]
    row = report["samplers"]["gibbs"]
    assert row["self_bleu"] == pytest.approx(100 * metrics.self_bleu(texts, bleu=bleu), abs=1e-9)
    assert row["corpus_bleu"] == pytest.approx(100 * metrics.corpus_bleu(texts, refs["tbc"], bleu=bleu), abs=1e-9)
    signature, markdown = report["signature"], (tmp_path / "report.md").read_text()
    assert signature["bleu"] == bleu
    if bleu == "sacrebleu":
        assert signature["sacrebleu"]["corpus_bleu"].startswith("nrefs:300|case:mixed|eff:no|tok:13a|smooth:exp|")
        assert signature["sacrebleu"]["self_bleu"].startswith("nrefs:var|")
        assert "sacrebleu corpus BLEU-4, its 13a tokens" in markdown and "tok:13a" in markdown
    else:
        assert "sacrebleu" not in signature and "nltk corpus BLEU-4" in markdown


def test_rewrite_json_adds_sacrebleus_sentence_bleu_to_the_source(capsys, tiny_model_dir):
    from infill.cli import main

    source = "the cat sat on the mat near the door ."
    code = main(
        [
            "rewrite",
            source,
            "--model",
            str(tiny_model_dir),
            "--steps",
            "2",
            "-n",
            "3",
            "--top",
            "2",
            "--seed",
            "0",
            "-q",
            "--json",
        ]
    )
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(records) >= 2
    for record in records[:-1]:
        expected = sacrebleu.sentence_bleu(record["text"], [source]).score
        assert record["source_bleu"] == pytest.approx(expected, abs=1e-9)
    assert records[-1]["source_bleu_signature"].startswith("nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|")
