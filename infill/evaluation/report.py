"""The DLP Table 3 report: per-sampler diversity and quality of the kept fillings, as JSON, Markdown and a plot.

A sampler's metrics are computed, in percent, on all its kept fillings (top distinct by energy, all
sentences pooled), as bert-gen evaluates its set of generations: self-BLEU among the fillings (lower =
more diverse), unique 2/3-grams against the fillings themselves and against each reference corpus
(higher = more novel), and corpus BLEU of the fillings against all reference corpora together (higher =
closer to real text). Pooling keeps corpus BLEU-4 meaningful: five fillings of one sentence often share
no 4-gram with the references, which would make per-sentence scores mostly zero.
"""
from __future__ import annotations

import io
import json
import statistics
from pathlib import Path

from .. import metrics
from .store import write_atomic

NGRAM_ORDERS = (2, 3)


def fillings_metrics(texts: list[str], references: dict[str, metrics.ReferenceCorpus],
                     combined: metrics.ReferenceCorpus) -> dict[str, float]:
    """The metrics (fractions) of a set of fillings; self-BLEU only with two or more of them."""
    row = {}
    if len(texts) >= 2:
        row["self_bleu"] = metrics.self_bleu(texts)
    for n in NGRAM_ORDERS:
        row[f"unique_{n}_self"] = metrics.unique_ngrams(texts, n)
        for name, corpus in references.items():
            row[f"unique_{n}_{name}"] = metrics.unique_ngrams(texts, n, corpus)
    row["corpus_bleu"] = metrics.corpus_bleu(texts, combined)
    return row


def sampler_table(units: list[dict], reference_sentences: dict[str, list[list[str]]]) -> dict[str, dict]:
    """Per sampler (in first-seen order): metrics in percent, and cost totals."""
    references = {name: metrics.ReferenceCorpus(sentences) for name, sentences in reference_sentences.items()}
    combined = metrics.ReferenceCorpus(s for sentences in reference_sentences.values() for s in sentences)
    by_sampler: dict[str, list[dict]] = {}
    for unit in units:
        by_sampler.setdefault(unit["sampler"], []).append(unit)
    table = {}
    for sampler, group in by_sampler.items():
        texts = [f["text"] for u in group for f in u["fillings"]]
        summary = {key: 100 * value for key, value in fillings_metrics(texts, references, combined).items()}
        summary.update(
            sentences=len(group),
            fillings=len(texts),
            seconds=sum(u["seconds"] for u in group),
            energy_evaluations=sum(u.get("energy_evaluations", 0) for u in group),
            acceptance_rate=mean_defined(u.get("acceptance_rate") for u in group),
            mean_hops=mean_defined(u.get("mean_hops") for u in group),
            distinct_per_sentence=statistics.fmean(u["distinct"] for u in group),
            mean_energy=statistics.fmean(f["energy"] for u in group for f in u["fillings"]),
        )
        table[sampler] = summary
    return table


def mean_defined(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


EVAL_PACKAGES = ("infill", "torch", "transformers", "datasets", "nltk", "rouge-score", "numpy")
"""The packages whose versions an infilling report's signature records."""


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def markdown(report: dict) -> str:
    """The report as Markdown: the table, then the signature block."""
    corpora = report["signature"]["reference_corpora"]
    columns = [("self_bleu", "Self-BLEU ↓")]
    for name in ["self", *corpora]:
        columns += [(f"unique_{n}_{name}", f"Uniq {n}-gr {name} ↑") for n in NGRAM_ORDERS]
    columns += [("corpus_bleu", "Corpus BLEU ↑"), ("mean_energy", "Mean PLL ↑"), ("seconds", "Wall s"),
                ("energy_evaluations", "Energy evals"), ("acceptance_rate", "Accept"), ("mean_hops", "Hops/step"),
                ("distinct_per_sentence", "Distinct/sent")]
    lines = [f"# {report['signature']['protocol']['name']}: text infilling, diversity vs quality", "",
             "| Sampler | " + " | ".join(title for _, title in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for sampler, row in report["samplers"].items():
        lines.append(f"| {sampler} | " + " | ".join(_fmt(row.get(key)) if key != "energy_evaluations"
                                                      else _fmt(row.get(key), 0) for key, _ in columns) + " |")
    lines += ["", "Metrics in percent on each sampler's kept fillings, all sentences pooled (self-BLEU and corpus "
              "BLEU: nltk corpus BLEU-4, no smoothing; corpus BLEU against all reference corpora, which exclude "
              "the chosen sentences). Mean PLL: the pseudo-log-likelihood of the kept fillings (higher is more likely). "
              "Wall time and energy evaluations are totals over all sentences and chains; baselines (no steps) "
              "show no acceptance or hops.",
              "", "## Signature", "", "```json",
              json.dumps(report["signature"], indent=2, ensure_ascii=False), "```", ""]
    return "\n".join(lines)


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
            lines.append(json.dumps({"sentence_id": unit["sentence_id"], "corpus": unit["corpus"],
                                     "sampler": unit["sampler"], "rank": rank, "text": filling["text"],
                                     "fills": filling["fills"], "energy": filling["energy"],
                                     "original": unit["original"], "template": unit["template"]},
                                    ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def write_report(directory: Path, units: list[dict], references: dict[str, list[list[str]]],
                 signature: dict) -> dict:
    """Compute the table and write ``report.json``, ``report.md``, ``report.png``, ``samples.jsonl`` atomically."""
    report = {"signature": {**signature, "reference_corpora": list(references)},
              "samplers": sampler_table(units, references)}
    directory = Path(directory)
    write_atomic(directory / "samples.jsonl", samples_jsonl(units))
    write_atomic(directory / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_atomic(directory / "report.md", markdown(report))
    write_atomic(directory / "report.png", plot_png(report))
    return report
