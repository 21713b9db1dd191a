"""A corpus of templates filled into one JSONL file: read as it goes, written in order, resumable, locked, sharded.

``infill sample -f FILE --out OUT.jsonl`` writes one record per template line, in input order:
``{"line", "template", "fillings", "diagnostics"}`` (``fillings`` as :func:`fillings` gives them: each distinct
filling once with the ``count`` of draws that reached it, or the ``top`` ones; ``diagnostics`` without the wall
time, so that a resumed OUT equals an uninterrupted one), or ``{"line", "template", "error"}`` for a bad line of
stdin. Templates are filled :data:`CHUNK` at a time through the batch API (:meth:`~.infiller.Infiller.run`; a
template gets what it gets alone), each chunk's records written and flushed as it is done. Run again with the same
OUT, it goes on after the last complete record: a last line without its newline was cut by a kill, and is written
again (:func:`resume`). A run holds ``OUT.lock`` (:func:`lock`: an OS lock the kernel drops however the process
ends) from its start, before torch is imported, and a second run fails at once. Under ``torchrun
--nproc-per-node N`` the lines come in rounds of ``N x CHUNK``, line ``i`` of a round going to rank ``i mod N``;
rank 0 gathers each round and writes it in input order (:func:`shards`), so OUT is the same as one process's.
``infill augment -f FILE --out OUT.jsonl`` writes its records the same way (:mod:`infill.cli.out` runs both).

:func:`fill_iterable` and :func:`fill_dataset` are the same for Python: an iterable of templates, or a column of a
Hugging Face ``datasets.Dataset``, sharded over the ranks of a ``torchrun`` launch, every rank getting every result.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional

from filelock import FileLock, Timeout

from ..errors import InfillError

if TYPE_CHECKING:  # importing this module loads no torch: the CLI locks OUT before the model loads
    from .results import InfillResult

CHUNK = 64
"""Templates filled by one call of the batch API (and so the most held in memory at a time, per process)."""


def fillings(result: InfillResult, top: Optional[int]) -> list[dict]:
    """``result``'s fillings as a record holds them, ``{"text", "count", "fills", "energy"}`` each (and ``terms``
    under constraints): without ``top``, each distinct text once with the ``count`` of draws that reached it (the
    fills and energy of its best draw), most drawn first, then by energy, then by text; with ``top``, the top
    fillings as they come, ``count`` None (chosen among the states the chains visited too: not counted). The keys
    are the same either way, so that ``datasets`` loads a file of both as one typed column."""
    from .results import top_distinct

    lean = [
        {"text": s.text, "count": None, **{k: v for k, v in s.to_dict().items() if k not in ("chain", "tokens")}}
        for s in result.samples
    ]
    if top is not None:
        return lean
    counts = Counter(f["text"] for f in lean)
    best = top_distinct(lean, None, key=lambda f: f["text"], energy=lambda f: f["energy"])
    return sorted(
        ({**f, "count": counts[f["text"]]} for f in best), key=lambda f: (-f["count"], -f["energy"], f["text"])
    )


def record(line: int, result: InfillResult, top: Optional[int]) -> dict:
    """OUT's record of input ``line``: its template, :func:`fillings` and diagnostics (no wall time)."""
    diagnostics = result.diagnostics.to_dict()
    diagnostics.pop("seconds", None)
    return {"line": line, "template": result.template, "fillings": fillings(result, top), "diagnostics": diagnostics}


def error_record(line: int, template: str, error: str) -> dict:
    """OUT's record of a bad input ``line``: what is wrong with it."""
    return {"line": line, "template": template, "error": error}


def lock(path: str) -> FileLock:
    """``OUT.lock`` held for OUT at ``path`` (:mod:`filelock`, which needs no torch: a refusal comes at once), or
    a one-line refusal: OUT is a directory, cannot be written, or is being written by another run."""
    out = Path(path)
    if out.is_dir():
        raise InfillError(f"--out {path} is a directory; give a file (OUT.jsonl)")
    if not out.parent.is_dir():  # checked here: filelock would make the directory
        raise InfillError(f"cannot write --out {path}: no directory {out.parent}")
    held = FileLock(f"{path}.lock", timeout=0)
    try:
        held.acquire()
    except Timeout:
        raise InfillError(f"--out {path} is being written by another run; wait for it or give another --out") from None
    except OSError as exc:
        raise InfillError(f"cannot write --out {path}: {exc.strerror or exc}") from None
    return held


class Out:
    """OUT of ``command`` opened for appending under ``held`` (:func:`lock`'s; taken here where None), its
    half-written tail cut off; ``done`` complete records, the last of them ``last`` (None where there are none)."""

    def __init__(self, path: str, held: Optional[FileLock] = None, command: str = "infill sample"):
        self.path = Path(path)
        self.lock = lock(path) if held is None else held
        try:
            self.file = open(self.path, "a+b")
        except OSError as exc:
            self.lock.release()
            raise InfillError(f"cannot write --out {path}: {exc.strerror}") from None
        try:
            self.done, self.last = resume(self.file, path, command)
        except InfillError:
            self.close()
            raise

    def write(self, entries: Iterable[dict]) -> None:
        """Append ``entries``, one line each, and flush them to the OS."""
        self.file.write(b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in entries))
        self.file.flush()

    def close(self) -> None:
        self.file.close()
        self.lock.release()

    def __enter__(self) -> "Out":
        return self

    def __exit__(self, *_) -> None:
        self.close()


def resume(file, name: str, command: str = "infill sample") -> tuple[int, Optional[dict]]:
    """The complete records at the head of ``file`` and the last of them; a last line without its newline is cut
    off. A complete line that is not a record fails in one line (OUT is not ``command``'s)."""
    file.seek(0)
    done, end, last = 0, 0, None
    for raw in file:
        if not raw.endswith(b"\n"):
            break
        try:
            last = json.loads(raw)
        except json.JSONDecodeError:
            last = None
        if not isinstance(last, dict) or "line" not in last:
            raise InfillError(f"--out {name}: line {done + 1} is not a record of {command} --out; give another --out")
        done, end = done + 1, end + len(raw)
    file.truncate(end)
    file.seek(end)
    return done, last


def shards(
    items: Iterable, fill: Callable[[list], list], world, chunk: int = CHUNK, everywhere: bool = False
) -> Iterator[list]:
    """``fill`` over ``items`` sharded across ``world`` (:class:`~infill.pipeline.distributed.World`): rounds
    of ``world.size x chunk`` items, item ``i`` of a round filled by rank ``i mod size``; yields each round's
    results in input order on rank 0 (``everywhere``: on every rank), nothing elsewhere."""
    gather = world.all_gather if everywhere else world.gather
    items = iter(items)
    while batch := list(islice(items, world.size * chunk)):
        parts = gather(fill(batch[world.rank :: world.size]))
        if parts is not None:
            yield [parts[i % world.size][i // world.size] for i in range(len(batch))]


def fill_iterable(infiller, templates: Iterable[str], world=None, **options) -> Iterator[InfillResult]:
    """:meth:`~.infiller.Infiller.sample_many` over an iterable of templates of any length, lazily, in order:
    :data:`CHUNK` at a time, each result as its chunk is done. ``options`` as ``sample_many``'s; a template gets
    what it gets alone. ``world`` (:func:`~infill.pipeline.distributed.init_world`'s, under ``torchrun``) shares
    the chunks out over the ranks, every rank yielding every result."""
    from .distributed import World

    world = world or World()
    for results in shards(templates, lambda part: infiller.sample_many(part, **options), world, everywhere=True):
        yield from results


def fill_dataset(infiller, dataset, column: str = "template", world=None, **options):
    """``dataset`` (a Hugging Face ``datasets.Dataset``) with the :func:`fillings` of its ``column`` of templates
    added as columns (``Dataset.map``, batched): ``fillings`` (the filled texts), ``fills`` (each one's fill per
    blank), ``energies`` (their PLLs) and, without ``top``, ``counts`` (the draws that reached each). ``options``
    and ``world`` as :func:`fill_iterable`'s: every rank returns the whole dataset filled."""
    from .distributed import World

    if column not in dataset.column_names:
        raise InfillError(f"the dataset has no column {column!r} (it has {', '.join(dataset.column_names)})")
    world, top = world or World(), options.get("top")
    keys = {"fillings": "text", "fills": "fills", "energies": "energy", **({"counts": "count"} if top is None else {})}

    def fill(batch: dict) -> dict:
        kept = [fillings(r, top) for r in fill_iterable(infiller, batch[column], world, **options)]
        return {name: [[f[key] for f in row] for row in kept] for name, key in keys.items()}

    return dataset.map(fill, batched=True, batch_size=world.size * CHUNK, load_from_cache_file=False)
