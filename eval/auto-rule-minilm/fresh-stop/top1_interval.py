"""The top-1 difference between the product's kept five and an order's on the check half, with a 95% bootstrap
interval over templates (4,000 resamples, seed 0): the product's rows are ``check.jsonl`` here, the order's
``eval/reader-minilm/runs.jsonl``.

    PYTHONPATH=. python eval/auto-rule-minilm/fresh-stop/top1_interval.py
"""

import json
import random
import statistics
from pathlib import Path

HERE = Path(__file__).parent
CASES = (("6-7", "random-order"), ("6-7", "confident-first"), ("4", "confident-first"))


def top1(run: dict) -> float:
    """The share of blank tokens where the first kept filling is the removed word."""
    return statistics.fmean(a.lower() == b.lower() for a, b in zip(run["fills"][0], run["removed"]))


def main() -> None:
    runs = [json.loads(line) for line in open(HERE.parents[1] / "reader-minilm" / "runs.jsonl")]
    mine = [json.loads(line) for line in open(HERE / "check.jsonl")]
    for regime, order in CASES:
        theirs = {
            (r["id"], r["seed"]): r
            for r in runs
            if r["phase"] == "check" and r["regime"] == regime and r["row"] == f"{order}+target=repeat-masked"
        }
        by_template: dict = {}
        for r in mine:
            key = (r["id"], r["seed"])
            if r["regime"] == regime and key in theirs and r["fills"] and theirs[key]["fills"]:
                by_template.setdefault(r["id"], []).append(top1(r) - top1(theirs[key]))
        ids, rng = list(by_template), random.Random(0)
        boots = sorted(
            statistics.fmean([x for i in (rng.choice(ids) for _ in ids) for x in by_template[i]]) for _ in range(4000)
        )
        mean = statistics.fmean(x for xs in by_template.values() for x in xs)
        pairs = sum(map(len, by_template.values()))
        print(f"{regime} vs {order}: {pairs} pairs, top-1 {mean:+.3f}, 95% {boots[100]:+.3f} to {boots[3899]:+.3f}")


if __name__ == "__main__":
    main()
