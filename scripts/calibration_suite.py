"""The calibration suite of the equal-compute study: templates with one-token word blanks from Wang & Cho's bert-gen corpora.

Sentences of 12-30 words from ``wiki103.5k.txt`` and ``tbc.5k.txt`` (normalised as the protocols do), with
2-4 blanks (``2-4``), 6-10 (``6-10``), 5 (``5``) or 11-16 (``11-16``), then more templates at 4, 3, 6-7, 11-16
and 5 blank tokens (``4``, ``3``, ``6-7``, ``11-16b``, ``5b``), at words the dev tokenizer spells as one word-start token (letters only: no punctuation, no numbers). Each template keeps its removed words. A seeded shuffle splits
every regime into a tuning half and a check half, written as ``corpora/calibration/{tune,check}.jsonl``:

    {"id": "wt103-4444-2-4", "template": "... [MASK] ...", "removed": ["word", ...], "regime": "2-4"}

Run: ``python3 -m scripts.calibration_suite`` (same seed, same files).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from transformers import AutoTokenizer

from scripts.harness import CORPORA, DEV_MODEL, ROOT, sentences, template

REGIMES = {
    "2-4": ((2, 4), 48),
    "6-10": ((6, 10), 36),
    "5": ((5, 5), 16),
    "11-16": ((11, 16), 12),
    "4": ((4, 4), 32),
    "3": ((3, 3), 32),
    "6-7": ((6, 7), 32),
    "11-16b": ((11, 16), 32),
    "5b": ((5, 5), 32),
}
"""Regime -> (blanks per template, templates): half of each to tuning, half to checking. The regimes drawn
later were added later, each at the end (``5b`` last), so the earlier ones keep their templates."""
AFTER_PROMISES = ("4", "3", "6-7", "11-16b", "5b")
"""Regimes added after the promises' held-out suite (``corpora/promises/heldout.jsonl``, drawn from sentences this
suite did not use then): they skip its sentences, so the two stay apart."""


def promise_ids(path: Path = ROOT / "corpora" / "promises" / "heldout.jsonl") -> set[str]:
    """Sentence ids of the promises' held-out suite (none if it is not there)."""
    if not path.exists():
        return set()
    return {json.loads(line)["sentence_id"] for line in path.read_text(encoding="utf-8").splitlines() if line}


def build(tokenizer, corpus_dir: Path, seed: int) -> dict[str, list[dict]]:
    """The tuning and check halves: distinct sentences per regime, each regime split in half."""
    rng = random.Random(seed)
    pool = sentences(corpus_dir)
    rng.shuffle(pool)
    halves, used, promised = {"tune": [], "check": []}, set(), promise_ids()
    for regime, ((low, high), total) in REGIMES.items():
        rows, skip = [], promised if regime in AFTER_PROMISES else set()
        for sid, words in pool:
            if len(rows) == total:
                break
            made = None if sid in used or sid in skip else template(tokenizer, words, rng.randint(low, high), rng)
            if made is not None:
                used.add(sid)
                rows.append({"id": f"{sid}-{regime}", "template": made[0], "removed": made[1], "regime": regime})
        if len(rows) < total:
            raise SystemExit(f"only {len(rows)} sentences for regime {regime}")
        halves["tune"] += rows[: total // 2]
        halves["check"] += rows[total // 2 :]
    return halves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=CORPORA)
    parser.add_argument("--tokenizer", default=str(DEV_MODEL))
    parser.add_argument("--out", type=Path, default=ROOT / "corpora" / "calibration")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    args.out.mkdir(parents=True, exist_ok=True)
    for half, rows in build(tokenizer, args.corpora, args.seed).items():
        (args.out / f"{half}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        print(f"{half}: {len(rows)} templates")


if __name__ == "__main__":
    main()
