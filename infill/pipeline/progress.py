"""Progress of a long command over its units (templates, eval units, documents) on stderr: tqdm's bar on a
terminal; elsewhere (a log, a pipe, a batch job) one line per unit done, with the time spent and an estimate
of the time left."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def duration(seconds: float) -> str:
    """``41 s``, ``4 min``, ``2 h 05 min``."""
    seconds = round(seconds)
    if seconds < 100:
        return f"{seconds} s"
    if seconds < 6000:
        return f"{round(seconds / 60)} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Lines:
    """A line per :meth:`update` on ``file``: ``LABEL: UNIT n/total done (POSTFIX), 41 s elapsed, about 4 min
    left`` (``n done`` where the ``total`` is not known); the estimate extrapolates the units done in this run
    (``initial`` were done before). The methods of
    tqdm that the commands use, so either serves."""

    def __init__(
        self,
        total: Optional[int],
        desc: str,
        unit: str,
        initial: int = 0,
        disable: bool = False,
        file: Optional[TextIO] = None,
    ):
        self.total, self.desc, self.unit, self.n, self.disable = total, desc, unit, initial, disable
        self.file = file or sys.stderr
        self.initial, self.postfix, self.start = initial, "", time.perf_counter()

    def set_postfix_str(self, postfix: str) -> None:
        self.postfix = postfix

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.disable:
            return
        elapsed = time.perf_counter() - self.start
        rate = elapsed / (self.n - self.initial)
        left = f", about {duration(rate * (self.total - self.n))} left" if self.total and self.n < self.total else ""
        postfix = f" ({self.postfix})" if self.postfix else ""
        count = f"{self.n}/{self.total}" if self.total else self.n
        print(
            f"{self.desc}: {self.unit} {count} done{postfix}, {duration(elapsed)} elapsed{left}",
            file=self.file,
            flush=True,
        )

    def __enter__(self) -> "Lines":
        return self

    def __exit__(self, *_) -> None:
        pass


def progress(total: int, desc: str, unit: str, initial: int = 0, disable: bool = False):
    """tqdm's bar where stderr is a terminal, else :class:`Lines`; nothing where ``disable``."""
    if sys.stderr.isatty():
        from tqdm.auto import tqdm

        return tqdm(total=total, initial=initial, disable=disable, desc=desc, unit=unit, file=sys.stderr)
    return Lines(total, desc, unit, initial, disable)
