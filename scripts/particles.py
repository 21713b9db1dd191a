"""Particles (``smc``) against the best one-pass order at equal compute.

    python -m scripts.particles tune  [--shard 0/2] [--grid SPEC;SPEC...] [--templates N] [--seeds 0,1,2]
                                      [--regime 8-10]
    python -m scripts.particles check [--shard 0/2] --ours 6-7=SPEC --ours 8-10=SPEC  (the regimes named)
    python -m scripts.particles report

A SPEC is ``method`` with ``+key=value`` settings (values read as JSON where they parse), e.g.
``smc+tilt=2.0+decode=diverse``; every row runs through ``Infiller(...).sample(..., top=5, temperature=1)`` on
the dev MLM with a budget of ``BUDGET_PER_BLANK`` x ``d`` encoder sequences. The order (``confident-first``,
the best one-pass order in every regime of the earlier studies: ``eval/equal-compute-minilm``) is given that
same budget, counted as a perfect cache counts (:func:`infill.evaluation.compute.matched`): at least what
the row spent, so the baseline is never handicapped.

Regimes by blank tokens: 2-4, 6-7, 8-10, from ``corpora/calibration/{tune,check}.jsonl`` (the tuning half to
choose, the check half to judge). ``tune`` runs ``--templates`` templates per regime at every seed; ``check``
every template of the check half. Each (phase, template, seed, row) is one line of ``OUT/runs.jsonl``: a run
resumes where it stopped; ``--shard i/n`` runs the i-th of n parts. The report compares each row with the
order on the same (template, seed) pairs: top-5 mean PLL higher / lower (pairs where they differ), self-BLEU
of the 5, top-1 word accuracy, wall per encoder sequence (the targets: ``harness.TARGETS``). The
other orders run as rows (``check --ours 8-10=left-to-right``), given the row's budget whole; the report's last
sections set what ``auto`` runs in each regime against every order run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from scripts.harness import (
    DEV_MODEL,
    ROOT,
    TARGETS,
    TOP,
    Rows,
    load_half,
    load_infiller,
    log,
    measure,
    metrics,
    paired,
    parse,
    run_key,
    summary,
)

REGIMES = {"2-4": range(2, 5), "6-7": range(6, 8), "8-10": range(8, 11)}
ORDER = "confident-first"
ORDERS = ("confident-first", "left-to-right", "random-order")
"""Every one-pass order; ``check --ours REGIME=ORDER`` runs another as a row, and the report sets the default
(:data:`DEFAULT_ROWS`) against each order present."""
DEFAULT_ROWS = {
    "2-4": "auto",
    "6-7": "smc+tilt=2.0+decode=diverse+diversity=12",
    "8-10": "smc+tilt=2.0+decode=diverse+diversity=40",
}
"""What ``auto`` runs in each regime (``infill.pipeline.policy``), as rows of this study."""
BUDGET_PER_BLANK = 100
GRID = "smc;smc+tilt=2.0;smc+tilt=2.0+decode=diverse;smc+tilt=3.0+decode=diverse"
OUT = ROOT / "eval" / "particles-minilm"
RUNS = Rows(OUT / "runs.jsonl", run_key)


def regime_of(task: dict) -> str | None:
    return next((name for name, blanks in REGIMES.items() if len(task["removed"]) in blanks), None)


def tasks_of(half: str, per_regime: int | None) -> list[dict]:
    """The half's templates of each regime (``per_regime`` of them spread over the numbers of blanks)."""
    chosen = []
    for name in REGIMES:
        pool = sorted((t for t in load_half(half) if regime_of(t) == name), key=lambda t: (len(t["removed"]), t["id"]))
        k = len(pool) if per_regime is None else min(per_regime, len(pool))
        picks = sorted({round(i * (len(pool) - 1) / max(1, k - 1)) for i in range(k)})
        chosen += [{**pool[i], "regime": name} for i in picks]
    return chosen


def run_group(infiller, phase: str, task: dict, seed: int, rows: list[str]) -> None:
    from infill.evaluation.compute import matched

    d = len(task["removed"])
    done = RUNS.done()
    base = {
        "phase": phase,
        "id": task["id"],
        "regime": task["regime"],
        "blanks": d,
        "removed": task["removed"],
        "seed": seed,
        "scale": 1.0,
        "ratio": 1.0,
    }
    budget = BUDGET_PER_BLANK * d
    for row in rows + [ORDER]:
        if run_key({"phase": phase, "id": task["id"], "seed": seed, "row": row}) in done:
            continue
        if row == ORDER:
            record, match = matched(
                lambda b: measure(infiller, task, seed, budget=b, sampler=ORDER), budget, ORDER, d, TOP
            )
            record = {**record, **match, "kind": "order"}
        else:
            record = {**measure(infiller, task, seed, budget=budget, **parse(row)), "kind": "candidate"}
        RUNS.append({**base, "row": row, **record})
        log(f"{phase} {task['id']} s{seed} {row}: {record['encoder_sequences']} seqs {record['seconds']:.1f}s")


def compare(ours: list[dict], order: list[dict]) -> dict:
    keys, a, b, ma, mb, higher, lower = paired(ours, order, metrics)
    sa, sb = summary([a[k] for k in keys]), summary([b[k] for k in keys])
    out = {
        "pairs": len(keys),
        "higher": higher,
        "lower": lower,
        "win_share": higher / (higher + lower) if higher + lower else None,
        "pll": sa["pll"],
        "order_pll": sb["pll"],
        "self_bleu": sa["self_bleu"],
        "order_self_bleu": sb["self_bleu"],
        "accuracy": sa["accuracy"],
        "order_accuracy": sb["accuracy"],
        "sequence_ratio": statistics.fmean(ma[k]["sequences"] / mb[k]["sequences"] for k in keys),
        "wall_ratio": sa["wall_per_sequence"] / sb["wall_per_sequence"],
    }
    out["targets"] = {
        "wins": (out["win_share"] or 0) >= TARGETS["wins"],
        "self_bleu": out["self_bleu"] <= out["order_self_bleu"] + TARGETS["self_bleu"],
        "accuracy": out["accuracy"] >= out["order_accuracy"] + TARGETS["accuracy"],
        "wall": out["wall_ratio"] <= TARGETS["wall"],
    }
    return out


def report() -> None:
    records = RUNS.read()
    lines, result = (
        [
            "# Particles (smc) against confident-first draws at equal compute (dev MLM)",
            "",
            "Generated by `scripts/particles.py report`; see the script's docstring for the protocol.",
            "",
        ],
        {},
    )
    by = {}
    for r in records:
        by.setdefault((r["phase"], r["regime"]), {}).setdefault(r["row"], []).append(r)
    for phase in ("tune", "check"):
        for regime in REGIMES:
            rows = by.get((phase, regime), {})
            if ORDER in rows:
                table(
                    lines,
                    result,
                    f"{phase}, {regime} blank tokens",
                    ORDER,
                    {f"{phase}/{regime}/{name}": (name, rs, rows[ORDER]) for name, rs in rows.items() if name != ORDER},
                )
    for regime, default in DEFAULT_ROWS.items():  # the default against every order, each run as a row
        rows = by.get(("check", regime), {})
        if default in rows:
            table(
                lines,
                result,
                f"check, {regime} blank tokens: the default (`{default}`) against every order",
                "each order",
                {
                    f"check/{regime}/{default}/against/{order}": (order, rows[default], rows[order])
                    for order in ORDERS
                    if order in rows
                },
            )
    (OUT / "report.md").write_text("\n".join(lines) + "\n")
    (OUT / "report.json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(lines))


def table(lines: list[str], result: dict, title: str, against: str, pairs: dict) -> None:
    """A section of the report: per key, ``(row name, our runs, the order's runs)`` compared."""
    lines += [
        f"## {title}",
        "",
        f"| row | pairs | top-5 PLL higher / lower | share | mean top-5 PLL (ours vs "
        f"{against}) | self-BLEU | top-1 acc. | sequences ratio | wall/seq ratio | targets met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, (name, ours, order) in pairs.items():
        c = result[key] = compare(ours, order)
        share = "-" if c["win_share"] is None else f"{100 * c['win_share']:.0f}%"
        lines.append(
            f"| `{name}` | {c['pairs']} | {c['higher']} / {c['lower']} | {share} | "
            f"{c['pll']:.2f} vs {c['order_pll']:.2f} | {c['self_bleu']:.1f} vs "
            f"{c['order_self_bleu']:.1f} | {c['accuracy']:.3f} vs {c['order_accuracy']:.3f} | "
            f"{c['sequence_ratio']:.2f} | {c['wall_ratio']:.2f} | "
            f"{', '.join(k for k, v in c['targets'].items() if v) or 'none'} |"
        )
    lines.append("")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("tune", "check", "report"))
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--grid", default=GRID)
    parser.add_argument("--templates", type=int, default=8)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--ours", action="append", default=[])
    parser.add_argument("--regime", choices=tuple(REGIMES), help="tune: this regime only")
    args = parser.parse_args()
    if args.phase == "report":
        report()
        return 0
    infiller = load_infiller(DEV_MODEL, warm=False)
    if args.phase == "tune":
        tasks, rows = (
            tasks_of("tune", args.templates),
            {name: args.grid.split(";") for name in REGIMES if args.regime in (None, name)},
        )
    else:
        tasks, rows = tasks_of("check", None), dict(spec.split("=", 1) for spec in args.ours)
        rows = {regime: [spec] for regime, spec in rows.items()}
    groups = [(task, seed) for seed in map(int, args.seeds.split(",")) for task in tasks if task["regime"] in rows]
    i, n = map(int, args.shard.split("/"))
    for task, seed in groups[i::n]:
        run_group(infiller, args.phase, task, seed, rows[task["regime"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
