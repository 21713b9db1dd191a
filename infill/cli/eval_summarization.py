"""``infill eval-summarization``: every method on the same ACLSum sentences and budget.

For every document (introduction + conclusion sentences, cleaned as ``infill summarize`` does; the
reference is the abstract) and method (LEAD, greedy, sumy's LexRank/TextRank/Luhn/LSA, and samplers
started from greedy), report F(S), ROUGE-1/2/L (rouge-score, Porter stemming), acceptance and runtime.
Writes ``OUTPUT.md`` and ``OUTPUT.json`` atomically. The default output is a new file under ``runs/``;
an existing report is replaced only when named with ``--output``, and the message says so.
"""

from __future__ import annotations

import datetime
import sys
import tempfile
from pathlib import Path

from ..errors import InfillError
from . import plain
from .summarize import (
    DEFAULT_METHOD,
    DEFAULT_SAMPLER,
    DEFAULT_WORDS,
    add_objective_arguments,
    chain_settings,
    objective_config,
    positive_int,
    summary_budget,
)

DEFAULT_METHODS = "lead,greedy,lexrank,textrank,luhn,lsa,lb,una,mana"


def add_parser(subparsers, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        description=plain(__doc__.split("\n\n")[0]),
    )
    parser.add_argument("--dataset", choices=["aclsum"], default="aclsum", help="the corpus (default aclsum)")
    parser.add_argument(
        "--split", choices=["train", "val", "test"], default="val", help="the corpus split (default val)"
    )
    parser.add_argument("--limit", type=positive_int, default=None, help="first N documents only")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--words", type=positive_int, default=None, help=f"word budget (default {DEFAULT_WORDS})")
    budget.add_argument("--sentences", type=positive_int, default=None, help="sentence budget")
    parser.add_argument(
        "--methods",
        default=DEFAULT_METHODS,
        help=f"comma-separated: lead, greedy, sumy peers and sampler names (default {DEFAULT_METHODS})",
    )
    add_objective_arguments(parser)
    parser.add_argument(
        "--output",
        default=None,
        help="report path without extension (default: a new runs/summarization-DATASET-SPLIT-TIME)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (by default a bar on a terminal, else a line per document done "
        "with an estimate of the time left)",
    )
    parser.set_defaults(run=run)


def output_paths(args) -> tuple[Path, Path, bool]:
    """``(md, json, replaces)``: an explicit ``--output`` in an existing directory, or a new name under
    ``runs/`` (created); checked writable before the run, not after."""
    if args.output:
        base = Path(args.output)
        if not base.parent.is_dir():
            raise InfillError(f"cannot write the report to {base.parent}: no such directory")
    else:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        base = Path("runs") / f"summarization-{args.dataset}-{args.split}-{stamp}"
        n = 1
        while base.with_name(base.name + ".json").exists() or base.with_name(base.name + ".md").exists():
            n += 1
            base = Path("runs") / f"summarization-{args.dataset}-{args.split}-{stamp}-{n}"
    md, js = base.with_name(base.name + ".md"), base.with_name(base.name + ".json")
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=base.parent).close()
    except OSError as exc:
        raise InfillError(f"cannot write the report to {base.parent}: {exc.strerror}") from None
    return md, js, md.exists() or js.exists()


def run(args) -> int:
    import json

    from ..evaluation.store import write_atomic
    from ..summarize.aclsum_data import load_aclsum
    from ..summarize.evaluation import check_methods, markdown

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    check_methods(methods)
    budget = summary_budget(args)
    config, settings = objective_config(args), chain_settings(args, DEFAULT_SAMPLER)
    md_path, json_path, replaces = output_paths(args)
    documents = load_aclsum(args.split, args.limit)
    if not documents:
        raise InfillError(f"no documents in the aclsum {args.split} split")
    report = _evaluate(args, documents, budget, config, methods, settings)
    report = {"split": args.split, "date": datetime.date.today().isoformat(), "command": _command(), **report}
    preamble = _preamble(report, args.split, len(documents), budget.describe())
    text = markdown(report, f"Extractive summarization on ACLSum ({args.split})", preamble)
    try:
        write_atomic(json_path, json.dumps(report, indent=1) + "\n")
        write_atomic(md_path, text)
    except OSError as exc:
        raise InfillError(f"cannot write the report to {md_path.parent}: {exc.strerror}") from None
    print(text)
    print(f"{'replaced' if replaces else 'wrote'} {md_path} and {json_path}", file=sys.stderr)
    return 0


def _command() -> str | None:
    """The command line as typed (``infill ...``); None when not run as ``infill`` or ``python -m infill``."""
    return "infill " + " ".join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith(("infill", "__main__.py")) else None


def _evaluate(args, documents: list, budget, config, methods: list[str], settings) -> dict:
    """:func:`infill.summarize.evaluation.evaluate` of ``methods`` on ``documents``, with a progress bar."""
    from ..pipeline.progress import progress
    from ..summarize.evaluation import evaluate

    with progress(len(documents), "infill eval-summarization", "document", disable=args.quiet) as bar:

        def done(_, row):
            bar.set_postfix_str(f"{row['id']}, {row['sentences']} sentences")
            bar.update()

        return evaluate(documents, budget, config, methods, settings, args.seed, done, f"aclsum:{args.split}")


def _preamble(report: dict, split: str, documents: int, budget: str) -> list[str]:
    """The lines under the report's title: the command, the data and how to read the table, and the time
    ``infill summarize``'s default method took where it ran."""
    preamble = [
        f"Command: `{report['command'] or 'see the JSON settings'}` (run {report['date']}).",
        "",
        f"{documents} documents of the {split} split (introduction + conclusion; reference = "
        f"abstract), budget {budget}. Samplers start from greedy and decode the best F seen "
        f"(main table); peers are sumy's, on the same sentences, taken in rank order while they fit. "
        f"F < greedy / F > greedy: documents whose summary's F is below / strictly above greedy's. "
        f"s/doc: seconds per document, one torch thread.",
    ]
    if DEFAULT_METHOD not in report["summary"]:
        return preamble
    wall, cpu = (
        [r[f"objective_{k}"] + r["methods"][DEFAULT_METHOD][k] for r in report["documents"]]
        for k in ("seconds", "cpu_seconds")
    )
    return preamble + [
        "",
        f"The {DEFAULT_METHOD} row is `infill summarize`'s default method. With the objective built "
        f"(sentence cleaning, similarities), it took {sum(wall) / len(wall):.2f} s per document on "
        f"average and {max(wall):.2f} s at most ({sum(cpu) / len(cpu):.2f} and {max(cpu):.2f} CPU "
        f"seconds: wall time depends on the machine's load).",
    ]
