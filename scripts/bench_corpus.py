"""A corpus at the speed of the bare model? Templates per second of ``infill`` against ``pipeline("fill-mask")``.

    python -m scripts.bench_corpus [--lines 2000] [--chunk 250] [--default-lines 100]
                                   [--processes 2]
                                   [--process-lines N] [--check-lines 200] [--model DIR] [--out eval/corpus-minilm]
                                   [--only-processes]

The lines come from ``corpora/bert-gen/wiki103.5k.txt``, in file order: sentences of 8 to 40 words, the middle
word masked (one-blank lines), or the words at a third and two thirds (two-blank lines), a masked word being all
letters. One torch thread, the dev MLM, in one process:

- **one blank, top-1 word**: ``Infiller.sample_many(chunk, sampler=METHOD, top=1)`` for ``argmax`` and
  ``independent``, against ``pipeline("fill-mask", top_k=1)`` at each batch size of :data:`BATCH_SIZES`, the
  two sides run chunk by chunk in turn (A B, then B A), so that the load of a shared machine falls on both alike:
  templates per second over all chunks, and the ratio per chunk (median, range) against fill-mask at its best
  batch size;
- **two blanks**: ``confident-first`` (``top=5``) and the default (``auto``) on the first ``--default-lines``
  lines, each alone, with their encoder sequences per template, and the bare model's sequences per second on those
  lines' sequences (:func:`bare_rate`): the ceiling of a method at its sequences per template;
- **one process against N** (``--processes``): ``infill sample -f FILE --out OUT --sampler argmax --top 1`` on the
  first ``--process-lines`` one-blank lines (all of them by default), alone and under ``torchrun --nproc-per-node
  N``, in turn, OUT compared; and each on the first line alone, its start-up (imports, model load, the launcher
  and the process group), which a long corpus pays once: the speed-up of the whole runs, and of their walls less
  the start-ups (the rate a long corpus runs at);
- **the packed first pass is exact**: the first ``--check-lines`` one-blank lines' all-masked logits, each
  template alone against all the lines packed (:func:`infill.lm.packed.all_masked_logits`), bit for bit.

Writes ``OUT/report.json`` and ``OUT/report.md`` with the CPU model, torch's version and the commit;
``--only-processes`` re-measures the last part alone into the report there (with its own commit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from scripts.harness import CORPORA, DEV_MODEL, ROOT, commit, cpu_model

CORPUS = CORPORA / "wiki103.5k.txt"
BATCH_SIZES = (1, 8, 32, 64, 128)
ONE_PASS = ("argmax", "independent")


def lines(n: int, blanks: int, corpus: Path = CORPUS, fewest: int = 8) -> list[str]:
    """The first ``n`` templates of ``blanks`` masked words from ``corpus``, of ``fewest`` to 40 words (module
    docstring)."""
    out = []
    for sentence in corpus.read_text(encoding="utf-8").splitlines():
        words = sentence.split()
        if not fewest <= len(words) <= 40:
            continue
        at = [len(words) // 2] if blanks == 1 else [len(words) // 3, 2 * len(words) // 3]
        if all(words[i].isalpha() for i in at):
            out.append(" ".join("[MASK]" if i in at else w for i, w in enumerate(words)))
        if len(out) == n:
            break
    return out


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def one_blank(infiller, pipe, templates: list[str], chunk: int) -> dict:
    """Seconds per chunk of each side, run in turn (module docstring)."""
    masked = [t.replace("[MASK]", pipe.tokenizer.mask_token) for t in templates]
    sides = {
        **{m: (lambda c, m=m: infiller.sample_many(c, sampler=m, top=1, seed=0)) for m in ONE_PASS},
        **{f"fill-mask/{b}": (lambda c, b=b: pipe(c, top_k=1, batch_size=b)) for b in BATCH_SIZES},
    }
    seconds: dict = {name: [] for name in sides}
    for k, start in enumerate(range(0, len(templates), chunk)):
        order = list(sides) if k % 2 == 0 else list(reversed(sides))
        for name in order:
            part = (masked if name.startswith("fill-mask") else templates)[start : start + chunk]
            seconds[name].append(timed(lambda: sides[name](part)))
    return seconds


def all_masked(infiller, templates: list[str]):
    """``templates``' all-masked first pass as :func:`infill.lm.packed.all_masked_logits` takes it: ``pass_(pairs,
    rows)`` and the ``(input_ids, blank_positions)`` pairs."""
    from infill.lm import packed
    from infill.lm.models import category_head
    from infill.pipeline.config import RunConfig

    prepared = infiller.prepare(templates, RunConfig.create(method="argmax", top=1))
    pairs = [(t.input_ids, t.blank_positions) for t in prepared.templates]
    head, mask = category_head(infiller.model, prepared.categories), infiller.tokenizer.mask_token_id
    return (lambda some, rows: packed.all_masked_logits(infiller.model, head, some, mask, rows)), pairs


def exact_first_passes(infiller, templates: list[str]) -> dict:
    """How many of ``templates`` get the same all-masked logits, bit for bit, alone and packed with the others."""
    pass_, pairs = all_masked(infiller, templates)
    together = pass_(pairs, 64)
    same = sum(torch.equal(pass_([pair], 64)[0], logits) for pair, logits in zip(pairs, together))
    return {"lines": len(pairs), "lengths": len({len(ids) for ids, _ in pairs}), "bitwise_equal": same}


def bare_rate(infiller, templates: list[str], sequences: int = 2000) -> float:
    """Sequences per second of the bare model on ``templates``' all-masked sequences, ``sequences`` of them in
    passes as large as the energies' (one length a pass, the head only at the blanks): what a method that spends
    ``n`` sequences a template can reach at most is this over ``n``."""
    from infill.pipeline import engine

    pass_, pairs = all_masked(infiller, templates)
    pairs = (pairs * (sequences // len(pairs) + 1))[:sequences]
    start = time.perf_counter()
    pass_(pairs, engine.pass_rows(infiller))
    return len(pairs) / (time.perf_counter() - start)


def sample_command(model, source: Path, out: Path, processes: int = 1) -> list[str]:
    """``infill sample -f SOURCE --out OUT --sampler argmax --top 1`` on ``processes`` (``torchrun`` above one)."""
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"] if processes > 1 else []
    files = ["-f", str(source), "--out", str(out), "--model", str(model)]
    return [sys.executable, *launcher, "-m", "infill", "sample", *files, "--sampler", "argmax", "--top", "1", "-q"]


def out_run(templates: list[str], processes: int, out: Path, model: str) -> float:
    """Wall seconds of ``infill sample -f FILE --out OUT --sampler argmax --top 1`` on ``processes``."""
    source = out.with_suffix(".txt")
    source.write_text("\n".join(templates) + "\n")
    out.unlink(missing_ok=True)
    command = sample_command(model, source, out, processes)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--default-lines", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--process-lines", type=int, help="one-blank lines the processes fill (default: --lines)")
    parser.add_argument("--check-lines", type=int, default=200)
    parser.add_argument(
        "--only-processes", action="store_true", help="re-measure one process against N alone, into OUT's report"
    )
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--out", default=str(ROOT / "eval" / "corpus-minilm"))
    args = parser.parse_args()
    if args.processes < 2:
        parser.error("--processes compares one process with N >= 2")
    from transformers import pipeline

    from infill import Infiller

    out = Path(args.out)
    if args.only_processes:
        report = json.loads((out / "report.json").read_text())
        report["processes"] = processes(lines(args.process_lines or args.lines, 1), args.processes, args.model)
        return write(report, out)
    torch.set_num_threads(1)
    infiller, pipe = Infiller(args.model), pipeline("fill-mask", model=args.model, device="cpu")
    one, two = lines(args.lines, 1), lines(args.default_lines, 2)
    seconds = one_blank(infiller, pipe, one, args.chunk)
    rate = {name: len(one) / sum(s) for name, s in seconds.items()}
    best = max((name for name in rate if name.startswith("fill-mask")), key=rate.get)
    ratios = {m: [a / b for a, b in zip(seconds[m], seconds[best])] for m in ONE_PASS}
    two_blank, sequences = {}, {}
    for name, kw in (("confident-first", {"sampler": "confident-first", "top": 5}), ("auto", {})):
        start = time.perf_counter()
        results = infiller.sample_many(two, seed=0, **kw)
        two_blank[name] = len(two) / (time.perf_counter() - start)
        sequences[name] = statistics.fmean(r.diagnostics.encoder_sequences for r in results)
    bare = bare_rate(infiller, two)
    report = {
        "cpu": cpu_model(),
        "torch": torch.__version__,
        "commit": commit(),
        "threads": 1,
        "lines": len(one),
        "chunk": args.chunk,
        "one_blank_per_second": rate,
        "fill_mask_best": best,
        "seconds_over_fill_mask": {
            m: {"median": statistics.median(r), "min": min(r), "max": max(r)} for m, r in ratios.items()
        },
        "two_blank_lines": len(two),
        "two_blank_per_second": two_blank,
        "two_blank_sequences_per_template": sequences,
        "bare_sequences_per_second": bare,
        "two_blank_ceiling_per_second": {name: bare / n for name, n in sequences.items()},
        "processes": processes(one[: args.process_lines or args.lines], args.processes, args.model),
        "first_pass_exact": exact_first_passes(infiller, one[: args.check_lines]),
    }
    return write(report, out)


def processes(part: list[str], n: int, model: str) -> dict:
    """``part`` filled by one process and by ``n`` under ``torchrun``, in turn (1, n, n, 1), and each on the first
    line alone (its start-up): walls, the speed-ups of the whole runs and net of start-up, OUT compared."""
    with tempfile.TemporaryDirectory() as tmp:
        walls, startup = {1: [], n: []}, {1: [], n: []}
        for k in range(2):
            for p in (1, n) if k == 0 else (n, 1):
                walls[p].append(out_run(part, p, Path(tmp) / f"out{p}.jsonl", model))
                startup[p].append(out_run(part[:1], p, Path(tmp) / "first.jsonl", model))
        same = (Path(tmp) / "out1.jsonl").read_bytes() == (Path(tmp) / f"out{n}.jsonl").read_bytes()
    wall, start = ({p: statistics.median(w) for p, w in d.items()} for d in (walls, startup))
    return {
        "lines": len(part),
        "processes": n,
        "wall": walls,
        "startup": startup,
        "speedup": wall[1] / wall[n],
        "speedup_after_startup": (wall[1] - start[1]) / (wall[n] - start[n]) if wall[n] > start[n] else None,
        "same_out": same,
        "commit": commit(),
    }


def write(report: dict, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "report.md").write_text(markdown(report))
    print(markdown(report))
    return 0


def markdown(r: dict) -> str:
    rows = "\n".join(f"| {name} | {rate:.1f} |" for name, rate in r["one_blank_per_second"].items())
    ratios = "\n".join(
        f"| {m} | {v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f}) |" for m, v in r["seconds_over_fill_mask"].items()
    )
    two = "\n".join(
        f"| {name} | {rate:.2f} | {r['two_blank_sequences_per_template'][name]:.0f} | "
        f"{r['two_blank_ceiling_per_second'][name]:.2f} |"
        for name, rate in r["two_blank_per_second"].items()
    )
    p, x = r["processes"], r["first_pass_exact"]
    wall = {int(n): w for n, w in p["wall"].items()}  # int keys, also when read back from report.json
    return f"""# A corpus: templates per second against `pipeline("fill-mask")` (dev MLM)

Generated by `python -m scripts.bench_corpus` (the protocol is its docstring). {r["cpu"]}, torch {r["torch"]}, 1 thread,
commit {r["commit"]}.

## One-blank lines, top-1 word ({r["lines"]} lines, chunks of {r["chunk"]}, the sides in turn)

| method | templates / s |
|---|---|
{rows}

Seconds per chunk over `{r["fill_mask_best"]}`'s (the fill-mask batch size that was fastest), median (range):

| method | ratio |
|---|---|
{ratios}

## Two-blank lines ({r["two_blank_lines"]} lines, each method alone)

The ceiling is the bare model's rate on these lines' sequences ({r["bare_sequences_per_second"]:.0f} a second, in
passes as large as the energies', the head only at the blanks) over a method's sequences per template: no packing
can take a method past it on this machine at the same budget.

| method | templates / s | encoder sequences / template | ceiling (templates / s) |
|---|---|---|---|
{two}

## One process against {p["processes"]} (`--out`, argmax top-1, {p["lines"]} one-blank lines, in turn)

Wall seconds: one process {_seconds(wall[1])}; {p["processes"]} processes {_seconds(wall[p["processes"]])}.
Speed-up {p["speedup"]:.2f}x; OUT the same: {p["same_out"]}{f" (commit {p['commit']})" if p.get("commit") else ""}.
{_startup(p)}
## The packed first pass is exact

{x["bitwise_equal"]} of the first {x["lines"]} one-blank lines ({x["lengths"]} lengths) get the same all-masked
logits bit for bit alone and packed with the others.
"""


def _seconds(walls: list[float]) -> str:
    return ", ".join(f"{s:.1f}" for s in walls)


def _startup(p: dict) -> str:
    if "startup" not in p:
        return ""
    start = {int(n): w for n, w in p["startup"].items()}
    n, net = p["processes"], p["speedup_after_startup"]
    return (
        f"Start-up (the first line alone), seconds: one process {_seconds(start[1])}; "
        f"{n} processes {_seconds(start[n])}. Net of start-up (a long corpus): "
        f"{'-' if net is None else f'{net:.2f}x'}.\n"
    )


if __name__ == "__main__":
    sys.exit(main())
