"""One ``gibbs-mh`` move a particle against the product's particles at 4-7 blank tokens on the tuning half, both
kept as the product keeps them (``auto_share(d)`` of every candidate's range), against ``confident-first`` on the
(template, seed) pairs both captured (NOTES.md, "One move a particle").

    PYTHONPATH=. python eval/auto-rule-minilm/moves/compare.py
"""

import json

from infill.pipeline.config import auto_share
from scripts.auto_rule import OUT, judge, kept_by_regime, orders

KINDS = {"smc-tilt1.5": OUT / "captures.jsonl", "smc-tilt1.5-moves1": OUT / "moves" / "captures.jsonl"}


def main() -> None:
    runs = {
        kind: [
            r
            for r in map(json.loads, open(path))
            if r["phase"] == "tune" and r["kind"] == kind and 4 <= r["blanks"] <= 7
        ]
        for kind, path in KINDS.items()
    }
    common = set.intersection(*({(r["id"], r["seed"]) for r in rs} for rs in runs.values()))
    order = orders("tune")
    print("| kind | regime | pairs | PLL higher | self-BLEU vs order | repeated vs order | top-1 vs order | met |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, rs in runs.items():
        mine = [r for r in rs if (r["id"], r["seed"]) in common]
        by_regime = kept_by_regime(mine, lambda run, k=kind: (k, auto_share(run["blanks"]), None, 100))
        for regime, kept in by_regime.items():
            j = judge(kept, order)
            print(
                f"| {kind} | {regime} | {j['pairs']} | {100 * j['wins']:.0f}% | {j['self_bleu']:+.1f} | "
                f"{100 * j['repeated']:+.0f} | {j['top1']:+.3f} | {'met' if j['met'] else '-'} |"
            )


if __name__ == "__main__":
    main()
