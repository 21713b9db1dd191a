"""Chains in bfloat16 against float32 on this CPU, interleaved (``eval/bf16-cpu``).

    python -m scripts.bf16_cpu [--model PATH] [--templates 6] [--seeds 2] [--budget 300] [--out FILE]

The named chains (``gibbs``, 25 chains, ``--top 5``) on templates of 3 blank tokens of the calibration tuning half,
seeds 0 to ``--seeds`` - 1, one torch thread; the sides in turn, the first side alternating. Prints one JSON line a
(template, seed) (also appended to ``--out`` when given), then the median bfloat16 / float32 wall and how many runs
kept the same top-5 set.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from infill import Infiller
from scripts import reader_study as rs
from scripts.harness import DEV_MODEL


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--templates", type=int, default=6, help="templates of 3 blank tokens (tuning half)")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--budget", type=int, default=300, help="encoder sequences a run")
    parser.add_argument("--out", type=Path, help="append the rows here (eval/bf16-cpu/runs.jsonl)")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    sides = {"float32": Infiller(args.model), "bfloat16": Infiller(args.model, dtype="bfloat16")}
    tasks = [t for t in rs.tasks_of("tune", None) if len(t["removed"]) == 3][: args.templates]
    rows = []
    for i, task in enumerate(tasks):
        for seed in range(args.seeds):
            row = {"id": task["id"], "seed": seed}
            for name in sorted(sides, reverse=bool((i + seed) % 2)):
                start = time.perf_counter()
                result = sides[name].sample(task["template"], "gibbs", top=5, seed=seed, budget=args.budget)
                row[name] = {"wall": time.perf_counter() - start, "fills": [list(s.fills) for s in result.samples]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(row) + "\n")
    ratios = sorted(r["bfloat16"]["wall"] / r["float32"]["wall"] for r in rows)
    same = sum(sorted(map(tuple, r["bfloat16"]["fills"])) == sorted(map(tuple, r["float32"]["fills"])) for r in rows)
    median = statistics.median(ratios)
    print(f"bfloat16 / float32 wall: median {median:.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f}, {len(rows)})")
    print(f"same top-5 set: {same} of {len(rows)}")


if __name__ == "__main__":
    main()
