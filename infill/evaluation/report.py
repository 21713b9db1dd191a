"""The DLP Table 3 report: per-sampler diversity and quality of the kept fillings, as JSON, Markdown and a plot.

A sampler's metrics are computed, in percent, on all its kept fillings (top distinct by energy, all
sentences pooled), as bert-gen evaluates its set of generations: self-BLEU among the fillings (lower =
more diverse), unique 2/3-grams against the fillings themselves and against each reference corpus
(higher = more novel), and corpus BLEU of the fillings against all reference corpora together (higher =
closer to real text), both by the papers' nltk definition or by sacrebleu's (``bleu``, see
:mod:`infill.metrics`). Pooling keeps corpus BLEU-4 meaningful: five fillings of one sentence often share
no 4-gram with the references, which would make per-sentence scores mostly zero.

Compute is the mean number of encoder sequences per sentence. A row drawn at the encoder sequences of
another (``equal_sequences``) is compared with it sentence by sentence: top-5 mean PLL and wall time.
"""

from __future__ import annotations

import io
import json
import statistics
from pathlib import Path

from .. import metrics
from .compute import Measure, compare, describe
from .store import write_atomic
from .tables import fmt, mean_defined, signature_block, table

NGRAM_ORDERS = (2, 3)


def fillings_metrics(
    texts: list[str],
    references: dict[str, metrics.ReferenceCorpus],
    combined: metrics.ReferenceCorpus,
    bleu: str = "nltk",
) -> dict[str, float]:
    """The metrics (fractions) of a set of fillings; self-BLEU only with two or more of them."""
    row = {}
    if len(texts) >= 2:
        row["self_bleu"] = metrics.self_bleu(texts, bleu=bleu)
    for n in NGRAM_ORDERS:
        row[f"unique_{n}_self"] = metrics.unique_ngrams(texts, n)
        for name, corpus in references.items():
            row[f"unique_{n}_{name}"] = metrics.unique_ngrams(texts, n, corpus)
    row["corpus_bleu"] = metrics.corpus_bleu(texts, combined, bleu=bleu)
    return row


def sampler_table(
    units: list[dict], reference_sentences: dict[str, list[list[str]]], bleu: str = "nltk"
) -> dict[str, dict]:
    """Per sampler (in first-seen order): metrics in percent (BLEU by the ``bleu`` definition), and cost totals."""
    references = {name: metrics.ReferenceCorpus(sentences) for name, sentences in reference_sentences.items()}
    combined = metrics.ReferenceCorpus(s for sentences in reference_sentences.values() for s in sentences)
    by_sampler: dict[str, list[dict]] = {}
    for unit in units:
        by_sampler.setdefault(unit["sampler"], []).append(unit)
    table = {}
    for sampler, group in by_sampler.items():
        texts = [f["text"] for u in group for f in u["fillings"]]
        summary = {key: 100 * value for key, value in fillings_metrics(texts, references, combined, bleu).items()}
        summary.update(
            sentences=len(group),
            fillings=len(texts),
            seconds=sum(u["seconds"] for u in group),
            energy_evaluations=sum(u.get("energy_evaluations", 0) for u in group),
            encoder_sequences=mean_defined(u.get("encoder_sequences") for u in group),
            acceptance_rate=mean_defined(u.get("acceptance_rate") for u in group),
            mean_hops=mean_defined(u.get("mean_hops") for u in group),
            distinct_per_sentence=statistics.fmean(u["distinct"] for u in group),
            mean_energy=statistics.fmean(f["energy"] for u in group for f in u["fillings"]),
        )
        table[sampler] = summary
    return table


def equal_compute(units: list[dict]) -> list[dict]:
    """Each row drawn at another row's encoder sequences against that row, over the sentences both have
    (:func:`.compute.compare`, with ``row`` and ``reference`` named)."""
    by_key = {(u["sentence_id"], u["sampler"]): u for u in units}
    comparisons = []
    for row, reference in {
        u["sampler"]: u["config"]["equal_sequences"] for u in units if "equal_sequences" in u["config"]
    }.items():
        pairs = [
            (by_key[sentence, reference], unit)
            for (sentence, name), unit in by_key.items()
            if name == row and (sentence, reference) in by_key
        ]
        if pairs:
            measures = [[_measure(unit) for unit in pair] for pair in zip(*pairs)]
            comparisons.append({"row": row, "reference": reference, **compare(*measures)})
    return comparisons


def _measure(unit: dict) -> Measure:
    return Measure(
        statistics.fmean(f["energy"] for f in unit["fillings"]), unit["seconds"], unit.get("encoder_sequences")
    )


def bleu_signature(bleu: str, references: dict[str, list[list[str]]]) -> dict:
    """The signature's BLEU entries: the definition and, for sacrebleu, its own signature of self-BLEU (a
    row's fillings less one as references: ``var``) and of corpus BLEU (every reference sentence)."""
    if bleu == "nltk":
        return {"bleu": "nltk"}
    size = sum(len(sentences) for sentences in references.values())
    return {
        "bleu": "sacrebleu",
        "sacrebleu": {
            "self_bleu": metrics.sacrebleu_signature("var"),
            "corpus_bleu": metrics.sacrebleu_signature(size),
        },
    }


BLEU_NOTES = {
    "nltk": "nltk corpus BLEU-4, no smoothing",
    "sacrebleu": "sacrebleu corpus BLEU-4, its 13a tokens and exponential smoothing, signatures below",
}
"""How the report's note names each BLEU definition."""

EVAL_PACKAGES = ("infill-mcmc", "torch", "transformers", "datasets", "nltk", "rouge-score", "numpy")
"""The packages whose versions an infilling report's signature records."""


def markdown(report: dict) -> str:
    """The report as Markdown: the table, the comparisons at equal compute, then the signature block."""
    columns = _columns(report["signature"]["reference_corpora"])
    rows = [
        [sampler, *(fmt(row.get(key), digits) for key, _, digits in columns)]
        for sampler, row in report["samplers"].items()
    ]
    bleu_note = BLEU_NOTES[report["signature"]["bleu"]]
    lines = [
        f"# {report['signature']['protocol']['name']}: text infilling, diversity vs quality",
        "",
        *table(["Sampler", *(title for _, title, _ in columns)], rows),
        "",
        "Metrics in percent on each sampler's kept fillings, all sentences pooled (self-BLEU and corpus "
        f"BLEU: {bleu_note}; corpus BLEU against all reference corpora, which exclude "
        "the chosen sentences). Mean PLL: the pseudo-log-likelihood of the kept fillings (higher is more likely). "
        "Wall time and energy evaluations are totals over all sentences and chains; encoder sequences (forward "
        "copies and backward passes through the masked LM, starts and PLL re-scoring included) are a mean per "
        "sentence; baselines (no steps) show no acceptance or hops.",
        "",
    ]
    for c in report["equal_compute"]:
        lines += _equal_compute_section(c)
    return "\n".join(lines + signature_block(report["signature"]) + [""])


def _columns(reference_corpora: list[str]) -> list[tuple[str, str, int]]:
    """The table's columns after the sampler's name: ``(key, title, digits)``."""
    columns = [("sentences", "Sentences", 0), ("self_bleu", "Self-BLEU ↓", 2)]
    for name in ["self", *reference_corpora]:
        columns += [(f"unique_{n}_{name}", f"Uniq {n}-gr {name} ↑", 2) for n in NGRAM_ORDERS]
    return columns + [
        ("corpus_bleu", "Corpus BLEU ↑", 2),
        ("mean_energy", "Mean PLL ↑", 2),
        ("seconds", "Wall s", 2),
        ("encoder_sequences", "Enc. seqs/sent", 0),
        ("energy_evaluations", "Energy evals", 0),
        ("acceptance_rate", "Accept", 2),
        ("mean_hops", "Hops/step", 2),
        ("distinct_per_sentence", "Distinct/sent", 2),
    ]


def _equal_compute_section(comparison: dict) -> list[str]:
    """The lines of one comparison at equal encoder sequences (an entry of ``equal_compute``)."""
    row, reference = comparison["row"], comparison["reference"]
    return [
        f"## {reference} against {row}, at equal encoder sequences",
        "",
        f"Per sentence, {row} draws as many times as it takes to use as many encoder sequences as "
        f"{reference}, its PLL re-ranking included.",
        "",
        *describe(reference, row, comparison, "sentences"),
        "",
    ]


def plot_png(report: dict) -> bytes:
    """Diversity (self-BLEU, lower is more diverse) against quality (corpus BLEU) per sampler, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5.5, 4.2), dpi=120)
    axes = figure.subplots()
    for sampler, row in report["samplers"].items():
        x, y = row.get("self_bleu"), row["corpus_bleu"]
        if x is None:
            continue
        axes.scatter([x], [y], s=40)
        axes.annotate(sampler, (x, y), textcoords="offset points", xytext=(5, 4))
    axes.set_xlabel("self-BLEU (%)  ← more diverse")
    axes.set_ylabel("corpus BLEU (%)  ↑ closer to real text")
    axes.set_title(f"{report['signature']['protocol']['name']}: {report['signature']['model']}", fontsize=9)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def samples_jsonl(units: list[dict]) -> str:
    """One JSON line per kept filling."""
    lines = []
    for unit in units:
        for rank, filling in enumerate(unit["fillings"], 1):
            lines.append(
                json.dumps(
                    {
                        "sentence_id": unit["sentence_id"],
                        "corpus": unit["corpus"],
                        "sampler": unit["sampler"],
                        "rank": rank,
                        "text": filling["text"],
                        "fills": filling["fills"],
                        "energy": filling["energy"],
                        "original": unit["original"],
                        "template": unit["template"],
                    },
                    ensure_ascii=False,
                )
            )
    return "".join(line + "\n" for line in lines)


def write_report(
    directory: Path, units: list[dict], references: dict[str, list[list[str]]], signature: dict, bleu: str = "nltk"
) -> dict:
    """Compute the table (BLEU by the ``bleu`` definition) and write ``report.json``, ``report.md``,
    ``report.png``, ``samples.jsonl`` atomically."""
    report = {
        "signature": {**signature, "reference_corpora": list(references), **bleu_signature(bleu, references)},
        "samplers": sampler_table(units, references, bleu),
        "equal_compute": equal_compute(units),
    }
    directory = Path(directory)
    write_atomic(directory / "samples.jsonl", samples_jsonl(units))
    write_atomic(directory / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_atomic(directory / "report.md", markdown(report))
    write_atomic(directory / "report.png", plot_png(report))
    return report
