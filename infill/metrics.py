"""Diversity and quality of generated text, as defined in the text-infilling papers.

Sentences are whitespace-tokenized strings (or lists of tokens). The definitions follow Wang & Cho's
``bert-gen`` evaluation, reused by the DLP and DISCS papers:

* ``self_bleu``: nltk corpus BLEU where each sentence is the hypothesis and all *other* sentences are
  its references (lower = more diverse).
* ``unique_ngrams``: share of generated n-grams that are new, against a reference corpus or the
  generated set itself (higher = more diverse).
* ``corpus_bleu``: nltk corpus BLEU where every generated sentence is scored against the whole
  reference corpus (higher = closer to real text), computed from precomputed reference statistics.

``self_bleu`` and ``corpus_bleu`` take ``bleu="sacrebleu"`` for the same two comparisons by sacrebleu's
``BLEU`` class with its defaults (its own 13a tokenization, exponential smoothing, case kept), as today's
generation papers report; ``sentence_bleu`` is sacrebleu's sentence BLEU and ``sacrebleu_signature`` its
signature. See ``docs/bleu.md``. Every BLEU here is a fraction in [0, 1] (sacrebleu's score / 100).

``rouge`` (Google's rouge-score, with stemming) scores extractive summaries.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections import Counter
from collections.abc import Iterable, Sequence

from nltk.util import ngrams as _ngrams

from .errors import InfillError
from .optional import missing

Sentence = str | Sequence[str]

BLEU_DEFINITIONS = ("nltk", "sacrebleu")
"""The BLEU definitions: the papers' nltk corpus BLEU (the default) and sacrebleu's."""


def tokens(sentence: Sentence) -> list[str]:
    """Whitespace tokens of a string; a token list as is."""
    return sentence.split() if isinstance(sentence, str) else list(sentence)


def text(sentence: Sentence) -> str:
    """A string as is; a token list joined by spaces (sacrebleu tokenizes strings itself)."""
    return sentence if isinstance(sentence, str) else " ".join(sentence)


def check_bleu(bleu: str) -> None:
    """Fail with one line on an unknown BLEU definition, or on ``"sacrebleu"`` when it is not installed."""
    if bleu not in BLEU_DEFINITIONS:
        raise InfillError(f"unknown BLEU {bleu!r}; use one of: {', '.join(BLEU_DEFINITIONS)}")
    if bleu == "sacrebleu":
        _sacrebleu_class()


def _sacrebleu_class():
    """sacrebleu's ``BLEU`` class, or the one-line error naming the extra that installs it."""
    try:
        from sacrebleu.metrics import BLEU
    except ImportError:
        raise missing("sacrebleu", "eval") from None
    return BLEU


def _sacrebleu(max_n: int = 4, **options):
    """sacrebleu's ``BLEU`` with its defaults up to ``max_n``-grams; ``force`` only silences its warning about
    already tokenized text (the corpora are), the score is the same."""
    return _sacrebleu_class()(max_ngram_order=max_n, force=True, **options)


def ngram_counts(words: Sequence[str], n: int) -> Counter:
    """Counts of the n-grams (tuples) of one tokenized sentence."""
    return Counter(_ngrams(words, n)) if len(words) >= n else Counter()


class ReferenceCorpus:
    """A reference corpus with the statistics BLEU and novelty need, each computed once, on first use.

    ``max_counts[n][g]`` is the largest count of n-gram ``g`` in any single reference sentence (the
    clipping count of nltk's modified precision when every reference is used); ``lengths`` are the
    distinct reference lengths, sorted. ``sacrebleu(max_n)`` is sacrebleu's ``BLEU`` holding the
    corpus as every hypothesis' references.
    """

    def __init__(self, sentences: Iterable[Sentence], max_n: int = 4):
        self.max_n = max_n
        self.sentences = list(sentences)
        if not self.sentences:
            raise ValueError("the reference corpus is empty")
        self.size = len(self.sentences)
        self._sacrebleu: dict[int, object] = {}

    @functools.cached_property
    def max_counts(self) -> dict[int, dict[tuple, int]]:
        max_counts: dict[int, dict[tuple, int]] = {n: {} for n in range(1, self.max_n + 1)}
        for sentence in self.sentences:
            words = tokens(sentence)
            for n, best in max_counts.items():
                for gram, count in ngram_counts(words, n).items():
                    if count > best.get(gram, 0):
                        best[gram] = count
        return max_counts

    @functools.cached_property
    def lengths(self) -> list[int]:
        return sorted({len(tokens(sentence)) for sentence in self.sentences})

    def sacrebleu(self, max_n: int = 4):
        """sacrebleu's ``BLEU`` up to ``max_n``-grams with the whole corpus as the references of any
        hypothesis: its reference cache (n-gram clipping counts and lengths) is built once per ``max_n``,
        one segment whose references are all the corpus' sentences."""
        if max_n not in self._sacrebleu:
            self._sacrebleu[max_n] = _sacrebleu(max_n, references=[[text(s)] for s in self.sentences])
        return self._sacrebleu[max_n]

    def closest_length(self, hyp_len: int) -> int:
        """nltk's closest reference length: the nearest one, the shorter on a tie."""
        return _closest(self.lengths, hyp_len)


def _closest(sorted_lengths: Sequence[int], hyp_len: int) -> int:
    i = bisect.bisect_left(sorted_lengths, hyp_len)
    candidates = sorted_lengths[max(0, i - 1) : i + 1]
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


def corpus_bleu(
    sentences: Iterable[Sentence], references: Iterable[Sentence] | ReferenceCorpus, max_n: int = 4, bleu: str = "nltk"
) -> float:
    """Corpus BLEU of ``sentences``, each against the whole reference corpus, in [0, 1].

    ``bleu="nltk"``: equal to ``nltk.translate.bleu_score.corpus_bleu([refs] * len(hyps), hyps)``
    (uniform weights up to ``max_n``, no smoothing) but linear in the corpus sizes. ``bleu="sacrebleu"``:
    equal to ``sacrebleu.corpus_bleu(hyps, [[ref] * len(hyps) for ref in refs]).score / 100``, the
    references tokenized and counted once. Pass a ``ReferenceCorpus`` to reuse the reference statistics
    across calls.
    """
    check_bleu(bleu)
    refs = references if isinstance(references, ReferenceCorpus) else ReferenceCorpus(references, max_n)
    if refs.max_n < max_n:
        raise ValueError(f"the reference statistics stop at {refs.max_n}-grams, below max_n={max_n}")
    if bleu == "sacrebleu":
        return _sacrebleu_corpus(refs.sacrebleu(max_n), [text(s) for s in sentences])
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


def _sacrebleu_corpus(scorer, hypotheses: list[str]) -> float:
    """sacrebleu's corpus BLEU of ``hypotheses``, each against the one cached reference segment of
    ``scorer``: the segment statistics of each hypothesis, summed, scored by sacrebleu's ``compute_bleu``."""
    scores = [scorer.corpus_score([hypothesis], None) for hypothesis in hypotheses]
    return (
        scorer.compute_bleu(
            [sum(counts) for counts in zip(*(s.counts for s in scores))],
            [sum(totals) for totals in zip(*(s.totals for s in scores))],
            sum(s.sys_len for s in scores),
            sum(s.ref_len for s in scores),
            smooth_method=scorer.smooth_method,
            smooth_value=scorer.smooth_value,
            effective_order=scorer.effective_order,
            max_ngram_order=scorer.max_ngram_order,
        ).score
        / 100
    )


def _top_two(counters: Sequence[Counter]) -> dict[tuple, list[int]]:
    """Per n-gram: its largest count in any of ``counters``, the index of the counter holding it, and its
    largest count in any other counter."""
    top: dict[tuple, list[int]] = {}
    for i, counter in enumerate(counters):
        for gram, count in counter.items():
            entry = top.setdefault(gram, [0, -1, 0])
            if count > entry[0]:
                entry[:] = [count, i, entry[0]]
            elif count > entry[2]:
                entry[2] = count
    return top


class _OtherSentences:
    """The clipping counts of sentence ``i``'s references when they are all the other sentences (each
    n-gram's largest count in any of them), read from ``_top_two`` of all the sentences' counts."""

    def __init__(self, top: dict[tuple, list[int]], i: int):
        self.top, self.i = top, i

    def __contains__(self, gram: tuple) -> bool:
        return gram in self.top

    def __getitem__(self, gram: tuple) -> int:
        best, holder, second = self.top[gram]
        return second if holder == self.i else best


def _sacrebleu_self(texts: list[str], max_n: int) -> float:
    """sacrebleu's self-BLEU: each sentence tokenized (13a) and counted once, then sacrebleu's own segment
    statistics of each against the others' clipping counts and lengths, summed and scored by sacrebleu (the
    reference statistics its ``BLEU`` would cache per hypothesis, built here in one pass)."""
    from sacrebleu.metrics.helpers import extract_all_word_ngrams

    scorer = _sacrebleu(max_n)
    segments = [scorer._preprocess_segment(t) for t in texts]
    counted = [extract_all_word_ngrams(segment, 1, max_n) for segment in segments]
    top = _top_two([counts for counts, _ in counted])
    lengths = [length for _, length in counted]
    stats = [
        scorer._compute_segment_statistics(
            segment, {"ref_ngrams": _OtherSentences(top, i), "ref_lens": lengths[:i] + lengths[i + 1 :]}
        )
        for i, segment in enumerate(segments)
    ]
    return scorer._aggregate_and_compute(stats).score / 100


def self_bleu(sentences: Sequence[Sentence], max_n: int = 4, bleu: str = "nltk") -> float:
    """Self-BLEU in [0, 1]: corpus BLEU with each sentence as hypothesis and all the others (never
    itself) as references.

    ``bleu="nltk"``: whitespace tokens, uniform weights, no smoothing; equal to nltk's
    ``corpus_bleu([[s for j, s in enumerate(S) if j != i] for i in range(len(S))], S)``.
    ``bleu="sacrebleu"``: equal to sacrebleu's ``corpus_bleu(S, refs)`` where the k-th reference stream
    holds the k-th other sentence of every hypothesis. Both tokenize and count each sentence once.
    """
    check_bleu(bleu)
    if len(sentences) < 2:
        raise ValueError("self-BLEU needs at least two sentences")
    if bleu == "sacrebleu":
        return _sacrebleu_self([text(s) for s in sentences], max_n)
    sents = [tokens(s) for s in sentences]
    counts = [[ngram_counts(words, n) for n in range(1, max_n + 1)] for words in sents]
    top = [_top_two([per_order[order] for per_order in counts]) for order in range(max_n)]
    length_count = Counter(len(words) for words in sents)
    numerators, denominators = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for i, words in enumerate(sents):
        for order, counter in enumerate(counts[i]):
            for gram, count in counter.items():
                best, holder, second = top[order][gram]
                numerators[order] += min(count, second if holder == i else best)
            denominators[order] += max(1, sum(counter.values()))
        others = sorted(length for length, c in length_count.items() if c - (length == len(words)) > 0)
        hyp_len += len(words)
        ref_len += _closest(others, len(words))
    return _bleu(numerators, denominators, hyp_len, ref_len)


def sentence_bleu(hypothesis: Sentence, reference: Sentence) -> float:
    """sacrebleu's sentence BLEU of ``hypothesis`` against one ``reference``, in [0, 1]: equal to
    ``sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100`` (13a tokens, exponential smoothing,
    effective order)."""
    return _sacrebleu(effective_order=True).sentence_score(text(hypothesis), [text(reference)]).score / 100


def sacrebleu_signature(num_refs: int | str, effective_order: bool = False) -> str:
    """sacrebleu's own signature of the BLEU computed here with ``num_refs`` references per hypothesis
    (``"var"``: a varying number), e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0``."""
    scorer = _sacrebleu(effective_order=effective_order)
    scorer.num_refs = -1 if num_refs == "var" else num_refs  # what sacrebleu sets when it caches references
    return str(scorer.get_signature())


def unique_ngrams(
    sentences: Iterable[Sentence], n: int, reference: Iterable[Sentence] | ReferenceCorpus | None = None
) -> float:
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
    return {name: {"precision": s.precision, "recall": s.recall, "fmeasure": s.fmeasure} for name, s in scores.items()}
