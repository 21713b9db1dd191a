"""Doubled words in the default's kept fillings: templates from the bert-gen corpus, and the share of kept
fillings in which a fill doubles a word (:func:`infill.text.repeats.doubled`).

    python -m scripts.doubled_words templates [--count 40] [--templates eval/doubled-words-minilm/templates.txt]
    infill sample --file TEMPLATES --out RUN.jsonl --top 5 --seed 0 --model ../shared/models/infill-dev-minilm-mlm
    python -m scripts.doubled_words report NAME=RUN.jsonl ... [--templates TEMPLATES]

``templates``: sentences of ``wiki103.5k.txt`` that the calibration suite (``corpora/calibration``) does not use,
with 2-6 blanks at one-token words, built by the calibration suite's builder (:func:`scripts.harness.template`),
seeded. ``report`` prints, per run, the share of kept fillings that double a word, of templates with one such kept
filling or more, of kept fillings that repeat a content word, and the kept fillings' mean energy; the share of the
removed words (the corpus's own text) that the rule flags; and the share of each corpus's lines with a word doubled
anywhere (every word taken as a fill's).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

from scripts.harness import CORPORA, CORPUS_FILES, DEV_MODEL, ROOT, load_half, normalise, sentences, template

OUT = ROOT / "eval" / "doubled-words-minilm"
BLANKS = (2, 6)


def build(count: int, seed: int) -> list[dict]:
    """``count`` templates of wiki103 sentences the calibration suite leaves out, with their removed words."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(DEV_MODEL)
    used = {row["id"][: -len(row["regime"]) - 1] for half in ("tune", "check") for row in load_half(half)}
    rng = random.Random(seed)
    pool = [(sid, words) for sid, words in sentences() if sid.startswith("wt103-") and sid not in used]
    rng.shuffle(pool)
    rows = []
    for sid, words in pool:
        made = template(tokenizer, words, rng.randint(*BLANKS), rng)
        if made is not None:
            rows.append({"id": sid, "template": made[0], "removed": made[1]})
        if len(rows) == count:
            return rows
    raise SystemExit(f"only {len(rows)} sentences for {count} templates")


def corpus_lines() -> dict[str, list[str]]:
    """The non-empty lines of each bert-gen corpus file."""
    return {
        name: [line for line in (CORPORA / file).read_text(encoding="utf-8").splitlines() if line.strip()]
        for name, file in CORPUS_FILES.items()
    }


def parts_of(text: str) -> list[str]:
    """The template's text around its blanks."""
    from infill.text.blanks import scan

    blanks = scan(text)
    return [text[a:b] for a, b in zip([0] + [b.end for b in blanks], [b.start for b in blanks] + [len(text)])]


def measure(records: list[dict]) -> dict:
    """The shares of one run's kept fillings (``records``, one per template, as ``--out`` writes them)."""
    from infill.text.repeats import doubled
    from scripts.reader_study import repeated

    kept = [(parts_of(r["template"]), s) for r in records for s in r["fillings"]]
    flagged = [doubled(parts, s["fills"]) for parts, s in kept]
    per_template = [any(doubled(parts_of(r["template"]), s["fills"]) for s in r["fillings"]) for r in records]
    return {
        "templates": len(records),
        "kept": len(kept),
        "doubled": sum(flagged) / len(kept),
        "templates_with_doubled": sum(per_template) / len(records),
        "repeated_content_word": statistics.fmean(repeated(s["fills"]) for _, s in kept),
        "mean_energy": statistics.fmean(s["energy"] for _, s in kept),
        "examples": [s["text"] for (_, s), f in zip(kept, flagged) if f][:8],
    }


def report(runs: dict[str, Path], templates: Path) -> dict:
    """Each run's shares (:func:`measure`) and the removed words' own doubled share."""
    from infill.text.repeats import doubled

    rows = [json.loads(line) for line in (templates.with_suffix(".jsonl")).read_text().splitlines()]
    out = {
        "removed_doubled": statistics.fmean(doubled(parts_of(r["template"]), r["removed"]) for r in rows),
        "corpus_lines_doubled": {  # every word of a line taken as a fill's: the rule's reach on human text
            name: statistics.fmean(doubled(["", ""], [normalise(line)]) for line in lines)
            for name, lines in corpus_lines().items()
        },
    }
    for name, path in runs.items():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        out[name] = measure(records)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("phase", choices=("templates", "report"))
    parser.add_argument("runs", nargs="*", help="NAME=RUN.jsonl (report)")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--templates", type=Path, default=OUT / "templates.txt")
    args = parser.parse_args()
    if args.phase == "templates":
        rows = build(args.count, args.seed)
        args.templates.parent.mkdir(parents=True, exist_ok=True)
        args.templates.write_text("".join(r["template"] + "\n" for r in rows))
        args.templates.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return
    runs = dict(spec.split("=", 1) for spec in args.runs)
    print(json.dumps(report({k: Path(v) for k, v in runs.items()}, args.templates), indent=1))


if __name__ == "__main__":
    main()
