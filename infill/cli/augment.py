"""``infill augment "a sentence" -n 5``: distinct variants of sentences for training data, a share of their words
changed.

Each sentence (the arguments, or one a line of --file FILE or stdin -; empty lines skipped) gets N variants, a share of
its words changed (numbers, names, URLs, e-mails, ids and --protect words kept; only words the model spells as one token
change), every character outside the changed words as written (see Infiller.augment). Plain output: the variants one a
line, a blank line between sentences; --json: one record a sentence (source, variants with their text, edits, score (the
PLL, or with --no-pll the draw's log-probability), closeness and with --classifier the label's probability, shortfall).
--out OUT.jsonl writes those records (a line number each) for --file FILE or stdin, a chunk of sentences at a time, and
a rerun goes on after OUT's complete records; FILE is checked whole before anything is written (a bad line of stdin is
written as an error record), and under torchrun the chunks are shared out over the processes
(see infill sample --out)."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from typing import Iterator, NamedTuple, Optional

from ..errors import InfillError
from . import plain
from .out import tokenizer_of, write_out
from .sample import file_lines, read_lines


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
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
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    _add_method(parser)
    parser.add_argument("--model", help="hub id or local path (default $INFILL_MODEL or bert-base-uncased)")
    parser.add_argument("--device", default="cpu", help="torch device (cpu)")
    parser.add_argument("--json", action="store_true", help="one JSON record a sentence")
    parser.add_argument(
        "--out",
        metavar="OUT.jsonl",
        help="with --file FILE or -: write the records to OUT, a chunk of sentences at a time; run again to go on "
        "after the last complete one",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="with --out: no progress on stderr")
    parser.set_defaults(run=run)
    return parser


def _add_method(parser: argparse.ArgumentParser) -> None:
    """How the variants are made: the action, the draws, the score and the terms their rank adds (closeness and a
    classifier's label)."""
    from ..augmentation.actions import ACTIONS
    from ..pipeline.augment_request import METHOD

    parser.add_argument(
        "--action",
        choices=ACTIONS,
        default="substitute",
        help="substitute words, insert words (before a word) or delete words (no blank drawn) (default: substitute)",
    )
    parser.add_argument("--sampler", default=METHOD, metavar="NAME", help=f"one-pass draws (default: {METHOD})")
    parser.add_argument(
        "--no-pll",
        action="store_true",
        help="score each variant by its draw's log-probability, not its PLL (no encoder pass spent scoring)",
    )
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
    from ..pipeline.augment_request import check_request

    check_request(args.n, args.change, args.seed, args.min_words, args.max_words, args.sampler, args.action)
    check_terms(args.keep_close, args.classifier, _label(args.label), args.action)
    compiled = patterns(args.protect)
    if args.out:
        stdin = args.file is None and args.text == ["-"]
        if not stdin and (args.file is None or args.text):
            raise InfillError("--out augments the lines of --file FILE or of stdin (-)")
        return write_out(args.out, _Sentences(args, compiled), args.file, args.device, args.quiet)
    source, lines = read_lines(args.text, args.file, "a sentence")
    numbered = [(i, line) for i, line in enumerate(lines, 1) if not source or line.strip()]
    if not numbered:
        raise InfillError(f"no sentences in {source} (empty lines are skipped)")
    _print(_augment(args, numbered, source), args.json)
    return 0


class Line(NamedTuple):
    """A sentence of the input: its ``line`` number, ``where`` messages say it is (``FILE:LINE: ``), its text."""

    line: int
    where: str
    text: str


class _Sentences:
    """``augment``'s lines as :func:`~infill.cli.out.write_out` takes them (:class:`~infill.cli.out.Corpus`)."""

    command, unit, noun, field = "infill augment", "sentence", "variants", "source"

    def __init__(self, args, compiled: tuple):
        self.args, self.compiled = args, compiled

    def items(self, path: Optional[str]) -> Iterator[Line]:
        lines = (line.rstrip("\r\n") for line in sys.stdin) if path is None else file_lines(path)
        source = "<stdin>" if path is None else path
        return (Line(i, f"{source}:{i}: ", text) for i, text in enumerate(lines, 1) if text.strip())

    def key(self, line: Line) -> tuple[int, str]:
        return line.line, line.text

    def check(self, line: Line) -> None:
        from ..augmentation.words import checked

        try:
            checked(line.text, self.compiled)
        except InfillError as exc:
            raise InfillError(f"{line.where}{exc}") from None

    def load(self) -> None:
        from ..pipeline.augment_request import Request
        from ..text.vocabulary import sampleable_token_ids

        args = self.args
        self.tokenizer, self.limit = tokenizer_of(args.model)
        self.categories = set(sampleable_token_ids(self.tokenizer).tolist())
        limits = (args.min_words, args.max_words)
        self.request = Request(args.n, args.change, args.seed, self.compiled, *limits, args.action)

    def check_chunk(self, lines: list[Line]) -> None:
        from ..pipeline.augment import SentenceError, ready

        try:
            ready([line.text for line in lines], self.request, self.tokenizer, self.limit, self.categories)
        except SentenceError as exc:
            raise InfillError(f"{lines[exc.index].where}{exc.reason}") from None

    def filler(self, device: str, check: bool):
        from ..pipeline.infiller import Infiller

        infiller = Infiller(self.args.model, device=device, tokenizer=self.tokenizer)
        return partial(self._records, infiller, check)

    def _records(self, infiller, check: bool, lines: list[Line]) -> list[dict]:
        """OUT's records of ``lines``, in order, from one call of ``Infiller.augment``; with ``check`` a bad
        sentence's record says what is wrong with it."""
        bad = self._bad(lines) if check else {}
        texts = [line.text for k, line in enumerate(lines) if k not in bad]
        found = iter(_variants(infiller, self.args, texts) if texts else [])
        return [
            {"line": line.line, "source": line.text, "error": bad[k]}
            if k in bad
            else {"line": line.line, **next(found).to_dict()}
            for k, line in enumerate(lines)
        ]

    def _bad(self, lines: list[Line]) -> dict[int, str]:
        """What is wrong with each bad line, by its index (each line checked alone only where the chunk fails)."""
        try:
            for line in lines:
                self.check(line)
            self.check_chunk(lines)
            return {}
        except InfillError:
            return {k: reason for k, line in enumerate(lines) if (reason := self._reason(line))}

    def _reason(self, line: Line) -> str:
        """What is wrong with ``line`` (``""``: nothing)."""
        try:
            self.check(line)
            self.check_chunk([line])
        except InfillError as exc:
            return str(exc).removeprefix(line.where)
        return ""


def _augment(args, numbered: list[tuple[int, str]], source: str) -> list[dict]:
    """Every sentence's record, from one call (one batched fill). A sentence refused is named by ``FILE:LINE:``."""
    from ..lm.hub import check_available
    from ..pipeline.augment import SentenceError
    from ..pipeline.infiller import Infiller

    check_available(args.model)
    infiller = Infiller(args.model, device=args.device)
    try:
        return [r.to_dict() for r in _variants(infiller, args, [text for _, text in numbered])]
    except SentenceError as exc:
        raise InfillError(f"{source}:{numbered[exc.index][0]}: {exc.reason}" if source else str(exc)) from None


def _variants(infiller, args, texts: list[str]) -> list:
    """``infiller.augment`` of ``texts`` as the command line asks."""
    options = {"protect": args.protect, "min_words": args.min_words, "max_words": args.max_words}
    options |= {"keep_close": args.keep_close, "classifier": args.classifier, "label": _label(args.label)}
    options["action"] = args.action
    return infiller.augment(texts, args.n, args.change, args.seed, **options, sampler=args.sampler, pll=not args.no_pll)


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
