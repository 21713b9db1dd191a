"""Quality/diversity frontier of every method on bert-gen templates, and the issue's targets for the defaults.

    python -m scripts.frontier --model ../shared/models/infill-dev-minilm-mlm --out runs/frontier
        [--rows independent,left-to-right,argmax,gibbs,gibbs-mh,gwg,dmala,dula] [--temperatures 1,0.7,0.5]
        [--limit N] [--equal-sequences left-to-right,independent]

A row is a method name or ``name:key=value;key=value`` (e.g. ``gibbs-mh:init=uniform;steps=50``), run with
the other settings at their defaults; each row runs at every temperature (``argmax`` once). The row whose
configuration is the defaults' (``RunConfig()``) is marked ``(default)``. Templates come from
``eval/frontier-minilm/frontier.toml``. For every (template, row) the script records, over the ``chains`` samples (the chains'
final states, or a baseline's draws): mean PLL, self-BLEU, corpus BLEU against the corpora without the chosen
sentences; and the mean PLL of the ``top`` 5 fillings (the row's own top decoding; a baseline's distinct draws
re-ranked by PLL), wall time (with ``--repeats N``, the median of N runs) and encoder sequences
(``Diagnostics.encoder_sequences``). Rows run interleaved per template, repeats in turn, so time ratios see
the same machine load.

At equal compute: each method of ``--equal-sequences`` (a baseline) also runs as the row ``METHOD@equal-sequences``,
with, per template, as many draws as it takes to use the default row's encoder sequences on that template
(within one draw's cost; its PLL re-ranking counted; see ``infill.evaluation.compute``), right after it.

Targets (set when the frontier study was planned), for the default row against ``left-to-right`` at T = 1: top-5 mean PLL higher on >= 75% of the
templates; pooled self-BLEU of the samples no higher; wall time at most 10x (median and spread of per-template
ratios).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from infill import Infiller
from infill.evaluation.compute import SUFFIX, Measure, compare, describe, matched
from infill.evaluation.corpora import load_corpus
from infill.evaluation.protocol import load_protocol
from infill.evaluation.report import EVAL_PACKAGES
from infill.evaluation.tables import fmt, mean_defined, signature_block, table
from infill.evaluation.tasks import make_tasks, references
from infill.metrics import ReferenceCorpus, corpus_bleu, self_bleu
from infill.onepass.methods import ONE_PASS
from infill.pipeline.config import RunConfig
from infill.pipeline.signature import library_versions

ROOT = Path(__file__).resolve().parents[1]
ROWS = "independent,left-to-right,argmax,gibbs,gibbs-mh,gwg,dmala,dula"
EQUAL = "left-to-right,independent"
TOP = 5


def parse_row(spec: str, temperature: float) -> tuple[str, RunConfig]:
    """A row label and its configuration at ``temperature``."""
    name, _, settings = spec.partition(":")
    options = {"method": name}
    for item in filter(None, settings.split(";")):
        key, _, value = item.partition("=")
        options[key] = json.loads(value) if value[:1].isdigit() or value[:1] in "-[{" else value
    if name not in ONE_PASS or "temperature" not in ONE_PASS[name].untaken:  # argmax takes none
        options.setdefault("temperature", temperature)
    return f"{spec}@T={temperature:g}", RunConfig.create(top=TOP, seed=0, **options)


def timed_run(infiller: Infiller, task, config: RunConfig):
    """The result of ``config`` on ``task`` and the run's wall seconds."""
    start = time.perf_counter()
    (result,) = infiller.run([task.template], config)
    return result, time.perf_counter() - start


def run_row(infiller: Infiller, task, config: RunConfig, samples: bool = True) -> dict:
    """One (template, row) measurement: the run with ``top`` (a baseline's distinct draws re-ranked by PLL),
    timed; with ``samples``, the row's samples (a sampler's chains' final states, a baseline's draws) from a
    second, untimed run with the same seed, without ``top``."""
    result, seconds = timed_run(infiller, task, config)
    d = result.diagnostics
    record = {
        "top_energies": [s.energy for s in result.samples],
        "seconds": seconds,
        "all_seconds": [seconds],
        "encoder_sequences": d.encoder_sequences,
        "acceptance_rate": d.acceptance_rate,
        "mean_hops": d.mean_hops,
        "tuned": d.tuned,
        "draws": d.num_samples,
    }
    if samples:
        (final,) = infiller.run([task.template], replace(config, top=None))
        record.update(texts=[task.fill(s.fills) for s in final.samples], energies=[s.energy for s in final.samples])
    return record


def run_equal(infiller: Infiller, task, config: RunConfig, budget: int) -> dict:
    """The baseline ``config`` on ``task`` given ``budget`` encoder sequences: it draws until they are spent."""
    run, match = matched(
        lambda b: run_row(infiller, task, replace(config, budget=b), False),
        budget,
        config.method,
        len(task.masked),
        TOP,
    )
    return {**run, **match}


def summarize(runs: list[dict], refs: ReferenceCorpus) -> dict:
    """A row's means over templates (self-BLEU per template, corpus BLEU pooled), in percent for BLEU; the
    samples' metrics are None for a row run without its samples."""
    sampled = "texts" in runs[0]
    return {
        "mean_pll": statistics.fmean(statistics.fmean(r["energies"]) for r in runs) if sampled else None,
        "top5_pll": statistics.fmean(statistics.fmean(r["top_energies"]) for r in runs),
        "self_bleu": 100 * statistics.fmean(self_bleu(r["texts"]) for r in runs) if sampled else None,
        "corpus_bleu": 100 * corpus_bleu([t for r in runs for t in r["texts"]], refs) if sampled else None,
        "seconds": statistics.fmean(r["seconds"] for r in runs),
        "encoder_sequences": mean_defined(r["encoder_sequences"] for r in runs),
        "draws": mean_defined(r.get("draws") for r in runs),
        "acceptance_rate": mean_defined(r["acceptance_rate"] for r in runs),
        "mean_hops": mean_defined(r["mean_hops"] for r in runs),
    }


def measures(runs: list[dict]) -> list[Measure]:
    return [Measure(statistics.fmean(r["top_energies"]), r["seconds"], r["encoder_sequences"]) for r in runs]


def targets(per_template: dict[str, list[dict]], ours: str, baseline: str) -> dict:
    a, b = per_template[ours], per_template[baseline]
    return {
        "row": ours,
        "baseline": baseline,
        **compare(measures(a), measures(b)),
        "self_bleu": 100 * statistics.fmean(self_bleu(x["texts"]) for x in a),
        "baseline_self_bleu": 100 * statistics.fmean(self_bleu(y["texts"]) for y in b),
    }


def plot(table: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.5))
    for axis, (y, label) in zip(
        figure.subplots(1, 2), [("mean_pll", "mean PLL of the samples"), ("corpus_bleu", "corpus BLEU (%)")]
    ):
        for name, row in table.items():
            method = name.split("@")[0]
            marker = "s" if method in ("independent", "left-to-right", "argmax") else "o"
            if row[y] is None:
                continue
            axis.scatter(row["self_bleu"], row[y], marker=marker, s=18)
            axis.annotate(name, (row["self_bleu"], row[y]), fontsize=6)
        axis.set_xlabel("self-BLEU (%) of the samples, lower = more diverse")
        axis.set_ylabel(label)
    figure.tight_layout()
    figure.savefig(path, dpi=130)


def markdown(report: dict) -> str:
    columns = [
        ("mean_pll", "mean PLL ↑", 2),
        ("top5_pll", "top-5 PLL ↑", 2),
        ("self_bleu", "self-BLEU ↓", 1),
        ("corpus_bleu", "corpus BLEU ↑", 1),
        ("seconds", "s/template", 2),
        ("encoder_sequences", "enc. seqs/template", 0),
        ("draws", "draws/template", 0),
        ("acceptance_rate", "accept", 2),
        ("mean_hops", "hops/step", 2),
    ]
    rows = [[name, *(fmt(row.get(key), digits) for key, _, digits in columns)] for name, row in report["rows"].items()]
    t = report["targets"]
    lines = [
        "# Quality/diversity frontier on bert-gen templates",
        "",
        *table(["row", *(title for _, title, _ in columns)], rows),
        "",
        f"s/template: the median of {report['signature']['repeats']} timed run(s) per template, rows in turn. "
        "draws/template: the draws of a row at the default's encoder sequences (25 draws or chains otherwise); "
        "those rows are run for their top 5 only (no samples' metrics).",
        "",
        f"## Targets: `{t['row']}` against `{t['baseline']}`",
        "",
        f"- top-5 mean PLL higher on {t['reference_wins']}/{t['templates']} templates "
        f"({100 * t['reference_wins'] / t['templates']:.0f}%; target >= 75%)",
        f"- self-BLEU of the samples {t['self_bleu']:.1f} against {t['baseline_self_bleu']:.1f} (target: no higher)",
        f"- wall time {t['time_ratio_median']:.2f}x (median over templates; spread "
        f"{t['time_ratio_min']:.2f}-{t['time_ratio_max']:.2f}; target <= 10x)",
        "",
    ]
    for c in report["equal_compute"]:
        lines += [
            f"## `{c['reference']}` against `{c['row']}`, at equal encoder sequences",
            "",
            *describe(c["reference"], c["row"], c),
            "",
        ]
    return "\n".join(lines + signature_block(report["signature"]) + [""])


def write(
    out: Path,
    per_template: dict[str, list[dict]],
    rows: dict[str, RunConfig],
    ours: str,
    refs: ReferenceCorpus,
    model: str,
    templates: int,
    repeats: int,
) -> dict:
    """The report over the templates done so far: JSON (with per-template runs), Markdown and the plot."""
    summary = {name: summarize(runs, refs) for name, runs in per_template.items()}
    baseline = next(name for name in rows if name.startswith("left-to-right@T=1"))
    configs = {
        name: {
            **c.signature(),
            **({"num_samples": f"as many as use {ours}'s encoder sequences"} if name.endswith(SUFFIX) else {}),
        }
        for name, c in rows.items()
    }
    report = {
        "rows": summary,
        "targets": targets(per_template, ours, baseline),
        "equal_compute": [
            {"row": name, "reference": ours, **compare(measures(per_template[ours]), measures(per_template[name]))}
            for name in rows
            if name.endswith(SUFFIX)
        ],
        "signature": {
            "model": model,
            "templates": templates,
            "repeats": repeats,
            "protocol": "eval/frontier-minilm/frontier.toml",
            "top": TOP,
            "configs": configs,
            "torch_threads": torch.get_num_threads(),
            "versions": library_versions(EVAL_PACKAGES),
        },
    }
    (out / "report.json").write_text(json.dumps({**report, "per_template": per_template}, indent=1))
    (out / "report.md").write_text(markdown(report))
    plot(summary, out / "frontier.png")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", default="runs/frontier", help="output directory (default runs/frontier)")
    parser.add_argument("--rows", default=ROWS)
    parser.add_argument("--temperatures", default="1,0.7,0.5")
    parser.add_argument(
        "--limit", type=int, help="templates per corpus (default: all in eval/frontier-minilm/frontier.toml)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="time every row this many times per template, in turn; its time is the median",
    )
    parser.add_argument(
        "--equal-sequences",
        default=EQUAL,
        help=f"baselines also run at the default's encoder sequences (default {EQUAL}; '' for none)",
    )
    args = parser.parse_args()
    protocol = load_protocol(ROOT / "eval" / "frontier-minilm" / "frontier.toml")
    corpora = {spec.name: load_corpus(spec, protocol.lowercase) for spec in protocol.corpora}
    tasks = make_tasks(protocol, corpora)
    by_corpus = [[t for t in tasks if t.corpus == spec.name][: args.limit] for spec in protocol.corpora]
    tasks = [t for group in zip(*by_corpus) for t in group]  # corpora interleaved: a partial run covers both
    refs = ReferenceCorpus(s for sentences in references(corpora, tasks).values() for s in sentences)
    temperatures = [float(t) for t in args.temperatures.split(",")]
    rows = dict(
        parse_row(spec, t)
        for spec in args.rows.split(",")
        for t in temperatures
        if not (spec == "argmax" and t != temperatures[0])
    )
    default = RunConfig.create(top=TOP, seed=0, temperature=1.0)  # the product's default (`auto`) at T = 1
    if default not in rows.values():  # the default is always a row: the baselines are matched to its sequences
        rows[parse_row("auto", 1.0)[0]] = default
    rows = {f"{name} (default)" if config == default else name: config for name, config in rows.items()}
    ours = next(name for name, config in rows.items() if config == default)
    equal = {
        f"{method}{SUFFIX}": RunConfig.create(method=method, top=TOP, seed=0, temperature=default.temperature)
        for method in filter(None, args.equal_sequences.split(","))
    }
    infiller = Infiller(args.model)
    per_template: dict[str, list[dict]] = {name: [] for name in {**rows, **equal}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for n, task in enumerate(tasks, 1):
        for name, config in rows.items():
            per_template[name].append(run_row(infiller, task, config))
        for name, config in equal.items():
            per_template[name].append(run_equal(infiller, task, config, per_template[ours][-1]["encoder_sequences"]))
        timed = {**rows, **{name: replace(c, budget=per_template[name][-1]["budget"]) for name, c in equal.items()}}
        for _ in range(args.repeats - 1):  # the rows again, in turn (the runs are seeded: the same work)
            for name, config in timed.items():
                per_template[name][-1]["all_seconds"].append(timed_run(infiller, task, config)[1])
        for name in timed:
            per_template[name][-1]["seconds"] = statistics.median(per_template[name][-1]["all_seconds"])
        # written after every template: a kill loses little
        report = write(out, per_template, {**rows, **equal}, ours, refs, args.model, n, args.repeats)
        print(f"template {n}/{len(tasks)} done", file=sys.stderr, flush=True)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
