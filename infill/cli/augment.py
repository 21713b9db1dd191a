"""``infill augment "a sentence" -n 5``: distinct variants of sentences for training data, a share of their words
changed.

Each sentence (the arguments, or one a line of --file FILE or stdin -; empty lines skipped) gets N variants, a share of
its words changed (numbers, names, URLs, e-mails, ids and --protect words kept; only words the model spells as one token
change), every character outside the changed words as written (see Infiller.augment). Plain output: the variants one a
line, a blank line between sentences; --json: one record a sentence (source, variants with their text, edits, score (the
PLL, or with --no-pll the draw's log-probability), closeness and with --classifier the label's probability, shortfall);
--out OUT.jsonl writes those records (a line number each), resuming after OUT's complete records. Every input is checked
before anything is written."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InfillError
from . import plain
from .sample import read_lines


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    from ..augmentation.actions import ACTIONS
    from ..pipeline.augment import METHOD

    parser = subparsers.add_parser(name, description=plain(__doc__.split("\n\n")[1]))
    parser.add_argument("text", nargs="*", help="sentences to augment (- for stdin)")
    parser.add_argument("-f", "--file", help="a file of sentences, one a line")
    parser.add_argument("-n", type=int, default=5, metavar="N", help="variants per sentence (default: 5)")
    parser.add_argument(
        "--change", type=float, default=0.15, help="share of the words to change, in (0, 1) (default: 0.15)"
    )
    parser.add_argument("--min-words", type=int, default=1, metavar="N", help="change at least N words (default: 1)")
    parser.add_argument("--max-words", type=int, metavar="N", help="change at most N words (default: no limit)")
    parser.add_argument(
        "--protect",
        action="append",
        default=[],
        metavar="WORD_OR_REGEX",
        help="a word or phrase (matched ignoring case) or a regular expression never changed (repeatable)",
    )
    parser.add_argument(
        "--action",
        choices=ACTIONS,
        default="substitute",
        help="substitute words, insert words (before a word) or delete words (no blank drawn) (default: substitute)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--sampler", default=METHOD, metavar="NAME", help=f"one-pass draws (default: {METHOD})")
    parser.add_argument(
        "--no-pll",
        action="store_true",
        help="score each variant by its draw's log-probability, not its PLL (no encoder pass spent scoring)",
    )
    _add_terms(parser)
    parser.add_argument("--model", help="hub id or local path (default $INFILL_MODEL or bert-base-uncased)")
    parser.add_argument("--device", default="cpu", help="torch device (cpu)")
    parser.add_argument("--json", action="store_true", help="one JSON record a sentence")
    parser.add_argument("--out", metavar="OUT.jsonl", help="write the records to OUT (resumable)")
    parser.set_defaults(run=run)
    return parser


def _add_terms(parser: argparse.ArgumentParser) -> None:
    """The terms a variant's rank adds: closeness and a classifier's label."""
    parser.add_argument(
        "--keep-close",
        type=float,
        default=0.0,
        metavar="W",
        help="rank the draws by W x each new word's closeness to its old one as well (default: 0)",
    )
    parser.add_argument(
        "--classifier", metavar="MODEL", help="a sequence classifier (hub id or path): keep each sentence's label"
    )
    parser.add_argument(
        "--label", help="with --classifier: the label to keep, an index or a name (default: the source's)"
    )


def run(args) -> int:
    from ..augmentation.terms import check_terms
    from ..augmentation.words import patterns
    from ..pipeline.augment import check_request

    check_request(args.n, args.change, args.seed, args.min_words, args.max_words, args.sampler, args.action)
    check_terms(args.keep_close, args.classifier, _label(args.label))
    patterns(args.protect)
    source, lines = read_lines(args.text, args.file, "a sentence")
    numbered = [(i, line) for i, line in enumerate(lines, 1) if not source or line.strip()]
    if not numbered:
        raise InfillError(f"no sentences in {source} (empty lines are skipped)")
    if not args.out:
        _print(_augment(args, numbered, source), args.json)
        return 0
    from ..pipeline.corpus import Out

    done = _done(args.out)
    todo = numbered[done:]
    records = _augment(args, todo, source)  # every sentence checked before OUT is touched
    with Out(args.out) as out:
        if out.done != done:
            raise InfillError(f"--out {args.out} changed during the run; run again to resume")
        out.write({"line": i, **r} for (i, _), r in zip(todo, records))
    return 0


def _done(path: str) -> int:
    """OUT's complete records (0 where there is no OUT), read without writing it."""
    try:
        with open(path, "rb") as f:
            return sum(1 for raw in f if raw.endswith(b"\n"))
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise InfillError(f"cannot read --out {path}: {exc.strerror or exc}") from None


def _augment(args, numbered: list[tuple[int, str]], source: str) -> list[dict]:
    """Every sentence's record, from one call (one batched fill); nothing when there is nothing left to do. A
    sentence refused is named by ``FILE:LINE:``."""
    if not numbered:
        return []
    from ..pipeline.augment import SentenceError

    try:
        return _records(args, [text for _, text in numbered])
    except SentenceError as exc:
        raise InfillError(f"{source}:{numbered[exc.index][0]}: {exc.reason}" if source else str(exc)) from None


def _records(args, texts: list[str]) -> list[dict]:
    from ..lm.hub import check_available

    check_available(args.model)
    from ..pipeline.infiller import Infiller

    infiller = Infiller(args.model, device=args.device)
    options = {"protect": args.protect, "min_words": args.min_words, "max_words": args.max_words}
    options |= {"keep_close": args.keep_close, "classifier": args.classifier, "label": _label(args.label)}
    options["action"] = args.action
    results = infiller.augment(
        texts, args.n, args.change, args.seed, **options, sampler=args.sampler, pll=not args.no_pll
    )
    return [r.to_dict() for r in results]


def _label(label):
    """``--label``: an index where it is one, else a name."""
    return int(label) if label is not None and label.isdigit() else label


def _print(records: list[dict], as_json: bool) -> None:
    for k, record in enumerate(records):
        if as_json:
            print(json.dumps(record, ensure_ascii=False))
            continue
        if k:
            print()
        for variant in record["variants"]:
            print(variant["text"])
    sys.stdout.flush()
