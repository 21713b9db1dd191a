"""Both BLEU definitions on the recorded DLP Table 3 run: figures and times.

The fillings are the recorded samples of ``eval/dlp-table3-minilm`` (8 rows, top 5 of 20 sentences; no
sampling), the references the protocol's corpora without the chosen sentences, as ``infill eval`` builds
them. Per definition: each row's self-BLEU and corpus BLEU (percent); the time of the whole table (reference
statistics from a fresh ``ReferenceCorpus``, then every row's self-BLEU and corpus BLEU), the two routes
interleaved in one process, alternating which goes first, ``--repeats`` times; and, for scale, sacrebleu
called directly (the references counted again for each hypothesis): corpus BLEU of ``--direct`` gibbs
fillings, self-BLEU of the gibbs row.

    python -m scripts.bench_bleu [--repeats 7] [--direct 10]   # writes eval/bleu-dlp-table3/bleu-dlp-table3.{json,md}
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from infill import metrics
from infill.evaluation import load_protocol
from infill.evaluation.corpora import load_corpus
from infill.evaluation.tables import fmt, table
from infill.evaluation.tasks import make_tasks, references
from infill.pipeline.signature import library_versions
from scripts.harness import ROOT, cpu_model, median_range

RUN = ROOT / "eval" / "dlp-table3-minilm"


def recorded_fillings() -> dict[str, list[str]]:
    """Each row's kept fillings, in the recorded order."""
    rows: dict[str, list[str]] = {}
    for line in (RUN / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        rows.setdefault(sample["sampler"], []).append(sample["text"])
    return rows


def reference_sentences() -> list[list[str]]:
    """The protocol's reference sentences (every corpus, the chosen sentences left out), checked against
    the recorded task manifest."""
    protocol = load_protocol(ROOT / "eval" / "dlp-table3-minilm" / "dlp-table3.toml")
    corpora = {spec.name: load_corpus(spec, protocol.lowercase) for spec in protocol.corpora}
    tasks = make_tasks(protocol, corpora)
    recorded = [json.loads(line)["sentence_id"] for line in (RUN / "tasks.jsonl").read_text().splitlines()]
    if [task.sentence_id for task in tasks] != recorded:
        raise SystemExit("the protocol no longer chooses the recorded sentences")
    return [words for sentences in references(corpora, tasks).values() for words in sentences]


def prepare(corpus: metrics.ReferenceCorpus, bleu: str) -> None:
    """Compute the reference statistics that ``bleu`` uses (each is computed on first use)."""
    if bleu == "nltk":
        corpus.closest_length(len(corpus.max_counts))
    else:
        corpus.sacrebleu()


def table_figures(rows: dict[str, list[str]], refs: list[list[str]], bleu: str) -> tuple[dict, dict]:
    """Every row's self-BLEU and corpus BLEU (percent) by ``bleu``, and the seconds each part took."""
    seconds = {"reference": 0.0, "self_bleu": 0.0, "corpus_bleu": 0.0}

    def timed(part: str, compute):
        start = time.perf_counter()
        value = compute()
        seconds[part] += time.perf_counter() - start
        return value

    corpus = metrics.ReferenceCorpus(refs)
    timed("reference", lambda: prepare(corpus, bleu))
    figures = {
        row: {
            "self_bleu": 100 * timed("self_bleu", lambda: metrics.self_bleu(texts, bleu=bleu)),
            "corpus_bleu": 100 * timed("corpus_bleu", lambda: metrics.corpus_bleu(texts, corpus, bleu=bleu)),
        }
        for row, texts in rows.items()
    }
    seconds["total"] = sum(seconds.values())
    return figures, seconds


def direct_sacrebleu(row: list[str], refs: list[list[str]], hypotheses: int) -> dict:
    """sacrebleu's own ``corpus_bleu`` called directly, against the routes here: corpus BLEU of the first
    ``hypotheses`` of ``row`` with every reference as a reference stream, and self-BLEU of ``row`` with the
    k-th other sentence in the k-th stream (both count the references again for each hypothesis)."""
    import sacrebleu

    texts = row[:hypotheses]
    streams = [[" ".join(words)] * len(texts) for words in refs]
    start = time.perf_counter()
    corpus = sacrebleu.corpus_bleu(texts, streams, force=True).score
    corpus_seconds = time.perf_counter() - start
    others = [row[:i] + row[i + 1 :] for i in range(len(row))]
    start = time.perf_counter()
    self_bleu = sacrebleu.corpus_bleu(row, [list(stream) for stream in zip(*others)], force=True).score
    self_seconds = time.perf_counter() - start
    return {
        "corpus_bleu": {
            "hypotheses": len(texts),
            "seconds": corpus_seconds,
            "score": corpus,
            "route_score": 100 * metrics.corpus_bleu(texts, refs, bleu="sacrebleu"),
        },
        "self_bleu": {
            "sentences": len(row),
            "seconds": self_seconds,
            "score": self_bleu,
            "route_score": 100 * metrics.self_bleu(row, bleu="sacrebleu"),
        },
    }


def markdown(result: dict) -> str:
    """The figures and times as Markdown."""
    rows = [
        [
            row,
            *(
                fmt(result["figures"][bleu][row][key])
                for key in ("self_bleu", "corpus_bleu")
                for bleu in ("nltk", "sacrebleu")
            ),
            fmt(result["recorded"][row]["self_bleu"]),
            fmt(result["recorded"][row]["corpus_bleu"]),
        ]
        for row in result["figures"]["nltk"]
    ]
    times = [
        [f"{bleu}: {part}", *(f"{result['seconds'][bleu][part][k]:.3f}" for k in ("median", "min", "max"))]
        for bleu in ("nltk", "sacrebleu")
        for part in ("reference", "self_bleu", "corpus_bleu", "total")
    ]
    corpus, self_bleu = result["direct_sacrebleu"]["corpus_bleu"], result["direct_sacrebleu"]["self_bleu"]
    return "\n".join(
        [
            "# BLEU on the recorded DLP Table 3 run: nltk and sacrebleu",
            "",
            f"The {result['fillings']} kept fillings of `eval/dlp-table3-minilm` ({len(rows)} rows, top 5 of 20 "
            f"sentences) against the {result['references']:,} reference sentences (the protocol's corpora without the "
            "chosen sentences), percent. nltk: whitespace tokens, no smoothing (the report's figures, recomputed). "
            f"sacrebleu: `{result['signatures']['corpus_bleu']}` for corpus BLEU, `{result['signatures']['self_bleu']}` "
            "for self-BLEU (each filling against the row's other fillings).",
            "",
            *table(
                [
                    "Row",
                    "Self-BLEU nltk",
                    "Self-BLEU sacrebleu",
                    "Corpus BLEU nltk",
                    "Corpus BLEU sacrebleu",
                    "Recorded self-BLEU",
                    "Recorded corpus BLEU",
                ],
                rows,
            ),
            "",
            f"## Time of the whole table, seconds ({result['repeats']} runs per route, interleaved; median, min, max)",
            "",
            *table(["Route: part", "Median", "Min", "Max"], times),
            "",
            "`reference`: the reference corpus' statistics, once (nltk: clipping counts and lengths; sacrebleu: its "
            "BLEU's reference cache, the corpus tokenized by 13a and counted once); `self_bleu`, `corpus_bleu`: all "
            "rows (each filling tokenized and counted once).",
            "",
            "sacrebleu called directly counts the references again for each hypothesis. Corpus BLEU, "
            "`sacrebleu.corpus_bleu(hyps, [[ref] * len(hyps) for ref in refs])`: "
            f"{corpus['seconds']:.1f} s for the first {corpus['hypotheses']} gibbs fillings "
            f"({corpus['seconds'] / corpus['hypotheses']:.2f} s a hypothesis; BLEU {corpus['score']:.4f}, here "
            f"{corpus['route_score']:.4f}). Self-BLEU with the other fillings as reference streams: "
            f"{self_bleu['seconds']:.2f} s for the {self_bleu['sentences']} gibbs fillings (BLEU {self_bleu['score']:.4f}, "
            f"here {self_bleu['route_score']:.4f}).",
            "",
            f"Produced by `python -m scripts.bench_bleu` on {result['machine']}; versions "
            f"{', '.join(f'{k} {v}' for k, v in result['versions'].items())}.",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--direct", type=int, default=10, help="hypotheses for the direct sacrebleu call")
    parser.add_argument("--machine", default=f"{cpu_model()} (shared)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "eval" / "bleu-dlp-table3" / "bleu-dlp-table3", help="OUT.json and OUT.md"
    )
    args = parser.parse_args()
    rows, refs = recorded_fillings(), reference_sentences()
    recorded = json.loads((RUN / "report.json").read_text())["samplers"]
    seconds = {"nltk": [], "sacrebleu": []}
    figures = {}
    for repeat in range(args.repeats):
        for bleu in ("nltk", "sacrebleu") if repeat % 2 == 0 else ("sacrebleu", "nltk"):
            figures[bleu], taken = table_figures(rows, refs, bleu)
            seconds[bleu].append(taken)
    result = {
        "fillings": sum(map(len, rows.values())),
        "references": len(refs),
        "repeats": args.repeats,
        "figures": figures,
        "recorded": {row: {k: recorded[row].get(k) for k in ("self_bleu", "corpus_bleu")} for row in rows},
        "seconds": {
            bleu: {part: median_range(s[part] for s in runs) for part in runs[0]} for bleu, runs in seconds.items()
        },
        "direct_sacrebleu": direct_sacrebleu(rows["gibbs"], refs, args.direct),
        "signatures": {
            "self_bleu": metrics.sacrebleu_signature("var"),
            "corpus_bleu": metrics.sacrebleu_signature(len(refs)),
        },
        "machine": args.machine,
        "versions": library_versions(("infill-mcmc", "nltk", "sacrebleu")),
    }
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
