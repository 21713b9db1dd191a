"""``infill score`` (the PLL of sentences given as arguments, or one a line of stdin or a file) and ``infill
rank`` (given fills of a blank, ranked by the PLL of the sentence each makes); see :mod:`infill.lm.scoring`
(texts longer than the model in windows of ``--window`` tokens). Input is checked before the model loads; a
bar of the tokens scored shows on stderr where it is a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InfillError, positive_integer
from ..lm import MIN_SCORE_WINDOW, SCORE_WINDOW
from . import add_model_flags
from .sample import read_lines

BATCH = 64  # sentences tokenized and printed together
DECIMALS = 2
"""Decimals of a printed score: another CPU's float32 encoder moves a score's 5th significant figure, so a 4th
decimal printed here may be one off there; ``--json`` prints every digit."""


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    if name == "rank":
        parser = subparsers.add_parser(
            name,
            description="Put each option (a word, several words or word pieces) in the template's one [MASK] "
            "blank and print the options best first with the PLL of the whole sentence (nats).",
        )
        parser.add_argument("template", help="a template with one [MASK] blank, e.g. 'the [MASK] sat .'")
        parser.add_argument(
            "--options",
            action="append",
            required=True,
            metavar="A,B,...",
            help="the fills to rank, comma-separated (repeatable)",
        )
    else:
        parser = subparsers.add_parser(
            name,
            description="Print the PLL (Salazar et al. 2020) of each sentence, one per line: the sum over tokens "
            "of log p(token | the rest), in nats. Sentences are the arguments, or the lines of stdin "
            "(-) or of --file (empty lines skipped). A sentence longer than the model takes is scored in "
            "windows: each token with the --window tokens of the sentence centred on it. A progress bar on "
            "stderr where it is a terminal.",
        )
        parser.add_argument("sentences", nargs="*", metavar="SENTENCE", help="a sentence, or - to read them from stdin")
        parser.add_argument("--file", "-f", help="read sentences from FILE, one a line")
    _add_options(parser)
    parser.set_defaults(run=run)
    return parser


def _add_options(parser: argparse.ArgumentParser) -> None:
    """The options ``score`` and ``rank`` share."""
    parser.add_argument(
        "--mode",
        choices=("pll", "word-l2r", "repeat-masked"),
        default="pll",
        help="pll: each token masked alone; word-l2r (Kauf & Ivanova 2023): with the rest of "
        "its word masked too; repeat-masked: with every other copy of the token masked too",
    )
    parser.add_argument(
        "--word-l2r", dest="mode", action="store_const", const="word-l2r", help="same as --mode word-l2r"
    )
    parser.add_argument(
        "--window",
        type=int,
        default=SCORE_WINDOW,
        metavar="N",
        help="score a sentence longer than the model (512 tokens for BERT) with each token in the N tokens of it "
        f"centred on it, a copy of N tokens per token (default {SCORE_WINDOW}; at least {MIN_SCORE_WINDOW}; past the "
        "model's maximum, that maximum); a sentence the model takes is scored whole, as minicons does",
    )
    parser.add_argument("--json", action="store_true", help="print JSONL with the per-token scores")
    add_model_flags(
        parser, chunk="at most N masked copies per forward pass (default 512; fewer of long sentences, to bound memory)"
    )
    parser.set_defaults(chunk_size=512)


def _sentences(args) -> list[tuple[str, str]]:
    """``(where, sentence)`` for each argument (``sentence N``; an empty one is refused) or non-empty line
    (``FILE:LINE``)."""
    source, lines = read_lines(args.sentences, args.file, "a SENTENCE (e.g. 'the cat sat on the mat .')")
    if not source:
        empty = next((n for n, text in enumerate(lines, 1) if not text.strip()), None)
        if empty:
            raise InfillError(f"sentence {empty} is empty")
        return [(f"sentence {n}", text) for n, text in enumerate(lines, 1)]
    sentences = [(f"{source}:{n}", line.strip()) for n, line in enumerate(lines, 1) if line.strip()]
    if not sentences:
        raise InfillError(f"no sentences in {source} (empty lines are skipped)")
    return sentences


def _tokens(result) -> list[dict]:
    return [{"token": token, "score": value} for token, value in result.tokens]


def run(args) -> int:
    from ..lm.scoring import check_window, splice

    positive_integer("--chunk-size", args.chunk_size)
    check_window(args.window, "--window")
    if args.command == "rank":
        options = [o.strip() for item in args.options for o in item.split(",")]
        splice(args.template, options)  # checked before the model loads
    else:
        sentences = _sentences(args)
    from ..lm.hub import check_available

    check_available(args.model)
    from ..lm import models

    model, tokenizer = models.load(args.model, args.device, args.dtype)
    if args.command == "rank":
        _rank(args, model, tokenizer, options)
    else:
        _score(args, model, tokenizer, sentences)
    return 0


def _bar(command: str, total: int):
    """tqdm's bar of the tokens scored, on stderr where it is a terminal (after 2 s); nothing elsewhere."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=f"infill {command}",
        unit="token",
        file=sys.stderr,
        delay=2,
        leave=False,
        disable=not sys.stderr.isatty(),
    )


def _rank(args, model, tokenizer, options: list[str]) -> None:
    from ..lm import scoring

    total = sum(scoring.check_texts(tokenizer, scoring.splice(args.template, options)))
    with _bar(args.command, total) as bar:
        ranked = scoring.rank(
            model, tokenizer, args.template, options, args.mode, args.chunk_size, bar.update, window=args.window
        )
    for r in ranked:
        if args.json:
            record = {"option": r.option, "text": r.text, "score": r.score.total, "mode": args.mode}
            print(json.dumps({**record, "tokens": _tokens(r.score)}, ensure_ascii=False))
        else:
            print(f"{r.score.total:.{DECIMALS}f}\t{r.option}\t{r.text}")


def _score(args, model, tokenizer, sentences: list[tuple[str, str]]) -> None:
    from ..lm import scoring

    texts = [text for _, text in sentences]
    total = sum(scoring.check_texts(tokenizer, texts, [where for where, _ in sentences]))
    with _bar(args.command, total) as bar:
        for start in range(0, len(texts), BATCH):
            batch = texts[start : start + BATCH]
            scores = scoring.score(model, tokenizer, batch, args.mode, args.chunk_size, bar.update, window=args.window)
            for text, result in zip(batch, scores):
                line = f"{result.total:.{DECIMALS}f}\t{text}"
                if args.json:
                    record = {"text": text, "score": result.total, "mode": args.mode, "tokens": _tokens(result)}
                    line = json.dumps(record, ensure_ascii=False)
                bar.write(line, file=sys.stdout)  # above the bar, which stays at the bottom
            sys.stdout.flush()
