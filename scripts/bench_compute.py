"""Encoder sequences and wall time of the default run: the cache of conditionals, pass sizes, bfloat16.

    git worktree add /tmp/infill-before 06f5af7     # the tree before the cache of conditionals
    python -m scripts.bench_compute --before /tmp/infill-before --out eval/compute-minilm [--seeds 0,1]

On the calibration templates with 2-4 one-token blanks (``corpora/calibration/tune.jsonl``, or ``--suite``),
for each template and seed, interleaved in one process where the two sides share the machine:

- ``reference``: the default run (``infill sample --top 5``) of the tree before the cache, in a subprocess,
  recorded once to ``reference.json`` (re-used when present); ``cached``: the same run now. Their encoder
  sequences, and whether the top 5 fillings and energies are identical (energies to 1e-5);
- ``per_sequence``: the run's wall time over that of a bare ``model.base_model`` forward of the batches the
  run sent through the encoder (recorded by a hook), timed right after it;
- ``passes``: the run's wall with at most N sequences per pass without gradient, for each N of ``--passes``;
- ``bfloat16``: the run with ``dtype="bfloat16"`` against float32 (on ``--bf16-templates`` templates):
  wall ratio, same top-5 set, energies of the fillings both report.
Everything runs on one thread; ratios are reported as medians with their range.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from scripts.harness import DEV_MODEL, ROOT, commit, cpu_model

RUN = """
import json, sys, time, torch
torch.set_num_threads(1)
import infill
infiller = infill.Infiller(sys.argv[1])
out = []
for line in sys.stdin:
    template, seed = json.loads(line)
    start = time.perf_counter()
    result = infiller.sample(template, top=5, seed=seed)
    out.append({"texts": result.texts, "energies": [s.energy for s in result.samples],
                "sequences": result.diagnostics.encoder_sequences, "seconds": time.perf_counter() - start})
print(infill.__file__)
print(json.dumps(out))
"""


def spread(values: list[float]) -> dict:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "n": len(values),
    }


def reference(tree: Path, runs: list[tuple[str, int]], path: Path, model: Path) -> list[dict]:
    """The default runs of the tree before the cache, recorded to ``path`` once."""
    if path.exists():
        return json.loads(path.read_text())
    stdin = "\n".join(json.dumps(r) for r in runs)
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(model)],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env={"PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    source, recorded = done.stdout.strip().splitlines()[-2:]
    if not Path(source).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the reference imported infill from {source}, not from {tree}")
    recorded = json.loads(recorded)
    path.write_text(json.dumps(recorded, indent=1))
    return recorded


class Batches:
    """Records the input shapes of every encoder pass of a run, and times bare forwards of them."""

    def __init__(self, model):
        self.model, self.shapes = model, []
        model.base_model.register_forward_pre_hook(self._record, with_kwargs=True)

    def _record(self, module, args, kwargs):
        ids = kwargs.get("input_ids", kwargs.get("inputs_embeds"))
        self.shapes.append(tuple(ids.shape[:2]))

    @torch.inference_mode()
    def bare_seconds(self, shapes) -> float:
        start = time.perf_counter()
        for n, length in shapes:
            self.model.base_model(input_ids=torch.randint(1000, 20000, (n, length)))
        return time.perf_counter() - start


def timed(infiller, template, seed, **options):
    start = time.perf_counter()
    result = infiller.sample(template, top=5, seed=seed, **options)
    return result, time.perf_counter() - start


def markdown(summary: dict) -> str:
    """The report's summary as Markdown."""
    s, machine = summary, summary["machine"]
    lines = [
        "# The cache of conditionals, pass sizes and bfloat16 (`python -m scripts.bench_compute`)",
        "",
        f"Dev MLM, the default run (`infill sample --top 5`) on {s['runs']} runs (the 2-4-blank templates of "
        f"`corpora/calibration/tune.jsonl` x 2 seeds), one thread, torch {machine['torch']}, native bfloat16: "
        f"{machine['native_bfloat16']}. Ratios: median (min-max) over runs.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| encoder sequences, now / before the cache (all runs) | {s['sequences_ratio']} | <= 0.6 |",
        f"| same, per run | {s['sequences_ratio_per_run']['median']} ({s['sequences_ratio_per_run']['min']}-"
        f"{s['sequences_ratio_per_run']['max']}) | |",
        *[f"| same, {d} blanks | {r} | |" for d, r in s["sequences_ratio_by_blanks"].items()],
        f"| runs with identical top 5 fillings and energies (1e-5) | {s['identical_top5']} of {s['runs']} | all |",
        f"| wall, now / before (the reference recorded before, not interleaved) | {_cell(s['wall_ratio_to_before'])} | |",
        f"| wall / a bare encoder forward of the run's own batches | {_cell(s['wall_over_bare_forward'])} | <= 1.1 |",
        *[
            f"| wall with passes of {n} sequences / of the default | {_cell(r)} | |"
            for n, r in s["pass_sequences_wall_over_default"].items()
        ],
        f"| bfloat16 chains: wall / float32 | {_cell(s['bfloat16']['wall_ratio'])} | <= 0.55 |",
        f"| bfloat16: same top-5 set | {s['bfloat16']['same_top5_set']} of {s['bfloat16']['templates']} | >= 90% |",
        f"| bfloat16: largest energy difference on a filling both report | {s['bfloat16']['max_energy_difference']:.2g}"
        " | <= 1e-3 |",
        "",
    ]
    return "\n".join(lines)


def _cell(r: dict) -> str:
    return f"{r['median']} ({r['min']}-{r['max']})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout of the tree before the cache")
    parser.add_argument("--suite", type=Path, default=ROOT / "corpora" / "calibration" / "tune.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "compute-minilm")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--passes", default="32,128,512")
    parser.add_argument("--bf16-templates", type=int, default=4)
    parser.add_argument("--model", type=Path, default=DEV_MODEL)
    parser.add_argument("--markdown-only", action="store_true", help="rewrite report.md from report.json")
    args = parser.parse_args(argv)
    if args.markdown_only:
        report = json.loads((args.out / "report.json").read_text())
        (args.out / "report.md").write_text(markdown(report["summary"]))
        return 0
    if args.before is None:
        parser.error("--before is required")
    torch.set_num_threads(1)
    import infill
    from infill.energies import masked_lm

    args.out.mkdir(parents=True, exist_ok=True)
    tasks = [json.loads(line) for line in args.suite.read_text().splitlines()]
    tasks = [t for t in tasks if t["regime"] == "2-4"]
    runs = [(t["template"], int(s)) for t in tasks for s in args.seeds.split(",")]
    before = reference(args.before, runs, args.out / "reference.json", args.model)
    infiller = infill.Infiller(str(args.model))
    batches = Batches(infiller.model)
    rows, passes = [], {int(p): [] for p in args.passes.split(",")}
    default_pass = masked_lm.PASS_SEQUENCES["cpu"]
    for (template, seed), old in zip(runs, before):
        batches.shapes.clear()
        result, seconds = timed(infiller, template, seed)
        bare = batches.bare_seconds(list(batches.shapes))
        same = result.texts == old["texts"] and all(
            abs(a - b) <= 1e-5 for a, b in zip([s.energy for s in result.samples], old["energies"])
        )
        rows.append(
            {
                "template": template,
                "seed": seed,
                "blanks": template.count("[MASK]"),
                "sequences_before": old["sequences"],
                "sequences": result.diagnostics.encoder_sequences,
                "cache_hits": result.diagnostics.cache_hits,
                "identical_top5": same,
                "seconds_before": old["seconds"],
                "seconds": seconds,
                "bare_forward_seconds": bare,
            }
        )
        for size in passes:
            masked_lm.PASS_SEQUENCES["cpu"] = size
            passes[size].append(timed(infiller, template, seed)[1])
        masked_lm.PASS_SEQUENCES["cpu"] = default_pass
        print(json.dumps(rows[-1]), flush=True)
    half = infill.Infiller(str(args.model), dtype="bfloat16")
    bf16 = []
    for template, seed in runs[: args.bf16_templates]:
        full, full_seconds = timed(infiller, template, seed)
        low, low_seconds = timed(half, template, seed)
        common = {s.text: s.energy for s in full.samples}
        bf16.append(
            {
                "template": template,
                "seed": seed,
                "wall_ratio": low_seconds / full_seconds,
                "same_top5_set": set(full.texts) == set(low.texts),
                "max_energy_difference": max(
                    (abs(common[s.text] - s.energy) for s in low.samples if s.text in common), default=float("nan")
                ),
            }
        )
    summary = {
        "machine": {
            "cpu": cpu_model(),
            "torch": torch.__version__,
            "threads": 1,
            "commit": commit(),
            "native_bfloat16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
        },
        "runs": len(rows),
        "sequences_ratio": round(sum(r["sequences"] for r in rows) / sum(r["sequences_before"] for r in rows), 3),
        "sequences_ratio_per_run": spread([r["sequences"] / r["sequences_before"] for r in rows]),
        "sequences_ratio_by_blanks": {
            d: round(
                sum(r["sequences"] for r in rows if r["blanks"] == d)
                / sum(r["sequences_before"] for r in rows if r["blanks"] == d),
                3,
            )
            for d in sorted({r["blanks"] for r in rows})
        },
        "identical_top5": sum(r["identical_top5"] for r in rows),
        "wall_ratio_to_before": spread([r["seconds"] / r["seconds_before"] for r in rows]),
        "wall_over_bare_forward": spread([r["seconds"] / r["bare_forward_seconds"] for r in rows]),
        "pass_sequences_wall_over_default": {
            size: spread([a / r["seconds"] for a, r in zip(times, rows)]) for size, times in passes.items()
        },
        "bfloat16": {
            "wall_ratio": spread([b["wall_ratio"] for b in bf16]),
            "same_top5_set": sum(b["same_top5_set"] for b in bf16),
            "templates": len(bf16),
            "max_energy_difference": max(b["max_energy_difference"] for b in bf16),
        },
    }
    (args.out / "report.json").write_text(json.dumps({"summary": summary, "runs": rows, "bfloat16": bf16}, indent=1))
    (args.out / "report.md").write_text(markdown(summary))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
