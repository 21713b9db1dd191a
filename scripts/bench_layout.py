"""Wall per encoder sequence of the same ``Infiller.sample`` runs from two trees: the package as it was before a
refactor (a worktree of the commit ``--before-commit``; first the move into subpackages) and this checkout.

    git worktree add /tmp/before 2a3497d
    python -m scripts.bench_layout [--before /tmp/before] [--rounds 8] [--templates 2] [--out eval/layout/layout.md]
        [--title "Layout of the subpackages"]

Each tree runs in its own subprocess whose working directory and ``PYTHONPATH`` are that tree (so its
``infill`` shadows the installed one), the model loaded once and warmed up; each round runs every case once in
each, the trees' order alternating between rounds. A case is a calibration template (corpora/calibration/tune.jsonl) on the dev MLM, with its token blanks
as written (the batched kernel, a named sampler and the default ``auto``) and as ``[MASK*?]`` word blanks (the
span sampler). The ratio of this tree's
wall per encoder sequence to the before tree's is reported per round, as the median with its spread: the
machine is shared, so only the interleaved ratio means anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from scripts.harness import DEV_MODEL, ROOT, commit, cpu_model, median_range

TUNE = ROOT / "corpora" / "calibration" / "tune.jsonl"
FIXED = {"sampler": "dmala", "num_samples": 8, "steps": 10, "top": 5}
SPAN = {"num_samples": 4, "steps": 5, "top": 5}
AUTO = {"top": 5}
WORKER = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
import infill
from infill import Infiller
infiller = Infiller(sys.argv[1])
print(json.dumps(infill.__file__), flush=True)
for line in sys.stdin:
    out = []
    for case in json.loads(line):
        start = time.perf_counter()
        result = infiller.sample(case["template"], seed=0, **case["options"])
        out.append({"wall": time.perf_counter() - start, "sequences": result.diagnostics.encoder_sequences,
                    "texts": result.texts})
    print(json.dumps(out), flush=True)
"""


def cases(templates: int) -> list[dict]:
    lines = [json.loads(line) for line in TUNE.read_text().splitlines() if line.strip()][:templates]
    return (
        [{"template": t["template"], "options": FIXED} for t in lines]
        + [{"template": t["template"], "options": AUTO} for t in lines]
        + [{"template": t["template"].replace("[MASK]", "[MASK*?]"), "options": SPAN} for t in lines]
    )


def worker(tree: Path, model: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(model)],
        cwd=tree,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    where = json.loads(process.stdout.readline())
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree}: imported infill from {where}")
    return process


def run(process: subprocess.Popen, work: list[dict]) -> list[dict]:
    process.stdin.write(json.dumps(work) + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=Path("/tmp/before"))
    parser.add_argument("--before-commit", help="what to call the before tree (default: its commit)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--templates", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "layout" / "layout.md")
    parser.add_argument("--title", default="Layout of the subpackages")
    parser.add_argument("--model", type=Path, default=DEV_MODEL, help="a masked-LM checkpoint (default the dev MLM)")
    args = parser.parse_args()
    work = cases(args.templates)
    workers = {"before": worker(args.before, args.model), "after": worker(ROOT, args.model)}
    for process in workers.values():
        run(process, work)  # warm-up
    rows, ratios = [], []
    for r in range(args.rounds):
        order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
        per = {name: run(workers[name], work) for name in order}
        if [c["texts"] for c in per["before"]] != [c["texts"] for c in per["after"]]:
            raise SystemExit(f"round {r}: the trees' fillings differ")
        wall = {name: sum(c["wall"] for c in per[name]) / sum(c["sequences"] for c in per[name]) for name in per}
        ratios.append(wall["after"] / wall["before"])
        rows.append(
            f"| {r} | {' -> '.join(order)} | {1e3 * wall['before']:.3f} | {1e3 * wall['after']:.3f} "
            f"| {ratios[-1]:.3f} |"
        )
        print(rows[-1], flush=True)
    for process in workers.values():
        process.stdin.close()
        process.wait()
    ratio = median_range(ratios)
    sequences = sum(c["sequences"] for c in per["after"])
    report = "\n".join(
        [
            f"# {args.title}: wall per encoder sequence, before and after",
            "",
            f"`python -m scripts.bench_layout --rounds {args.rounds} --templates {args.templates}`: the first "
            f"{args.templates} template(s) of corpora/calibration/tune.jsonl on `{args.model.name}` (CPU, one thread), "
            f"each with its token blanks ({FIXED}; the default, {AUTO}) and as `[MASK*?]` word blanks ({SPAN}), seed 0; "
            f"{sequences} encoder "
            f"sequences per tree and round, after a warm-up round. Before: {args.before_commit or commit(args.before)}; "
            f"after: this checkout ({commit()}). The fillings are the same in every round. The machine ({cpu_model()}, "
            f"{os.cpu_count()} cores) was shared with other work: the ratio, interleaved, is the number to read.",
            "",
            "| round | order | before ms/seq | after ms/seq | after / before |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"**after / before: median {ratio['median']:.3f}** (min {ratio['min']:.3f}, max {ratio['max']:.3f}, "
            f"{args.rounds} interleaved rounds; target within 5%).",
            "",
        ]
    )
    args.out.write_text(report)
    print(f"median {ratio['median']:.3f} [{ratio['min']:.3f}, {ratio['max']:.3f}] -> {args.out}")


if __name__ == "__main__":
    main()
