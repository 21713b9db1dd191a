"""Choose the default of `infill sample` at equal compute against every one-pass order.

    python -m scripts.equal_compute tune  [--shard 0/2] [--grid SPEC,SPEC...] [--templates 2-4=N,6-10=N]
    python -m scripts.equal_compute check [--shard 0/2] [--ours 2-4=SPEC --ours 6-10=SPEC] [--frontier 2-4=N,6-10=N]
    python -m scripts.equal_compute report

A candidate SPEC is ``sampler:CHAINSxSTEPS:init`` (e.g. ``gibbs:8x40:confident-first``) or ``auto``, each with
optional ``+key=value`` settings (``auto+decode=diverse``, ``gibbs:50x100:confident-first+budget=100d``: 100
encoder sequences per blank token), run at temperature 1
through ``infill.Infiller(...).sample(..., top=5)``; its compute is the result's ``encoder_sequences``. Each
one-pass order (``sampler=<order>``, the distinct draws re-ranked by PLL) runs on the encoder sequences of the
row it is matched to as its budget (:func:`infill.evaluation.compute.matched`: it draws until they are spent).

- ``tune``: on the tuning half, every candidate of ``--grid`` at its own settings, and the one-pass orders
  (``--tune-orders``) matched once per (template, seed) to the sequences of the grid's first (the default).
- ``check``: on the check half, the tuning half's pick per regime (all targets met; else, diversity being
  binding, the self-BLEU target met, then most targets, then the win share) or ``--ours``, and every one-pass
  order matched to it; for the frontier, on ``--frontier`` of those templates (or ``--frontier-ids``) at the
  first seed, the same at the other ``--scales`` (the candidate's steps times the scale; the orders matched
  to that run).
- ``report``: ``report.md``, ``report.json`` and ``frontier.png`` from whatever runs exist.

Every (phase, template, seed, row) is one line of ``OUT/runs.jsonl``: a run resumes where it stopped, and
``--shard i/n`` runs the i-th of n disjoint parts (templates dealt by estimated cost). Metrics per run: the
top-5 mean PLL, the self-BLEU of the 5 (nltk, ``infill.metrics``), the top-1 word accuracy against the
removed words, encoder sequences, wall seconds. The targets compare a candidate with the best
one-pass order of the regime (highest mean top-5 PLL over the same runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from infill.pipeline.config import AUTO, AUTO_BUDGET_PER_BLANK
from scripts.harness import (
    ROOT,
    SAME,
    TARGETS,
    TOP,
    Rows,
    against_order,
    load_half,
    load_infiller,
    log,
    measure,
    metrics,
    run_key,
    summary,
    task_row,
)

ORDERS = ("independent", "left-to-right", "confident-first", "random-order")
DEFAULT = "gibbs:25x12:left-to-right"
GRID = ",".join(
    [
        DEFAULT,
        "gibbs:8x40:confident-first",
        "gibbs:50x6:confident-first",
        "gibbs-mh:25x12:confident-first",
        "block-mh:8x24:confident-first",
        "mlm-independence:8x24:confident-first",
    ]
)
REGIMES = ("2-4", "6-10")
SHORT = {"left-to-right": "l2r", "confident-first": "cf", "random-order": "ro", "independent": "ind"}


# ---------------------------------------------------------------- templates and candidates


def spread(rows: list[dict], limit: dict[str, int], ids: frozenset = frozenset()) -> list[dict]:
    """Per regime, the templates named in ``ids`` if it names any of that regime, else ``limit`` templates
    spread evenly over the numbers of blanks (sorted by blanks, then id)."""
    chosen = []
    for regime in REGIMES:
        named = [r for r in rows if r["regime"] == regime and r["id"] in ids]
        if named:
            chosen += named
            continue
        pool = sorted((r for r in rows if r["regime"] == regime), key=lambda r: (len(r["removed"]), r["id"]))
        k = min(limit.get(regime, len(pool)), len(pool))
        picks = sorted({round(i * (len(pool) - 1) / max(1, k - 1)) for i in range(k)})
        chosen += [pool[i] for i in picks]
    return chosen


def interleave(tasks: list[dict]) -> list[dict]:
    """The templates of the regimes taken in turn."""
    by_regime = [[t for t in tasks if t["regime"] == regime] for regime in REGIMES]
    return [t for i in range(max(map(len, by_regime))) for group in by_regime for t in group[i : i + 1]]


def parse_spec(spec: str, scale: float = 1.0, d: int = 1) -> dict:
    """``sampler:CxS:init`` or ``auto``, each with optional ``+key=value`` settings (``budget=100d``: 100 per
    blank token), as keyword arguments of ``Infiller.sample``. ``scale`` multiplies the budget where there is
    one (``auto``'s default where it names none), else the steps (at least 1)."""
    head, *settings = spec.split("+")
    extra = dict(setting.split("=", 1) for setting in settings)
    if "budget" in extra:
        per_blank = extra["budget"].endswith("d")
        extra["budget"] = int(extra["budget"].rstrip("d")) * (d if per_blank else 1)
    if head == AUTO:
        kwargs = {"sampler": AUTO}
        if scale != 1.0:
            extra["budget"] = extra.get("budget", AUTO_BUDGET_PER_BLANK * d)
    else:
        sampler, size, init = head.split(":")
        chains, steps = (int(v) for v in size.split("x"))
        kwargs = {
            "sampler": sampler,
            "num_samples": chains,
            "init": init,
            "steps": steps if "budget" in extra else max(1, round(steps * scale)),
        }
    if "budget" in extra:
        extra["budget"] = max(1, round(extra["budget"] * scale))
    return {**kwargs, **extra}


# ---------------------------------------------------------------- runs


def run_order(infiller, task: dict, seed: int, order: str, budget: int) -> dict:
    """``order``'s draws on ``budget`` encoder sequences: it draws until they are spent."""
    from infill.evaluation.compute import matched

    record, match = matched(
        lambda b: measure(infiller, task, seed, sampler=order, budget=b), budget, order, len(task["removed"]), TOP
    )
    return {**record, **match, "ratio": record["encoder_sequences"] / budget}


def groups_for(phase: str, args) -> list[dict]:
    """The (template, seed, scale) groups of a phase, each with its rows: candidates, then orders matched to one."""
    groups = []
    if phase == "tune":
        grid = args.grid.split(",")
        for seed in args.seeds:  # seed-major: a stopped run has every template at the first seed
            for task in interleave(spread(load_half("tune"), args.templates, args.ids)):
                groups.append(
                    {
                        "task": task,
                        "seed": seed,
                        "scale": 1.0,
                        "candidates": grid,
                        "orders": args.tune_orders.split(","),
                        "reference": grid[0],
                    }
                )
    else:
        tasks = spread(load_half("check"), args.templates, args.ids)
        for seed in args.seeds:
            for task in interleave(tasks):
                spec = args.ours[task["regime"]]
                groups.append(
                    {
                        "task": task,
                        "seed": seed,
                        "scale": 1.0,
                        "candidates": [spec],
                        "orders": [] if args.no_orders else list(ORDERS),
                        "reference": spec,
                    }
                )
        frontier = spread(tasks, args.frontier, args.frontier_ids)
        for task in frontier:
            spec = args.ours[task["regime"]]
            for scale in args.scales[task["regime"]]:
                if scale != 1.0:
                    groups.append(
                        {
                            "task": task,
                            "seed": args.seeds[0],
                            "scale": scale,
                            "candidates": [spec],
                            "orders": list(ORDERS),
                            "reference": spec,
                        }
                    )
    return groups


def row_name(spec: str, scale: float) -> str:
    return spec if scale == 1.0 else f"{spec}@x{scale:g}"


def run_group(infiller, group: dict, phase: str, runs: Rows) -> None:
    """The group's candidates, then its orders matched to the reference's sequences: each row not yet run is
    run and appended."""
    task, seed, scale = group["task"], group["seed"], group["scale"]
    base = {**task_row(phase, task, seed), "scale": scale}
    have = {
        row["row"]: row for row in runs.read() if (row["phase"], row["id"], row["seed"]) == (phase, task["id"], seed)
    }
    budgets = {}
    for spec in group["candidates"]:
        name = row_name(spec, scale)
        if name not in have:
            config = parse_spec(spec, scale, len(task["removed"]))
            record = measure(infiller, task, seed, **config)
            have[name] = {**base, "row": name, "kind": "candidate", "spec": spec, "config": config, **record}
            runs.append(have[name])
            log(f"{phase} {task['id']} s{seed} {name}: {record['encoder_sequences']} seqs {record['seconds']:.1f}s")
        budgets[spec] = have[name]["encoder_sequences"]
    reference = row_name(group["reference"], scale)
    for order in group["orders"]:
        name = f"{order}@{reference}"
        if name in have:
            continue
        record = run_order(infiller, task, seed, order, budgets[group["reference"]])
        runs.append({**base, "row": name, "kind": "order", "order": order, "reference": reference, **record})
        log(
            f"{phase} {task['id']} s{seed} {name}: {record['draws']} draws {record['encoder_sequences']} seqs "
            f"({record['ratio']:.2f}x) {record['seconds']:.1f}s"
        )


def shard_of(groups: list[dict], i: int, n: int) -> list[dict]:
    """The i-th of n parts: groups dealt greedily to the least loaded part by an estimate of their cost."""
    load, parts = [0.0] * n, [[] for _ in range(n)]
    for g in groups:
        d = len(g["task"]["removed"])
        cost = d * d * g["scale"] * (len(g["candidates"]) + 2 * len(g["orders"]))
        k = min(range(n), key=load.__getitem__)
        load[k] += cost
        parts[k].append(g)
    return parts[i]


# ---------------------------------------------------------------- metrics and comparisons


def compare(ours: list[dict], order: list[dict]) -> dict:
    """A candidate against an order over the (template, seed) runs both have: wins per template (top-5 mean
    PLL averaged over seeds), per run, and the other targets' differences."""
    a = {(r["id"], r["seed"]): r for r in ours}
    b = {(r["id"], r["seed"]): r for r in order}
    keys = sorted(a.keys() & b.keys())
    if not keys:
        return {}
    ma, mb = {k: metrics(a[k]) for k in keys}, {k: metrics(b[k]) for k in keys}

    def tally(diffs):
        higher = sum(x > SAME for x in diffs)
        lower = sum(x < -SAME for x in diffs)
        return higher, lower, len(diffs) - higher - lower

    per_template = {}
    for k in keys:
        per_template.setdefault(k[0], []).append(ma[k]["pll"] - mb[k]["pll"])
    t_h, t_l, t_s = tally([statistics.fmean(v) for v in per_template.values()])
    r_h, r_l, r_s = tally([ma[k]["pll"] - mb[k]["pll"] for k in keys])
    result = {
        "runs": len(keys),
        "templates": len(per_template),
        "higher": t_h,
        "lower": t_l,
        "same": t_s,
        "run_higher": r_h,
        "run_lower": r_l,
        "run_same": r_s,
        **against_order(keys, a, b, ma, mb, (t_h, t_l)),
    }
    result["met"] = sum(result["targets"].values())
    return result


def analyse(records: list[dict], phase: str) -> dict:
    """Per regime at scale 1: each row's summary, the best order, and each candidate against it."""
    out = {}
    for regime in REGIMES:
        rows: dict[str, list[dict]] = {}
        for r in records:
            if r["phase"] == phase and r["regime"] == regime and r["scale"] == 1.0:
                rows.setdefault(r["row"], []).append(r)
        if not rows:
            continue
        orders = {name: rs for name, rs in rows.items() if rs[0]["kind"] == "order"}
        candidates = {name: rs for name, rs in rows.items() if rs[0]["kind"] == "candidate"}
        # the best order over the (template, seed) runs that every order has
        common = set.intersection(*({(r["id"], r["seed"]) for r in rs} for rs in orders.values())) if orders else set()
        best = (
            max(
                orders,
                key=lambda name: (
                    summary([r for r in orders[name] if (r["id"], r["seed"]) in common])["pll"]
                    if common
                    else float("-inf")
                ),
            )
            if orders
            else None
        )
        out[regime] = {
            "rows": {name: summary(rs) for name, rs in rows.items()},
            "best_order": best,
            "against_best": {name: compare(rs, orders[best]) for name, rs in candidates.items()} if best else {},
            "against_orders": {
                name: {o: compare(rs, ors) for o, ors in orders.items()} for name, rs in candidates.items()
            },
        }
        # diversity is binding: all targets met, then the self-BLEU target, then targets met, then the win share
        ranked = sorted(
            out[regime]["against_best"].items(),
            key=lambda kv: (
                kv[1].get("met") == len(TARGETS),
                kv[1].get("targets", {}).get("self_bleu", False),
                kv[1].get("met", 0),
                kv[1].get("win_share") or 0,
            ),
            reverse=True,
        )
        out[regime]["choice"] = ranked[0][0] if ranked and ranked[0][1].get("met") == len(TARGETS) else None
        out[regime]["closest"] = ranked[0][0] if ranked else None
    return out


# ---------------------------------------------------------------- report


def fmt(value, digits=2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def tables(analysis: dict, title: str) -> list[str]:
    lines = []
    for regime, a in analysis.items():
        lines += [
            f"### {title}: {regime} blanks",
            "",
            "| row | runs (templates) | top-5 mean PLL | self-BLEU of the 5 | top-1 word acc. | encoder seqs | "
            "x the matched row | draws | ms wall / seq |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, s in sorted(a["rows"].items(), key=lambda kv: -kv[1]["pll"]):
            star = " (best order)" if name == a["best_order"] else ""
            lines.append(
                f"| `{name}`{star} | {s['runs']} ({s['templates']}) | {s['pll']:.3f} | {s['self_bleu']:.1f} | "
                f"{s['accuracy']:.3f} | {s['sequences']:.0f} | {fmt(s['ratio'])} | {fmt(s['draws'], 0)} | "
                f"{1000 * s['wall_per_sequence']:.1f} |"
            )
        lines += [
            "",
            f"Against the best one-pass order (`{a['best_order']}`), targets: higher on >= 65% of the "
            "templates that differ (top-5 mean PLL averaged over seeds), self-BLEU <= its + 2, accuracy >= "
            "its - 0.02, wall per sequence <= 1.2x:",
            "",
            "| candidate | templates higher / lower / same (runs) | PLL ours vs order | self-BLEU ours vs order "
            "| acc. ours vs order | wall/seq ratio | seqs ratio | targets met |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, c in a["against_best"].items():
            if not c:
                continue
            t = c["targets"]
            lines.append(
                f"| `{name}` | {c['higher']} / {c['lower']} / {c['same']} ({c['run_higher']}/{c['run_lower']}/"
                f"{c['run_same']}); {fmt(100 * c['win_share'] if c['win_share'] is not None else None, 0)}% "
                f"{mark(t['wins'])} | {c['pll']:.3f} vs {c['order_pll']:.3f} | {c['self_bleu']:.1f} vs "
                f"{c['order_self_bleu']:.1f} {mark(t['self_bleu'])} | {c['accuracy']:.3f} vs {c['order_accuracy']:.3f} "
                f"{mark(t['accuracy'])} | {c['wall_ratio']:.2f} {mark(t['wall'])} | {c['sequence_ratio']:.2f} | "
                f"{c['met']}/4 |"
            )
        lines += [
            "",
            f"All four targets met by: {('`' + a['choice'] + '`') if a['choice'] else 'none'}"
            f" (closest: `{a['closest']}`).",
            "",
        ]
    return lines


def per_order_tables(analysis: dict) -> list[str]:
    lines = []
    for regime, a in analysis.items():
        for name, against in a["against_orders"].items():
            lines += [
                f"### `{name}` against every one-pass order, {regime} blanks",
                "",
                "| order | templates higher / lower / same | win share | PLL ours vs order | "
                "self-BLEU ours vs order | "
                "acc. ours vs order | wall/seq ratio | targets met |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for order, c in against.items():
                if c:
                    lines.append(
                        f"| `{order}` | {c['higher']} / {c['lower']} / {c['same']} | "
                        f"{fmt(100 * c['win_share'] if c['win_share'] is not None else None, 0)}% | "
                        f"{c['pll']:.3f} vs {c['order_pll']:.3f} | {c['self_bleu']:.1f} vs "
                        f"{c['order_self_bleu']:.1f} | {c['accuracy']:.3f} vs {c['order_accuracy']:.3f} | "
                        f"{c['wall_ratio']:.2f} | {c['met']}/4 |"
                    )
            lines.append("")
    return lines


def frontier(records: list[dict]) -> dict:
    """Per regime and row family (ours, each order), the points (mean sequences, top-5 PLL, self-BLEU) per scale,
    over the (template, seed) pairs that have every family at every scale."""
    out = {}
    for regime in REGIMES:
        mine = [r for r in records if r["phase"] == "check" and r["regime"] == regime]
        have: dict[tuple, dict] = {}
        for r in mine:
            family = "ours: " + r["spec"] if r["kind"] == "candidate" else r["order"]
            have.setdefault((r["id"], r["seed"]), {})[family, r["scale"]] = r
        cells = set().union(*(h.keys() for h in have.values())) if have else set()
        if len({scale for _, scale in cells}) < 2:
            continue
        common = [pair for pair, h in have.items() if h.keys() == cells]
        if not common:
            continue
        series: dict[str, list] = {}
        for family, scale in sorted(cells):
            runs = [have[pair][family, scale] for pair in common]
            s = summary(runs)
            series.setdefault(family, []).append(
                {
                    "scale": scale,
                    "runs": len(runs),
                    "pll": s["pll"],
                    "self_bleu": s["self_bleu"],
                    "sequences": s["sequences"],
                }
            )
        out[regime] = {"pairs": len(common), "templates": sorted(pair[0] for pair in common), "series": series}
    return out


def plot(points: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.2 * max(1, len(points))))
    axes = figure.subplots(max(1, len(points)), 2, squeeze=False)
    for row, (regime, data) in zip(axes, points.items()):
        for axis, (key, label) in zip(
            row,
            [
                ("pll", "top-5 mean PLL (higher is better)"),
                ("self_bleu", "self-BLEU of the 5, % (lower is more diverse)"),
            ],
        ):
            for family, pts in sorted(data["series"].items()):
                ours = family.startswith("ours")
                axis.plot(
                    [p["sequences"] for p in pts],
                    [p[key] for p in pts],
                    marker="o" if ours else "s",
                    linewidth=2.2 if ours else 1.2,
                    linestyle="-" if ours else "--",
                    label=family,
                )
            axis.set_xscale("log")
            axis.set_xlabel("encoder sequences per template (mean)")
            axis.set_ylabel(label)
            axis.set_title(f"{regime} blanks: {data['pairs']} check template(s), seed 0", fontsize=9)
            axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def report(out: Path, argv: list[str]) -> None:
    records = runs_of(out).read()
    tune, check = analyse(records, "tune"), analyse(records, "check")
    points = frontier(records)
    if points:
        plot(points, out / "frontier.png")
    data = {
        "model": MODEL_NOTE,
        "targets": TARGETS,
        "tune": tune,
        "check": check,
        "frontier": points,
        "torch_threads": torch.get_num_threads(),
        "runs": records,
    }
    (out / "report.json").write_text(json.dumps(data, indent=1))
    lines = [
        "# The default of `infill sample` at equal encoder sequences",
        "",
        f"Model: `{MODEL_NOTE}`; every run temperature 1, `top=5`; one-pass orders re-ranked by PLL with "
        "the matched row's encoder sequences as their budget (they draw until it is spent). Written by "
        "`python -m scripts.equal_compute report` from `runs.jsonl`.",
        "",
        "## Tuning half (one-pass orders matched to the default's sequences)",
        "",
        *tables(tune, "Tune"),
        "## Check half (orders matched to the chosen candidate's sequences)",
        "",
        *tables(check, "Check"),
        *per_order_tables(check),
    ]
    if points:
        lines += ["## Frontier (check half)", "", "![frontier](frontier.png)", ""]
        for regime, data_ in points.items():
            names = ", ".join(data_["templates"])
            lines += [
                f"### {regime} blanks ({data_['pairs']} template(s): {names}, seed 0)",
                "",
                "| row | scale | encoder seqs | top-5 mean PLL | self-BLEU |",
                "|---|---|---|---|---|",
            ]
            for family, pts in sorted(data_["series"].items()):
                lines += [
                    f"| {family} | {p['scale']:g} | {p['sequences']:.0f} | {p['pll']:.3f} | {p['self_bleu']:.1f} |"
                    for p in pts
                ]
            lines.append("")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


# ---------------------------------------------------------------- main


def runs_of(out: Path) -> Rows:
    """The study's runs: one line of ``OUT/runs.jsonl`` each."""
    return Rows(out / "runs.jsonl", run_key)


MODEL_NOTE = "../shared/models/infill-dev-minilm-mlm"


def pairs(text: str, cast=int) -> dict:
    """``A=x,B=y`` as ``{A: cast(x), B: cast(y)}``."""
    return {k: cast(v) for k, v in (item.split("=") for item in text.split(","))}


def main() -> int:
    global MODEL_NOTE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("phase", choices=["tune", "check", "report"])
    parser.add_argument("--model", default="../shared/models/infill-dev-minilm-mlm")
    parser.add_argument("--out", default=str(ROOT / "eval" / "equal-compute-minilm"))
    parser.add_argument("--shard", default="0/1", help="i/n: run the i-th of n parts")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--templates", default="2-4=10,6-10=3", help="templates per regime (spread over blanks)")
    parser.add_argument(
        "--ids", default="", help="template ids, comma-separated: they replace the spread choice of their regime"
    )
    parser.add_argument(
        "--grid",
        default=GRID,
        help="tune: candidate specs, comma-separated; the orders are matched to the first (the default's)",
    )
    parser.add_argument("--tune-orders", default="left-to-right,confident-first,random-order")
    parser.add_argument(
        "--no-orders",
        action="store_true",
        help="check: run --ours only (another row beside the orders already run for the same templates and seeds)",
    )
    parser.add_argument(
        "--ours",
        action="append",
        default=[],
        help="check: REGIME=SPEC, the candidate to check (default: the tuning half's pick)",
    )
    parser.add_argument("--frontier", default="2-4=4,6-10=2", help="check: templates per regime on the frontier")
    parser.add_argument(
        "--frontier-ids",
        default="",
        help="check: template ids on the frontier (they replace --frontier's choice in their regime)",
    )
    parser.add_argument(
        "--scales",
        default="2-4=0.25+0.5+1+2,6-10=0.25+0.5+1+2",
        help="check: the frontier's budgets per regime, x the candidate's steps",
    )
    args = parser.parse_args()
    MODEL_NOTE = args.model
    out = Path(args.out)
    if args.phase == "report":
        report(out, sys.argv)
        return 0
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.templates = pairs(args.templates)
    args.ids = frozenset(filter(None, args.ids.split(",")))
    args.frontier = pairs(args.frontier)
    args.frontier_ids = frozenset(filter(None, args.frontier_ids.split(",")))
    args.scales = pairs(args.scales, lambda v: [float(x) for x in v.split("+")])
    args.ours = dict(item.split("=", 1) for item in args.ours)
    if args.phase == "check":
        tune = analyse(runs_of(out).read(), "tune")
        for regime in REGIMES:  # the tuning half's pick where --ours does not name one
            args.ours.setdefault(regime, tune[regime]["choice"] or tune[regime]["closest"])
        log(f"check: ours {args.ours}")
    i, n = (int(v) for v in args.shard.split("/"))
    infiller = load_infiller(args.model)
    groups = shard_of(groups_for(args.phase, args), i, n)
    log(f"{args.phase} shard {i}/{n}: {len(groups)} groups")
    for group in groups:
        run_group(infiller, group, args.phase, runs_of(out))
    log(f"{args.phase} shard {i}/{n}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
