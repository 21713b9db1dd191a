"""Chains in bfloat16 against float32 on this CPU, interleaved: ``python eval/bf16-cpu/run.py`` from the repository
root (``PYTHONPATH=.``). The named chains (``gibbs``, 25 chains, ``--top 5``) on templates of 3 blank tokens of the
calibration tuning half, seeds 0-1, one torch thread; the sides in turn, the first side alternating."""

import json
import statistics
import time

import torch

from infill import Infiller
from scripts import reader_study as rs
from scripts.harness import DEV_MODEL

torch.set_num_threads(1)
sides = {"float32": Infiller(str(DEV_MODEL)), "bfloat16": Infiller(str(DEV_MODEL), dtype="bfloat16")}
tasks = [t for t in rs.tasks_of("tune", None) if len(t["removed"]) == 3][:6]
rows = []
for i, task in enumerate(tasks):
    for seed in (0, 1):
        row = {"id": task["id"], "seed": seed}
        for name in sorted(sides, reverse=bool((i + seed) % 2)):
            start = time.perf_counter()
            result = sides[name].sample(task["template"], "gibbs", top=5, seed=seed, budget=300)
            row[name] = {"wall": time.perf_counter() - start, "fills": [list(s.fills) for s in result.samples]}
        rows.append(row)
        print(json.dumps(row), flush=True)
ratios = sorted(r["bfloat16"]["wall"] / r["float32"]["wall"] for r in rows)
same = sum(sorted(map(tuple, r["bfloat16"]["fills"])) == sorted(map(tuple, r["float32"]["fills"])) for r in rows)
median = statistics.median(ratios)
print(f"bfloat16 / float32 wall: median {median:.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f}, {len(rows)})")
print(f"same top-5 set: {same} of {len(rows)}")
