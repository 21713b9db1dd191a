"""``infill score`` (the PLL of sentences, one a line) and ``infill rank`` (given fills of a blank, ranked
by the PLL of the sentence each makes); see :mod:`infill.lm.scoring`. Input is checked before the model loads.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import InfillError
from ..pipeline.config import positive_integer

BATCH = 64  # sentences tokenized and printed together


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    if name == "rank":
        parser = subparsers.add_parser(
            name, help="rank given fills of a [MASK] blank by the PLL of the sentence each makes",
            description="Put each option (a word, several words or word pieces) in the template's one [MASK] "
                        "blank and print the options best first with the PLL of the whole sentence (nats).")
        parser.add_argument("template", help="a template with one [MASK] blank, e.g. 'the [MASK] sat .'")
        parser.add_argument("--options", action="append", required=True, metavar="A,B,...",
                            help="the fills to rank, comma-separated (repeatable)")
    else:
        parser = subparsers.add_parser(
            name, help="pseudo-log-likelihood (PLL) of sentences, one per line",
            description="Print the PLL (Salazar et al. 2020) of each sentence of FILE or stdin, one per line "
                        "(empty lines skipped): the sum over tokens of log p(token | the rest), in nats.")
        parser.add_argument("file", nargs="?", default="-", help="a text file, one sentence a line (- or none: stdin)")
    parser.add_argument("--mode", choices=("pll", "word-l2r"), default="pll",
                        help="pll: each token masked alone; word-l2r (Kauf & Ivanova 2023): with the rest of "
                             "its word masked too")
    parser.add_argument("--word-l2r", dest="mode", action="store_const", const="word-l2r",
                        help="same as --mode word-l2r")
    parser.add_argument("--json", action="store_true", help="print JSONL with the per-token scores")
    parser.add_argument("--model", help="hub id or local path (default $INFILL_MODEL or bert-base-uncased)")
    parser.add_argument("--device", default="cpu", help="torch device (cpu)")
    parser.add_argument("--dtype", help="float32 (default), bfloat16, float16 or auto")
    parser.add_argument("--chunk-size", type=int, default=512, metavar="N",
                        help="at most N masked copies per forward pass (default 512)")
    parser.set_defaults(run=run)
    return parser


def _sentences(path: str) -> list[tuple[str, str]]:
    """``(FILE:LINE, sentence)`` for each non-empty line."""
    try:
        if path == "-":
            lines = sys.stdin.read().splitlines()
        else:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InfillError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    where = "<stdin>" if path == "-" else path
    sentences = [(f"{where}:{n}", line.strip()) for n, line in enumerate(lines, 1) if line.strip()]
    if not sentences:
        raise InfillError(f"no sentences in {where} (empty lines are skipped)")
    return sentences


def _tokens(result) -> list[dict]:
    return [{"token": token, "score": value} for token, value in result.tokens]


def run(args) -> int:
    from ..lm.scoring import splice

    positive_integer("--chunk-size", args.chunk_size)
    if args.command == "rank":
        options = [o.strip() for item in args.options for o in item.split(",")]
        splice(args.template, options)  # checked before the model loads
    else:
        sentences = _sentences(args.file)
    from ..lm.hub import check_available

    check_available(args.model)
    from ..lm import models, scoring

    model, tokenizer = models.load(args.model, args.device, args.dtype)
    if args.command == "rank":
        for r in scoring.rank(model, tokenizer, args.template, options, args.mode, args.chunk_size):
            if args.json:
                print(json.dumps({"option": r.option, "text": r.text, "score": r.score.total, "mode": args.mode,
                                  "tokens": _tokens(r.score)}, ensure_ascii=False))
            else:
                print(f"{r.score.total:.4f}\t{r.option}\t{r.text}")
        return 0
    texts = [text for _, text in sentences]
    scoring.check_texts(model, tokenizer, texts, [where for where, _ in sentences])
    for start in range(0, len(texts), BATCH):
        batch = texts[start:start + BATCH]
        for text, result in zip(batch, scoring.score(model, tokenizer, batch, args.mode, args.chunk_size)):
            if args.json:
                print(json.dumps({"text": text, "score": result.total, "mode": args.mode,
                                  "tokens": _tokens(result)}, ensure_ascii=False))
            else:
                print(f"{result.total:.4f}\t{text}")
        sys.stdout.flush()
    return 0
