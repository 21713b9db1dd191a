"""The calibration suite of the equal-compute study: templates with one-token word blanks from Wang & Cho's bert-gen corpora.

Sentences of 12-30 words from ``wiki103.5k.txt`` and ``tbc.5k.txt`` (normalised as the protocols do), with
2-4 blanks (``few``) or 6-10 blanks (``many``) at words the dev tokenizer spells as one word-start token
(letters only: no punctuation, no numbers). Each template keeps its removed words. A seeded shuffle splits
every regime into a tuning half and a check half, written as ``corpora/calibration/{tune,check}.jsonl``:

    {"id": "wt103-4444-few", "template": "... [MASK] ...", "removed": ["word", ...], "regime": "2-4"}

Run: ``python3 scripts/calibration_suite.py`` (same seed, same files).
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from transformers import AutoTokenizer

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {"wt103": "wiki103.5k.txt", "tbc": "tbc.5k.txt"}
REGIMES = {"2-4": ((2, 4), 48), "6-10": ((6, 10), 36)}
"""Regime -> (blanks per template, templates): half of each to tuning, half to checking."""
WORDS = (12, 30)


def normalise(line: str) -> str:
    """The protocols' normalisation: lowercase, ``@@UNKNOWN@@`` -> ``[UNK]``, TBC's quote marks -> ``"``."""
    text = line.strip().replace("@@UNKNOWN@@", "[UNK]").lower()
    return text.replace("``", '"').replace("''", '"')


def sentences(corpus_dir: Path) -> list[tuple[str, list[str]]]:
    """``(id, words)`` of every sentence of 12-30 words, ids as in the task manifests (corpus, line index)."""
    out = []
    for name, file in CORPORA.items():
        lines = [line for line in (corpus_dir / file).read_text(encoding="utf-8").splitlines() if line.strip()]
        for i, line in enumerate(lines):
            words = normalise(line).split()
            if WORDS[0] <= len(words) <= WORDS[1] and "[unk]" not in words:
                out.append((f"{name}-{i}", words))
    return out


def blankable(tokenizer, word: str) -> bool:
    """A word of letters that the tokenizer spells as one word-start token."""
    return word.isalpha() and len(tokenizer.tokenize(word)) == 1 and not tokenizer.tokenize(word)[0].startswith("##")


def template(tokenizer, words: list[str], count: int, rng: random.Random):
    """``count`` blanks at blankable words chosen by ``rng`` (None if there are too few): text and words."""
    spots = [i for i, w in enumerate(words) if blankable(tokenizer, w)]
    if len(spots) < count:
        return None
    chosen = sorted(rng.sample(spots, count))
    return " ".join("[MASK]" if i in chosen else w for i, w in enumerate(words)), [words[i] for i in chosen]


def build(tokenizer, corpus_dir: Path, seed: int) -> dict[str, list[dict]]:
    """The tuning and check halves: distinct sentences per regime, each regime split in half."""
    rng = random.Random(seed)
    pool = sentences(corpus_dir)
    rng.shuffle(pool)
    halves, used = {"tune": [], "check": []}, set()
    for regime, ((low, high), total) in REGIMES.items():
        rows = []
        for sid, words in pool:
            if len(rows) == total:
                break
            made = None if sid in used else template(tokenizer, words, rng.randint(low, high), rng)
            if made is not None:
                used.add(sid)
                rows.append({"id": f"{sid}-{regime}", "template": made[0], "removed": made[1], "regime": regime})
        if len(rows) < total:
            raise SystemExit(f"only {len(rows)} sentences for regime {regime}")
        halves["tune"] += rows[:total // 2]
        halves["check"] += rows[total // 2:]
    return halves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora" / "bert-gen")
    parser.add_argument("--tokenizer", default=str(ROOT.parent / "shared" / "models" / "infill-dev-minilm-mlm"))
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
