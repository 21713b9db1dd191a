"""``infill sample TEMPLATE``: fill the blanks of templates, one sentence per line (or JSONL with ``--json``).

Templates come from the argument, from stdin (``-``) or from ``--file``: one per line, empty lines
skipped; a line starting with ``{`` is a JSON object with ``"template"`` and optional per-line options
(``sampler``, ``num_samples``, ``steps``, ``top``, ``seed``, ``init``, ``temperature``, ``anneal_from``, ``decode``,
``allow_subwords``, ``forbid`` and sampler hyperparameters such as ``step_size``) overriding the command
line's. Every line is checked (:class:`infill.config.RunConfig`) before the model loads.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import InfillError

RUN_KEYS = ("sampler", "num_samples", "steps", "top", "seed", "init", "temperature", "anneal_from", "decode",
            "allow_subwords", "forbid")
HYPERPARAMETER_FLAGS = ("step_size", "adapt_steps")
"""Sampler hyperparameters with a flag of their own; ``-o KEY=VALUE`` reaches every hyperparameter."""


def parse_value(text: str) -> object:
    """A command-line value as int, float, bool (true/false), a list ``[a, b, ...]`` of those or, failing
    those, the string itself; the run configuration checks it."""
    if text.startswith("[") and text.endswith("]"):
        return [parse_value(item.strip()) for item in text[1:-1].split(",") if item.strip()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name, help="fill the [MASK] blanks of templates with diverse samples",
        description="Fill the blanks of a template by MCMC on a masked LM (or by drawing from the masked LM "
                    "itself). [MASK] is one token, [MASK*3] three consecutive tokens. Prints one filled "
                    "sentence per line.")
    parser.add_argument("template", nargs="?", help="the template, or - to read templates from stdin")
    parser.add_argument("--file", "-f", help="read templates from FILE (one per line, or JSONL with options)")
    parser.add_argument("--json", action="store_true",
                        help="print JSONL: one object per sample, then one {'diagnostics': ...} per template")
    parser.add_argument("--sampler", help="a sampler (see `infill samplers`) or a baseline: independent, "
                                          "left-to-right, argmax (default: see docs/usage.md)")
    parser.add_argument("--num-samples", "-n", type=int, help="chains (or draws) per template")
    parser.add_argument("--steps", type=int, help="MCMC steps per chain")
    parser.add_argument("--top", type=int, help="keep the K distinct fillings of highest energy")
    parser.add_argument("--decode", help="where --top takes fillings from: visited (every state after burn-in) "
                                         "or final (the chains' final states)")
    parser.add_argument("--init", help="chain start: uniform, independent (all-masked MLM draws) or left-to-right")
    parser.add_argument("--temperature", type=float, help="target exp(PLL / T); T < 1 favours likely fillings")
    parser.add_argument("--anneal-from", type=float, metavar="T0",
                        help="anneal from temperature T0 down to --temperature over the first half of the steps")
    parser.add_argument("--seed", type=int, help="random seed (same seed, same samples)")
    parser.add_argument("--model", help="hub id or local path (default $INFILL_MODEL or bert-base-uncased)")
    parser.add_argument("--device", default="cpu", help="torch device (cpu)")
    parser.add_argument("--dtype", help="float32 (default), bfloat16, float16 or auto")
    parser.add_argument("--chunk-size", type=int, metavar="N",
                        help="at most N masked copies per forward/backward pass (less memory; default: all at once)")
    parser.add_argument("--allow-subwords", action="store_true", default=None,
                        help="let blanks take word-continuation pieces (##ing)")
    parser.add_argument("--forbid", action="append", metavar="WORDS",
                        help="words the blanks may not take, comma-separated (repeatable)")
    parser.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                        help="a sampler hyperparameter, for any sampler (repeatable; see `infill samplers`)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    hyper = parser.add_argument_group("sampler hyperparameters (others: -o KEY=VALUE; see `infill samplers`)")
    for option in HYPERPARAMETER_FLAGS:
        hyper.add_argument("--" + option.replace("_", "-"), dest=f"hp_{option}", metavar="X")
    parser.set_defaults(run=run)
    return parser


def _cli_options(args) -> dict:
    """Run options and sampler hyperparameters given on the command line."""
    options = {key: getattr(args, key) for key in RUN_KEYS if getattr(args, key) is not None}
    if args.forbid:
        options["forbid"] = [w.strip() for item in args.forbid for w in item.split(",") if w.strip()]
    for option in HYPERPARAMETER_FLAGS:
        if getattr(args, f"hp_{option}") is not None:
            options[option] = parse_value(getattr(args, f"hp_{option}"))
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InfillError(f"--option expects KEY=VALUE, got {item!r}")
        key = key.strip().replace("-", "_")
        options[key] = parse_value(value.strip())
    return options


def _read_lines(args) -> tuple[str, list[str]]:
    if args.file is not None:
        if args.template is not None:
            raise InfillError("give a TEMPLATE or --file, not both")
        try:
            with open(args.file, encoding="utf-8") as f:
                return args.file, f.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InfillError(f"cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}") from None
    if args.template == "-":
        return "<stdin>", sys.stdin.read().splitlines()
    if args.template is None:
        raise InfillError("give a TEMPLATE (e.g. 'The [MASK] sat on the mat.'), - for stdin, or --file FILE")
    return "", [args.template]


def read_jobs(args) -> list[tuple[str, str, dict]]:
    """``(where, template, options)`` per non-empty input line (``where`` is ``FILE:LINE: `` for error
    messages), per-line JSON options over the command line's."""
    defaults = _cli_options(args)
    source, lines = _read_lines(args)
    jobs = []
    for number, line in enumerate(lines, 1):
        where = f"{source}:{number}: " if source else ""
        if not line.strip():
            continue
        if not line.lstrip().startswith("{"):
            jobs.append((where, line.strip() if source else line, dict(defaults)))
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InfillError(f"{where}invalid JSON: {exc.msg}") from None
        if not isinstance(record, dict) or not isinstance(record.get("template"), str):
            raise InfillError(f"{where}a JSON line needs a \"template\" string")
        template = record.pop("template")
        jobs.append((where, template, {**defaults, **{k.replace("-", "_"): v for k, v in record.items()}}))
    if not jobs:
        raise InfillError(f"no templates in {source or 'the input'} (empty lines are skipped)")
    return jobs


def run(args) -> int:
    from ..config import RunConfig

    jobs = read_jobs(args)
    configs, groups = [], {}
    for i, (where, _, options) in enumerate(jobs):
        try:
            config = RunConfig.create(**options)
        except InfillError as exc:
            raise InfillError(f"{where}{exc}") from None
        configs.append(config)
        groups.setdefault(repr(config), []).append(i)
    from ..infiller import Infiller

    infiller = Infiller(args.model, device=args.device, dtype=args.dtype, chunk_size=args.chunk_size)
    for (where, template, _), config in zip(jobs, configs):  # every template checked before any sampling
        try:
            parsed = infiller.parse(template)
            infiller.category_ids(config.allow_subwords, config.forbid)
            if (sampler := config.make_sampler()) is not None:
                sampler.check_variables(parsed.num_blanks)
        except InfillError as exc:
            raise InfillError(f"{where}{exc}") from None
    progress = not args.quiet and sys.stderr.isatty()
    results = [None] * len(jobs)
    for members in groups.values():
        batch = infiller.run([jobs[i][1] for i in members], configs[members[0]], progress=progress)
        for i, result in zip(members, batch):
            results[i] = result
    for result in results:
        _print(result, args.json)
    return 0


def _print(result, as_json: bool) -> None:
    if not as_json:
        for text in result.texts:
            print(text)
        return
    for sample in result.samples:
        print(json.dumps({"template": result.template, **sample.to_dict()}, ensure_ascii=False))
    print(json.dumps({"template": result.template, "diagnostics": result.diagnostics.to_dict()}, ensure_ascii=False))
