"""Write the long test texts: consecutive lines of the wiki103 sample joined into one line, cut to N words."""

import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[3] / "shared/corpora/bert-gen/wiki103.5k.txt"

for n in (350, 2000):
    words = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        words += line.split()
        if len(words) >= n:
            break
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent) / f"wiki103-{n}w.txt"
    out.write_text(" ".join(words[:n]) + "\n", encoding="utf-8")
