"""Batch corpus evaluation of infilling samplers under a protocol file (``infill eval``).

``evaluate`` checks everything that can be checked (output directory, protocol, samplers, corpora, sentence
selection) before it writes anything, then runs the missing (sentence, sampler) units, resumably, and writes
the report of every unit the output directory holds: rows added by earlier commands stay in it. The
sampling is injected (``make_sample_fn``) so that the pipeline can run without a model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ..errors import InfillError
from .corpora import load_corpus
from .protocol import Protocol, load_protocol
from .store import UnitStore, check_out, write_atomic
from .tasks import Task, limit_tasks, make_tasks, references

if TYPE_CHECKING:  # torch, nltk: imported once a protocol has been read (a bad one fails fast)
    from ..pipeline.distributed import World
    from .runner import SampleFn

__all__ = ["evaluate", "load_protocol", "Protocol", "Task"]


def _configs(protocol: Protocol, rows: Sequence[str]) -> dict[str, dict]:
    """Each report row's settings (the protocol's over the defaults), as stored with its units."""
    from .runner import config_signature

    if not rows or len(set(rows)) < len(rows):
        raise InfillError("give one or more distinct samplers")
    for row in rows:
        if row in protocol.budgets and protocol.budgets[row] not in rows:
            raise InfillError(
                f"{row} draws as many encoder sequences as {protocol.budgets[row]}: run {protocol.budgets[row]} with it"
            )
    return {
        row: json.loads(json.dumps(config_signature(protocol.run_config(row), protocol.budgets.get(row))))
        for row in rows
    }


def _check_stored(store: UnitStore, configs: dict[str, dict]) -> None:
    """Refuse to mix units sampled with other settings (e.g. after a change of defaults)."""
    from .runner import taken

    for (sentence_id, row), unit in store.units.items():
        stored = unit.get("config")
        if row in configs and stored is not None and taken(stored) != configs[row]:
            raise InfillError(
                f"{store.directory} has {row} units sampled with {stored}, not {configs[row]}; use another --out"
            )


def _tasks_jsonl(tasks: list[Task]) -> str:
    return "".join(
        json.dumps(
            {
                "sentence_id": t.sentence_id,
                "corpus": t.corpus,
                "sentence": t.text,
                "masked": list(t.masked),
                "template": t.template,
            },
            ensure_ascii=False,
        )
        + "\n"
        for t in tasks
    )


def _open_store(
    world: World, out: Path, fingerprint: dict, configs: dict[str, dict], manifest: str
) -> Optional[UnitStore]:
    """Rank 0 opens (or resumes) the output directory; its error, if any, is raised on every rank."""
    store, error = None, None
    if world.is_main:
        try:
            store = UnitStore(out, fingerprint)
            _check_stored(store, configs)
            write_atomic(out / "tasks.jsonl", manifest)
        except InfillError as exc:
            error = str(exc)
        except (OSError, ValueError) as exc:  # unwritable --out, a corrupt run.json
            error = f"cannot use --out {out}: {exc}"
    error = world.broadcast(error)
    if error:
        raise InfillError(error)
    return store


def evaluate(
    protocol_path: str | Path,
    out: str | Path,
    model: str,
    samplers: Optional[Sequence[str]] = None,
    device: str = "cpu",
    limit: Optional[int] = None,
    make_sample_fn: Optional[Callable[[], SampleFn]] = None,
    progress: bool = True,
    bleu: str = "nltk",
) -> Optional[dict]:
    """Run (or resume) an evaluation into ``out`` and return the report of every unit ``out`` holds, earlier
    commands' rows and sentences included (None on ranks other than 0 of a ``torchrun`` launch, see
    :mod:`infill.pipeline.distributed`).

    ``samplers`` defaults to the protocol's; ``bleu`` is the report's BLEU definition (``"nltk"``, the
    papers', or ``"sacrebleu"``: see :mod:`infill.metrics`), checked before anything runs; ``limit`` keeps
    the first ``limit`` chosen sentences of each corpus; ``make_sample_fn`` builds the sampling function
    (default: an ``infill.Infiller`` on ``model`` and ``device``), called once the protocol and corpora are
    known to be good and before anything is written.
    """
    check_out(Path(out))
    protocol = load_protocol(protocol_path)
    from ..metrics import check_bleu
    from ..pipeline.distributed import close_world, init_world
    from .report import write_report
    from .runner import run_units

    check_bleu(bleu)
    samplers = list(samplers or protocol.samplers)
    configs = _configs(protocol, samplers)
    tasks, chosen, refs = _select(protocol, limit)
    world, device = init_world(device)
    try:
        # a bad model or device fails here, before anything is written
        sample_fn = make_sample_fn() if make_sample_fn is not None else _infiller_sample_fn(model, device)
        manifest = _tasks_jsonl(tasks)
        store = _open_store(world, Path(out), _fingerprint(protocol, manifest, model), configs, manifest)
        done = world.broadcast(set(store.units) if world.is_main else None)
        run_units(chosen, samplers, protocol, store, sample_fn, done, world, progress)
    finally:
        close_world(world)
    if not world.is_main:
        return None
    try:
        units = _stored_units(store, tasks, protocol)
        return write_report(out, units, refs, _signature(protocol, model, device, units), bleu)
    finally:
        store.close()  # the lock on --out is held until the report is written


def _select(protocol: Protocol, limit: Optional[int]) -> tuple[list[Task], list[Task], dict[str, list[list[str]]]]:
    """``(tasks, chosen, references)``: every task of the protocol's corpora, the first ``limit`` of each
    corpus (every one with ``None``), and each corpus's reference sentences, which must not be empty."""
    if limit is not None and limit < 1:
        raise InfillError(f"--limit must be at least 1, not {limit}")
    corpora = {spec.name: load_corpus(spec, protocol.lowercase) for spec in protocol.corpora}
    tasks = make_tasks(protocol, corpora)
    chosen = limit_tasks(tasks, limit)
    refs = references(corpora, tasks)
    empty = [name for name, lines in refs.items() if not lines]
    if empty:
        raise InfillError(f"corpus {empty[0]!r} has no reference sentence left beside the chosen ones")
    return tasks, chosen, refs


def _infiller_sample_fn(model: str, device: str) -> SampleFn:
    """The default sampling: an ``infill.Infiller`` on ``model`` and ``device``."""
    from ..pipeline.infiller import Infiller
    from .runner import infiller_sample_fn

    return infiller_sample_fn(Infiller(model=model, device=device))


def _fingerprint(protocol: Protocol, manifest: str, model: str) -> dict:
    """What every unit depends on: the sentences and their masks (``manifest``) and the model. Each row's
    settings are checked per unit, so a row added to the protocol keeps the finished units of the others."""
    return {
        "protocol": protocol.name,
        "tasks_sha256": hashlib.sha256(manifest.encode()).hexdigest(),
        "model": model,
    }


def _stored_units(store: UnitStore, tasks: list[Task], protocol: Protocol) -> list[dict]:
    """Every unit of ``store``: rows in the protocol's order (others after, in stored order), each row's
    sentences in the order of ``tasks``."""
    rows = list(dict.fromkeys([*protocol.samplers, *(row for _, row in store.units)]))
    position = {task.sentence_id: i for i, task in enumerate(tasks)}
    return sorted(store.units.values(), key=lambda u: (rows.index(u["sampler"]), position[u["sentence_id"]]))


def _signature(protocol: Protocol, model: str, device: str, units: list[dict]) -> dict:
    """The settings that reproduce the report of ``units``: each row's settings and sentences per corpus."""
    from ..pipeline.signature import library_versions
    from .report import EVAL_PACKAGES
    from .runner import taken

    samplers, sentences = {}, {}
    for unit in units:
        samplers.setdefault(unit["sampler"], taken(unit["config"]))
        counts = sentences.setdefault(unit["sampler"], {spec.name: 0 for spec in protocol.corpora})
        counts[unit["corpus"]] += 1
    return {
        "model": model,
        "device": device,
        "samplers": samplers,
        "seed": protocol.seed,
        "protocol": {
            "name": protocol.name,
            "file": protocol.path.name,
            "sha256": protocol.sha256,
            "chains": protocol.chains,
            "steps": protocol.steps,
            "top": protocol.top,
            "words": [protocol.min_words, protocol.max_words],
            "mask": {
                "fraction": protocol.mask.fraction,
                "count": protocol.mask.count,
                "exclude_ends": protocol.mask.exclude_ends,
            },
        },
        "sentences": sentences,
        "versions": library_versions(EVAL_PACKAGES),
    }
