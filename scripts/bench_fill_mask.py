"""One blank, top-1 word: ``infill`` against ``pipeline("fill-mask")`` on long and on short lines.

    python -m scripts.bench_fill_mask [--lines 500] [--chunk 100] [--model DIR] [--out eval/fill-mask-minilm]
    python -m scripts.bench_fill_mask --cli [--lines 1000] [--rounds 3] [--model DIR] [--out eval/fill-mask-minilm]

Two line sets, each the first ``--lines`` one-blank templates of its corpus (the middle word masked, an all-letter
word; :func:`scripts.bench_corpus.lines`): long lines from ``wiki103.5k.txt`` (8 to 40 words) and short lines
from ``tbc.5k.txt`` (4 to 40 words, mostly short, many lengths). On each, ``Infiller.sample_many(chunk,
sampler=METHOD, top=1)`` for ``argmax`` and ``independent`` against ``pipeline("fill-mask", top_k=1)`` at each batch
size, one torch thread, the sides run chunk by chunk in turn (A B, then B A) so that a shared machine's load falls
on both alike: templates per second, and per chunk the seconds of each method over fill-mask's at its fastest batch
size (median, range). Also how often the two answer differently, and how often fill-mask's word is punctuation,
which ``infill`` never fills unless ``--allow-punctuation`` (``allow_punctuation=True``): with it, how often they
still differ. Writes ``OUT/report.json`` and ``OUT/report.md`` with the CPU model, torch's version and the commit.

``--cli`` times the corpus path instead: ``infill sample -f FILE --out OUT --sampler argmax --top 1`` in a fresh
process (``OMP_NUM_THREADS=1``) on each whole line set, less its start-up (the same command on the set's first line
alone, run beside it), against ``pipeline("fill-mask", top_k=1)`` at batch sizes :data:`CLI_BATCH_SIZES` in this
process: the sides in turn, reversed every round, for ``--rounds`` rounds. Per round, the CLI's seconds over
fill-mask's at its fastest batch size that round (median, range). Writes ``OUT/cli.json`` and ``OUT/cli.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from scripts.bench_corpus import lines as corpus_lines
from scripts.bench_corpus import one_blank, timed
from scripts.harness import CORPORA, DEV_MODEL, ROOT, commit, cpu_model

CLI_BATCH_SIZES = (1, 8)
"""fill-mask's fastest batch sizes on these lines (``report.md``)."""
SETS = {"long (wiki103)": (CORPORA / "wiki103.5k.txt", 8), "short (tbc)": (CORPORA / "tbc.5k.txt", 4)}


def answers(infiller, pipe, templates: list[str], punctuation: bool) -> dict:
    """How often ``argmax``'s word differs from fill-mask's, and how often fill-mask's is punctuation."""
    ours = [
        r.samples[0].fills[0].strip()
        for r in infiller.sample_many(templates, sampler="argmax", top=1, seed=0, allow_punctuation=punctuation)
    ]
    masked = [t.replace("[MASK]", pipe.tokenizer.mask_token) for t in templates]
    theirs = [out[0]["token_str"].strip() for out in pipe(masked, top_k=1, batch_size=8)]
    return {
        "differ": sum(a != b for a, b in zip(ours, theirs)) / len(templates),
        "fill_mask_punctuation": sum(all(c in string.punctuation for c in b) for b in theirs) / len(templates),
    }


def measure(infiller, pipe, templates: list[str], chunk: int) -> dict:
    seconds = one_blank(infiller, pipe, templates, chunk)
    rate = {name: len(templates) / sum(s) for name, s in seconds.items()}
    best = max((name for name in rate if name.startswith("fill-mask")), key=rate.get)
    ratios = {m: [a / b for a, b in zip(seconds[m], seconds[best])] for m in ("argmax", "independent")}
    return {
        "lines": len(templates),
        "tokens_mean": statistics.fmean(len(infiller.parse(t).input_ids) for t in templates),
        "lengths": len({len(infiller.parse(t).input_ids) for t in templates}),
        "per_second": rate,
        "fill_mask_best": best,
        "seconds_over_fill_mask": {
            m: {"median": statistics.median(r), "min": min(r), "max": max(r)} for m, r in ratios.items()
        },
        "answers": answers(infiller, pipe, templates, False),
        "answers_with_punctuation": answers(infiller, pipe, templates, True),
    }


def cli_seconds(model: str, path: Path) -> float:
    """Wall seconds of ``infill sample -f path --out ... --sampler argmax --top 1`` in a fresh process (``python -m
    infill``, the console script's entry)."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "infill", "sample", "-f", str(path), "--out", f"{scratch}/out.jsonl"]
        start = time.perf_counter()
        subprocess.run(
            [*command, "--sampler", "argmax", "--top", "1", "--model", model, "--quiet"],
            check=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            capture_output=True,
        )
        return time.perf_counter() - start


def cli_rounds(pipe, model: str, templates: list[str], rounds: int) -> dict:
    """The CLI's seconds less its start-up, against fill-mask's at each batch size, round by round (docstring)."""
    masked = [t.replace("[MASK]", pipe.tokenizer.mask_token) for t in templates]
    with tempfile.TemporaryDirectory() as scratch:
        whole, first = Path(scratch) / "whole.txt", Path(scratch) / "first.txt"
        whole.write_text("\n".join(templates) + "\n", encoding="utf-8")
        first.write_text(templates[0] + "\n", encoding="utf-8")
        sides = {
            "cli": lambda: cli_seconds(model, whole) - cli_seconds(model, first),
            **{
                f"fill-mask/{b}": (lambda b=b: timed(lambda: pipe(masked, top_k=1, batch_size=b)))
                for b in CLI_BATCH_SIZES
            },
        }
        seconds: dict = {name: [] for name in sides}
        for k in range(rounds):
            for name in list(sides) if k % 2 == 0 else list(reversed(sides)):
                seconds[name].append(sides[name]())
    ratios = [c / min(s[k] for n, s in seconds.items() if n != "cli") for k, c in enumerate(seconds["cli"])]
    return {
        "lines": len(templates),
        "seconds": seconds,
        "cli_over_fill_mask_best": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
    }


def cli_markdown(r: dict) -> str:
    rows = "\n".join(
        f"| {name} | {m['lines']} | {statistics.median(m['seconds']['cli']):.1f} | "
        + " | ".join(f"{statistics.median(m['seconds'][f'fill-mask/{b}']):.1f}" for b in CLI_BATCH_SIZES)
        + f" | {m['cli_over_fill_mask_best']['median']:.2f} ({m['cli_over_fill_mask_best']['min']:.2f}-"
        f"{m['cli_over_fill_mask_best']['max']:.2f}) |"
        for name, m in r["sets"].items()
    )
    heads = " | ".join(f"fill-mask/{b} s" for b in CLI_BATCH_SIZES)
    return (
        '# One blank, top-1 word through `infill sample -f FILE --out` against `pipeline("fill-mask")` (dev MLM)\n\n'
        f"Generated by `python -m scripts.bench_fill_mask --cli` (the protocol is its docstring). {r['cpu']}, "
        f"torch {r['torch']}, 1 thread, commit {r['commit']}, {r['rounds']} rounds. Seconds are medians over the "
        "rounds; the CLI's without its start-up.\n\n"
        f"| lines | count | CLI s | {heads} | CLI over fill-mask's best, per round: median (range) |\n"
        f"|---|---|---|{'---|' * len(CLI_BATCH_SIZES)}---|\n{rows}\n\n"
        "Target: the CLI at most 1.0x fill-mask's best on both line sets.\n"
    )


def markdown(r: dict) -> str:
    parts = [
        '# One blank, top-1 word: `infill` against `pipeline("fill-mask")` (dev MLM)\n',
        f"Generated by `python -m scripts.bench_fill_mask` (the protocol is its docstring). {r['cpu']}, torch "
        f"{r['torch']}, 1 thread, commit {r['commit']}.\n",
    ]
    for name, m in r["sets"].items():
        rates = "\n".join(f"| {k} | {v:.1f} |" for k, v in m["per_second"].items())
        ratio = "; ".join(
            f"`{k}` {v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f})" for k, v in m["seconds_over_fill_mask"].items()
        )
        a, p = m["answers"], m["answers_with_punctuation"]
        parts.append(
            f"## {name}: {m['lines']} lines, {m['tokens_mean']:.1f} tokens on average, {m['lengths']} lengths\n\n"
            f"| method | templates / s |\n|---|---|\n{rates}\n\n"
            f"Seconds per chunk over `{m['fill_mask_best']}`'s, median (range): {ratio}.\n\n"
            f"`argmax` and fill-mask name different words on {a['differ']:.0%} of lines; fill-mask's word is "
            f"punctuation on {a['fill_mask_punctuation']:.0%}; with `--allow-punctuation` they differ on "
            f"{p['differ']:.0%}.\n"
        )
    return "\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=500)
    parser.add_argument("--chunk", type=int, default=100)
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--out", default=str(ROOT / "eval" / "fill-mask-minilm"))
    parser.add_argument("--cli", action="store_true", help="time the corpus path (module docstring)")
    parser.add_argument("--rounds", type=int, default=3, help="with --cli: rounds (default 3)")
    args = parser.parse_args()
    from transformers import pipeline

    torch.set_num_threads(1)
    pipe = pipeline("fill-mask", model=args.model, device="cpu")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.cli:
        sets = {
            name: cli_rounds(pipe, args.model, corpus_lines(args.lines, 1, corpus, fewest), args.rounds)
            for name, (corpus, fewest) in SETS.items()
        }
        report = {"cpu": cpu_model(), "torch": torch.__version__, "commit": commit(), "rounds": args.rounds}
        report["sets"] = sets
        (out / "cli.json").write_text(json.dumps(report, indent=1) + "\n")
        (out / "cli.md").write_text(cli_markdown(report))
        print(cli_markdown(report))
        return 0
    from infill import Infiller

    infiller = Infiller(args.model)
    sets = {
        name: measure(infiller, pipe, corpus_lines(args.lines, 1, corpus, fewest), args.chunk)
        for name, (corpus, fewest) in SETS.items()
    }
    report = {"cpu": cpu_model(), "torch": torch.__version__, "commit": commit(), "sets": sets}
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "report.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
