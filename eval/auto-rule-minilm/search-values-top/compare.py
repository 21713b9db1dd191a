"""The search against the particles in a file of ``run.py``: ``python compare.py FILE`` from the repository root
(``PYTHONPATH=.``), pairs by template and seed."""

import json
import statistics
import sys

from scripts.reader_study import metrics

SAME = 1e-4

with open(sys.argv[1]) as lines:
    rows = [json.loads(line) for line in lines]
by: dict = {}
for row in rows:
    by.setdefault(row["row"], {})[(row["id"], row["seed"])] = {**row, "seconds": 1}
keys = sorted(set(by["search"]) & set(by["particles"]))
search = {k: metrics(by["search"][k]) for k in keys}
particles = {k: metrics(by["particles"][k]) for k in keys}
higher = sum(search[k]["pll"] > particles[k]["pll"] + SAME for k in keys)
lower = sum(search[k]["pll"] < particles[k]["pll"] - SAME for k in keys)
print(f"pairs {len(keys)}: search PLL higher {higher}, lower {lower}, share {higher / max(1, higher + lower):.0%}")
for name in ("pll", "self_bleu", "top1", "top5", "repeated", "sequences"):
    ours, theirs = (statistics.fmean(m[k][name] for k in keys) for m in (search, particles))
    print(f"  {name}: search {ours:.3f}  particles {theirs:.3f}")
