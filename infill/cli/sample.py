"""``infill sample TEMPLATE``: fill the blanks of templates, one sentence per line (or JSONL with ``--json``).

Templates come from the argument, from stdin (``-``) or from ``--file``: one per line, empty lines
skipped; a line starting with ``{`` is a JSON object with ``"template"`` and optional per-line options
(``sampler``, ``num_samples``, ``steps``, ``top``, ``seed``, ``init``, ``temperature``, ``anneal_from``, ``decode``,
``allow_subwords``, ``forbid`` and sampler hyperparameters such as ``step_size``) overriding the command
line's. Every line is checked (:class:`infill.pipeline.config.RunConfig`) before the model loads.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from itertools import groupby
from typing import Iterable, Iterator, NamedTuple, Optional

from ..errors import InfillError
from ..pipeline.config import flag, settings
from ..pipeline.progress import Lines
from ..text.blanks import scan
from . import add_model_flags
from .out import tokenizer_of, write_out

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
        name,
        description="Fill the blanks of a template by MCMC on a masked LM (or by drawing from the masked LM "
        "itself). [MASK] is one token (one word with --blank-unit word), [MASK*3] three, "
        "[MASK*1-3] one to three words, [MASK*?] one to four. Prints one filled sentence per line.",
    )
    parser.add_argument("template", nargs="?", help="the template, or - to read templates from stdin")
    parser.add_argument("--file", "-f", help="read templates from FILE (one per line, or JSONL with options)")
    parser.add_argument(
        "--out",
        metavar="OUT.jsonl",
        help="with --file or -: write a JSON record per template line to OUT, a chunk at a time, in "
        "input order; run again to go on after the last complete one (lines without a seed: "
        "seed 0)",
    )
    add_run_arguments(parser)
    parser.set_defaults(run=run)
    return parser


def add_run_arguments(
    parser: argparse.ArgumentParser, skip: tuple[str, ...] = (), helps: Optional[dict] = None
) -> None:
    """``--json``, a flag per run setting (RunConfig's fields but ``skip``; ``helps``: a setting's own help, its
    default included), the model's and the sampler's flags: what ``sample`` and ``rewrite`` share."""
    helps = helps or {}
    parser.add_argument(
        "--json",
        action="store_true",
        help=helps.get(
            "json", "print JSONL: one object per sample, then one {'diagnostics', 'marginals'} per template"
        ),
    )
    _add_setting_flags(parser, skip, helps)
    _add_model_and_sampler_flags(parser, helps)


def _add_setting_flags(parser: argparse.ArgumentParser, skip: tuple[str, ...], helps: dict) -> None:
    """A flag per run setting (RunConfig's fields but ``skip``), ``helps`` overriding a setting's help."""
    for setting in settings():  # the run settings: one list, RunConfig's fields
        if setting.name in skip:
            continue
        meta = setting.metadata
        flags = [flag(setting.name), *filter(None, [meta.get("short")])]
        if setting.type in (bool, "bool"):
            parser.add_argument(*flags, dest=setting.name, action="store_true", default=None, help=meta["help"])
        elif setting.name in ("forbid", "include"):
            parser.add_argument(*flags, dest=setting.name, action="append", metavar=meta["metavar"], help=meta["help"])
        else:
            default = f" (default: {setting.default})" if setting.default is not None else ""
            parser.add_argument(
                *flags,
                dest=setting.name,
                type=meta.get("type", str),
                metavar=meta.get("metavar"),
                help=helps.get(setting.name, meta["help"] + default),
            )


def _add_model_and_sampler_flags(parser: argparse.ArgumentParser, helps: dict) -> None:
    """The model's flags, ``--option``, ``--quiet`` and the named sampler hyperparameters."""
    add_model_flags(parser, chunk="at most N masked copies per forward/backward pass (less memory; default: all)")
    parser.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a sampler hyperparameter, for any sampler (repeatable; see `infill samplers`)",
    )
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help=helps.get(
            "quiet",
            "no progress on stderr (by default a bar on a terminal, else a line per template done when there are "
            "several)",
        ),
    )
    hyper = parser.add_argument_group("sampler hyperparameters (others: -o KEY=VALUE; see `infill samplers`)")
    for option in HYPERPARAMETER_FLAGS:
        hyper.add_argument("--" + option.replace("_", "-"), dest=f"hp_{option}", metavar="X")


def cli_options(args) -> dict:
    """Run options and sampler hyperparameters given on the command line."""
    options = {
        s.metadata.get("key", s.name): getattr(args, s.name)
        for s in settings()
        if getattr(args, s.name, None) is not None
    }
    if args.forbid is not None:
        options["forbid"] = [w for item in args.forbid for w in _words(item)]
        if not options["forbid"]:
            raise InfillError("--forbid needs a word (a lone , forbids the comma), got an empty value")
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


def _words(item: str) -> list[str]:
    """Comma-separated words; a lone ``,`` is the comma itself."""
    if item.strip() == ",":
        return [","]
    return [w.strip() for w in item.split(",") if w.strip()]


def read_lines(given: list[str], file: Optional[str], what: str) -> tuple[str, list[str]]:
    """``(source, lines)``: FILE's lines, stdin's for a lone ``-``, or the arguments ``given`` themselves (source
    ``""``); ``what`` names an argument in messages (``"a TEMPLATE (e.g. ...)"``). What ``sample`` and ``score``
    share."""
    if file is not None:
        if given:
            raise InfillError(f"give {what.split(' (')[0]} or --file, not both")
        return file, list(file_lines(file))
    if given == ["-"]:
        return "<stdin>", sys.stdin.read().splitlines()
    if not given:
        raise InfillError(f"give {what}, - for stdin, or --file FILE")
    return "", given


class Job(NamedTuple):
    """A template to fill: its input ``line`` (None for the TEMPLATE argument), ``where`` error messages say it
    is (``FILE:LINE: ``), and its options; ``error`` what is wrong with a line kept though bad (the line itself
    its template)."""

    line: Optional[int]
    where: str
    template: str
    options: dict
    error: Optional[str] = None


def read_jobs(args) -> list[Job]:
    """A job per non-empty input line, per-line JSON options over the command line's."""
    given = [] if args.template is None else [args.template]
    source, lines = read_lines(given, args.file, "a TEMPLATE (e.g. 'The [MASK] sat on the mat.')")
    if not source and not lines[0].strip():
        raise InfillError("the template is empty; give one with a [MASK] blank, e.g. 'The [MASK] sat on the mat.'")
    jobs = list(iter_jobs(lines, source, cli_options(args)))
    if not jobs:
        raise InfillError(f"no templates in {source or 'the input'} (empty lines are skipped)")
    return jobs


def iter_jobs(lines: Iterable[str], source: str, defaults: dict, keep_bad: bool = False) -> Iterator[Job]:
    """A job per non-empty line of ``lines`` (from ``source``; ``""`` for the TEMPLATE argument), lazily; a line
    that is not a template fails, or with ``keep_bad`` is a job with its ``error``."""
    for number, line in enumerate(lines, 1):
        number, where = (number, f"{source}:{number}: ") if source else (None, "")
        if not line.strip():
            continue
        if not line.lstrip().startswith("{"):
            yield Job(number, where, line.strip() if source else line, dict(defaults))
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("template"), str):
                raise InfillError('a JSON line needs a "template" string')
        except (json.JSONDecodeError, InfillError) as exc:
            error = f"invalid JSON: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            if not keep_bad:
                raise InfillError(f"{where}{error}") from None
            yield Job(number, where, line.strip(), {}, error)
            continue
        template = record.pop("template")
        yield Job(number, where, template, {**defaults, **{k.replace("-", "_"): v for k, v in record.items()}})


def file_lines(path: str) -> Iterator[str]:
    """FILE's lines, read as they are needed."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield line.rstrip("\r\n")
    except UnicodeDecodeError:
        raise InfillError(f"cannot read {path}: it is not UTF-8 text (save it as UTF-8)") from None
    except OSError as exc:
        raise InfillError(f"cannot read {path}: {exc.strerror or exc}") from None


def checked(job: Job):
    """``job``'s run configuration; its template's syntax checked first (neither needs a tokenizer)."""
    from ..pipeline.config import RunConfig

    try:
        if job.error:
            raise InfillError(job.error)
        scan(job.template, job.options.get("blank_unit", RunConfig.blank_unit))
        return RunConfig.create(**job.options)
    except InfillError as exc:
        raise InfillError(f"{job.where}{exc}") from None


def prepared(job: Job, config, tokenizer, limit: int):
    """``job`` prepared for the model (every check that needs the tokenizer)."""
    from ..pipeline.prepare import prepare

    try:
        return prepare([job.template], config, tokenizer, limit)
    except InfillError as exc:
        raise InfillError(f"{job.where}{exc}") from None


def groups(jobs: list[Job], tokenizer, limit: int) -> Iterator[tuple[list[Job], object]]:
    """``jobs`` in runs of consecutive jobs of one configuration, each run prepared for the model as one (a
    vocabulary's categories built once, not per line): ``(run, prepared)``. A bad job fails naming its line."""
    from ..pipeline.prepare import prepare

    for config, run in groupby(((job, checked(job)) for job in jobs), key=lambda item: item[1]):
        run = [job for job, _ in run]
        try:
            batch = prepare([job.template for job in run], config, tokenizer, limit)
        except InfillError:
            for job in run:
                prepared(job, config, tokenizer, limit)  # fails on the bad line, named
            raise
        yield run, batch


def run(args) -> int:
    if args.out is not None:
        return run_to_out(args)
    jobs = read_jobs(args)
    configs = [checked(job) for job in jobs]  # what needs no tokenizer (nor torch) first
    load_model, tokenizer, limit = _load(args)
    lines = [prepared(job, config, tokenizer, limit) for job, config in zip(jobs, configs)]  # every line checked
    infiller = load_model(args.device)
    bar = not args.quiet and sys.stderr.isatty()  # each run's; elsewhere a line per template of several
    with Lines(len(lines), "infill sample", "template", disable=args.quiet or bar or len(lines) == 1) as progress:
        for job, line in zip(jobs, lines):  # each line a run of its own: what it alone prints
            result = infiller.run(line, progress=bar)[0]
            if job.line is not None and not args.json:  # which input line the fillings below are of
                print(f"# line {job.line}")
            print_result(result, args.json)
            progress.set_postfix_str(job.where.rstrip(": "))
            progress.update()
    return 0


def run_to_out(args) -> int:
    """``--out``: the input filled into OUT after OUT's complete records, a chunk of lines per call of the batch
    API; OUT locked first (a run refused is refused at once), FILE checked whole (read twice, lazily, before the
    model loads), stdin's bad lines written as error records; lines dealt out over the ranks of a ``torchrun``
    launch, rank 0 writing (:mod:`infill.cli.out`)."""
    stdin = args.file is None and args.template == "-"
    if not stdin and (args.file is None or args.template is not None):
        raise InfillError("--out fills the lines of --file FILE or of stdin (-)")
    templates = _Templates(args, {"seed": 0, **cli_options(args)})
    return write_out(args.out, templates, args.file, args.device, args.quiet)


class _Templates:
    """``sample``'s lines as :func:`~infill.cli.out.write_out` takes them (:class:`~infill.cli.out.Corpus`)."""

    command, unit, noun, field = "infill sample", "template", "fillings", "template"

    def __init__(self, args, defaults: dict):
        self.args, self.defaults = args, defaults

    def items(self, path: Optional[str]) -> Iterator[Job]:
        if path is None:
            return iter_jobs((line.rstrip("\r\n") for line in sys.stdin), "<stdin>", self.defaults, True)
        return iter_jobs(file_lines(path), path, self.defaults)

    def key(self, job: Job) -> tuple[int, str]:
        return job.line, job.template

    def check(self, job: Job) -> None:
        checked(job)

    def load(self) -> None:
        self.load_model, self.tokenizer, self.limit = _load(self.args)

    def check_chunk(self, jobs: list[Job]) -> None:
        for _ in groups(jobs, self.tokenizer, self.limit):
            pass

    def filler(self, device: str, check: bool):
        return partial(fill_records, self.load_model(device), tokenizer=self.tokenizer, limit=self.limit, check=check)


def fill_records(infiller, jobs: list[Job], tokenizer, limit: int, check: bool) -> list[dict]:
    """OUT's records of ``jobs``, in order, each run of one configuration filled by one call of the batch API
    (a template gets what it gets alone). ``check`` (jobs not checked before): a bad job's record is an error
    record."""
    from ..pipeline import corpus

    bad = _bad(jobs, tokenizer, limit) if check else {}
    good = [job for index, job in enumerate(jobs) if index not in bad]
    records = iter(
        [
            corpus.record(job.line, result, batch.config.top)
            for run, batch in groups(good, tokenizer, limit)
            for job, result in zip(run, infiller.run(batch))
        ]
    )
    return [
        corpus.error_record(job.line, job.template, bad[index]) if index in bad else next(records)
        for index, job in enumerate(jobs)
    ]


def _bad(jobs: list[Job], tokenizer, limit: int) -> dict[int, str]:
    """What is wrong with each bad job, by its index (each job checked alone only where the runs fail)."""
    try:
        for _ in groups(jobs, tokenizer, limit):
            pass
        return {}
    except InfillError:
        pass
    bad = {}
    for index, job in enumerate(jobs):
        try:
            prepared(job, checked(job), tokenizer, limit)
        except InfillError as exc:
            bad[index] = str(exc).removeprefix(job.where)
    return bad


def _load(args):
    """``(load_model, tokenizer, max_length)``: the model's tokenizer and length limit, and
    ``load_model(device)``, which loads the model (once every line is checked)."""
    from ..pipeline.infiller import Infiller

    tokenizer, limit = tokenizer_of(args.model)

    def load_model(device: str) -> Infiller:
        return Infiller(args.model, device=device, dtype=args.dtype, tokenizer=tokenizer, chunk_size=args.chunk_size)

    return load_model, tokenizer, limit


def print_result(result, as_json: bool) -> None:
    if not as_json:
        print("\n".join(result.texts), flush=True)
        return
    for sample in result.samples:
        print(json.dumps({"template": result.template, **sample.to_dict()}, ensure_ascii=False))
    print(
        json.dumps(
            {"template": result.template, "diagnostics": result.diagnostics.to_dict(), "marginals": result.marginals},
            ensure_ascii=False,
        ),
        flush=True,
    )
