"""Self-BLEU of the kept five over an order's at 11-16 blank tokens on the check half, with a 95% bootstrap
interval over templates (4,000 resamples, seed 0): the first round in ``top`` runs (``check.jsonl`` here) and runs
of 8 (``../runs8-11-16/check.jsonl``), the orders' rows ``eval/reader-minilm/runs.jsonl``.

    PYTHONPATH=. python eval/auto-rule-minilm/top-runs/self_bleu_interval.py
"""

import json
import random
import statistics
from pathlib import Path

from infill.metrics import self_bleu

HERE = Path(__file__).parent
ROWS = {"top runs": HERE / "check.jsonl", "runs of 8": HERE.parent / "runs8-11-16" / "check.jsonl"}


def main() -> None:
    runs = [json.loads(line) for line in open(HERE.parents[1] / "reader-minilm" / "runs.jsonl")]
    for order in ("confident-first", "left-to-right", "random-order"):
        theirs = {
            (r["id"], r["seed"]): r
            for r in runs
            if r["phase"] == "check" and r["regime"] == "11-16" and r["row"] == f"{order}+target=repeat-masked"
        }
        for name, path in ROWS.items():
            by_template: dict = {}
            for r in map(json.loads, open(path)):
                key = (r["id"], r["seed"])
                if key in theirs and len(r["texts"]) > 1 and len(theirs[key]["texts"]) > 1:
                    diff = 100 * (self_bleu(r["texts"]) - self_bleu(theirs[key]["texts"]))
                    by_template.setdefault(r["id"], []).append(diff)
            ids, rng = list(by_template), random.Random(0)
            boots = sorted(
                statistics.fmean([x for i in (rng.choice(ids) for _ in ids) for x in by_template[i]])
                for _ in range(4000)
            )
            mean = statistics.fmean(x for xs in by_template.values() for x in xs)
            pairs = sum(map(len, by_template.values()))
            print(
                f"{name} vs {order}: {pairs} pairs, self-BLEU {mean:+.2f}, 95% {boots[100]:+.2f} to {boots[3899]:+.2f}"
            )


if __name__ == "__main__":
    main()
