"""Crash-safe storage of finished evaluation units and atomic writing of result files.

Each finished (sentence, sampler) unit is one JSON line of ``units.jsonl``, appended whole and
fsync'ed. A line cut short by a kill is dropped when the store is reopened, so a restarted run redoes
only the unfinished units and never duplicates one. A store holds an exclusive OS lock (``flock``) on
its directory, which the kernel releases when the process ends, however it ends: two runs never share
a directory, and the lock file left by a killed run never blocks its resume.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..errors import InfillError

try:
    import fcntl
except ImportError:  # not POSIX: directories are not locked
    fcntl = None

LOCK_FILE = ".lock"
_locked: dict[Path, int] = {}  # directories this process holds -> the descriptor of their lock file


def _busy(directory: Path, fd: int) -> InfillError:
    owner = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return InfillError(
        f"{directory} is in use by another infill eval{f' (process {owner})' if owner else ''}; "
        "wait for it to finish or use another --out"
    )


def _try_lock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def check_out(directory: Path) -> None:
    """Raise ``InfillError`` at once if ``directory`` cannot serve as an output directory: it is a file, or
    another process holds its lock. Writes nothing."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise InfillError(f"--out {directory} exists and is not a directory")
    key = directory.resolve()
    if fcntl is None or key in _locked:
        return
    try:
        fd = os.open(key / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file yet: nobody holds it
        return
    try:
        if not _try_lock(fd, fcntl.LOCK_SH):
            raise _busy(directory, fd)
    finally:
        os.close(fd)


def lock_directory(directory: Path) -> None:
    """Hold ``directory``'s lock until :func:`unlock_directory` or the end of this process (a crash or kill
    included); ``InfillError`` if another process holds it. Taking it again in the same process is a no-op."""
    key = Path(directory).resolve()
    if fcntl is None or key in _locked:
        return
    fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    if not _try_lock(fd, fcntl.LOCK_EX):
        error = _busy(directory, fd)
        os.close(fd)
        raise error
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _locked[key] = fd


def unlock_directory(directory: Path) -> None:
    fd = _locked.pop(Path(directory).resolve(), None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor of the lock file releases the lock


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``path`` (mode 0644) through a temporary file in the same directory and ``os.replace``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class UnitStore:
    """Finished units keyed by ``(sentence_id, sampler)``, bound to one run ``fingerprint``.

    ``run.json`` holds the fingerprint; reopening a directory of a different run is an error rather
    than a silent mix of results. The directory stays locked (:func:`lock_directory`) until ``close``.
    """

    def __init__(self, directory: Path, fingerprint: dict):
        self.directory = Path(directory)
        self.path = self.directory / "units.jsonl"
        self.directory.mkdir(parents=True, exist_ok=True)
        lock_directory(self.directory)
        try:
            self._check_fingerprint(fingerprint)
            self.units: dict[tuple[str, str], dict] = {}
            self._recover()
        except BaseException:
            self.close()
            raise

    def _check_fingerprint(self, fingerprint: dict) -> None:
        run_file = self.directory / "run.json"
        if not run_file.exists():
            write_atomic(run_file, json.dumps(fingerprint, indent=2, sort_keys=True) + "\n")
            return
        previous = json.loads(run_file.read_text(encoding="utf-8"))
        if previous != fingerprint:
            changed = sorted(k for k in set(previous) | set(fingerprint) if previous.get(k) != fingerprint.get(k))
            raise InfillError(
                f"{self.directory} holds a run with other settings ({', '.join(changed)}); "
                "use another --out or delete it"
            )

    def close(self) -> None:
        """Release the directory's lock."""
        unlock_directory(self.directory)

    def _recover(self) -> None:
        if not self.path.exists():
            return
        raw = self.path.read_bytes()
        good = b""
        for line in raw.splitlines(keepends=True):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("unterminated line")
                unit = json.loads(line)
            except ValueError:
                break  # a kill mid-append: drop the tail
            self.units.setdefault((unit["sentence_id"], unit["sampler"]), unit)
            good += line
        if good != raw:
            write_atomic(self.path, good)

    def add(self, unit: dict) -> None:
        """Append one finished unit durably."""
        key = (unit["sentence_id"], unit["sampler"])
        if key in self.units:
            raise ValueError(f"unit {key} is already stored")
        line = (json.dumps(unit, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with open(self.path, "ab") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self.units[key] = unit
