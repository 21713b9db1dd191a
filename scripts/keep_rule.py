"""Which five ``auto`` keeps: keep rules replayed on every candidate the product's runs scored, against the orders.

    python -m scripts.keep_rule capture --half tune|check [--runs top] [--blanks 3-10] [--seeds 0,1,2] [--shard 0/2]
    python -m scripts.keep_rule tune
    python -m scripts.keep_rule check [--rule NAME]
    python -m scripts.keep_rule packets --half H --seed S [--rule NAME] [--runs top] --against ORDER|product --out DIR
    python -m scripts.keep_rule tally

``capture`` runs ``auto`` as a user does (``top=5``, its default budget, the dev MLM, one thread) on the
calibration half's templates (``corpora/calibration``) and records every candidate its keep rule chose among
(words, target value, whether it repeats a content word or doubles a word) and the five it kept: one line of
``OUT/captures-HALF.jsonl`` each (``--runs top``: its particles in ``top`` independent runs at every blank count,
into ``OUT/captures-top-runs-HALF.jsonl``). A run resumes where it stopped; the files are not kept in git: the
command makes them again, same seeds, same lines.

``tune`` replays each rule of :func:`rules` on the tuning half's captures (the product's own
:func:`infill.pipeline.choose.spread`, or a rule of this file, on the same candidates) and sets the kept fives
against ``confident-first``, ``left-to-right`` and ``random-order`` under the same target on the same (template,
seed) pairs (``eval/reader-minilm``'s runs: each order given the same budget, charged as a perfect cache
charges). The targets: the kept five's mean target higher on >= 60% of non-tied pairs, self-BLEU within
[order - 3, order + 2], top-1 recovery >= the order's - 0.02, repeated content words <= the order's + 2 points,
against every order at every regime. ``check`` reports the product's kept fives (as captured) on the check half,
and a rule's replay on top runs beside them. ``packets`` writes a blind reading of one seed's kept fives against
an order's or the product's (``scripts.reader_blind``'s format; readers answer in ``verdicts-NAME.json``), and
``tally`` unblinds every reading in ``OUT/readers``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from infill.pipeline.config import AUTO_SPREAD
from infill.pipeline.policy import DIVERSE_POOL
from scripts import auto_rule
from scripts.auto_rule import measures
from scripts.harness import ROOT, TOP, Rows, fill, load_half, log
from scripts.reader_blind import head, unblind
from scripts.reader_study import OUT as READER
from scripts.reader_study import REGIMES, regime_of

OUT = ROOT / "eval" / "keep-rule-minilm"
MODEL = ROOT.parent / "shared" / "models" / "infill-dev-minilm-mlm"
ORDERS = ("confident-first", "left-to-right", "random-order")
FLOOR = -3.0
"""Self-BLEU at least the order's less this (the bound above, the PLL wins, top-1 and repeats: ``auto_rule``'s)."""
CHOSEN = "spread 0.009 a pair"
"""The rule ``tune`` chose on top runs (``OUT/tune.md``); readers preferred the product's (README.md)."""
PRODUCT = f"spread {AUTO_SPREAD} a pair (the product)"
LEAST_PAIRS = 6
"""An order is judged at a regime where it ran on at least this many of the (template, seed) pairs."""


def key(row: dict) -> tuple:
    return row["phase"], row["id"], row["seed"]


def captures(half: str, runs: str = "one-run") -> Path:
    return OUT / (f"captures-{half}.jsonl" if runs == "one-run" else f"captures-top-runs-{half}.jsonl")


def capture(half: str, seeds: list[int], shard: str, runs: str = "one-run", blanks: range = range(1, 99)) -> None:
    """``auto``'s runs on the half's templates, every candidate its keep rule saw recorded; with ``runs="top"``
    its particles run as ``top`` independent runs at every blank count (the product: from 11 blank tokens)."""
    import torch

    from infill import Infiller
    from infill.pipeline import choose, policy

    torch.set_num_threads(1)
    if runs == "top":
        product = policy._auto

        def top_runs(config, d, constrained):
            resolved = product(config, d, constrained)
            if resolved.method != "smc" or "run_size" in resolved.options:
                return resolved
            first = policy.first_round(resolved.method, resolved.options, resolved.budget, d)
            return replace(resolved, options={**resolved.options, "run_size": max(1, first // config.top)})

        policy._auto = top_runs
    infiller, rows = Infiller(str(MODEL)), Rows(captures(half, runs), key)
    done, seen, pick = rows.done(), {}, choose.pick

    def recording(batch, unique, values, held, avoid=None):
        scored = (~values.isnan()).nonzero().flatten()
        if held is not None:
            scored = scored[held[scored]]
        scored = scored[torch.sort(-values[scored], stable=True).indices]
        ids = batch.energy.category_ids[unique[scored]]
        seen["words"] = [infiller.tokenizer.convert_ids_to_tokens(r) for r in ids.tolist()]
        seen["values"] = values[scored].tolist()
        seen["fresh"] = [True] * len(scored) if avoid is None else (~avoid.of(unique[scored])).tolist()
        seen["kind"] = batch.plan.kind
        return pick(batch, unique, values, held, avoid)

    choose.pick = recording
    i, n = map(int, shard.split("/"))
    tasks = [t for t in load_half(half) if len(t["removed"]) in blanks]
    for task, seed in [(t, s) for s in seeds for t in tasks][i::n]:
        if (half, task["id"], seed) in done:
            continue
        start = time.perf_counter()
        result = infiller.sample(task["template"], top=TOP, seed=seed)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "phase": half,
                "id": task["id"],
                "regime": regime_of(task),
                "blanks": len(task["removed"]),
                "removed": task["removed"],
                "template": task["template"],
                "seed": seed,
                **seen,
                "kept": [list(s.fills) for s in result.samples],
                "kept_values": [float(s.energy) for s in result.samples],
                "seconds": seconds,
                "encoder_sequences": result.diagnostics.encoder_sequences,
            }
        )
        log(f"{task['id']} s{seed}: {len(seen['words'])} candidates, {seconds:.1f}s")


def replay(run: dict, rule) -> tuple[list, list]:
    """The kept five of a captured run under ``rule`` (a function of the pool's words, values and fresh flags that
    returns indices), as words and values: among every candidate of particles, the search's best
    ``DIVERSE_POOL x top``, as the product chooses."""
    pool = len(run["words"]) if run["kind"] == "particles" else DIVERSE_POOL * TOP
    order = sorted(range(len(run["words"])), key=lambda i: not run["fresh"][i])[:pool]
    words, values, fresh = ([run[n][i] for i in order] for n in ("words", "values", "fresh"))
    kept = rule(words, values, fresh)
    return [words[i] for i in kept], [values[i] for i in kept]


def _tensors(words, values, fresh):
    import torch

    index: dict = {}
    rows = torch.tensor([[index.setdefault(w, len(index)) for w in f] for f in words])
    return rows, torch.tensor(values, dtype=torch.float32), torch.tensor(fresh)


def rules() -> dict:
    """The rules replayed: the spread at a share a pair of blank tokens (the product's at its constant), the best
    five, the best five at least a quantile of the candidates' pairwise distances apart (:func:`apart`) or ``c x d``
    blanks apart, the best after a penalty a blank shared with the nearest kept filling, and the spread's window
    with the best candidate at least half as far as the farthest."""
    from infill.pipeline.choose import spread

    def spreading(c):
        def rule(words, values, fresh):
            rows, ranked, fresh_ = _tensors(words, values, fresh)
            d = rows.shape[1]
            margin = min(1.0, c * d * (d - 1)) * (max(values) - min(values))
            return spread(rows, ranked, TOP, margin, fresh_).tolist()

        return rule

    def apart_at(q):
        def rule(words, values, fresh):
            rows, ranked, fresh_ = _tensors(words, values, fresh)
            return apart(rows, TOP, q, fresh_).tolist()

        return rule

    def blanks_apart(c):
        def rule(words, values, fresh):
            d = len(words[0])
            return _greedy(words, fresh, lambda i, near: (min(near, max(1, round(c * d))), -i))

        return rule

    def penalised(lam):
        def rule(words, values, fresh):
            d = len(words[0])
            return _greedy(words, fresh, lambda i, near: values[i] - lam * (d - near))

        return rule

    def window(c):
        def rule(words, values, fresh):
            d = len(words[0])
            margin = min(1.0, c * d * (d - 1)) * (max(values) - min(values))
            inside = [i for i in range(len(words)) if fresh[i]]
            kept, left = inside[:1], inside[1:]
            while left and len(kept) < TOP:
                comparable = [i for i in left if values[i] >= values[left[0]] - margin] or left[:1]
                near = {i: min(sum(a != b for a, b in zip(words[i], words[j])) for j in kept) for i in comparable}
                far = max(near.values())
                kept.append(next(i for i in comparable if 2 * near[i] >= far))
                left.remove(kept[-1])
            return kept + [i for i in range(len(words)) if not fresh[i]][: TOP - len(kept)]

        return rule

    grid = {PRODUCT: spreading(AUTO_SPREAD), "best": apart_at(0.0)}
    grid |= {f"spread {c} a pair": spreading(c) for c in (0.005, 0.006, 0.007, 0.0075, 0.008, 0.009)}
    grid |= {f"window {c} a pair, the best at least half as far": window(c) for c in (0.005, 0.01, 0.02, 0.04)}
    grid |= {f"apart, quantile {q}": apart_at(q) for q in (0.1, 0.2, 0.3, 0.5)}
    grid |= {f"apart, {c} x blanks": blanks_apart(c) for c in (0.2, 0.3, 0.4, 0.5, 0.6)}
    grid |= {f"penalty {lam} a shared blank": penalised(lam) for lam in (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)}
    return grid


def apart(rows, k: int, quantile: float, fresh=None):
    """Indices of ``k`` of the candidates ``rows (m, d)``, ranked best first, chosen quality first: the best,
    then each time the best one left that differs from every kept filling in at least as many blanks as the
    ``quantile`` of the candidates' pairwise distances (at least one); where too few are that far apart, the best
    of the others. Where ``fresh (m,)`` is given, the others come only after every fresh one is kept."""
    import torch

    if fresh is not None and not fresh.all():
        inside, outside = fresh.nonzero().flatten(), (~fresh).nonzero().flatten()
        kept = inside[apart(rows[inside], k, quantile)] if len(inside) else inside
        return torch.cat([kept, outside[: k - len(kept)]])
    if len(rows) < 2:
        return torch.arange(len(rows))
    distance = (rows[:, None] != rows[None]).sum(-1)
    pairs = distance[torch.triu_indices(len(rows), len(rows), 1).unbind()]
    least = max(1.0, torch.quantile(pairs.double(), quantile, interpolation="lower").item())
    kept, nearest = [0], distance[0].clone()
    while len(kept) < k:
        far = (nearest >= least).nonzero().flatten()
        if not len(far):
            break
        kept.append(int(far[0]))
        nearest = torch.minimum(nearest, distance[kept[-1]])
    rest = torch.ones(len(rows), dtype=torch.bool)
    rest[kept] = False
    return torch.cat([torch.tensor(kept), rest.nonzero().flatten()])[:k]


def _greedy(words, fresh, worth) -> list[int]:
    """Five indices, fresh ones first: the first, then each time the one left of highest ``worth(i, nearest)``
    (``nearest``: the fewest blanks in which it differs from a kept one)."""
    inside = [i for i in range(len(words)) if fresh[i]]
    kept, left = inside[:1], inside[1:]
    while left and len(kept) < TOP:
        near = {i: min(sum(a != b for a, b in zip(words[i], words[j])) for j in kept) for i in left}
        kept.append(max(left, key=lambda i: worth(i, near[i])))
        left.remove(kept[-1])
    return kept + [i for i in range(len(words)) if not fresh[i]][: TOP - len(kept)]


def orders(half: str) -> dict:
    """Each order's runs under the repeat-masked target, by (template, seed), with their measures."""
    return {o: auto_rule.orders(half, f"{o}+target=repeat-masked") for o in ORDERS}


def judge(ours: dict, order: dict) -> dict:
    """``auto_rule.judge`` where the order ran on at least :data:`LEAST_PAIRS` pairs, the self-BLEU bounded below
    too."""
    if len(ours.keys() & order.keys()) < LEAST_PAIRS:
        return {}
    judged = auto_rule.judge(ours, order)
    return {**judged, "met": judged["met"] and judged["self_bleu"] >= FLOOR}


def shortfall(js: list[dict]) -> float:
    """``auto_rule.shortfall`` with the self-BLEU's points under the floor added."""
    return auto_rule.shortfall(dict(enumerate(js))) + sum(max(0.0, FLOOR - j["self_bleu"]) for j in js if j)


def kept(runs: list[dict], rule=None) -> dict:
    """Each run's kept five (the captured one, or ``rule``'s replay) measured, by regime and (template, seed)."""
    out: dict = {}
    for run in runs:
        words, values = (run["kept"], run["kept_values"]) if rule is None else replay(run, rule)
        if words:
            out.setdefault(run["regime"], {})[(run["id"], run["seed"])] = measures(run, words, values)
    return out


def read(half: str, runs: str = "top") -> list[dict]:
    """The half's captured runs: one run a round below 11 blank tokens, or (``runs="top"``) top runs where they
    were captured (the product: at 2 blank tokens the search and from 11 top runs either way)."""
    found = {key(r): r for r in Rows(captures(half), key).read()}
    if runs != "one-run":
        found |= {key(r): r for r in Rows(captures(half, runs), key).read()}
    return list(found.values())


def table(half: str, named: dict) -> list[str]:
    """A row a rule: per regime, against each order, PLL wins and self-BLEU over the order's (* every target met)."""
    order = orders(half)
    lines = [
        "| runs, rule | " + " | ".join(REGIMES) + " | regimes met | shortfall |",
        "|---" * (len(REGIMES) + 3) + "|",
    ]
    for (runs, name), rule in named.items():
        by_regime, cells, met, js_all = kept(read(half, runs), rule), [], 0, []
        for regime in REGIMES:
            js = [judge(by_regime.get(regime, {}), order[o]) for o in ORDERS]
            js = [j for j in js if j]
            js_all += js
            ok = bool(js) and all(j["met"] for j in js)
            met += ok
            cells.append(
                " / ".join(f"{100 * j['wins']:.0f}% {j['self_bleu']:+.1f}" for j in js) + ("*" if ok else "") or "-"
            )
        lines.append(f"| {runs}, {name} | " + " | ".join(cells) + f" | {met} | {shortfall(js_all):.1f} |")
    return lines


def tune() -> None:
    named = {(runs, name): rule for runs in ("one-run", "top") for name, rule in rules().items()}
    lines = table("tune", named)
    rows = [line.split(" | ") for line in lines[2:]]
    best = min(rows, key=lambda r: (-int(r[-2]), float(r[-1].rstrip(" |"))))[0].lstrip("| ")
    text = [
        "Keep rules replayed on the tuning half's captures (`python -m scripts.keep_rule tune`). A cell: against "
        "`confident-first` / `left-to-right` / `random-order` (each where it ran on at least "
        f"{LEAST_PAIRS} pairs), the share of non-tied pairs where the kept five's mean target is higher and "
        "self-BLEU over the order's; * where every target is met against every order. Chosen: most regimes met, "
        "then the least shortfall, then the first in the table.",
        "",
        *lines,
        "",
        f"Chosen: {best}.",
    ]
    (OUT / "tune.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))


def detail(half: str, rule: str) -> list[str]:
    """The product's kept fives (as captured) per regime against each order: pairs, PLL wins, self-BLEU, top-1,
    repeated share, the targets; beside them ``rule``'s on top runs: PLL wins and self-BLEU over the order's."""
    order = orders(half)
    product, other = kept(read(half, "one-run")), kept(read(half, "top"), rules()[rule])
    lines = [
        "| blank tokens | against | pairs | PLL higher | self-BLEU, the product vs the order | top-1 | repeated | "
        f"targets | `{rule}` on top runs: PLL higher, self-BLEU over the order's |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def mean(runs, keys, name):
        return statistics.fmean(runs[k][name] for k in keys)

    for regime in REGIMES:
        ours, theirs = product.get(regime, {}), other.get(regime, {})
        for o in ORDERS:
            j, k = judge(ours, order[o]), judge(theirs, order[o])
            if not j:
                continue
            keys = sorted(ours.keys() & order[o].keys())
            lines.append(
                f"| {regime} | `{o}` | {j['pairs']} | {100 * j['wins']:.0f}% | "
                f"{mean(ours, keys, 'self_bleu'):.1f} vs {mean(order[o], keys, 'self_bleu'):.1f} | "
                f"{mean(ours, keys, 'top1'):.3f} vs {mean(order[o], keys, 'top1'):.3f} | "
                f"{100 * mean(ours, keys, 'repeated'):.0f}% vs {100 * mean(order[o], keys, 'repeated'):.0f}% | "
                f"{'met' if j['met'] else '**missed**'} | {100 * k['wins']:.0f}%, {k['self_bleu']:+.1f} |"
            )
    return lines


def check(rule: str) -> None:
    lines = [
        "The product on the check half (`python -m scripts.keep_rule check`), 3 seeds, against each order under "
        "the same target at equal sequences; the targets: PLL higher on >= 60% of non-tied pairs, self-BLEU "
        "within [order - 3, order + 2], top-1 >= order - 0.02, repeats <= order + 2 points. The last column: the "
        "rule the tuning half chose by these targets, on top runs.",
        "",
        *detail("check", rule),
    ]
    (OUT / "check.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def packets(
    against: str,
    seed: int,
    out: Path,
    half: str = "check",
    rule: str | None = None,
    runs: str = "one-run",
    per_regime: int | None = None,
) -> None:
    """The half's kept fives (seed ``seed``; as captured, or ``rule``'s replay on ``runs``) against ``against``'s,
    for ``scripts.reader_blind``'s readers."""
    import random

    from scripts.reader_blind import INSTRUCTIONS

    ours = {r["id"]: r for r in read(half, runs) if r["seed"] == seed}
    if against == "product":  # the product, as captured
        theirs = {
            r["id"]: {"texts": [fill(r["template"], f) for f in r["kept"]]}
            for r in read(half, "one-run")
            if r["seed"] == seed
        }
    else:
        theirs = {
            r["id"]: r
            for r in map(json.loads, (READER / "runs.jsonl").read_text().splitlines())
            if r["phase"] == half and r["seed"] == seed and r["row"] == f"{against}+target=repeat-masked"
        }
    rng, items, keys, same = random.Random(f"{against}-{seed}-{half}"), {}, {}, 0
    ids = sorted(ours.keys() & theirs.keys())
    if per_regime is not None:  # the first of each regime, in a seeded order
        random.Random(half).shuffle(ids)
        ids = sorted(t for regime in REGIMES for t in [t for t in ids if ours[t]["regime"] == regime][:per_regime])
    for tid in ids:
        run = ours[tid]
        fills = run["kept"] if rule is None else replay(run, rules()[rule])[0]
        a, b = [fill(run["template"], f) for f in fills], theirs[tid]["texts"]
        if set(a) == set(b):  # nothing to choose between: left out, counted
            same += 1
            continue
        first = rng.random() < 0.5
        name = f"item-{len(items) + 1:03d}"
        items[name] = {"template": run["template"], "A": a if first else b, "B": b if first else a}
        keys[name] = {"id": tid, "regime": run["regime"], "A": "auto" if first else against}
    out.mkdir(parents=True, exist_ok=True)
    (out / "packet.json").write_text(json.dumps({"instructions": INSTRUCTIONS, "items": items}, indent=1) + "\n")
    (out / "key.json").write_text(json.dumps(keys, indent=1) + "\n")
    (out / "same.txt").write_text(f"{same} templates left out: both sides kept the same fillings\n")
    print(f"{len(items)} items in {out / 'packet.json'}; {same} the same on both sides, left out")


def tally() -> None:
    """Every ``OUT/readers/*/`` folder's verdicts unblinded (``key.json``: which side is ``auto``, the side the
    folder names first): per regime, the non-tied templates where the readers (pooled) preferred it, ties, and the
    sentences they would keep of each side; into ``OUT/readers/tally.md``."""
    folders = sorted(p for p in (OUT / "readers").iterdir() if p.is_dir())
    lines = [
        "Blind readers, pooled (`python -m scripts.keep_rule tally`). A cell: templates where the readers "
        "preferred the side the folder names first, of the non-tied ones (share); ties; sentences kept, that side "
        "vs the other. Two readers a folder; seed 0.",
        "",
        *head("comparison"),
    ]
    cells: dict = {}
    for folder in folders:
        keys = json.loads((folder / "key.json").read_text())
        for path in sorted(folder.glob("verdicts-*.json")):
            for item, v in json.loads(path.read_text()).items():
                won, kept = unblind(v, keys[item]["A"] == "auto")
                for regime in (keys[item]["regime"], "all"):
                    c = cells.setdefault((regime, folder.name), {"ours": 0, "theirs": 0, "tie": 0, "kept": [0, 0]})
                    c[won] += 1
                    c["kept"] = [c["kept"][0] + kept[0], c["kept"][1] + kept[1]]
    for folder in folders:
        row = []
        for regime in (*REGIMES, "all"):
            c = cells.get((regime, folder.name))
            decided = 0 if c is None else c["ours"] + c["theirs"]
            row.append(
                "-"
                if c is None
                else f"{c['ours']} of {decided}"
                + (f" ({100 * c['ours'] / decided:.0f}%)" if decided else "")
                + f", {c['tie']} ties; kept {c['kept'][0]} vs {c['kept'][1]}"
            )
        lines.append(f"| `{folder.name}` | " + " | ".join(row) + " |")
    (OUT / "readers" / "tally.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("capture", "tune", "check", "packets", "tally"))
    parser.add_argument("--half", default="tune")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--against", choices=(*ORDERS, "product"), default="random-order")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--runs", choices=("one-run", "top"), default="one-run")
    parser.add_argument("--blanks", default="2-16")
    parser.add_argument("--per-regime", type=int, help="packets: at most this many templates a regime")
    parser.add_argument("--rule", help="packets: a rule of the grid replayed (default: the captured five)")
    args = parser.parse_args()
    if args.phase == "capture":
        low, high = map(int, args.blanks.split("-"))
        capture(args.half, list(map(int, args.seeds.split(","))), args.shard, args.runs, range(low, high + 1))
    elif args.phase == "tune":
        tune()
    elif args.phase == "tally":
        tally()
    elif args.phase == "check":
        check(args.rule or CHOSEN)
    else:
        packets(args.against, args.seed, args.out, args.half, args.rule, args.runs, args.per_regime)
    return 0


if __name__ == "__main__":
    sys.exit(main())
