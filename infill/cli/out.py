"""``--out OUT.jsonl`` for a command over the lines of a file or of stdin (``infill sample``, ``infill augment``).

OUT is locked before torch is imported (a second run refused at once), FILE checked whole before anything is
written (what needs no tokenizer first, then the rest a chunk at a time), the lines then done a chunk at a time
and each chunk's records appended, so a rerun goes on after OUT's complete records; under ``torchrun`` the chunks
are dealt out over the ranks and rank 0 writes (:mod:`infill.pipeline.corpus`). A command says what its lines are
and how they are checked and done by a :class:`Corpus`."""

from __future__ import annotations

import os
from itertools import islice
from typing import Callable, Iterator, Optional, Protocol

from ..errors import InfillError
from ..pipeline.progress import Lines


class Corpus(Protocol):
    """What a command writes to OUT: ``command`` names it, ``unit`` its lines (``template``), ``noun`` what its
    records hold (``fillings``) and ``field`` a record's copy of its line (``template``)."""

    command: str
    unit: str
    noun: str
    field: str

    def items(self, path: Optional[str]) -> Iterator:
        """The non-empty lines of FILE at ``path``, read lazily, each an item with its ``line`` (a line that
        cannot be an item fails, named); stdin's where ``path`` is None, a bad line kept as an item."""
        ...

    def key(self, item) -> tuple[int, str]:
        """``item``'s line number and text, as its record holds them."""
        ...

    def check(self, item) -> None:
        """Refuse ``item`` in one line naming it, on what needs no tokenizer (nor torch)."""
        ...

    def load(self) -> None:
        """Load what :meth:`check_chunk` needs (the tokenizer), once FILE has passed :meth:`check`."""
        ...

    def check_chunk(self, items: list) -> None:
        """Refuse the first bad one of ``items`` in one line naming it (with the tokenizer)."""
        ...

    def filler(self, device: str, check: bool) -> Callable[[list], list[dict]]:
        """The model loaded on ``device``; a function from a chunk of items to their records, in order (``check``:
        the items were not checked, and a bad one's record says what is wrong with it)."""
        ...


def tokenizer_of(model: Optional[str]):
    """``(tokenizer, max_length)`` of ``model``, the model itself not loaded."""
    from ..lm import models
    from ..lm.hub import check_available

    check_available(model)
    tokenizer = models.load_tokenizer(model)
    return tokenizer, models.max_length(tokenizer, models.load_config(model))


def write_out(path: str, corpus: Corpus, file: Optional[str], device: str, quiet: bool) -> int:
    """``corpus``'s records of FILE (stdin where ``file`` is None) written to OUT at ``path``, after its complete
    records, a chunk of lines at a time; OUT locked first."""
    held, refusal = _lock(path)
    try:
        return _fill_out(path, corpus, file, device, quiet, held, refusal)
    finally:
        if held is not None:
            held.release()


def _lock(path: str):
    """OUT's lock, taken by the process that writes OUT before torch is imported: ``(lock, None)``; ``(None,
    refusal)`` on rank 0 of a ``torchrun`` launch, which tells the other ranks once they are joined (a process
    alone raises it); ``(None, None)`` on the other ranks."""
    from ..pipeline.corpus import lock

    if os.environ.get("RANK", "0") != "0":
        return None, None
    try:
        return lock(path), None
    except InfillError as exc:
        if int(os.environ.get("WORLD_SIZE", "1")) == 1:
            raise
        return None, str(exc)


def _fill_out(path: str, corpus: Corpus, file: Optional[str], device: str, quiet: bool, held, refusal) -> int:
    """:func:`write_out` once OUT is locked (``held``, on the process that writes it; ``refusal``: rank 0 could
    not lock it)."""
    from ..pipeline import corpus as corpora
    from ..pipeline.distributed import close_world, init_world

    world, device = init_world(device)
    try:
        refusal = world.broadcast(refusal)
        if refusal:
            raise InfillError(refusal)
        if file is None and world.size > 1:
            raise InfillError("under torchrun --out reads --file FILE (each process reads it), not stdin")
        if file is None:
            total = None
            corpus.load()
        else:
            total = _check_file(corpus, file, world)
        items = corpus.items(file)
        out = _resume(path, corpus, world, items, held)
        try:
            fill = corpus.filler(device, check=file is None)
            initial, quiet = out.done if out else 0, quiet or not world.is_main
            with Lines(total, corpus.command, corpus.unit, initial=initial, disable=quiet) as progress:
                for records in corpora.shards(items, fill, world, corpora.CHUNK):
                    out.write(records)
                    progress.update(len(records))
        finally:
            if out is not None:
                out.close()
    finally:
        close_world(world)
    return 0


def _check_file(corpus: Corpus, path: str, world) -> int:
    """FILE checked whole, read twice as it goes: what needs no tokenizer (nor torch) first, then the rest a chunk
    at a time, the chunks dealt out over the ranks of ``world`` (the first bad line fails every rank); its number
    of items."""
    from ..pipeline.corpus import CHUNK

    total = 0
    for item in corpus.items(path):
        corpus.check(item)
        total += 1
    if not total:
        raise InfillError(f"no {corpus.unit}s in {path} (empty lines are skipped)")
    corpus.load()
    items, first = corpus.items(path), None
    for index, chunk in enumerate(iter(lambda: list(islice(items, CHUNK)), [])):
        if index % world.size == world.rank:
            try:
                corpus.check_chunk(chunk)
            except InfillError as exc:
                first = (index, str(exc))
                break
    bad = [error for error in world.all_gather(first) if error is not None]
    if bad:
        raise InfillError(min(bad)[1])
    return total


def _resume(path: str, corpus: Corpus, world, items: Iterator, held):
    """OUT opened on rank 0 under ``held``, its lock (None elsewhere), and ``items`` advanced past its complete
    records on every rank; a refusal (OUT not writable, or of another input) raised on every rank."""
    from ..pipeline.corpus import Out

    out, error = None, None
    if world.is_main:
        try:
            out = Out(path, held, corpus.command)
        except InfillError as exc:
            error = str(exc)
    error, done = world.broadcast((error, out.done if out else 0))
    if not error and done:
        last = next(islice(items, done - 1, None), None)
        ours = None if last is None else corpus.key(last)
        if out is not None and ours != (out.last["line"], out.last.get(corpus.field)):
            out.close()
            error = (
                f"--out {path} holds the {corpus.noun} of another input (its record {done} is of line "
                f"{out.last['line']}: {out.last.get(corpus.field)!r}); give another --out"
            )
        error = world.broadcast(error)
    if error:
        raise InfillError(error)
    return out
