"""The long test texts of ``eval/score-long-minilm``: consecutive lines of the wiki103 sample joined into one
line, cut to N words.

    python -m scripts.long_texts [--words 350 2000] [--out eval/score-long-minilm]

Writes ``OUT/wiki103-{N}w.txt`` for each N.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scripts.harness import CORPORA, ROOT


def text(words: int, corpus: Path = CORPORA / "wiki103.5k.txt") -> str:
    """The corpus's first lines joined, cut to ``words`` words."""
    found: list[str] = []
    for line in corpus.read_text(encoding="utf-8").splitlines():
        found += line.split()
        if len(found) >= words:
            break
    return " ".join(found[:words]) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, nargs="+", default=[350, 2000])
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "score-long-minilm")
    args = parser.parse_args(argv)
    for n in args.words:
        (args.out / f"wiki103-{n}w.txt").write_text(text(n), encoding="utf-8")


if __name__ == "__main__":
    main()
