"""The 24 default runs, bit for bit: a refactor's guard that behaviour did not change.

    python -m scripts.default_runs --out /tmp/before.json            # on the tree before the change
    python -m scripts.default_runs --check /tmp/before.json          # after it: exit 1 on any difference

Each run is a template of the calibration suite's check half (``corpora/calibration/check.jsonl``) at 1-12 blank
tokens, or a word-blank template, under ``auto`` with and without ``top`` and under named methods, on the dev MLM,
one thread, seed 0. A run is recorded as its fillings, their energies as ``float.hex`` and its encoder sequences.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scripts.harness import DEV_MODEL, ROOT, load_infiller

COUNTS = (1, 2, 3, 4, 5, 6, 8, 12)
NAMED = (
    {"sampler": "gibbs", "num_samples": 4, "steps": 4},
    {"sampler": "gwg", "num_samples": 4, "steps": 4},
    {"sampler": "left-to-right", "num_samples": 4},
    {"sampler": "smc", "top": 3},
    {"sampler": "argmax"},  # one filling on several blank tokens (--top above 1 is refused there)
    {"sampler": "product-search", "top": 3},
)
SPANS = ("the [MASK*?] sat on the mat .", "she opened the [MASK*?] and [MASK*?] inside .")


def runs(suite: Path) -> list[tuple[str, dict]]:
    """The 24 (template, options) pairs."""
    by_count = {}
    for line in suite.read_text().splitlines():
        row = json.loads(line)
        by_count.setdefault(row["template"].count("[MASK]"), row)
        if row["template"].count("[MASK]") == 2:  # one blank: the second filled with the word it removed
            head, tail = row["template"].rsplit("[MASK]", 1)
            by_count.setdefault(1, {"template": head + row["removed"][1] + tail})
    by_count = {d: row["template"] for d, row in by_count.items()}
    out = []
    for d in COUNTS:
        out += [(by_count[d], {"top": 5}), (by_count[d], {"num_samples": 5})]
    out += [(by_count[3], options) for options in NAMED]
    out += [(template, {"num_samples": 3, "steps": 3}) for template in SPANS]
    return out


def record(infiller, template: str, options: dict) -> dict:
    result = infiller.sample(template, seed=0, **options)
    return {
        "template": template,
        "options": options,
        "texts": result.texts,
        "energies": [float(s.energy).hex() for s in result.samples],
        "sequences": result.diagnostics.encoder_sequences,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    side = parser.add_mutually_exclusive_group(required=True)
    side.add_argument("--out", type=Path, help="record the runs to this JSON file")
    side.add_argument("--check", type=Path, help="compare the runs with this recording; exit 1 on a difference")
    parser.add_argument("--suite", type=Path, default=ROOT / "corpora" / "calibration" / "check.jsonl")
    parser.add_argument("--model", default=str(DEV_MODEL), help="the masked LM (default: the dev MLM)")
    parser.add_argument("--limit", type=int, default=None, help="the first N runs only (a smoke run)")
    args = parser.parse_args(argv)
    infiller = load_infiller(args.model, warm=False)
    done = [record(infiller, t, o) for t, o in runs(args.suite)[: args.limit]]
    if args.out:
        args.out.write_text(json.dumps(done, indent=1) + "\n")
        print(f"{len(done)} runs recorded to {args.out}")
        return 0
    before = json.loads(args.check.read_text())[: len(done)]
    changed = [i for i, (a, b) in enumerate(zip(before, done)) if a != b]
    for i in changed:
        print(f"run {i} ({done[i]['options']}) changed:\n  before {before[i]}\n  after  {done[i]}")
    print(f"{len(done) - len(changed)} of {len(done)} runs bit-identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
