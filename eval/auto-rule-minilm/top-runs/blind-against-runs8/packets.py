"""Blind packets of the product's fives at 11-16 blank tokens with the first round in ``top`` runs against runs of 8
(the constant it replaces), check half, one packet a seed (NOTES.md, "Top runs").

    PYTHONPATH=. python eval/auto-rule-minilm/top-runs/blind-against-runs8/packets.py
    python -m scripts.reader_blind tally --row top-runs --against runs-of-8 --out .../seedS
"""

import json

import scripts.reader_blind as blind
from scripts.harness import ROOT

HERE = ROOT / "eval" / "auto-rule-minilm" / "top-runs" / "blind-against-runs8"
ROWS = {
    "top-runs": ROOT / "eval" / "auto-rule-minilm" / "top-runs" / "check.jsonl",
    "runs-of-8": ROOT / "eval" / "auto-rule-minilm" / "runs8-11-16" / "check.jsonl",
}


def runs(half: str, seed: int, path=None) -> dict:
    return {
        (r["id"], row): {**r, "row": row}
        for row, file in ROWS.items()
        for r in map(json.loads, file.read_text().splitlines())
        if r["phase"] == half and r["seed"] == seed
    }


blind.runs = runs
for seed in (0, 1, 2):
    blind.packets("top-runs", "runs-of-8", "check", seed, HERE / f"seed{seed}")
