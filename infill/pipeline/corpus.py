"""A corpus of templates filled into one JSONL file: read as it goes, written in order, resumable, locked, sharded.

``infill sample -f FILE --out OUT.jsonl`` writes one record per template line, in input order:
``{"line", "template", "fillings", "diagnostics"}`` (``fillings``: each kept filling as
:meth:`~.results.Sample.to_dict` gives it; ``diagnostics`` without the wall time, so that a resumed OUT equals an
uninterrupted one), or ``{"line", "template", "error"}`` for a bad line of stdin. Templates are filled
:data:`CHUNK` at a time through the batch API (:meth:`~.infiller.Infiller.run`; a template gets what it gets
alone), each chunk's records written and flushed as it is done. Run again with the same OUT, it goes on after the
last complete record: a last line without its newline was cut by a kill, and is written again (:func:`resume`).
While a run writes OUT it holds ``OUT.lock`` (:mod:`filelock`: an OS lock the kernel drops however the process
ends), and a second run fails at once. Under ``torchrun --nproc-per-node N`` the lines come in rounds of
``N x CHUNK``, line ``i`` of a round going to rank ``i mod N``; rank 0 gathers each round and writes it in input
order (:func:`shards`), so OUT is the same as one process's.

:func:`fill_iterable` and :func:`fill_dataset` are the same for Python: an iterable of templates, or a column of a
Hugging Face ``datasets.Dataset``, sharded over the ranks of a ``torchrun`` launch, every rank getting every result.
"""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional

from filelock import FileLock, Timeout

from ..errors import InfillError

if TYPE_CHECKING:  # importing this module loads no torch: the CLI locks OUT before the model loads
    from .results import InfillResult

CHUNK = 64
"""Templates filled by one call of the batch API (and so the most held in memory at a time, per process)."""


def record(line: int, result: InfillResult) -> dict:
    """OUT's record of input ``line``: its template, fillings and diagnostics (no wall time)."""
    diagnostics = result.diagnostics.to_dict()
    diagnostics.pop("seconds", None)
    return {
        "line": line,
        "template": result.template,
        "fillings": [s.to_dict() for s in result.samples],
        "diagnostics": diagnostics,
    }


def error_record(line: int, template: str, error: str) -> dict:
    """OUT's record of a bad input ``line``: what is wrong with it."""
    return {"line": line, "template": template, "error": error}


class Out:
    """OUT locked and opened for appending, its half-written tail cut off; ``done`` complete records, the last of
    them ``last`` (None where there are none)."""

    def __init__(self, path: str):
        self.path = Path(path)
        if self.path.is_dir():
            raise InfillError(f"--out {path} is a directory; give a file (OUT.jsonl)")
        try:  # opened first, so that a path that cannot be written is not taken for a lock held
            self.file = open(self.path, "a+b")
        except OSError as exc:
            raise InfillError(f"cannot write --out {path}: {exc.strerror}") from None
        self.lock = FileLock(f"{path}.lock", timeout=0)
        try:
            self.lock.acquire()
        except (Timeout, OSError) as exc:
            self.file.close()
            raise InfillError(
                f"--out {path} is being written by another run; wait for it or give another --out"
                if isinstance(exc, Timeout)
                else f"cannot lock --out {path}: {exc}"
            ) from None
        try:
            self.done, self.last = resume(self.file, path)
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


def resume(file, name: str) -> tuple[int, Optional[dict]]:
    """The complete records at the head of ``file`` and the last of them; a last line without its newline is cut
    off. A complete line that is not a record fails in one line (OUT is not this command's)."""
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
            raise InfillError(
                f"--out {name}: line {done + 1} is not a record of infill sample --out; give another --out"
            )
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
    """``dataset`` (a Hugging Face ``datasets.Dataset``) with the fillings of its ``column`` of templates added
    (``Dataset.map``, batched): ``fillings`` (the filled texts, best first where ``top`` is given), ``fills``
    (each filling's fill per blank) and ``energies`` (their PLLs). ``options`` and ``world`` as
    :func:`fill_iterable`'s: every rank returns the whole dataset filled."""
    from .distributed import World

    if column not in dataset.column_names:
        raise InfillError(f"the dataset has no column {column!r} (it has {', '.join(dataset.column_names)})")
    world = world or World()

    def fill(batch: dict) -> dict:
        results = list(fill_iterable(infiller, batch[column], world, **options))
        return {
            "fillings": [r.texts for r in results],
            "fills": [[s.fills for s in r.samples] for r in results],
            "energies": [[s.energy for s in r.samples] for r in results],
        }

    return dataset.map(fill, batched=True, batch_size=world.size * CHUNK, load_from_cache_file=False)
