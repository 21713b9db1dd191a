"""``infill eval PROTOCOL``: run a protocol file's batch evaluation and write its report."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InfillError


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        description="Run the evaluation a protocol file describes (e.g. eval/dlp-table3-minilm/dlp-table3.toml): "
        "infill the chosen corpus sentences with each sampler, keep the best distinct fillings, and write units.jsonl, "
        "samples.jsonl, report.md, report.json and report.png to --out. Killed and restarted with the "
        "same arguments, it resumes where it stopped.",
    )
    parser.add_argument("protocol", help="protocol TOML file (relative corpus paths resolve against its directory)")
    parser.add_argument("--model", help="hub id or local path (default $INFILL_MODEL or bert-base-uncased)")
    parser.add_argument("--samplers", help="comma-separated samplers (default: the protocol's)")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument(
        "--bleu",
        choices=("nltk", "sacrebleu"),
        default="nltk",
        help="BLEU definition of self-BLEU and corpus BLEU: nltk (default, the papers') or sacrebleu "
        "(13a tokens, exponential smoothing, its signature in the report); see docs/bleu.md",
    )
    parser.add_argument("--limit", type=int, help="only the first N chosen sentences of each corpus")
    parser.add_argument("--out", required=True, help="output directory (created; reused to resume)")
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress on stderr (by default a bar on a terminal, else a line per unit done with "
        "an estimate of the time left)",
    )
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..evaluation.store import check_out

    check_out(Path(args.out))  # a file or a busy --out fails at once, before torch and the model load
    from ..evaluation import evaluate
    from ..lm import default_model

    samplers = None
    if args.samplers is not None:
        samplers = [s.strip() for s in args.samplers.split(",")]
        if not all(samplers):
            raise InfillError(f"--samplers {args.samplers!r} has an empty name")
    try:
        report = evaluate(
            args.protocol,
            args.out,
            model=args.model or default_model(),
            samplers=samplers,
            device=args.device,
            limit=args.limit,
            progress=not args.no_progress,
            bleu=args.bleu,
        )
    except KeyboardInterrupt:
        if not (Path(args.out) / "units.jsonl").is_file():
            raise
        raise KeyboardInterrupt(f"finished units are kept in {args.out}; the same command resumes") from None
    if report is not None:  # rank 0 of a torchrun launch, or the only process
        print(f"wrote {args.out}/report.md ({len(report['samplers'])} samplers)")
    return 0
