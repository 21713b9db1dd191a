"""``auto`` with its kind forced, the product search and then the particles, at a ``top`` of choice:
``python run.py HALF BLANKS TOP OUT`` from the repository root (``PYTHONPATH=.``), every template of the half
with that many blank tokens, seeds 0-2, the reader study's budget and target."""

import json
import sys
import time

import torch

from infill import Infiller
from infill.pipeline import policy
from scripts import reader_study as rs
from scripts.harness import DEV_MODEL

torch.set_num_threads(1)
half, d, top, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
inf = Infiller(model=str(DEV_MODEL))
tasks = [t for t in rs.tasks_of(half, None) if len(t["removed"]) == d]
print(len(tasks), "templates", flush=True)
with open(out, "w") as f:
    for kind in ("search", "particles"):
        policy.searchable = (lambda *a, **k: True) if kind == "search" else (lambda *a, **k: False)
        for t in tasks:
            for seed in (0, 1, 2):
                start = time.perf_counter()
                r = inf.sample(
                    t["template"],
                    top=top,
                    seed=seed,
                    temperature=1.0,
                    budget=rs.BUDGET_PER_BLANK * d,
                    target="repeat-masked",
                )
                fills = [list(s.fills) for s in r.samples]
                texts = [rs.fill(t["template"], x) for x in fills]
                rec = {
                    "id": t["id"],
                    "seed": seed,
                    "row": kind,
                    "regime": t["regime"],
                    "removed": t["removed"],
                    "fills": fills,
                    "texts": texts,
                    "plain": rs.plain_pll(inf, t["template"], fills),
                    "sentence": [s.total for s in inf.score(texts)] if texts else [],
                    "encoder_sequences": r.diagnostics.encoder_sequences,
                    "seconds": time.perf_counter() - start,
                    "plan": r.diagnostics.sampler,
                }
                f.write(json.dumps(rec) + "\n")
                f.flush()
print("done")
