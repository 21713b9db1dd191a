"""The Starlette app: the page and a JSON API over one loaded :class:`~infill.Infiller`.

- ``POST /api/sample``: a JSON object of the JSON-lines format (``template`` plus run options) -> the
  result as ``infill sample --json`` gives it (``template``, ``samples``, ``diagnostics``, ``marginals``);
- ``POST /api/rewrite`` (``text``, ``change``, run options) -> the variants, as ``infill rewrite --json``;
- ``POST /api/score`` (``texts``, ``mode``) -> ``{"scores"}``, ``POST /api/rank`` (``template``, ``options``,
  ``mode``) -> ``{"ranked"}``, each entry as a line of ``infill score --json`` / ``infill rank --json``;
- ``POST /api/augment`` (``texts`` or ``text``, ``n``, ``change``, ``seed``, ``protect``, ``min_words``,
  ``max_words``, ``sampler``, ``action``, ``keep_close``, ``pll``) -> ``{"augmented"}``, one record of
  ``infill augment --json`` per sentence;
- ``POST /api/jobs`` (any of those bodies, ``"task"`` naming which; sample by default) -> ``{"id"}`` at once;
  ``GET /api/jobs/ID`` -> its state, progress and, when done, the result with what the page draws (the
  ``trace`` of each chain, the ``lengths`` of span fills); ``DELETE /api/jobs/ID`` cancels it;
- ``GET /api/info``: the model, the run defaults (and those of rewrite and augment), the fast preset, the
  methods and the examples.

Bad input is HTTP 400 with ``{"error": one line}`` (checked by :mod:`infill.serve.tasks`); a full queue
503; a body over the cap 413; a run past the time limit 503. Every run goes through
:class:`~infill.serve.queue.RunQueue`, one at a time.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import InfillError
from ..onepass.methods import ONE_PASS
from ..pipeline.config import AUTO, RunConfig
from .queue import QueueFull, RunQueue, Stopped
from .tasks import AUGMENT_DEFAULTS, REWRITE_DEFAULTS, TASKS

STATIC = Path(__file__).parent / "static"
FAST = {"num_samples": 8, "steps": 4, "top": 5}
"""The page's fast preset: first fillings in about a second on a small model on a CPU."""
EXAMPLES = {
    "fill": [  # request bodies: a template and the options it shows off
        {"template": "The [MASK] sat on the [MASK]."},
        {"template": "She was [MASK*?] the garden when it started to rain."},
        {"template": "My favourite [MASK] is the [MASK] of [MASK].", "include": ["banana"], "sampler": "gibbs-mh"},
        {"template": "After the storm, the [MASK*1-3] was closed for a week."},
        {"template": "I would like a cup of [MASK] and a slice of [MASK*2], please.", "blank_unit": "word"},
        {"template": "[MASK] is the capital of France."},
    ],
    "rewrite": ["The old man walked slowly to the market.", "She opened the door and saw a small dog in the garden."],
    "score": ["the cat sat on the mat .", "the mat sat on the cat .", "cat the on sat mat the ."],
    "rank": {"template": "the [MASK] played a song .", "options": ["pianist", "violinist", "xylophonist", "ice cream"]},
    "augment": [  # request bodies: sentences and the options they show off
        {"texts": ["The old man walked slowly to the market.", "She opened the door and saw a small dog."]},
        {"texts": ["Meet Anna in New York on 12 May at 10am."], "protect": ["Anna", "New York"], "change": 0.3},
    ],
}


def shown_name(model: str) -> str:
    """The model's name without a machine path: a local checkpoint by its folder's name, a hub id as is."""
    path = Path(model).expanduser()
    return path.resolve().name if path.exists() else model


class HTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_json(request: Request, max_body: int) -> Any:
    length = request.headers.get("content-length", "0")
    if not length.isdigit():
        raise HTTPError(400, "bad Content-Length header")
    if int(length) > max_body:
        raise HTTPError(413, f"the body is {length} bytes, more than the limit of {max_body}")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body:
            raise HTTPError(413, f"the body is more than the limit of {max_body} bytes")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPError(400, f"invalid JSON: {getattr(exc, 'msg', None) or exc}") from None


def failure(exc: BaseException) -> HTTPError:
    """The HTTP answer to ``exc``: 400 for bad input, 409 for a cancelled run, 503 for a stopped one, else 500 in
    one line."""
    if isinstance(exc, HTTPError):
        return exc
    if isinstance(exc, InfillError):
        return HTTPError(400, str(exc))
    if isinstance(exc, Stopped):
        return HTTPError(409 if "cancelled" in str(exc) else 503, str(exc))
    first = (str(exc).strip().splitlines() or [""])[0]
    return HTTPError(500, f"internal error ({type(exc).__name__}): {first}")


async def http_error(request: Request, exc: Exception):
    error = failure(exc)
    headers = {"Retry-After": "2"} if error.status == 503 else None
    return JSONResponse({"error": str(error)}, status_code=error.status, headers=headers)


async def not_found(request: Request, exc: Exception):
    status = getattr(exc, "status_code", 404)
    return JSONResponse({"error": getattr(exc, "detail", "not found")}, status_code=status)


async def index(request: Request):
    return FileResponse(STATIC / "index.html")


class Service:
    """The routes' handlers over one ``infiller`` and its :class:`~infill.serve.queue.RunQueue`."""

    def __init__(self, infiller, queue: RunQueue, max_body: int):
        self.infiller, self.queue, self.max_body = infiller, queue, max_body

    def submit(self, task: str, data: Any, extras: bool):
        run = TASKS[task](data)  # checked before it queues
        try:
            return self.queue.submit(lambda step: run(self.infiller, step, extras))
        except QueueFull as exc:
            raise HTTPError(503, str(exc)) from None

    async def info(self, request: Request):
        from ..samplers import SAMPLERS

        config = RunConfig.create()
        defaults = {
            name: getattr(config, name) for name in ("method", "num_samples", "steps", "top", "seed", "temperature")
        }
        limits = {"queue": self.queue.size, "seconds": self.queue.time_limit, "body_bytes": self.max_body}
        return JSONResponse(
            {
                "model": shown_name(self.infiller.model_name),
                "defaults": defaults,
                "fast": FAST,
                "rewrite": REWRITE_DEFAULTS,
                "augment": AUGMENT_DEFAULTS,
                "methods": [AUTO, *sorted(SAMPLERS), *ONE_PASS],
                "untaken": {name: list(method.untaken) for name, method in ONE_PASS.items()},
                "examples": EXAMPLES,
                "limits": limits,
            }
        )

    def answer(self, task: str):
        """``POST /api/TASK``: the run's result when it is done."""

        async def endpoint(request: Request):
            job = self.submit(task, await read_json(request, self.max_body), extras=False)
            try:
                return JSONResponse(await asyncio.wrap_future(job.future))
            except asyncio.CancelledError:  # the client went away
                self.queue.cancel(job)
                raise
            except Exception as exc:  # answered here: an exception left to Starlette is logged with its traceback
                raise failure(exc) from None

        return endpoint

    async def create_job(self, request: Request):
        data = await read_json(request, self.max_body)
        task = data.pop("task", "sample") if isinstance(data, dict) else "sample"
        if not isinstance(task, str) or task not in TASKS:
            raise InfillError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
        job = self.submit(task, data, extras=True)
        return JSONResponse({"id": job.id, "position": self.queue.position(job)}, status_code=202)

    def find(self, request: Request):
        job = self.queue.get(request.path_params["id"])
        if job is None:
            raise HTTPError(404, f"no run {request.path_params['id']!r} (finished runs are kept a while)")
        return job

    async def job_status(self, request: Request):
        job = self.find(request)
        status = {
            "id": job.id,
            "state": job.state,
            "progress": list(job.progress),
            "position": self.queue.position(job),
            "elapsed": None if job.started is None else round(time.monotonic() - job.started, 3),
        }
        if job.future.done():
            if job.future.exception() is None:
                status["result"] = job.future.result()
            else:
                error = failure(job.future.exception())
                status.update(error=str(error), status=error.status)
        return JSONResponse(status)

    async def cancel_job(self, request: Request):
        job = self.find(request)
        self.queue.cancel(job)
        return JSONResponse({"id": job.id, "state": job.state})


def create_app(infiller, queue_size: int = 32, time_limit: float = 60.0, max_body: int = 64 * 1024) -> Starlette:
    """The app over ``infiller``: at most ``queue_size`` runs wait, each must end within ``time_limit``
    seconds of its request, bodies are at most ``max_body`` bytes."""
    queue = RunQueue(queue_size, time_limit)
    service = Service(infiller, queue, max_body)

    @asynccontextmanager
    async def lifespan(app):
        yield
        queue.close()

    routes = [
        Route("/", index),
        Route("/api/info", service.info),
        *(Route(f"/api/{task}", service.answer(task), methods=["POST"]) for task in TASKS),
        Route("/api/jobs", service.create_job, methods=["POST"]),
        Route("/api/jobs/{id}", service.job_status, methods=["GET"]),
        Route("/api/jobs/{id}", service.cancel_job, methods=["DELETE"]),
        Mount("/static", StaticFiles(directory=STATIC)),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            Exception: http_error,
            HTTPError: http_error,
            InfillError: http_error,
            404: not_found,
            405: not_found,
        },
        lifespan=lifespan,
    )
    app.state.queue = queue
    return app
