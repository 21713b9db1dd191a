"""``infill serve``: the page and JSON API of :mod:`infill.serve` over one model, on 127.0.0.1 by default."""

from __future__ import annotations

import argparse
import errno
import socket
import sys

from ..errors import InfillError, check, is_integer, positive_integer
from . import add_model_flags


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        description="Serve a page (fill templates and see marginals and traces, rewrite sentences, score "
        "sentences and rank options) and a JSON API (POST /api/sample, /api/rewrite, /api/score, "
        "/api/rank; see docs/serve.md) over one loaded model. Runs go one at a time through a queue.",
    )
    add_model_flags(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--queue-size",
        type=int,
        default=32,
        metavar="N",
        help="runs that may wait behind the running one; more get HTTP 503 (default 32)",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds a request may take, waiting included (default 60)",
    )
    parser.add_argument(
        "--max-body", type=int, default=64 * 1024, metavar="BYTES", help="largest request body (default 65536)"
    )
    parser.set_defaults(run=run)
    return parser


def check_address(host: str, port: int) -> None:
    """One line if ``host:port`` cannot be bound (in use, or not an address of this machine)."""
    check(is_integer(port, 1) and port <= 65535, f"--port must be between 1 and 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise InfillError(f"unknown host {host!r}; use 127.0.0.1 (this machine) or 0.0.0.0 (every address)") from None
    with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(infos[0][4])
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InfillError(f"port {port} on {host} is in use; choose another with --port") from None
            raise InfillError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def run(args) -> int:
    import starlette  # noqa: F401  (the [serve] extra, checked before the model loads)
    import uvicorn

    positive_integer("--queue-size", args.queue_size)
    positive_integer("--max-body", args.max_body)
    check(args.time_limit > 0, f"--time-limit must be positive, got {args.time_limit}")
    check_address(args.host, args.port)
    from ..lm.hub import check_available

    check_available(args.model)
    from ..pipeline.infiller import Infiller
    from ..serve import create_app

    infiller = Infiller(args.model, device=args.device, dtype=args.dtype)
    app = create_app(infiller, args.queue_size, args.time_limit, args.max_body)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"infill: serving {infiller.model_name} at http://{shown}:{args.port}/ (Ctrl-C stops)", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
