"""Does ``infill augment --out`` stream? Peak RSS of the command against the input's length.

    python -m scripts.augment_stream_check [--sizes 1000 10000] [--model DIR] [--rows ROWS.jsonl] [--report]

Sentences: the lines of ``../shared/corpora/bert-gen/wiki103.5k.txt`` and ``tbc.5k.txt`` taken in turn, kept when
they have 8 to 40 whitespace words and no ``@@UNKNOWN@@``, then repeated to the size asked, each repeat of a line
opening with its place in the list (``7072. ``, a number augment never changes). Each size runs
``infill augment -f FILE --out OUT --no-pll -q`` on the dev MLM in a fresh process on one torch thread; its peak
RSS is ``ru_maxrss`` of ``os.wait4`` (this parent never imports torch). Each size's row is appended to ROWS as it
finishes, so sizes may run as separate invocations side by side; ``--report`` prints the rows' table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from itertools import cycle, islice
from pathlib import Path

from scripts.bench_augment import FILES, WORDS
from scripts.corpus_stream_check import ENV, measured
from scripts.harness import CORPORA, DEV_MODEL, ROOT, cpu_model

ROWS = ROOT / "eval" / "augment-minilm" / "stream.jsonl"


def sentences(n: int, corpus_dir: Path = CORPORA) -> list[str]:
    """``n`` sentences (the module's rule)."""
    corpora = [(corpus_dir / f).read_text(encoding="utf-8").splitlines() for f in FILES]
    taken = [corpus[i].strip() for i in range(max(map(len, corpora))) for corpus in corpora if i < len(corpus)]
    kept = [line for line in taken if WORDS[0] <= len(line.split()) <= WORDS[1] and "@@UNKNOWN@@" not in line]
    return [line if k < len(kept) else f"{k + 1}. {line}" for k, line in enumerate(islice(cycle(kept), n))]


def command(model: Path, source: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "infill", "augment", "-f", str(source), "--out", str(out), "--model", str(model)] + [
        "--no-pll",
        "-q",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--model", type=Path, default=DEV_MODEL, help="the masked LM (default: the dev MLM)")
    parser.add_argument("--rows", type=Path, default=ROWS, help=f"the rows, one a size (default: {ROWS})")
    parser.add_argument("--report", action="store_true", help="print the rows' table, measuring nothing")
    args = parser.parse_args()
    if not args.report:
        torch = subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, env=ENV
        ).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            for n in args.sizes:
                source = Path(tmp) / f"sentences-{n}.txt"
                source.write_text("\n".join(sentences(n)) + "\n", encoding="utf-8")
                wall, rss = measured(command(args.model, source, Path(tmp) / f"out-{n}.jsonl"))
                row = {"sentences": n, "seconds": wall, "peak_rss_mb": rss, "cpu": cpu_model(), "torch": torch}
                with open(args.rows, "a", encoding="utf-8") as f:
                    f.write(json.dumps({**row, "model": args.model.name}) + "\n")
                print(f"{n} sentences: {wall:.0f} s, {rss:.0f} MB", flush=True)
    print(table([json.loads(line) for line in args.rows.read_text().splitlines()]))


def table(rows: list[dict]) -> str:
    lines = [f"| {r['sentences']:,} | {r['seconds'] / 60:.1f} | {r['peak_rss_mb']:.0f} |" for r in rows]
    return "| sentences | minutes | peak RSS (MB) |\n|---:|---:|---:|\n" + "\n".join(lines)


if __name__ == "__main__":
    main()
