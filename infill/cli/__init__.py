"""The ``infill`` command line. Each subcommand lives in its own module with ``add_parser`` and ``run``.

Only the chosen subcommand's module is imported (``infill --help`` lists the table below), so that help
and argument errors answer at once, without importing torch.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from typing import NamedTuple, Optional

from ..errors import InfillError
from ..optional import missing


class Command(NamedTuple):
    module: str  # under infill.cli
    help: str
    extra: Optional[str]  # the optional dependencies it needs: pip install 'infill[EXTRA]'


COMMANDS = {
    "sample": Command("sample", "fill the [MASK] blanks of templates with diverse samples", None),
    "rewrite": Command("rewrite", "diverse variants of a sentence, a fraction of its words changed", None),
    "augment": Command("augment", "distinct variants of sentences for training data, a share of words changed", None),
    "samplers": Command("samplers", "list every --sampler method with its options and defaults", None),
    "eval": Command("evaluate", "evaluate samplers on a corpus protocol (DLP Table 3 columns)", "eval"),
    "summarize": Command("summarize", "extractive summary of a text file by MCMC", "summarize"),
    "eval-summarization": Command(
        "eval_summarization", "summarization benchmark (ACLSum): F(S), ROUGE, ESS, runtime", "summarize"
    ),
    "score": Command("score", "pseudo-log-likelihood (PLL) of sentences", None),
    "rank": Command("score", "rank given fills of a [MASK] blank by the PLL of the sentence each makes", None),
    "serve": Command("serve", "a local web page and JSON API for sampling fillings", "serve"),
}


def plain(doc: str) -> str:
    """Docstring text as help text: ``code`` and :role:`target` markup dropped (``~.a.B`` reads ``B``)."""
    doc = re.sub(r":\w+:`(~?)\.?([^`]+)`", lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], doc)
    return doc.replace("``", "")


def add_model_flags(parser: argparse.ArgumentParser, dtype: bool = True, chunk: Optional[str] = None) -> None:
    """``--model`` and ``--device``, with ``--dtype`` where ``dtype`` and ``--chunk-size N`` helped by ``chunk``
    where given."""
    parser.add_argument("--model", help="hub id or local path (default $INFILL_MODEL or bert-base-uncased)")
    parser.add_argument("--device", default="cpu", help="torch device (cpu)")
    if dtype:
        parser.add_argument("--dtype", help="float32 (default), bfloat16, float16 or auto")
    if chunk:
        parser.add_argument("--chunk-size", type=int, metavar="N", help=chunk)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, as for every other bad input
        self.exit(2, f"infill: error: {message}\n")


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser with ``command``'s full subparser (its module imported); the others are listed with
    their help from ``COMMANDS`` (the modules' ``add_parser`` need not repeat it)."""
    parser = _Parser(prog="infill", description="Text infilling by MCMC and particles over a masked LM's tokens.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, spec in COMMANDS.items():
        if name == command:
            importlib.import_module(f"{__name__}.{spec.module}").add_parser(sub, name)
        else:
            sub.add_parser(name, help=spec.help)
    return parser


def _version() -> str:
    """The installed distribution's version (``infill-mcmc``), or ``unknown`` for a tree that is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("infill-mcmc")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        args = build_parser(command).parse_args(argv)
        return args.run(args) or 0
    except InfillError as exc:
        print(f"infill: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        extra = command and COMMANDS[command].extra
        if not (extra and exc.name) or exc.name.split(".")[0] == "infill":  # not an optional dependency
            raise
        print(f"infill: error: {missing(exc.name, extra)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: a subcommand may say what was kept
        if os.environ.get("RANK", "0") == "0":  # under torchrun every rank is interrupted; rank 0 says so
            print(f"infill: interrupted{'; ' + str(exc) if exc.args else ''}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
