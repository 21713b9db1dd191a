"""The Starlette app: the page and a JSON API over one loaded :class:`~infill.Infiller`.

- ``POST /api/sample``: a JSON object of the JSON-lines format (``template`` plus run options) -> the
  result as ``infill sample --json`` gives it (``template``, ``samples``, ``diagnostics``, ``marginals``).
- ``POST /api/jobs`` (same body) -> ``{"id"}`` at once; ``GET /api/jobs/ID`` -> its state, progress and, when
  done, the result with the ``trace`` of each chain; ``DELETE /api/jobs/ID`` cancels it. The page uses these.
- ``GET /api/info``: the model, the run defaults, the fast preset, the methods and the examples.

Bad input is HTTP 400 with ``{"error": one line}``; a full queue 503; a body over the cap 413; a run past
the time limit 503. Every run goes through :class:`~infill.serve.queue.RunQueue`, one at a time.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import torch
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Route

from ..config import BASELINES, RunConfig
from ..errors import InfillError
from .queue import QueueFull, RunQueue, Stopped

STATIC = Path(__file__).parent / "static"
FAST = {"num_samples": 8, "steps": 4, "top": 5}
"""The page's fast preset: first fillings in about a second on a small model on a CPU."""
EXAMPLES = [
    "The [MASK] sat on the [MASK].",
    "She opened the door and saw a [MASK] [MASK] in the garden.",
    "The best way to learn a [MASK] is to [MASK] it every day.",
    "I would like a cup of [MASK] and a slice of [MASK], please.",
    "After the storm, the [MASK*2] was closed for a week.",
    "[MASK] is the capital of France.",
]
MAX_SAMPLES = 256  # chains of one request: more could exhaust the server's memory before the time limit bites
TRACE_POINTS = 200  # steps kept per chain in a trace sent to the page
log = logging.getLogger("infill.serve")


class HTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float made None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def trace_payload(trace) -> dict:
    """Per chain, the energy (None where the run did not compute it) and the acceptance rate so far, at
    every ``stride``-th step so that at most :data:`TRACE_POINTS` remain."""
    steps = trace.energies.shape[0]
    stride = max(1, math.ceil(steps / TRACE_POINTS))
    energies = trace.energies[::stride].T.float().tolist()
    rate = trace.accepted.float().cumsum(0) / torch.arange(1, steps + 1)[:, None]  # running acceptance rate
    accepted = rate[::stride].T.tolist()
    return {"stride": stride, "burn_in": trace.burn_in, "energies": finite(energies), "accepted": accepted}


def checked(data: Any) -> tuple[str, RunConfig]:
    """The template and the checked run configuration of a request body (a JSON-lines object)."""
    if not isinstance(data, dict):
        raise InfillError("the body must be a JSON object with a \"template\" string and run options")
    options = {str(k).replace("-", "_"): v for k, v in data.items()}
    template = options.pop("template", None)
    if not isinstance(template, str):
        raise InfillError("the body needs a \"template\" string, e.g. {\"template\": \"The [MASK] sat.\"}")
    try:
        config = RunConfig.create(**options)
    except InfillError:
        raise
    except (TypeError, ValueError) as exc:  # e.g. "options" that is not an object
        raise InfillError(f"bad run options: {exc}") from None
    if config.num_samples > MAX_SAMPLES:
        raise InfillError(f"this server takes at most {MAX_SAMPLES} samples per request, got {config.num_samples}")
    return template, config


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


def create_app(infiller, queue_size: int = 32, time_limit: float = 60.0, max_body: int = 64 * 1024) -> Starlette:
    """The app over ``infiller``: at most ``queue_size`` runs wait, each must end within ``time_limit``
    seconds of its request, bodies are at most ``max_body`` bytes."""
    queue = RunQueue(queue_size, time_limit)

    def submit(template: str, config: RunConfig, with_trace: bool):
        def run(step):
            result = infiller.run([template], config, on_step=step)[0]
            payload = result.to_dict()
            if with_trace and result.trace is not None:
                payload["trace"] = trace_payload(result.trace)
            return finite(payload)

        try:
            return queue.submit(run)
        except QueueFull as exc:
            raise HTTPError(503, str(exc)) from None

    def failure(exc: BaseException) -> HTTPError:
        if isinstance(exc, HTTPError):
            return exc
        if isinstance(exc, InfillError):
            return HTTPError(400, str(exc))
        if isinstance(exc, Stopped):
            return HTTPError(409 if "cancelled" in str(exc) else 503, str(exc))
        log.error("run failed", exc_info=exc)
        first = (str(exc).strip().splitlines() or [""])[0]
        return HTTPError(500, f"internal error ({type(exc).__name__}): {first}")

    async def index(request: Request):
        return FileResponse(STATIC / "index.html")

    async def info(request: Request):
        from ..samplers import SAMPLERS

        defaults = {f.name: f.default for f in dataclasses.fields(RunConfig)
                    if f.name in ("method", "num_samples", "steps", "top", "seed", "temperature")}
        return JSONResponse({"model": infiller.model_name, "defaults": defaults, "fast": FAST,
                             "methods": [*sorted(SAMPLERS), *BASELINES], "examples": EXAMPLES,
                             "limits": {"queue": queue_size, "seconds": time_limit, "body_bytes": max_body}})

    async def sample(request: Request):
        job = submit(*checked(await read_json(request, max_body)), with_trace=False)
        try:
            return JSONResponse(await asyncio.wrap_future(job.future))
        except asyncio.CancelledError:  # the client went away
            queue.cancel(job)
            raise

    async def create_job(request: Request):
        job = submit(*checked(await read_json(request, max_body)), with_trace=True)
        return JSONResponse({"id": job.id, "position": queue.position(job)}, status_code=202)

    def find(request: Request):
        job = queue.get(request.path_params["id"])
        if job is None:
            raise HTTPError(404, f"no run {request.path_params['id']!r} (finished runs are kept a while)")
        return job

    async def job_status(request: Request):
        job = find(request)
        status = {"id": job.id, "state": job.state, "progress": list(job.progress),
                  "position": queue.position(job),
                  "elapsed": None if job.started is None else round(time.monotonic() - job.started, 3)}
        if job.future.done():
            if job.future.exception() is None:
                status["result"] = job.future.result()
            else:
                error = failure(job.future.exception())
                status.update(error=str(error), status=error.status)
        return JSONResponse(status)

    async def cancel_job(request: Request):
        job = find(request)
        queue.cancel(job)
        return JSONResponse({"id": job.id, "state": job.state})

    async def http_error(request: Request, exc: Exception):
        error = failure(exc)
        headers = {"Retry-After": "2"} if error.status == 503 else None
        return JSONResponse({"error": str(error)}, status_code=error.status, headers=headers)

    async def not_found(request: Request, exc: Exception):
        status = getattr(exc, "status_code", 404)
        return JSONResponse({"error": getattr(exc, "detail", "not found")}, status_code=status)

    @asynccontextmanager
    async def lifespan(app):
        yield
        queue.close()

    routes = [Route("/", index), Route("/api/info", info), Route("/api/sample", sample, methods=["POST"]),
              Route("/api/jobs", create_job, methods=["POST"]),
              Route("/api/jobs/{id}", job_status, methods=["GET"]),
              Route("/api/jobs/{id}", cancel_job, methods=["DELETE"])]
    app = Starlette(routes=routes, exception_handlers={Exception: http_error, HTTPError: http_error,
                                                       InfillError: http_error, 404: not_found, 405: not_found},
                    lifespan=lifespan)
    app.state.queue = queue
    return app
