"""Fillings a reader keeps: the repeat-masked target and the product search against every one-pass order.

    python -m scripts.reader_study tune  [--shard 0/2] [--seeds 0,1,2] [--templates 8] --rows REGIME=SPEC ...
    python -m scripts.reader_study check [--shard 0/2] [--seeds 0,1,2] --rows REGIME=SPEC ...
    python -m scripts.reader_study adopt | rescore
    python -m scripts.reader_study wall --templates 4 --rows REGIME=SPEC ...
    python -m scripts.reader_study report

``wall`` times each row against ``confident-first`` (under the row's target, charged as above) on the first
check templates of its regime, seed 0, the two run in turn (A B B A) in one process, into ``OUT/wall.json``: wall
per encoder sequence, row over order, median and range over the templates (the report's own column compares runs
made at different times, on a shared machine).

A SPEC is a method with ``+key=value`` settings (``scripts/particles.py``'s syntax), e.g.
``product-search+target=repeat-masked+decode=diverse+diversity=2``. Every row runs
``Infiller(...).sample(..., top=5)`` (temperature 1) on the dev MLM at a budget of 100 encoder sequences per blank
token; a one-pass order (``confident-first``, ``left-to-right``, ``random-order``) is given what a perfect cache
charges for it (:func:`infill.evaluation.compute.matched`: that budget, never less than its ``top`` draws need),
re-ranked by the target its spec names. Regimes by blank tokens: 2, 3, 4, 5, 6-7, 8-10, 11-16, from
``corpora/calibration/{tune,check}.jsonl`` (the tuning half to choose, the check half to judge).

Each run is one line of ``OUT/runs.jsonl`` (a run resumes where it stopped; ``--shard i/n`` runs the i-th of n
parts). A record holds the kept fillings, their plain PLL over the blanks (the standard target: the same yardstick
whatever target a row ran) and the whole sentence's as ``infill score`` computes it, its compute and wall time.
``adopt`` takes the particles study's check runs (the plain PLL's rows) in; ``rescore`` adds what a record
lacks. The report compares each row with each order run under the same target on the same (template, seed) pairs: the share of the
kept five in which one content word (3+ letters, not an English stop word: sumy's list) fills two blanks or more,
top-5 mean standard PLL higher / lower, self-BLEU of the five, top-1 and top-5 recovery of the removed words, wall
per encoder sequence; and the removed words' own repeated share.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from scripts.harness import ROOT, TARGETS, TOP, Rows, fill, load_half, log, paired, parse, run_key, task_row

REGIMES = {"2": (2,), "3": (3,), "4": (4,), "5": (5,), "6-7": (6, 7), "8-10": (8, 9, 10), "11-16": tuple(range(11, 17))}
ORDERS = ("confident-first", "left-to-right", "random-order")
BUDGET_PER_BLANK = 100
OUT = ROOT / "eval" / "reader-minilm"
MODEL = ROOT.parent / "shared" / "models" / "infill-dev-minilm-mlm"
REPEATS = 0.02
"""The target: the kept five's repeated share at most the order's + 2 points."""


def regime_of(task: dict) -> str | None:
    return next((name for name, blanks in REGIMES.items() if len(task["removed"]) in blanks), None)


def tasks_of(half: str, per_regime: int | None) -> list[dict]:
    """The half's templates of each regime (``per_regime`` of them, spread over its templates)."""
    chosen = []
    for name in REGIMES:
        pool = sorted((t for t in load_half(half) if regime_of(t) == name), key=lambda t: t["id"])
        k = len(pool) if per_regime is None else min(per_regime, len(pool))
        picks = sorted({round(i * (len(pool) - 1) / max(1, k - 1)) for i in range(k)})
        chosen += [{**pool[i], "regime": name} for i in picks]
    return chosen


def target_of(spec: str) -> str:
    return parse(spec).get("target", "pll")


def run(infiller, task: dict, seed: int, spec: str) -> dict:
    from infill.evaluation.compute import matched

    d, settings = len(task["removed"]), parse(spec)
    budget = BUDGET_PER_BLANK * d

    def once(b: int) -> dict:
        start = time.perf_counter()
        result = infiller.sample(task["template"], top=TOP, seed=seed, budget=b, **settings)
        seconds = time.perf_counter() - start
        fills = [list(s.fills) for s in result.samples]
        texts = [fill(task["template"], f) for f in fills]
        return {
            "fills": fills,
            "texts": texts,
            "energies": [float(s.energy) for s in result.samples],
            "plain": plain_pll(infiller, task["template"], fills),
            "sentence": [s.total for s in infiller.score(texts)] if texts else [],
            "encoder_sequences": result.diagnostics.encoder_sequences,
            "seconds": seconds,
            "candidates": result.diagnostics.candidates,
        }

    if settings["sampler"] in ORDERS:
        record, match = matched(once, budget, settings["sampler"], d, TOP)
        return {**record, **match}
    return {**once(budget), "budget": budget}


def adopt() -> None:
    """The particles study's check runs (``eval/particles-minilm``: the default and every order under the plain
    PLL, same budget, seeds and templates) as rows here, each kept five scored as ``infill score`` scores it."""
    infiller, done = load(), done_keys()
    rows = {"auto", *ORDERS, "smc+tilt=2.0+decode=diverse+diversity=12", "smc+tilt=2.0+decode=diverse+diversity=40"}
    tasks = {t["id"]: t for t in tasks_of("check", None)}
    with open(OUT / "runs.jsonl", "a") as f:
        for old in Rows(ROOT / "eval" / "particles-minilm" / "runs.jsonl", run_key).read():
            row = old["row"]
            if (
                old["phase"] != "check"
                or row not in rows
                or old["id"] not in tasks
                or ("check", old["id"], old["seed"], row) in done
            ):
                continue
            texts = old["texts"]
            f.write(
                json.dumps(
                    {
                        "phase": "check",
                        "id": old["id"],
                        "regime": tasks[old["id"]]["regime"],
                        "blanks": old["blanks"],
                        "removed": old["removed"],
                        "seed": old["seed"],
                        "row": row,
                        "fills": old["fills"],
                        "texts": texts,
                        "energies": old["energies"],
                        "sentence": [s.total for s in infiller.score(texts)] if texts else [],
                        "plain": old["energies"],
                        "encoder_sequences": old["encoder_sequences"],
                        "seconds": old["seconds"],
                        "candidates": old.get("candidates"),
                        "budget": old.get("budget"),
                        "from": "eval/particles-minilm",
                    }
                )
                + "\n"
            )


def wall(tasks: list[dict], rows: dict) -> None:
    """Wall per encoder sequence of each row over ``confident-first``'s, interleaved (module docstring)."""
    infiller, out = load(), {}
    for task in tasks:
        for spec in rows.get(task["regime"], []):
            target = target_of(spec)
            order = "confident-first" if target == "pll" else f"confident-first+target={target}"
            per = {spec: [], order: []}
            for name in (spec, order, order, spec):
                record = run(infiller, task, 0, name)
                per[name].append(record["seconds"] / record["encoder_sequences"])
            ratio = statistics.fmean(per[spec]) / statistics.fmean(per[order])
            out.setdefault(f"{task['regime']}/{spec}", []).append(ratio)
            log(f"wall {task['id']} {spec}: {ratio:.2f}")
    summary = {
        key: {"median": statistics.median(r), "min": min(r), "max": max(r), "templates": len(r)}
        for key, r in out.items()
    }
    (OUT / "wall.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


def plain_pll(infiller, template: str, fills: list[list[str]]) -> list[float]:
    """The plain PLL over the blanks (the standard target) of each filling of token blanks."""
    import torch

    from infill.energies import MaskedLMEnergy
    from infill.pipeline.config import RunConfig

    if not fills:
        return []
    prepared = infiller.prepare([template], RunConfig.create())
    parsed, categories = prepared.templates[0], prepared.categories
    index = {c: i for i, c in enumerate(categories.tolist())}
    x = torch.tensor([[index[t] for t in infiller.tokenizer.convert_tokens_to_ids(f)] for f in fills])
    energy = MaskedLMEnergy(
        infiller.model, parsed.input_ids, parsed.blank_positions, categories, infiller.tokenizer.mask_token_id
    )
    return energy.of_indices(x).tolist()


def rescore() -> None:
    """Records without the plain PLL over the blanks (or the sentence's) given them."""
    infiller, path = load(), OUT / "runs.jsonl"
    tasks = {t["id"]: t for half in ("tune", "check") for t in load_half(half)}
    records = list(map(json.loads, path.read_text().splitlines()))
    for r in records:
        if "pll" in r:  # the first records' name for the sentence's
            r["sentence"] = r.pop("pll")
        if "plain" not in r:
            r["plain"] = plain_pll(infiller, tasks[r["id"]]["template"], r["fills"])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def done_keys() -> set:
    path = OUT / "runs.jsonl"
    if not path.exists():
        return set()
    return {(r["phase"], r["id"], r["seed"], r["row"]) for r in map(json.loads, path.read_text().splitlines())}


def load():
    import torch

    from infill import Infiller

    torch.set_num_threads(1)
    return Infiller(str(MODEL))


def execute(phase: str, tasks: list[dict], seeds: list[int], rows: dict, shard: str, orders: tuple) -> None:
    infiller = load()
    done = done_keys()
    groups = [(task, seed) for seed in seeds for task in tasks if task["regime"] in rows]
    i, n = map(int, shard.split("/"))
    OUT.mkdir(parents=True, exist_ok=True)
    for task, seed in groups[i::n]:
        specs = rows[task["regime"]]
        against = {f"{o}+target={t}" if t != "pll" else o for t in map(target_of, specs) for o in orders}
        for spec in [*specs, *sorted(against - set(specs))]:
            if (phase, task["id"], seed, spec) in done:
                continue
            record = {
                **task_row(phase, task, seed),
                "row": spec,
                **run(infiller, task, seed, spec),
            }
            with open(OUT / "runs.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
            log(f"{phase} {task['id']} s{seed} {spec}: {record['encoder_sequences']} seqs {record['seconds']:.1f}s")


_STOP: set | None = None


def content(word: str) -> bool:
    """A content word: 3+ letters, not an English stop word (sumy's list)."""
    global _STOP
    if _STOP is None:
        from sumy.utils import get_stop_words

        _STOP = set(get_stop_words("english"))
    return len(word) >= 3 and word.isalpha() and word.lower() not in _STOP


def repeated(fills: list[str]) -> bool:
    """Whether one content word fills two blanks or more."""
    words = [f.lower() for f in fills if content(f)]
    return len(words) != len(set(words))


def metrics(record: dict) -> dict:
    from infill.metrics import self_bleu

    fills, removed = record["fills"], [w.lower() for w in record["removed"]]
    top1 = fills[0] if fills else []
    return {
        "pll": statistics.fmean(record["plain"]),
        "sentence": statistics.fmean(record["sentence"]),
        "repeated": statistics.fmean(map(repeated, fills)),
        "self_bleu": 100 * self_bleu(record["texts"]) if len(fills) > 1 else 100.0,
        "top1": statistics.fmean(a.lower() == b for a, b in zip(top1, removed)) if top1 else 0.0,
        "top5": statistics.fmean(any(f[j].lower() == w for f in fills) for j, w in enumerate(removed)),
        "sequences": record["encoder_sequences"],
        "seconds": record["seconds"],
    }


def compare(ours: list[dict], order: list[dict]) -> dict:
    keys, a, _, ma, mb, higher, lower = paired(ours, order, metrics)

    def mean(m, name):
        return statistics.fmean(m[k][name] for k in keys)

    out = {
        "pairs": len(keys),
        "higher": higher,
        "lower": lower,
        "win_share": higher / (higher + lower) if higher + lower else None,
        **{
            f"{name}{side}": mean(m, name)
            for name in ("pll", "sentence", "repeated", "self_bleu", "top1", "top5")
            for side, m in (("", ma), ("_order", mb))
        },
        "removed_repeated": statistics.fmean(repeated(a[k]["removed"]) for k in keys),
        "sequence_ratio": statistics.fmean(ma[k]["sequences"] / mb[k]["sequences"] for k in keys),
        "wall_ratio": (sum(ma[k]["seconds"] for k in keys) / sum(ma[k]["sequences"] for k in keys))
        / (sum(mb[k]["seconds"] for k in keys) / sum(mb[k]["sequences"] for k in keys)),
    }
    out["targets"] = {
        "repeats": out["repeated"] <= out["repeated_order"] + REPEATS,
        "wins": (out["win_share"] or 0) >= TARGETS["wins"],
        "self_bleu": out["self_bleu"] <= out["self_bleu_order"] + TARGETS["self_bleu"],
        "top1": out["top1"] >= out["top1_order"] + TARGETS["accuracy"],
        "wall": out["wall_ratio"] <= TARGETS["wall"],
    }
    return out


def report() -> None:
    records = list(map(json.loads, (OUT / "runs.jsonl").read_text().splitlines()))
    by: dict = {}
    for r in records:
        by.setdefault((r["phase"], r["regime"]), {}).setdefault(r["row"], []).append(r)
    lines = [
        "# Fillings a reader keeps: targets and the product search against every one-pass order (dev MLM)",
        "",
        "Generated by `python -m scripts.reader_study report`; the protocol is in the script's docstring. Each row "
        "against each order under the same target, on the same (template, seed) pairs, at equal encoder "
        "sequences (the order charged as a perfect cache charges). PLL: the plain (standard) PLL over the "
        "blanks, mean over the kept five, whatever target the row ran; sentence PLL: the whole sentence's, as "
        "`infill score` computes it.",
        "",
    ]
    result = {}
    for phase in ("tune", "check"):
        for regime in REGIMES:
            rows = by.get((phase, regime), {})
            ours = [name for name in rows if parse(name)["sampler"] not in ORDERS]
            if not ours:
                continue
            lines += [
                f"## {phase}, {regime} blank tokens",
                "",
                "| row | against | pairs | PLL higher / lower | share | mean PLL | sentence PLL | repeated share "
                "(removed words') | self-BLEU | top-1 | top-5 recovery | seq. ratio | wall/seq | targets met |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for name in sorted(ours):
                target = target_of(name)
                for order in ORDERS:
                    against = order if target == "pll" else f"{order}+target={target}"
                    if against not in rows:
                        continue
                    c = result[f"{phase}/{regime}/{name}/{against}"] = compare(rows[name], rows[against])
                    share = "-" if c["win_share"] is None else f"{100 * c['win_share']:.0f}%"
                    lines.append(
                        f"| `{name}` | {order} | {c['pairs']} | {c['higher']} / {c['lower']} | {share} | "
                        f"{c['pll']:.2f} vs {c['pll_order']:.2f} | {c['sentence']:.2f} vs {c['sentence_order']:.2f} | "
                        f"{100 * c['repeated']:.0f}% vs "
                        f"{100 * c['repeated_order']:.0f}% ({100 * c['removed_repeated']:.0f}%) | "
                        f"{c['self_bleu']:.1f} vs {c['self_bleu_order']:.1f} | {c['top1']:.3f} vs "
                        f"{c['top1_order']:.3f} | {c['top5']:.3f} vs {c['top5_order']:.3f} | "
                        f"{c['sequence_ratio']:.2f} | {c['wall_ratio']:.2f} | "
                        f"{', '.join(k for k, v in c['targets'].items() if v) or 'none'} |"
                    )
            lines.append("")
    if (OUT / "wall.json").exists():
        lines += [
            "## Wall per encoder sequence, interleaved (`wall`)",
            "",
            "| regime / row | over `confident-first` (median, range) | templates |",
            "|---|---|---|",
        ]
        for key, w in json.loads((OUT / "wall.json").read_text()).items():
            lines.append(f"| `{key}` | {w['median']:.2f} ({w['min']:.2f}-{w['max']:.2f}) | {w['templates']} |")
        lines.append("")
    (OUT / "report.md").write_text("\n".join(lines) + "\n")
    (OUT / "report.json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("tune", "check", "adopt", "rescore", "wall", "report"))
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--templates", type=int, default=8)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--rows", action="append", default=[], help="REGIME=SPEC (repeatable)")
    parser.add_argument("--orders", default=",".join(ORDERS), help="the orders each row is set against")
    args = parser.parse_args()
    if args.phase in ("report", "adopt", "rescore"):
        {"report": report, "adopt": adopt, "rescore": rescore}[args.phase]()
        return 0
    rows: dict = {}
    for item in args.rows:
        regime, spec = item.split("=", 1)
        rows.setdefault(regime, []).append(spec)
    if args.phase == "wall":
        wall(tasks_of("check", args.templates), rows)
        return 0
    tasks = tasks_of(args.phase, args.templates if args.phase == "tune" else None)
    execute(args.phase, tasks, list(map(int, args.seeds.split(","))), rows, args.shard, tuple(args.orders.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
