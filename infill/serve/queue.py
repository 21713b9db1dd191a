"""One run at a time on the model: a bounded queue of jobs served by one worker thread.

A job is submitted with the function that runs it; the function gets a ``step(done, total)`` callback to
call after every sampler step, which records the progress and raises :class:`Stopped` once the job is
cancelled or past its deadline, so that the run ends at its next step. The asyncio side waits on
``job.future``; nothing of the model is touched outside the worker thread.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..errors import InfillError

log = logging.getLogger("infill.serve")


class Stopped(Exception):
    """Raised in a run's step callback to end it: the job was cancelled or ran out of time."""


class QueueFull(Exception):
    pass


@dataclass(eq=False)  # a job is itself: found in the queue by identity
class Job:
    """A queued or running run: ``progress`` (steps done, total), ``state`` queued/running/done/failed/
    cancelled, ``future`` resolved with the run's return value or its exception."""

    id: str
    run: Callable[[Callable[[int, int], None]], Any]
    deadline: float
    time_limit: float
    progress: tuple[int, int] = (0, 0)
    state: str = "queued"
    cancelled: bool = False
    started: Optional[float] = None
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)

    def step(self, done: int, total: int) -> None:
        self.progress = (done, total)
        if self.cancelled:
            raise Stopped("the run was cancelled")
        if time.monotonic() > self.deadline:
            raise Stopped(
                f"the run took longer than the server's time limit of {self.time_limit:g} s (waiting "
                "included); ask for fewer steps or samples, or start the server with a longer "
                "`infill serve --time-limit SECONDS`"
            )


class RunQueue:
    """At most ``size`` jobs waiting behind the running one; each must finish within ``time_limit``
    seconds of its submission (waiting included). Finished jobs are kept (the last ``keep``) for polling."""

    def __init__(self, size: int = 32, time_limit: float = 60.0, keep: int = 256):
        self.size, self.time_limit = size, time_limit
        self._waiting: collections.deque[Job] = collections.deque()
        self._jobs: collections.OrderedDict[str, Job] = collections.OrderedDict()
        self._keep = keep
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._serve, name="infill-serve-worker", daemon=True)
        self._worker.start()

    def submit(self, run: Callable[[Callable[[int, int], None]], Any]) -> Job:
        """Queue ``run(step)``; raises :class:`QueueFull` when ``size`` jobs are already waiting."""
        with self._lock:
            if len(self._waiting) >= self.size:
                raise QueueFull(
                    f"the server is busy ({len(self._waiting)} waiting behind the running one); try again shortly"
                )
            job = Job(str(next(self._ids)), run, time.monotonic() + self.time_limit, self.time_limit)
            self._waiting.append(job)
            self._jobs[job.id] = job
            while len(self._jobs) > self._keep + self.size + 1:
                self._jobs.popitem(last=False)
            self._lock.notify()
        return job

    def get(self, job_id: str) -> Optional[Job]:
        with self._lock:
            return self._jobs.get(job_id)

    def position(self, job: Job) -> int:
        """How many jobs run before ``job`` starts (0 once it runs)."""
        with self._lock:
            return self._waiting.index(job) + 1 if job in self._waiting else 0

    def cancel(self, job: Job) -> None:
        """End ``job``: at once if it waits, at its next step if it runs."""
        with self._lock:
            job.cancelled = True
            if job in self._waiting:
                self._waiting.remove(job)
                self._finish(job, "cancelled", Stopped("the run was cancelled"))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for job in list(self._waiting):
                self.cancel(job)
            self._lock.notify()

    @staticmethod
    def _finish(job: Job, state: str, outcome: Any) -> None:
        job.state = state
        if isinstance(outcome, BaseException):
            job.future.set_exception(outcome)
        else:
            job.future.set_result(outcome)

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._waiting and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                job = self._waiting.popleft()
                job.state, job.started = "running", time.monotonic()
            try:
                job.step(0, 0)  # cancelled or out of time while waiting
                outcome, state = job.run(job.step), "done"
            except Stopped as exc:
                outcome, state = exc, "cancelled" if job.cancelled else "failed"
                if not job.cancelled:
                    log.warning(
                        "run %s stopped after %.1f s: past the time limit of %g s",
                        job.id,
                        time.monotonic() - job.started,
                        job.time_limit,
                    )
            except InfillError as exc:  # bad input: a 400, nothing to log
                outcome, state = exc, "failed"
            except Exception as exc:  # a bug: logged once here, reported to the request; the worker goes on
                log.error("run %s failed", job.id, exc_info=exc)
                outcome, state = exc, "failed"
            self._finish(job, state, outcome)
