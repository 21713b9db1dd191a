"""``infill rewrite "a whole sentence" --change 0.5``: diverse variants of a sentence.

Every word the model spells as one token is a blank, the chains start from the sentence itself, and a
closeness term keeps the expected fraction of changed words near ``--change`` (see
:meth:`infill.Infiller.rewrite`). Takes the run flags of ``infill sample`` but ``--budget``, ``--init``,
``--include``, ``--blank-unit`` and ``--span-method``; prints one variant per line.

With ``--json``, each variant's line adds ``source_bleu``: sacrebleu's sentence BLEU (percent) of the variant
against the sentence (13a tokens, exponential smoothing, effective order), the self-BLEU to the source of
rewriting papers; the template's line adds its ``source_bleu_signature``. Both are null without the
``eval`` extra (sacrebleu).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InfillError
from ..pipeline.config import REWRITE_SAMPLER, SAMPLES, STEPS
from . import plain
from .sample import add_run_arguments, cli_options, print_result

HELP = {  # the flags whose sample help (auto's, templates', word blanks') is not what rewrite runs
    "method": f"an MCMC sampler (see `infill samplers`; not auto, nor a method without chains) (default: "
    f"{REWRITE_SAMPLER})",
    "num_samples": f"chains (default: {SAMPLES})",
    "steps": f"MCMC steps per chain (default: {STEPS})",
    "decode": "where --top takes variants from: visited (every state after burn-in), final (the chains' final "
    "states) or diverse (every state the run scored, kept for quality and diversity) (default: visited)",
    "diversity": "with --decode diverse, how many nats below the best variant not yet kept another may be and be "
    "kept for differing more from those kept (default 1, among the 4 x --top best; named, among every candidate; "
    "more: more diverse, lower PLL)",
    "temperature": "target exp(energy / T), the energy the PLL plus the closeness term; T < 1 favours likely "
    "variants (default 1)",
    "target": "the PLL of the words: pll, or repeat-masked (a word's masked copy also masks every other copy of "
    "it, so a repeated word is not predicted by its own copy) (default pll)",
    "json": "print JSONL: one object per variant with its source_bleu (BLEU against the sentence), then one "
    "{'diagnostics', 'marginals', 'source_bleu_signature'}",
    "quiet": "no progress bar on stderr (by default one on a terminal)",
}


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        description=plain(__doc__.split("\n\n")[1]),
    )
    parser.add_argument("sentence", help="the sentence to rewrite")
    parser.add_argument(
        "--change",
        type=float,
        default=0.5,
        help="expected fraction of the words to change, strictly between 0 and 1 (default: 0.5)",
    )
    add_run_arguments(parser, skip=("top", "include", "blank_unit", "budget", "init", "span_method"), helps=HELP)
    parser.add_argument(
        "--top", type=int, default=5, metavar="K", help="keep the K distinct variants of highest energy (default: 5)"
    )
    parser.set_defaults(run=run)
    return parser


def run(args) -> int:
    from ..constraints import check_change
    from ..pipeline.config import RunConfig

    check_change(args.change)
    options = cli_options(args)
    options.setdefault("sampler", REWRITE_SAMPLER)
    RunConfig.create(**options)  # every option checked before the model loads
    if not args.sentence.strip():
        raise InfillError("give a sentence to rewrite")
    from ..lm.hub import check_available

    check_available(args.model)
    from ..pipeline.infiller import Infiller

    infiller = Infiller(args.model, device=args.device, dtype=args.dtype, chunk_size=args.chunk_size)
    result = infiller.rewrite(args.sentence, args.change, progress=not args.quiet and sys.stderr.isatty(), **options)
    if args.json:
        print_json(result, args.sentence)
    else:
        print_result(result, False)
    return 0


def print_json(result, source: str) -> None:
    """``infill sample --json``'s lines, with the BLEU of each variant against ``source`` (see above)."""
    from ..constraints.rewrite import source_bleu

    scores, signature = source_bleu(result.texts, source)
    for sample, score in zip(result.samples, scores):
        print(json.dumps({"template": result.template, **sample.to_dict(), "source_bleu": score}, ensure_ascii=False))
    print(
        json.dumps(
            {
                "template": result.template,
                "diagnostics": result.diagnostics.to_dict(),
                "marginals": result.marginals,
                "source_bleu_signature": signature,
            },
            ensure_ascii=False,
        ),
        flush=True,
    )
