"""The evaluators against direct nltk / rouge-score computations on real corpus lines."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import pytest
from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu
from nltk.util import ngrams

from infill import metrics

CORPORA = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora" / "bert-gen"


def _lines(name: str) -> list[str]:
    path = CORPORA / name
    if not path.exists():
        pytest.skip(f"corpus {path} not available")
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def wiki():
    return _lines("wiki103.5k.txt")


@pytest.fixture(scope="module")
def tbc():
    return _lines("tbc.5k.txt")


def _nltk(list_of_references, hypotheses, **kwargs):
    with warnings.catch_warnings():  # nltk warns when an n-gram order has no match
        warnings.simplefilter("ignore")
        return nltk_corpus_bleu(list_of_references, hypotheses, **kwargs)


def test_corpus_bleu_equals_nltk_against_a_shared_reference_corpus(wiki, tbc):
    refs = [s.split() for s in wiki[:250] + tbc[:250]]
    hyps = wiki[3000:3025] + tbc[3000:3025]
    expected = _nltk([refs] * len(hyps), [h.split() for h in hyps])
    assert expected > 0.01
    assert metrics.corpus_bleu(hyps, refs) == pytest.approx(expected, abs=1e-12, rel=1e-12)


def test_corpus_bleu_reuses_reference_statistics_and_supports_other_orders(tbc):
    refs = [s.split() for s in tbc[:400]]
    hyps = [s.split() for s in tbc[1000:1040]]
    corpus = metrics.ReferenceCorpus(refs, max_n=4)
    expected = _nltk([refs] * len(hyps), hyps, weights=(1 / 3, 1 / 3, 1 / 3))
    assert metrics.corpus_bleu(hyps, corpus, max_n=3) == pytest.approx(expected, abs=1e-12)
    assert metrics.corpus_bleu(hyps, corpus) == pytest.approx(_nltk([refs] * len(hyps), hyps), abs=1e-12)


def test_corpus_bleu_brevity_penalty_and_closest_length_tie():
    # reference lengths 4 and 6 are both 1 away from 5: nltk takes the shorter, so no penalty
    refs = ["a b c d", "a b c d e f"]
    hyps = ["a b c d e"]
    expected = _nltk([[r.split() for r in refs]], [hyps[0].split()])
    assert metrics.corpus_bleu(hyps, refs) == pytest.approx(expected, abs=1e-15)
    short = ["a b c"]
    refs_long = ["a b c x y z w"]
    value = metrics.corpus_bleu(short, refs_long, max_n=2)
    assert value == pytest.approx(_nltk([[refs_long[0].split()]], [short[0].split()], weights=(0.5, 0.5)))
    assert value < 1.0


def test_corpus_bleu_is_zero_without_a_higher_order_match():
    assert metrics.corpus_bleu(["a b c d"], ["a x b y c z d"]) == 0.0
    assert metrics.corpus_bleu(["q r s t"], ["a b c d"]) == 0.0


def test_self_bleu_equals_nltk_with_all_other_sentences_as_references(wiki, tbc):
    for sentences in (tbc[200:260], wiki[10:50] + wiki[10:15]):  # duplicates exercise ties
        toks = [s.split() for s in sentences]
        refs = [[s for j, s in enumerate(toks) if j != i] for i in range(len(toks))]
        expected = _nltk(refs, toks)
        assert metrics.self_bleu(sentences) == pytest.approx(expected, abs=1e-12)


def test_self_bleu_of_near_copies_is_high_and_never_uses_the_sentence_itself(wiki):
    base = wiki[123].split()
    variants = [" ".join(base[:k] + ["zzz"] + base[k + 1 :]) for k in range(2, 7)]
    toks = [v.split() for v in variants]
    expected = _nltk([[s for j, s in enumerate(toks) if j != i] for i in range(len(toks))], toks)
    assert metrics.self_bleu(variants) == pytest.approx(expected, abs=1e-12)
    assert 0.5 < metrics.self_bleu(variants) < 1.0
    assert metrics.self_bleu(["a b c d e", "v w x y z"]) == 0.0
    with pytest.raises(ValueError):
        metrics.self_bleu(["only one"])


def _ngram_counts(sentences, n):
    return Counter(g for s in sentences for g in ngrams(s.split(), n))


@pytest.mark.parametrize("n", [2, 3])
def test_unique_ngrams_against_a_reference_and_against_itself(wiki, tbc, n):
    generated = tbc[500:540]
    reference = wiki[:2000] + tbc[2000:4000]
    counts = _ngram_counts(generated, n)
    total = sum(counts.values())
    ref_grams = set(_ngram_counts(reference, n))
    expected_ref = len(set(counts) - ref_grams) / total
    expected_self = sum(1 for c in counts.values() if c == 1) / total
    assert metrics.unique_ngrams(generated, n, reference) == pytest.approx(expected_ref, abs=1e-15)
    assert metrics.unique_ngrams(generated, n, metrics.ReferenceCorpus(reference)) == pytest.approx(
        expected_ref, abs=1e-15
    )
    assert metrics.unique_ngrams(generated, n) == pytest.approx(expected_self, abs=1e-15)
    assert 0 < expected_ref < 1 and 0 < expected_self <= 1


def test_unique_ngrams_counts_distinct_novel_ngrams_over_all_generated():
    generated = ["a b x", "a b x"]  # bigrams: (a b) x2, (b x) x2; only (b x) is new
    assert metrics.unique_ngrams(generated, 2, ["a b c"]) == pytest.approx(1 / 4)
    assert metrics.unique_ngrams(generated, 2) == 0.0
    with pytest.raises(ValueError):
        metrics.unique_ngrams(["a"], 2)


def test_rouge_equals_rouge_score_with_stemming(tbc):
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for candidate, reference in zip(tbc[:20], tbc[5:25]):
        expected = scorer.score(reference, candidate)
        got = metrics.rouge(candidate, reference)
        for name in ("rouge1", "rouge2", "rougeL"):
            assert got[name]["precision"] == pytest.approx(expected[name].precision, abs=1e-15)
            assert got[name]["recall"] == pytest.approx(expected[name].recall, abs=1e-15)
            assert got[name]["fmeasure"] == pytest.approx(expected[name].fmeasure, abs=1e-15)
    stemmed = metrics.rouge("the cats were running", "the cat was run")
    assert stemmed["rouge1"]["recall"] == pytest.approx(3 / 4)  # stemming matches cats/cat, running/run
