"""Does ``infill sample --out`` stream? Peak RSS against the input's length, and one process against two.

    python -m scripts.corpus_stream_check [--reader-lines 1000 20000] [--command-lines 1000 5000]
                                          [--pair-lines 1000] [--repeats 2] [--out eval/corpus-stream-minilm]

One-blank lines of the shared wiki103 corpus (``bench_corpus.lines``, repeated to the length asked), the dev MLM,
one torch thread a process, each measurement in a fresh process (peak RSS: ``ru_maxrss`` of ``os.wait4``; this
parent never imports torch, so its own high-water mark stays below the child's):

- **reader and writer**: FILE checked whole as ``--out`` checks it (both passes, the real tokenizer), then read
  again and streamed through :func:`infill.pipeline.corpus.shards` into a locked
  :class:`~infill.pipeline.corpus.Out`, each template's record its template with the blank filled by a fixed
  word instead of a model's run (the trivially fast path: no model is loaded);
- **the whole command**: ``infill sample -f FILE --out OUT --sampler argmax --top 1`` at each length;
- **one process against two**: the same command alone and under ``torchrun --nproc-per-node 2``, in turn
  (one, two, two, one, ...), OUT compared byte for byte; templates per second, each run's and their spread.

Writes ``OUT/report.json`` and ``OUT/report.md`` with the CPU model and torch's version.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from itertools import cycle, islice
from pathlib import Path

from scripts.bench_corpus import lines, sample_command  # the benchmark's lines and command
from scripts.harness import DEV_MODEL, ROOT, cpu_model

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
READER = """import sys
from argparse import Namespace
from infill.cli import out as cli_out, sample
from infill.pipeline.distributed import World
from infill.pipeline import corpus

path, out = sys.argv[1:3]
defaults = {"seed": 0, "method": "argmax", "top": 1}
args = Namespace(model=sys.argv[3], device="cpu", dtype=None, chunk_size=None)
cli_out._check_file(sample._Templates(args, defaults), path, World())

def fill(part):
    return [{"line": j.line, "template": j.template, "fillings": [{"text": j.template.replace("[MASK]", "word")}]}
            for j in part]
with corpus.Out(out) as o:
    for records in corpus.shards(sample.iter_jobs(sample.file_lines(path), path, defaults), fill, World()):
        o.write(records)
"""


def corpus_file(directory: Path, n: int) -> Path:
    path = directory / f"lines-{n}.txt"
    path.write_text("\n".join(islice(cycle(lines(5000, 1)), n)) + "\n")
    return path


def measured(command: list[str]) -> tuple[float, float]:
    """``(wall seconds, peak RSS in MB)`` of ``command`` in a fresh process; fails loudly if it fails."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status:
        raise SystemExit(f"{' '.join(command)} failed: {process.stderr.read().decode()[-2000:]}")
    process.stderr.close()
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader-lines", type=int, nargs="+", default=[1000, 20_000])
    parser.add_argument("--command-lines", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pair-lines", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", type=Path, default=DEV_MODEL, help="the masked LM (default: the dev MLM)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["reader", "command", "processes"])
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "corpus-stream-minilm")
    args = parser.parse_args()
    report: dict = {
        "model": str(args.model),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "threads_per_process": 1,
        "torch": subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True
        ).stdout.strip(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        report["reader"] = {}
        for n in [] if "reader" in args.skip else args.reader_lines:
            wall, rss = measured(
                [sys.executable, "-c", READER, str(corpus_file(tmp, n)), str(tmp / f"r{n}.jsonl"), str(args.model)]
            )
            report["reader"][n] = {"seconds": wall, "peak_rss_mb": rss}
            print(f"reader/writer {n} lines: {wall:.1f} s, {rss:.0f} MB", flush=True)
        report["command"] = {}
        for n in [] if "command" in args.skip else args.command_lines:
            wall, rss = measured(sample_command(args.model, corpus_file(tmp, n), tmp / f"c{n}.jsonl"))
            report["command"][n] = {"seconds": wall, "peak_rss_mb": rss}
            print(f"command {n} lines: {wall:.1f} s, {rss:.0f} MB", flush=True)
        if "processes" not in args.skip:
            report["processes"] = one_against_two(args.model, corpus_file(tmp, args.pair_lines), args.repeats)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))


def one_against_two(model: Path, source: Path, repeats: int) -> dict:
    """The command alone and under ``torchrun --nproc-per-node 2``, in turn: walls, rates, OUT compared."""
    lines_in = sum(1 for line in source.read_text().splitlines() if line.strip())
    walls: dict = {1: [], 2: []}
    outs = set()
    for k in range(repeats):
        for processes in (1, 2) if k % 2 == 0 else (2, 1):
            out = source.with_name(f"p{processes}-{k}.jsonl")
            walls[processes].append(measured(sample_command(model, source, out, processes))[0])
            outs.add(out.read_bytes())
            print(f"{processes} process(es), {lines_in} lines: {walls[processes][-1]:.1f} s", flush=True)
    return {
        "lines": lines_in,
        "wall": walls,
        "per_second": {p: [lines_in / w for w in walls[p]] for p in walls},
        "speedup": [a / b for a, b in zip(walls[1], walls[2])],
        "out_identical": len(outs) == 1,
    }


def markdown(r: dict) -> str:
    rows = "\n".join(
        f"| {run} | {int(n):,} | {v['seconds']:.1f} | {v['peak_rss_mb']:.0f} |"
        for run, part in (("reader and writer (no model)", "reader"), ("`--sampler argmax --top 1`", "command"))
        for n, v in r[part].items()
    )
    text = f"""# `infill sample --out`: memory and processes

{r["cpu"]}, {r["cores"]} cores (shared with other jobs), torch {r["torch"]}, one torch thread a process,
{Path(r["model"]).name}, one-blank lines of wiki103 (`python -m scripts.corpus_stream_check`).

| run | lines | seconds | peak RSS (MB) |
|---|---:|---:|---:|
{rows}
"""
    if "processes" in r:
        p = r["processes"]
        rates = {int(n): ", ".join(f"{x:.1f}" for x in v) for n, v in p["per_second"].items()}
        text += f"""
One process against two (`torchrun --nproc-per-node 2`), {p["lines"]:,} lines, in turn: templates per second
{rates[1]} (one) against {rates[2]} (two); speedup per pair {", ".join(f"{x:.2f}" for x in p["speedup"])}x;
OUT identical: {p["out_identical"]}.
"""
    return text


if __name__ == "__main__":
    main()
