"""``infill summarize FILE|-``: extractive summary on the Lin & Bilmes objective.

Prints the chosen sentences in document order, one per line (or a JSON object with ``--json``).
The text is split into sentences (pysbd); sentences without a content word and exact repeats are
dropped first (listed under ``dropped`` in ``--json``). The default budget is 150 words.

Methods (``--method``):
  greedy (default): budgeted greedy maximisation of F (Lin & Bilmes 2010), deterministic and fast. On
      ACLSum val it has the best ROUGE of all methods (eval/summarization-aclsum/summarization-aclsum-val.md).
  mana, una, lb, gibbs, ... (any sampler): chains started from the greedy summary; the summary is the
      best feasible F seen (``--decode best``), so its F is never below greedy's. They raise F, but on
      ACLSum a higher F has not meant a higher ROUGE.
  lead: the first sentences that fit.
  lexrank, textrank, luhn, lsa: sumy's summarizers on the same sentences and budget (needs sumy).

Bad input gets one line on stderr and exit status 2. When the whole document fits in the budget it
is printed unchanged (with a note). The default (greedy) summarizes a 2,000-sentence document in well
under a minute; samplers refuse documents of more than 500 sentences with one line.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InfillError, is_integer, is_number
from . import plain

DEFAULT_METHOD = "greedy"
DEFAULT_SAMPLER = "mana"  # chain settings of eval-summarization and of --method SAMPLER
DEFAULT_WORDS = 150
MAX_SAMPLER_SENTENCES = 500  # a sampler step costs O(chains * N^3)


def _argument(text: str, kind: type, ok, expected: str):
    """``text`` as a ``kind`` if ``ok`` of it, else argparse's one line: ``expected`` and ``text``."""
    try:
        value = kind(text)
    except ValueError:
        value = None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _argument(text, int, lambda v: is_integer(v, 1), "a positive integer")


def positive_float(text: str) -> float:
    return _argument(text, float, lambda v: is_number(v, 0, open_low=True), "a positive number")


def unit_float(text: str) -> float:
    return _argument(text, float, lambda v: is_number(v, 0, 1, open_low=True), "a number in (0, 1]")


def step_size(text: str):
    return "auto" if text == "auto" else positive_float(text)


def add_objective_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the objective and the chains shared with ``eval-summarization``."""
    group = parser.add_argument_group("objective and chains")
    group.add_argument(
        "--similarity",
        choices=["tfidf", "minilm"],
        default=None,
        help="sentence vectors for w_ij: tf-idf or MiniLM embeddings (default tfidf)",
    )
    group.add_argument("--lambda", dest="lam", type=float, default=None, help="diversity weight (default 0)")
    group.add_argument(
        "--alpha-a", type=positive_float, default=None, help="coverage saturation alpha = a / N (default 13)"
    )
    group.add_argument(
        "--temperature",
        type=positive_float,
        default=None,
        help="energy = (F - P) / (temperature * best single-sentence F) (default 0.1)",
    )
    group.add_argument("--steps", type=positive_int, default=None, help="steps per chain (default 200)")
    group.add_argument("--chains", type=positive_int, default=None, help="parallel chains (default 4)")
    group.add_argument("--start", choices=["greedy", "empty"], default=None, help="chains' start (default greedy)")
    group.add_argument(
        "--anneal",
        type=unit_float,
        default=None,
        help="final temperature as a fraction of the first (default 1: no annealing)",
    )
    group.add_argument(
        "--step-size",
        type=step_size,
        default=None,
        help="una/mana step size, or auto: about one flip per proposal (default auto)",
    )
    group.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def objective_config(args):
    from ..summarize import ObjectiveConfig

    given = {"similarity": args.similarity, "lam": args.lam, "a": args.alpha_a, "temperature": args.temperature}
    return ObjectiveConfig(**{k: v for k, v in given.items() if v is not None})


def chain_settings(args, sampler: str):
    from ..summarize import ChainSettings

    given = {
        "steps": args.steps,
        "chains": args.chains,
        "start": args.start,
        "anneal": args.anneal,
        "step_size": args.step_size,
    }
    return ChainSettings(sampler=sampler, **{k: v for k, v in given.items() if v is not None})


def add_parser(subparsers, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        description=plain(__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[2]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="a UTF-8 text file, or - for standard input")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--words", type=positive_int, help=f"at most W words (default {DEFAULT_WORDS})")
    budget.add_argument("--sentences", type=positive_int, help="at most N sentences")
    parser.add_argument(
        "--method",
        "--sampler",
        dest="method",
        default=DEFAULT_METHOD,
        help=f"a sampler, greedy, lead, lexrank, textrank, luhn or lsa (default {DEFAULT_METHOD})",
    )
    parser.add_argument(
        "--decode",
        choices=["best", "sample", "dimension"],
        default="best",
        help="samplers: best F seen, sample-wise or dimension-wise vote (default best)",
    )
    add_objective_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of sentences")
    parser.set_defaults(run=run)


def read_input(path: str) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise InfillError(f"cannot read {path}: {exc.strerror or exc}") from None


def summary_budget(args):
    """The budget of ``--sentences`` or ``--words`` (default ``DEFAULT_WORDS`` words)."""
    from ..summarize import Budget

    return Budget(args.sentences, "sentences") if args.sentences else Budget(args.words or DEFAULT_WORDS, "words")


def run(args) -> int:
    import torch

    from ..samplers import SAMPLERS
    from ..summarize import SummaryObjective, greedy

    _check_method(args.method)
    config = objective_config(args)
    settings = chain_settings(args, args.method) if args.method in SAMPLERS else None
    source, cleaned = _sentences(args.file)
    sentences = cleaned.kept
    budget = summary_budget(args)
    costs = budget.costs(sentences)
    if float(costs.min()) > budget.limit:
        raise InfillError(f"no sentence fits in {budget.describe()} (the shortest has {int(costs.min())} words)")
    if float(costs.sum()) <= budget.limit:  # includes a single sentence that fits
        note = "the whole document fits in the budget; it is printed unchanged"
        return _print(args, cleaned, [1.0] * len(sentences), None, note, "whole document")
    if settings is not None and len(sentences) > MAX_SAMPLER_SENTENCES:
        raise InfillError(
            f"{source} has {len(sentences)} sentences; the samplers take at most "
            f"{MAX_SAMPLER_SENTENCES} (use --method greedy)"
        )
    torch.set_num_threads(1)  # small batched ops: one thread is fastest and plays well with others
    objective = SummaryObjective(sentences, budget, config)
    selection, label, extra = _summarize(objective, args.method, settings, args.decode, args.seed)
    note = None
    if not selection.any():  # only an empty start with too few steps, or a peer with nothing that fits
        note = f"{label} selected nothing; printing the greedy summary instead"
        selection, label = greedy(objective), "greedy (fallback)"
    return _print(args, cleaned, selection.tolist(), float(objective.value(selection[None])), note, label, extra)


def _check_method(method: str) -> None:
    """Refuse an unknown method, and one of sumy's without sumy."""
    from ..samplers import SAMPLERS
    from ..summarize.peers import PEERS, REQUIREMENT, available

    if method not in SAMPLERS and method not in ("greedy", "lead") and method not in PEERS:
        raise InfillError(
            f"unknown method {method!r}; choose from greedy, lead, {', '.join(PEERS)}, {', '.join(sorted(SAMPLERS))}"
        )
    if method in PEERS and not available():
        raise InfillError(f"--method {method} needs sumy: pip install '{REQUIREMENT}'")


def _sentences(path: str):
    """``(source, cleaned)``: the input's name and its cleaned sentences; refuses an input without one."""
    from ..summarize import decode_text, split_sentences
    from ..summarize.sentences import clean_sentences

    source = "standard input" if path == "-" else path
    text = decode_text(read_input(path), source)
    cleaned = clean_sentences(split_sentences(text))
    if not cleaned.kept:
        raise InfillError(
            f"{source} has no sentences to summarize"
            if not cleaned.dropped
            else f"{source} has no sentence with a content word to summarize"
        )
    return source, cleaned


def _summarize(objective, method: str, settings, decode: str, seed: int):
    """``(selection, label, extra)``: the summary of ``method`` (``decode`` of its chains for a sampler),
    how to name it, and a sampler's start F and acceptance rate."""
    from ..summarize import greedy, lead, run_chains
    from ..summarize.peers import PEERS, peer_summary

    if method == "greedy":
        return greedy(objective), "greedy", {}
    if method == "lead":
        return lead(objective), "lead", {}
    if method in PEERS:
        return peer_summary(objective, method), f"{method} (sumy)", {}
    result = run_chains(objective, settings, seed=seed)
    extra = {
        "start_objective": float(objective.value(result.start[None])),
        "acceptance_rate": result.acceptance_rate,
    }
    label = f"{method} ({'best F seen' if decode == 'best' else decode + ' vote'}, from {settings.start})"
    return result.selections[decode], label, extra


def _print(args, cleaned, selection, value, note, method, extra=None) -> int:
    chosen = [j for j, keep in enumerate(selection) if keep > 0.5]
    if note and not args.json:
        print(f"infill: note: {note}", file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                {
                    "method": method,
                    "indices": [cleaned.indices[j] for j in chosen],
                    "sentences": [cleaned.kept[j] for j in chosen],
                    "words": sum(len(cleaned.kept[j].split()) for j in chosen),
                    "objective": value,
                    **(extra or {}),
                    "document_sentences": len(cleaned.kept) + len(cleaned.dropped),
                    "dropped": [{"index": i, "sentence": s, "reason": r} for i, s, r in cleaned.dropped],
                    "note": note,
                },
                indent=2,
            )
        )
    else:
        for j in chosen:
            print(cleaned.kept[j])
    return 0
