"""Quality/diversity frontier of every method on bert-gen templates, and the issue's targets for the defaults.

    python scripts/frontier.py --model ../shared/models/infill-dev-minilm-mlm --out runs/frontier
        [--rows default,independent,left-to-right,argmax,gibbs,gibbs-mh,gwg,dmala,dula] [--temperatures 1,0.7,0.5]
        [--limit N]

A row is a method name or ``name:key=value;key=value`` (e.g. ``gibbs-mh:init=uniform;steps=50``), run with
the other settings at their defaults; each row runs at every temperature (``argmax`` once). The row whose
configuration is the defaults' (``RunConfig()``) is marked ``(default)``. Templates come from
``eval/frontier.toml``. For every (template, row) the script records, over the ``chains`` samples (the chains'
final states, or a baseline's draws): mean PLL, self-BLEU, corpus BLEU against the corpora without the chosen
sentences; and the mean PLL of the ``top`` 5 fillings (the row's own top decoding; a baseline's 25 draws
re-ranked by PLL), and wall time. Rows run interleaved per template, so time ratios see the same machine load.

Targets (issue 10), for the default row against ``left-to-right`` at T = 1: top-5 mean PLL higher on >= 75% of the
templates; pooled self-BLEU of the samples no higher; wall time at most 10x (median and spread of per-template
ratios).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from infill import Infiller
from infill.config import RunConfig
from infill.energies.base import evaluate, one_hot
from infill.evaluation.corpora import load_corpus
from infill.evaluation.protocol import load_protocol
from infill.evaluation.report import EVAL_PACKAGES, mean_defined
from infill.evaluation.tasks import make_tasks, references
from infill.metrics import ReferenceCorpus, corpus_bleu, self_bleu
from infill.results import top_distinct
from infill.signature import library_versions
from infill.template import fill

ROOT = Path(__file__).resolve().parents[1]
ROWS = "independent,left-to-right,argmax,gibbs,gibbs-mh,gwg,dmala,dula"
TOP = 5


def parse_row(spec: str, temperature: float) -> tuple[str, RunConfig]:
    """A row label and its configuration at ``temperature``."""
    name, _, settings = spec.partition(":")
    options = {"method": name}
    for item in filter(None, settings.split(";")):
        key, _, value = item.partition("=")
        options[key] = json.loads(value) if value[:1].isdigit() or value[:1] in "-[{" else value
    options.setdefault("temperature", temperature)
    return f"{spec}@T={temperature:g}", RunConfig.create(top=TOP, seed=0, **options)


def final_samples(infiller: Infiller, result, task, config: RunConfig) -> tuple[list[str], list[float]]:
    """Texts (corpus tokenization) and PLL energies of the chains' final states."""
    template = infiller.parse(task.template)
    energy = infiller._energy([template], infiller.category_ids())
    x = result.trace.final_state.x
    values = result.trace.final_state.energy * config.temperature
    if values.isnan().any():
        values = evaluate(energy, one_hot(x, energy.num_categories))
    texts = [task.fill(fill(template, infiller.tokenizer, ids)[1]) for ids in energy.token_ids(x)]
    return texts, values.tolist()


def run_row(infiller: Infiller, task, config: RunConfig) -> dict:
    """One (template, row) measurement."""
    start = time.perf_counter()
    if config.is_baseline:  # its draws are its samples; top 5 = the draws re-ranked by PLL
        (result,) = infiller.run([task.template], RunConfig.create(**{**config.signature(), "top": None}))
        seconds = time.perf_counter() - start
        draws = result.samples
        texts, energies = [task.fill(s.fills) for s in draws], [s.energy for s in draws]
        top = top_distinct(draws, TOP, key=lambda s: tuple(s.fills), energy=lambda s: s.energy)
    else:
        (result,) = infiller.run([task.template], config)
        seconds = time.perf_counter() - start
        texts, energies = final_samples(infiller, result, task, config)
        top = result.samples
    d = result.diagnostics
    return {"texts": texts, "energies": energies, "top_energies": [s.energy for s in top], "seconds": seconds,
            "acceptance_rate": d.acceptance_rate, "mean_hops": d.mean_hops, "tuned": d.tuned}


def summarize(runs: list[dict], refs: ReferenceCorpus) -> dict:
    """A row's means over templates (self-BLEU per template, corpus BLEU pooled), in percent for BLEU."""
    return {
        "mean_pll": statistics.fmean(statistics.fmean(r["energies"]) for r in runs),
        "top5_pll": statistics.fmean(statistics.fmean(r["top_energies"]) for r in runs),
        "self_bleu": 100 * statistics.fmean(self_bleu(r["texts"]) for r in runs),
        "corpus_bleu": 100 * corpus_bleu([t for r in runs for t in r["texts"]], refs),
        "seconds": statistics.fmean(r["seconds"] for r in runs),
        "acceptance_rate": mean_defined(r["acceptance_rate"] for r in runs),
        "mean_hops": mean_defined(r["mean_hops"] for r in runs),
    }


def targets(per_template: dict[str, list[dict]], ours: str, baseline: str) -> dict:
    a, b = per_template[ours], per_template[baseline]
    wins = [statistics.fmean(x["top_energies"]) > statistics.fmean(y["top_energies"]) for x, y in zip(a, b)]
    ratios = sorted(x["seconds"] / y["seconds"] for x, y in zip(a, b))
    return {"row": ours, "baseline": baseline,
            "top5_wins": sum(wins), "templates": len(wins), "top5_win_fraction": sum(wins) / len(wins),
            "self_bleu": 100 * statistics.fmean(self_bleu(x["texts"]) for x in a),
            "baseline_self_bleu": 100 * statistics.fmean(self_bleu(y["texts"]) for y in b),
            "time_ratio_median": statistics.median(ratios), "time_ratio_min": ratios[0], "time_ratio_max": ratios[-1]}


def plot(table: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.5))
    for axis, (y, label) in zip(figure.subplots(1, 2), [("mean_pll", "mean PLL of the samples"),
                                                         ("corpus_bleu", "corpus BLEU (%)")]):
        for name, row in table.items():
            method = name.split("@")[0]
            marker = "s" if method in ("independent", "left-to-right", "argmax") else "o"
            axis.scatter(row["self_bleu"], row[y], marker=marker, s=18)
            axis.annotate(name, (row["self_bleu"], row[y]), fontsize=6)
        axis.set_xlabel("self-BLEU (%) of the samples, lower = more diverse")
        axis.set_ylabel(label)
    figure.tight_layout()
    figure.savefig(path, dpi=130)


def markdown(report: dict) -> str:
    lines = ["# Quality/diversity frontier on bert-gen templates", "",
             "| row | mean PLL ↑ | top-5 PLL ↑ | self-BLEU ↓ | corpus BLEU ↑ | s/template | accept "
             "| hops/step |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    fmt = lambda v, p=2: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    for name, row in report["rows"].items():
        lines.append(f"| {name} | {fmt(row['mean_pll'])} | {fmt(row['top5_pll'])} | {fmt(row['self_bleu'], 1)} | "
                     f"{fmt(row['corpus_bleu'], 1)} | {fmt(row['seconds'])} | {fmt(row['acceptance_rate'])} | "
                     f"{fmt(row['mean_hops'])} |")
    t = report["targets"]
    lines += ["", f"## Targets: `{t['row']}` against `{t['baseline']}`", "",
              f"- top-5 mean PLL higher on {t['top5_wins']}/{t['templates']} templates "
              f"({100 * t['top5_win_fraction']:.0f}%; target >= 75%)",
              f"- self-BLEU of the samples {t['self_bleu']:.1f} against {t['baseline_self_bleu']:.1f} "
              "(target: no higher)",
              f"- wall time {t['time_ratio_median']:.2f}x (median over templates; spread "
              f"{t['time_ratio_min']:.2f}-{t['time_ratio_max']:.2f}; target <= 10x)",
              "", "## Signature", "", "```json", json.dumps(report["signature"], indent=2), "```", ""]
    return "\n".join(lines)


def write(out: Path, per_template: dict[str, list[dict]], rows: dict[str, RunConfig], refs: ReferenceCorpus,
          model: str, templates: int) -> dict:
    """The report over the templates done so far: JSON (with per-template runs), Markdown and the plot."""
    table = {name: summarize(runs, refs) for name, runs in per_template.items()}
    baseline = next(name for name in rows if name.startswith("left-to-right@T=1"))
    ours = next(name for name in rows if name.endswith("(default)"))
    report = {"rows": table, "targets": targets(per_template, ours, baseline),
              "signature": {"model": model, "templates": templates, "protocol": "eval/frontier.toml",
                            "top": TOP, "configs": {name: c.signature() for name, c in rows.items()},
                            "torch_threads": torch.get_num_threads(), "versions": library_versions(EVAL_PACKAGES)}}
    (out / "report.json").write_text(json.dumps({**report, "per_template": per_template}, indent=1))
    (out / "report.md").write_text(markdown(report))
    plot(table, out / "frontier.png")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", default="runs/frontier", help="output directory (default runs/frontier)")
    parser.add_argument("--rows", default=ROWS)
    parser.add_argument("--temperatures", default="1,0.7,0.5")
    parser.add_argument("--limit", type=int, help="templates per corpus (default: all in eval/frontier.toml)")
    args = parser.parse_args()
    protocol = load_protocol(ROOT / "eval" / "frontier.toml")
    corpora = {spec.name: load_corpus(spec, protocol.lowercase) for spec in protocol.corpora}
    tasks = make_tasks(protocol, corpora)
    by_corpus = [[t for t in tasks if t.corpus == spec.name][:args.limit] for spec in protocol.corpora]
    tasks = [t for group in zip(*by_corpus) for t in group]  # corpora interleaved: a partial run covers both
    refs = ReferenceCorpus(s for sentences in references(corpora, tasks).values() for s in sentences)
    temperatures = [float(t) for t in args.temperatures.split(",")]
    rows = dict(parse_row(spec, t) for spec in args.rows.split(",") for t in temperatures
                if not (spec == "argmax" and t != temperatures[0]))
    default = RunConfig.create(top=TOP, seed=0)
    rows = {f"{name} (default)" if config == default else name: config for name, config in rows.items()}
    infiller = Infiller(args.model)
    per_template: dict[str, list[dict]] = {name: [] for name in rows}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for n, task in enumerate(tasks, 1):
        for name, config in rows.items():
            per_template[name].append(run_row(infiller, task, config))
        report = write(out, per_template, rows, refs, args.model, n)  # after every template: a kill loses little
        print(f"template {n}/{len(tasks)} done", file=sys.stderr, flush=True)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
