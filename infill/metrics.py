"""Diversity and quality of generated text, as defined in the text-infilling papers.

Sentences are whitespace-tokenized strings (or lists of tokens). The definitions follow Wang & Cho's
``bert-gen`` evaluation, reused by the DLP and DISCS papers:

* ``self_bleu``: nltk corpus BLEU where each sentence is the hypothesis and all *other* sentences are
  its references (lower = more diverse).
* ``unique_ngrams``: share of generated n-grams that are new, against a reference corpus or the
  generated set itself (higher = more diverse).
* ``corpus_bleu``: nltk corpus BLEU where every generated sentence is scored against the whole
  reference corpus (higher = closer to real text), computed from precomputed reference statistics.

``rouge`` (Google's rouge-score, with stemming) scores extractive summaries.
"""
from __future__ import annotations

import bisect
import functools
import math
from collections import Counter
from collections.abc import Iterable, Sequence

from nltk.util import ngrams as _ngrams

Sentence = str | Sequence[str]


def tokens(sentence: Sentence) -> list[str]:
    """Whitespace tokens of a string; a token list as is."""
    return sentence.split() if isinstance(sentence, str) else list(sentence)


def ngram_counts(words: Sequence[str], n: int) -> Counter:
    """Counts of the n-grams (tuples) of one tokenized sentence."""
    return Counter(_ngrams(words, n)) if len(words) >= n else Counter()


class ReferenceCorpus:
    """A reference corpus with the statistics BLEU and novelty need, computed once.

    ``max_counts[n][g]`` is the largest count of n-gram ``g`` in any single reference sentence (the
    clipping count of nltk's modified precision when every reference is used); ``lengths`` are the
    distinct reference lengths, sorted.
    """

    def __init__(self, sentences: Iterable[Sentence], max_n: int = 4):
        self.max_n = max_n
        self.max_counts: dict[int, dict[tuple, int]] = {n: {} for n in range(1, max_n + 1)}
        lengths = set()
        size = 0
        for sentence in sentences:
            words = tokens(sentence)
            size += 1
            lengths.add(len(words))
            for n in range(1, max_n + 1):
                best = self.max_counts[n]
                for gram, count in ngram_counts(words, n).items():
                    if count > best.get(gram, 0):
                        best[gram] = count
        if not size:
            raise ValueError("the reference corpus is empty")
        self.size = size
        self.lengths = sorted(lengths)

    def closest_length(self, hyp_len: int) -> int:
        """nltk's closest reference length: the nearest one, the shorter on a tie."""
        return _closest(self.lengths, hyp_len)


def _closest(sorted_lengths: Sequence[int], hyp_len: int) -> int:
    i = bisect.bisect_left(sorted_lengths, hyp_len)
    candidates = sorted_lengths[max(0, i - 1):i + 1]
    return min(candidates, key=lambda length: (abs(length - hyp_len), length))


def _bleu(numerators: list[int], denominators: list[int], hyp_len: int, ref_len: int) -> float:
    """nltk's corpus BLEU from summed statistics, uniform weights, no smoothing.

    nltk returns 0 when no unigram matches; when a higher order has no match it warns and
    substitutes the smallest float, giving a score below 1e-70: we return 0 for both.
    """
    if any(numerator == 0 for numerator in numerators):
        return 0.0
    weight = 1 / len(numerators)
    log_mean = math.fsum(weight * math.log(num / den) for num, den in zip(numerators, denominators))
    if hyp_len > ref_len:
        brevity = 1.0
    else:
        brevity = math.exp(1 - ref_len / hyp_len)
    return brevity * math.exp(log_mean)


def corpus_bleu(sentences: Iterable[Sentence], references: Iterable[Sentence] | ReferenceCorpus,
                max_n: int = 4) -> float:
    """Corpus BLEU of ``sentences``, each against the whole reference corpus, in [0, 1].

    Equal to ``nltk.translate.bleu_score.corpus_bleu([refs] * len(hyps), hyps)`` (uniform weights up
    to ``max_n``, no smoothing) but linear in the corpus sizes: pass a ``ReferenceCorpus`` to reuse the
    reference statistics across calls.
    """
    refs = references if isinstance(references, ReferenceCorpus) else ReferenceCorpus(references, max_n)
    if refs.max_n < max_n:
        raise ValueError(f"the reference statistics stop at {refs.max_n}-grams, below max_n={max_n}")
    numerators, denominators = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for sentence in sentences:
        words = tokens(sentence)
        for n in range(1, max_n + 1):
            counts = ngram_counts(words, n)
            best = refs.max_counts[n]
            numerators[n - 1] += sum(min(count, best.get(gram, 0)) for gram, count in counts.items())
            denominators[n - 1] += max(1, sum(counts.values()))
        hyp_len += len(words)
        ref_len += refs.closest_length(len(words))
    return _bleu(numerators, denominators, hyp_len, ref_len)


def self_bleu(sentences: Sequence[Sentence], max_n: int = 4) -> float:
    """Self-BLEU in [0, 1]: nltk corpus BLEU with each sentence as hypothesis and all the others
    (never itself) as references; whitespace tokens, uniform weights, no smoothing.

    Equal to ``corpus_bleu([[s for j, s in enumerate(S) if j != i] for i in range(len(S))], S)``.
    """
    sents = [tokens(s) for s in sentences]
    if len(sents) < 2:
        raise ValueError("self-BLEU needs at least two sentences")
    counts = [[ngram_counts(words, n) for n in range(1, max_n + 1)] for words in sents]
    # per n-gram: the largest count, the sentence holding it, and the largest count in any other sentence
    top: list[dict[tuple, list[int]]] = [{} for _ in range(max_n)]
    for i, per_order in enumerate(counts):
        for order, counter in enumerate(per_order):
            for gram, count in counter.items():
                entry = top[order].setdefault(gram, [0, -1, 0])
                if count > entry[0]:
                    entry[:] = [count, i, entry[0]]
                elif count > entry[2]:
                    entry[2] = count
    length_count = Counter(len(words) for words in sents)
    numerators, denominators = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for i, words in enumerate(sents):
        for order, counter in enumerate(counts[i]):
            for gram, count in counter.items():
                best, holder, second = top[order][gram]
                numerators[order] += min(count, second if holder == i else best)
            denominators[order] += max(1, sum(counter.values()))
        others = sorted(length for length, c in length_count.items()
                        if c - (length == len(words)) > 0)
        hyp_len += len(words)
        ref_len += _closest(others, len(words))
    return _bleu(numerators, denominators, hyp_len, ref_len)


def unique_ngrams(sentences: Iterable[Sentence], n: int,
                  reference: Iterable[Sentence] | ReferenceCorpus | None = None) -> float:
    """Share of new n-grams in ``sentences``, in [0, 1].

    With a ``reference`` corpus: the number of *distinct* generated n-grams absent from the reference,
    divided by the total number of generated n-grams. Without one: the number of n-grams occurring
    exactly once in the generated sentences, divided by the total.
    """
    counts = Counter()
    for sentence in sentences:
        counts.update(ngram_counts(tokens(sentence), n))
    total = sum(counts.values())
    if not total:
        raise ValueError(f"the sentences have no {n}-grams")
    if reference is None:
        return sum(1 for count in counts.values() if count == 1) / total
    if isinstance(reference, ReferenceCorpus):
        if n > reference.max_n:
            raise ValueError(f"the reference statistics stop at {reference.max_n}-grams, below n={n}")
        seen = reference.max_counts[n]
    else:
        seen = set()
        for sentence in reference:
            seen.update(ngram_counts(tokens(sentence), n))
    return sum(1 for gram in counts if gram not in seen) / total


@functools.lru_cache(maxsize=1)
def _rouge_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def rouge(candidate: str, reference: str) -> dict[str, dict[str, float]]:
    """ROUGE-1/2/L of ``candidate`` against ``reference`` with Google's rouge-score (Porter stemming
    on): ``{"rouge1": {"precision", "recall", "fmeasure"}, ...}``."""
    scores = _rouge_scorer().score(reference, candidate)
    return {name: {"precision": s.precision, "recall": s.recall, "fmeasure": s.fmeasure}
            for name, s in scores.items()}
