"""Runs of 4 against runs of 8 (the product) at 11-16 blank tokens on the tuning half, kept as the product keeps
them (share 1, every candidate), against each one-pass order (NOTES.md).

    PYTHONPATH=. python eval/auto-rule-minilm/runs4-11-16/compare.py
"""

import json

from scripts.auto_rule import judge, orders, replay

CAPTURES = {
    "smc-runs8-product-rounds": "eval/auto-rule-minilm/runs8-11-16/captures.jsonl",
    "smc-runs4": "eval/auto-rule-minilm/runs4-11-16/captures.jsonl",
}


def main() -> None:
    caps = {}
    for kind, path in CAPTURES.items():
        rows = map(json.loads, open(path))
        caps[kind] = {
            (r["id"], r["seed"]): r
            for r in rows
            if r["kind"] == kind and r["phase"] == "tune" and r["regime"] == "11-16"
        }
    common = set.intersection(*(set(c) for c in caps.values()))
    print(len(common), "pairs")
    for order in ("confident-first", "left-to-right", "random-order"):
        theirs = orders("tune", f"{order}+target=repeat-masked")
        for kind, runs in caps.items():
            j = judge({k: replay(runs[k], share=1.0, pool=100) for k in common}, theirs)
            print(
                order,
                kind,
                j["pairs"],
                f"{100 * j['wins']:.0f}% {j['self_bleu']:+.1f} repeated {100 * j['repeated']:+.0f}",
                f"top-1 {j['top1']:+.3f} met {j['met']}",
            )


if __name__ == "__main__":
    main()
