"""A corpus of templates filled into one JSONL file: written as it goes, resumable, locked, sharded.

``infill sample -f FILE --out OUT.jsonl`` writes one record per template line, in input order, each flushed as
it is done: ``{"line", "template", "fillings", "diagnostics"}`` (``fillings``: each kept filling as
:meth:`~.results.Sample.to_dict` gives it; ``diagnostics`` without the wall time, so that a resumed OUT equals an
uninterrupted one). Run again with the same OUT, it goes on after the last complete record: a last line without
its newline was cut by a kill, and is written again (:func:`resume`). While a run writes OUT it holds an OS lock on
it (``flock``, released by the kernel however the process ends), and a second run fails at once. Under
``torchrun --nproc-per-node N`` line ``i`` (counting records) goes to rank ``i mod N``, and after each round of
``N`` rank 0 writes their records in input order (:func:`rounds`): OUT is the same as one process's.

:func:`fill_iterable` and :func:`fill_dataset` are the same for Python: an iterable of templates, or a column of a
Hugging Face ``datasets.Dataset``.
"""
from __future__ import annotations

import json
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

from ..errors import InfillError

if TYPE_CHECKING:  # importing this module loads no torch: the CLI locks OUT before the model loads
    from .results import InfillResult

try:
    import fcntl
except ImportError:  # not POSIX: files are not locked
    fcntl = None

CHUNK = 64
"""Templates :func:`fill_iterable` takes at a time (each one a run of its own: the chunk only bounds memory)."""


def try_lock(fd: int, exclusive: bool) -> bool:
    """Take the OS lock (``flock``) of the open file ``fd``, exclusive or shared, without waiting: False where
    another process holds it (True where locks are not available: not POSIX)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def record(line: int, result: InfillResult) -> dict:
    """OUT's record of input ``line``: its template, fillings and diagnostics (no wall time)."""
    diagnostics = result.diagnostics.to_dict()
    diagnostics.pop("seconds", None)
    return {"line": line, "template": result.template, "fillings": [s.to_dict() for s in result.samples],
            "diagnostics": diagnostics}


class Out:
    """OUT opened for appending, locked, its half-written tail cut off; ``done`` complete records, the last of
    them ``last`` (None where there are none)."""

    def __init__(self, path: str):
        self.path = Path(path)
        if self.path.is_dir():
            raise InfillError(f"--out {path} is a directory; give a file (OUT.jsonl)")
        try:
            self.file = open(self.path, "a+b")
        except OSError as exc:
            raise InfillError(f"cannot write --out {path}: {exc.strerror}") from None
        if not try_lock(self.file.fileno(), exclusive=True):
            self.file.close()
            raise InfillError(f"--out {path} is being written by another run; wait for it or give another --out")
        self.done, self.last = resume(self.file, path)

    def write(self, entry: dict) -> None:
        self.file.write(json.dumps(entry, ensure_ascii=False).encode() + b"\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()  # and with it the lock

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
            raise InfillError(f"--out {name}: line {done + 1} is not a record of infill sample --out; give another "
                              "--out")
        done, end = done + 1, end + len(raw)
    file.truncate(end)
    file.seek(end)
    return done, last


def check_resumed(out: Out, job) -> None:
    """Fail in one line where OUT's last record is not of ``job`` (the input's job of the same rank; None where
    the input has fewer): OUT holds another input's fillings."""
    if job is None or (out.last["line"], out.last["template"]) != (job.line, job.template):
        raise InfillError(f"--out {out.path} holds the fillings of another input (its record {out.done} is of line "
                          f"{out.last['line']}: {out.last['template']!r}); give another --out")


def rounds(items: Iterable, rank: int, size: int) -> Iterator[tuple[list, object]]:
    """``items`` dealt out in rounds of ``size``: each round's items, and this rank's among them (None where the
    round has fewer)."""
    items = iter(items)
    while chunk := list(islice(items, size)):
        yield chunk, chunk[rank] if rank < len(chunk) else None


def fill_iterable(infiller, templates: Iterable[str], **options) -> Iterator[InfillResult]:
    """:meth:`~.infiller.Infiller.sample_many` over an iterable of templates, lazily, in order: each result as
    its chunk of :data:`CHUNK` is done. ``options`` as ``sample_many``'s; a template gets what it gets alone."""
    templates = iter(templates)
    while chunk := list(islice(templates, CHUNK)):
        yield from infiller.sample_many(chunk, **options)


def fill_dataset(infiller, dataset, column: str = "template", **options):
    """``dataset`` (a Hugging Face ``datasets.Dataset``) with the fillings of its ``column`` of templates added:
    ``fillings`` (the filled texts, best first where ``top`` is given), ``fills`` (each filling's fill per
    blank) and ``energies`` (their PLLs). ``options`` as :meth:`~.infiller.Infiller.sample_many`'s."""
    if column not in dataset.column_names:
        raise InfillError(f"the dataset has no column {column!r} (it has {', '.join(dataset.column_names)})")

    def fill(batch: dict) -> dict:
        results = infiller.sample_many(batch[column], **options)
        return {"fillings": [r.texts for r in results], "fills": [[s.fills for s in r.samples] for r in results],
                "energies": [[s.energy for s in r.samples] for r in results]}
    return dataset.map(fill, batched=True, batch_size=CHUNK, load_from_cache_file=False)

