"""The rule ``auto`` follows with ``top``: which run it makes and how diverse the kept fillings are, chosen on
the candidates each run scored.

    python -m scripts.auto_rule capture --kind search|smc|smc-tilt1.5 --blanks 2-6 [--half tune] [--seeds 0,1,2]
        [--shard 0/2]
    python -m scripts.auto_rule tune
    python -m scripts.auto_rule compare [--kinds smc,smc-tilt1.5] [--share 0.4] [--pool 100] [--half tune]

``capture`` runs the product search or the particles (``smc`` at tilt 2 or 1.5) as ``auto`` runs them
(repeat-masked target, ``top=5``, 100 encoder sequences per blank token, the dev MLM, one thread) on the
calibration half's templates of ``--blanks`` blank tokens, and records the :data:`KEEP_CANDIDATES` best distinct
candidates the keep rule chose among (their words, target values, and whether they repeat a content word or
double a word): one line of ``OUT/captures.jsonl`` each (a run resumes where it stopped).

``tune`` replays the keep rule (:func:`infill.pipeline.choose.spread`, the very function the product calls) on
those candidates under each rule of the grid: the product search while its first product buys ``values`` tokens a
blank (``d * values ** (d - 1)`` sequences within the search's first share of the budget), the particles (of
:data:`PARTICLES`) above; the kept five spread at a share of the PLL range of the pool's candidates, the share one
whatever ``d``, or so much a blank token, or so much a pair of blank tokens (:data:`SHAPES`). Each rule is set
against ``confident-first`` under the same target on the same (template, seed) pairs (``eval/reader-minilm``'s
runs: the order given the same budget, charged as a perfect cache charges), by the reader study's targets: the
kept five's mean target higher on >= 60% of non-tied pairs, self-BLEU <= the order's + 2, repeated content words
<= the order's + 2 points, top-1 recovery >= the order's - 0.02. The rule chosen meets the most regimes'
targets, then falls least short of them where it misses (:func:`shortfall`), then loses the fewest PLL pairs,
then comes first in the grid.
``OUT/tune.md`` has the best rules of the grid, the rule before it and the table before that.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from scripts.harness import ROOT, SAME, TOP, Rows, fill, load_half, log
from scripts.reader_study import OUT as READER
from scripts.reader_study import REGIMES, regime_of, repeated

OUT = ROOT / "eval" / "auto-rule-minilm"
MODEL = ROOT.parent / "shared" / "models" / "infill-dev-minilm-mlm"
BUDGET_PER_BLANK = 100
KEEP_CANDIDATES = 100
SPECS = {
    "search": "product-search",
    "smc": "smc",
    "smc-tilt1.5": "smc",
}
OPTIONS = {"search": {}, "smc": {"tilt": 2.0}, "smc-tilt1.5": {"tilt": 1.5}}
"""The kinds captured; ``tune``'s grid and ``compare`` read any of them."""
VALUES = (2.0, 2.5, 3.0, 4.0, 8.0)
PARTICLES = ("smc", "smc-tilt1.5")
"""The particles the grid runs above the search: the product's tilt 2 and a tilt of 1.5."""
SHAPES = {
    "share": ((0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 1.0), lambda c, d: c),
    "share a blank": ((0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1), lambda c, d: min(1.0, c * d)),
    "share a pair": (
        (0.004, 0.006, 0.007, 0.008, 0.009, 0.01, 0.0125, 0.015, 0.02),
        lambda c, d: min(1.0, c * d * (d - 1)),
    ),
}
"""The keep rule's share of the pool's PLL range on ``d`` blank tokens, by its shape: one share whatever ``d``, a
share a blank token, a share a pair of blank tokens (``d (d - 1)``), each at most 1."""
POOLS = ((20, 100), (20, 20), (50, 50), (100, 100), (20, 50))
"""(the search's, the particles') candidates the keep rule chooses among, as many of the best (100: every one the
capture kept). The first is the product's without a constant of its own (the search's as any diverse decoding's,
every particle): a tie in the ranking goes to the rule first in the grid."""
WINS, SELF_BLEU, REPEATS, TOP1 = 0.60, 2.0, 0.02, -0.02


def key(row: dict) -> tuple:
    return row["phase"], row["id"], row["seed"], row["kind"]


def capture(kind: str, blanks: range, half: str, seeds: list[int], shard: str) -> None:
    """Runs of ``kind`` on the half's templates of ``blanks`` blank tokens, their candidates recorded."""
    import torch

    from infill import Infiller
    from infill.pipeline import choose

    torch.set_num_threads(1)
    infiller, rows = Infiller(str(MODEL)), Rows(OUT / "captures.jsonl", key)
    done, seen, pick = rows.done(), {}, choose.pick

    def recording(batch, unique, values, held, avoid=None):
        best = torch.sort(-values, stable=True).indices
        best = best[~values[best].isnan()]
        if held is not None:
            best = best[held[best]]
        best = best[:KEEP_CANDIDATES]
        ids = batch.energy.category_ids[unique[best]]
        seen["words"] = [infiller.tokenizer.convert_ids_to_tokens(r) for r in ids.tolist()]
        seen["values"] = values[best].tolist()
        seen["fresh"] = [True] * len(best) if avoid is None else (~avoid.of(unique[best])).tolist()
        return pick(batch, unique, values, held, avoid)

    choose.pick = recording
    tasks = [t for t in load_half(half) if len(t["removed"]) in blanks]
    i, n = map(int, shard.split("/"))
    for task, seed in [(t, s) for s in seeds for t in tasks][i::n]:
        if (half, task["id"], seed, kind) in done:
            continue
        d, start = len(task["removed"]), time.perf_counter()
        result = infiller.sample(
            task["template"],
            top=TOP,
            seed=seed,
            budget=BUDGET_PER_BLANK * d,
            sampler=SPECS[kind],
            target="repeat-masked",
            decode="diverse",
            diversity=1e-6,
            **OPTIONS[kind],
        )  # a diversity named: the keep rule chooses among every candidate, so every one is seen
        seconds = time.perf_counter() - start
        rows.append(
            {
                "phase": half,
                "id": task["id"],
                "regime": regime_of(task),
                "blanks": d,
                "removed": task["removed"],
                "template": task["template"],
                "seed": seed,
                "kind": kind,
                **seen,
                "seconds": seconds,
                "encoder_sequences": result.diagnostics.encoder_sequences,
            }
        )
        log(f"{kind} {task['id']} s{seed}: {result.diagnostics.encoder_sequences} seqs {seconds:.1f}s")


def replay(run: dict, share: float | None = None, margin: float | None = None, pool: int | None = None) -> dict:
    """The kept five of a captured run under the keep rule: among the ``pool`` best candidates (default
    ``DIVERSE_POOL x 5``), spread at ``margin`` nats or at ``share`` of the pool's PLL range; its metrics."""
    import torch

    from infill.pipeline.choose import spread
    from infill.pipeline.policy import DIVERSE_POOL

    pool = pool or DIVERSE_POOL * TOP
    fresh_first = share is not None  # as pick does: with a share, the pool is the best fresh candidates
    order = sorted(range(len(run["words"])), key=lambda i: fresh_first and not run["fresh"][i])
    words, values, fresh = ([run[n][i] for i in order[:pool]] for n in ("words", "values", "fresh"))
    if not words:
        return {}
    index: dict = {}
    rows = torch.tensor([[index.setdefault(w, len(index)) for w in f] for f in words])
    ranked = torch.tensor(values, dtype=torch.float32)
    margin = margin if margin is not None else share * (max(values) - min(values))
    kept = spread(rows, ranked, TOP, margin, torch.tensor(fresh)).tolist()
    return measures(run, [words[i] for i in kept], [values[i] for i in kept])


def measures(run: dict, fills: list[list[str]], values: list[float]) -> dict:
    """The kept fillings' mean target value, self-BLEU (percent), repeated share and top-1 recovery."""
    from infill.metrics import self_bleu

    texts = [fill(run["template"], f) for f in fills]
    removed = [w.lower() for w in run["removed"]]
    return {
        "pll": statistics.fmean(values),
        "self_bleu": 100 * self_bleu(texts) if len(texts) > 1 else 100.0,
        "repeated": statistics.fmean(map(repeated, fills)),
        "top1": statistics.fmean(a.lower() == b for a, b in zip(fills[0], removed)),
    }


def orders(half: str, row: str = "confident-first+target=repeat-masked") -> dict:
    """The reader study's runs of ``row`` (by default ``confident-first`` under the repeat-masked target), by
    (template, seed), with their measures."""
    out = {}
    for r in map(json.loads, (READER / "runs.jsonl").read_text().splitlines()):
        if r["phase"] == half and r["row"] == row and r["fills"]:
            out[(r["id"], r["seed"])] = measures({**r, "template": template_of(r)}, r["fills"], r["energies"])
    return out


def template_of(record: dict) -> str:
    return _TEMPLATES.setdefault("all", {t["id"]: t["template"] for h in ("tune", "check") for t in load_half(h)})[
        record["id"]
    ]


_TEMPLATES: dict = {}


def judge(ours: dict, order: dict) -> dict:
    """A rule's kept fives against the order's on the pairs both have, and which targets it meets."""
    keys = sorted(ours.keys() & order.keys())
    if not keys:
        return {}
    diffs = [ours[k]["pll"] - order[k]["pll"] for k in keys]
    higher, lower = sum(x > SAME for x in diffs), sum(x < -SAME for x in diffs)
    mean = {
        n: statistics.fmean(ours[k][n] - order[k][n] for k in keys) for n in ("self_bleu", "repeated", "top1", "pll")
    }
    wins = higher / (higher + lower) if higher + lower else 1.0
    met = wins >= WINS and mean["self_bleu"] <= SELF_BLEU and mean["repeated"] <= REPEATS and mean["top1"] >= TOP1
    return {"pairs": len(keys), "higher": higher, "lower": lower, "wins": wins, **mean, "met": met}


def rules() -> dict:
    """The grid: a rule's name -> a function of a captured run's blanks that names (kind, share, margin, pool)."""
    from infill.pipeline.policy import searchable

    def rule(v, particles, shape, c, pools):
        def choice(d):
            share = SHAPES[shape][1](c, d)
            if searchable(d, BUDGET_PER_BLANK * d, v):
                return "search", share, None, pools[0]
            return particles, share, None, pools[1]

        return choice

    grid = {
        f"values {v}, {particles}, {shape} {c}, pools {p}": rule(v, particles, shape, c, p)
        for v in VALUES
        for particles in PARTICLES
        for shape, (constants, _) in SHAPES.items()
        for c in constants
        for p in POOLS
    }

    def table(d: int):  # AUTO_TOP as it stood: at 3 blank tokens it runs chains, which were not captured
        if d == 3:
            return None
        if d in (2, 4):
            return "search", None, {2: 0.5, 4: 3.0}[d], None
        return "smc", None, 12.0 if d <= 7 else 40.0, KEEP_CANDIDATES

    grid["the table before the rule (AUTO_TOP)"] = table
    return grid


def shortfall(per: dict) -> float:
    """How far a rule's regimes fall short of the targets, summed: points of PLL wins under 60%, self-BLEU over the
    order's + 2, points of repeated content words over + 2, points of top-1 under - 0.02."""
    return sum(
        100 * max(0.0, WINS - j["wins"])
        + max(0.0, j["self_bleu"] - SELF_BLEU)
        + 100 * max(0.0, j["repeated"] - REPEATS)
        + 100 * max(0.0, TOP1 - j["top1"])
        for j in per.values()
        if j
    )


def kept_by_regime(runs, choose, replays: dict | None = None) -> dict:
    """The kept fives of captured ``runs`` by regime and (template, seed): each run replayed (:func:`replay`) as
    ``choose(run)`` names ``(kind, share, margin, pool)``; a run of another kind (or None named) is left out, and
    so is one that kept nothing (no candidate scored). ``replays`` keeps replays for another call."""
    replays = {} if replays is None else replays
    out: dict = {}
    for run in runs:
        choice = choose(run)
        if choice is None or choice[0] != run["kind"]:
            continue
        at = (run["id"], run["seed"], choice)
        if at not in replays:
            replays[at] = replay(run, *choice[1:])
        if replays[at]:
            out.setdefault(run["regime"], {})[(run["id"], run["seed"])] = replays[at]
    return out


SHOWN = 40
"""``tune.md`` shows the best rules of the grid, then the rule before this grid and the table before it."""
BEFORE = "values 4.0, smc, share 0.4, pools (20, 100)"


def tune(half: str = "tune") -> None:
    runs = {(r["id"], r["seed"], r["kind"]): r for r in Rows(OUT / "captures.jsonl", key).read() if r["phase"] == half}
    order, results, replays = orders(half), {}, {}
    for name, rule in rules().items():
        by_regime = kept_by_regime(runs.values(), lambda run, rule=rule: rule(run["blanks"]), replays)
        results[name] = {regime: judge(by_regime.get(regime, {}), order) for regime in REGIMES}
    met = {n: sum(bool(j) and j["met"] for j in per.values()) for n, per in results.items()}
    losses = {n: sum(j.get("lower", 0) for j in per.values()) for n, per in results.items()}
    ranked = sorted(
        (n for n in results if n.startswith("values")), key=lambda n: (-met[n], shortfall(results[n]), losses[n])
    )
    lines = [
        f"# The rule of `auto` with `top`, replayed on the {half} half's captured candidates (dev MLM)",
        "",
        "Generated by `python -m scripts.auto_rule tune`; the protocol is in the script's docstring. A cell: the "
        "share of non-tied pairs where the kept five's mean target beats `confident-first`'s (same target, same "
        f"budget), self-BLEU over the order's, and * where every target is met. The {SHOWN} best of the "
        f"{len(ranked)} rules (most regimes met, then the least shortfall, then the fewest PLL losses; every one in "
        f"`{half}.json`), then the rule before this grid and the table before that.",
        "",
        "| rule | " + " | ".join(REGIMES) + " | regimes met | shortfall | PLL losses |",
        "|---" * (len(REGIMES) + 4) + "|",
    ]
    for name in [*ranked[:SHOWN], BEFORE, "the table before the rule (AUTO_TOP)"]:
        cells = [
            f"{100 * j['wins']:.0f}% {j['self_bleu']:+.1f}{'*' if j['met'] else ''} ({j['pairs']})" if j else "-"
            for j in results[name].values()
        ]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {met[name]} | {shortfall(results[name]):.1f} | {losses[name]} |"
        )
    lines += ["", f"Chosen: {ranked[0]}.", ""]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{half}.md").write_text("\n".join(lines))
    (OUT / f"{half}.json").write_text(json.dumps(results, indent=1) + "\n")
    print("\n".join(lines))


def compare(kinds: list[str], share: float, pool: int, half: str = "tune") -> None:
    """Each kind's captured runs kept at ``share`` of the range of its best ``pool`` candidates, against
    ``confident-first`` by regime (:func:`judge`), on the (template, seed) pairs every kind captured."""
    runs = [r for r in Rows(OUT / "captures.jsonl", key).read() if r["phase"] == half and r["kind"] in kinds]
    common = set.intersection(*({(r["id"], r["seed"]) for r in runs if r["kind"] == k} for k in kinds))
    order = orders(half)
    print("| kind | regime | pairs | PLL higher | self-BLEU vs order | repeated vs order | top-1 vs order | met |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in kinds:
        mine = (r for r in runs if r["kind"] == kind and (r["id"], r["seed"]) in common)
        by_regime = kept_by_regime(mine, lambda run, kind=kind: (kind, share, None, pool))
        for regime in (r for r in REGIMES if r in by_regime):
            j = judge(by_regime[regime], order)
            print(
                f"| {kind} | {regime} | {j['pairs']} | {100 * j['wins']:.0f}% | {j['self_bleu']:+.1f} | "
                f"{100 * j['repeated']:+.0f} | {j['top1']:+.3f} | {'met' if j['met'] else '-'} |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("capture", "tune", "compare"))
    parser.add_argument("--kinds", default="smc,smc-tilt1.5", help="compare: kinds, comma-separated")
    parser.add_argument("--share", type=float, default=0.4, help="compare: the keep rule's share")
    parser.add_argument("--pool", type=int, default=100, help="compare: the candidates it chooses among")
    parser.add_argument("--kind", choices=tuple(SPECS))
    parser.add_argument("--blanks", default="2-16")
    parser.add_argument("--half", default="tune")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--shard", default="0/1")
    args = parser.parse_args()
    if args.phase == "tune":
        tune()
        return 0
    if args.phase == "compare":
        compare(args.kinds.split(","), args.share, args.pool, args.half)
        return 0
    low, high = map(int, args.blanks.split("-"))
    capture(args.kind, range(low, high + 1), args.half, list(map(int, args.seeds.split(","))), args.shard)
    return 0


if __name__ == "__main__":
    sys.exit(main())
