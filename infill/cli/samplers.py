"""``infill samplers``: the registered samplers with their hyperparameters and defaults."""

from __future__ import annotations

import argparse
import json

from . import plain


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name, description="List the registered samplers, their hyperparameters and defaults."
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per sampler")
    parser.set_defaults(run=run)
    return parser


def run(args) -> int:
    from ..samplers import SAMPLERS, sampler_options

    for name in sorted(SAMPLERS):
        options = sampler_options(name)
        summary = " ".join(plain(SAMPLERS[name].__doc__ or "").split("\n\n")[0].split())
        if args.json:
            print(json.dumps({"name": name, "options": options, "summary": summary}))
            continue
        flags = "  ".join(f"--{k.replace('_', '-')}={v}" for k, v in options.items()) or "(no options)"
        print(f"{name:12s} {flags}\n{'':12s} {summary}")
    return 0
