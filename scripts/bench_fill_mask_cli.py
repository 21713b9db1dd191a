"""One blank, top-1 word through the command line: ``infill sample -f FILE --out`` against ``pipeline("fill-mask")``.

    python -m scripts.bench_fill_mask_cli [--lines 300] [--set short] [--batch 8] [--model DIR] [--out DIR]

The line set of :mod:`scripts.bench_fill_mask` (``short``: tbc.5k, many lengths; ``long``: wiki103). Each side is a
fresh process on one thread (``OMP_NUM_THREADS=1``), as a user runs it: ``infill sample -f FILE --out OUT
--sampler argmax --top 1``, and a script that loads ``pipeline("fill-mask", top_k=1)`` and writes its answers at
``--batch``. Start-up (imports, the model's load, one line) is subtracted: each side also runs on the first line
alone. Rounds run A B B A, full then one line; the report is each side's seconds on the lines less its one-line
seconds (median of the rounds), and infill over fill-mask, into ``OUT/cli-SET.json``.
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

from scripts.bench_corpus import lines as corpus_lines
from scripts.bench_fill_mask import SETS
from scripts.harness import DEV_MODEL, ROOT, commit, cpu_model

FILL_MASK = """
import json, sys
from transformers import pipeline
pipe = pipeline("fill-mask", model=sys.argv[1], device="cpu")
lines = open(sys.argv[2]).read().splitlines()
masked = [t.replace("[MASK]", pipe.tokenizer.mask_token) for t in lines]
with open(sys.argv[3], "w") as f:
    for out in pipe(masked, top_k=1, batch_size=int(sys.argv[4])):
        f.write(json.dumps(out[0]["token_str"]) + "\\n")
"""


def seconds(argv: list[str]) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, capture_output=True)
    return time.perf_counter() - start


def sides(model: str, batch: int, file: Path, out: Path) -> dict:
    out.unlink(missing_ok=True)
    infill = ["infill", "sample", "-f", str(file), "--out", str(out), "--sampler", "argmax", "--top", "1"]
    return {
        "infill": infill + ["--model", model],
        "fill-mask": [sys.executable, "-c", FILL_MASK, model, str(file), str(out), str(batch)],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--set", choices=("short", "long"), default="short")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model", default=str(DEV_MODEL))
    parser.add_argument("--out", default=str(ROOT / "eval" / "fill-mask-minilm"))
    args = parser.parse_args()
    corpus, fewest = SETS["short (tbc)" if args.set == "short" else "long (wiki103)"]
    templates = corpus_lines(args.lines, 1, corpus, fewest)
    taken = {"infill": {"all": [], "one": []}, "fill-mask": {"all": [], "one": []}}
    with tempfile.TemporaryDirectory() as tmp:
        files = {"all": Path(tmp) / "all.txt", "one": Path(tmp) / "one.txt"}
        files["all"].write_text("\n".join(templates) + "\n")
        files["one"].write_text(templates[0] + "\n")
        for _ in range(args.rounds):
            for part in ("all", "one"):
                for name in ("infill", "fill-mask", "fill-mask", "infill"):
                    taken[name][part].append(seconds(sides(args.model, args.batch, files[part], Path(tmp) / "o")[name]))
    net = {name: statistics.median(t["all"]) - statistics.median(t["one"]) for name, t in taken.items()}
    report = {
        "cpu": cpu_model(),
        "commit": commit(),
        "set": args.set,
        "lines": len(templates),
        "batch": args.batch,
        "seconds": taken,
        "net_seconds": net,
        "infill_over_fill_mask": net["infill"] / net["fill-mask"],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"cli-{args.set}.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: report[k] for k in ("lines", "net_seconds", "infill_over_fill_mask")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
