"""``infill samplers``: every method ``--sampler`` takes, grouped, with its options and defaults.

The names, options and summaries are read from the code: ``auto``'s constants (:mod:`infill.pipeline.config`),
the methods' registry (:func:`~infill.onepass.methods.methods`), each sampler's docstring, the orders described
in :mod:`infill.lm.mlm_draws`.
"""

from __future__ import annotations

import argparse
import json
import re

from ..lm.registry import CHAIN_SETTINGS
from ..pipeline.config import flag
from . import plain


def _none_of(settings) -> str:
    """Run settings refused, as their flags: ``no --steps, --init or --anneal-from``."""
    flags = [flag(name) for name in settings]
    return "no " + (f"{', '.join(flags[:-1])} or {flags[-1]}" if len(flags) > 1 else flags[0])


GROUPS = {
    "auto": "the default: it sets its own target, chains, steps and budget",
    "MCMC samplers": "chains of --steps steps from --init; options by -o KEY=VALUE (--step-size and --adapt-steps "
    "also as flags)",
    "one-pass orders": f"draws from the masked LM without chains ({_none_of(CHAIN_SETTINGS)}): -n draws, or as many as "
    "--budget buys; no options",
    "particles and search": f"one-pass methods of their own, without chains ({_none_of(CHAIN_SETTINGS)}); options by "
    "-o KEY=VALUE",
}
"""The groups of methods, in the order listed, each with what its methods share."""

GROUP_OF = {"chains": "MCMC samplers", "one-pass": "one-pass orders", "particles": "particles and search"}
GROUP_OF["search"] = GROUP_OF["particles"]
"""Each kind of method's group."""


def add_parser(subparsers, name: str) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        description="List every method --sampler takes, grouped (auto, the MCMC samplers, the one-pass orders, the "
        "particles and the product search), with its options (-o KEY=VALUE) and their defaults.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per method")
    parser.set_defaults(run=run)
    return parser


def methods() -> list[dict]:
    """Every method ``--sampler`` takes, in :data:`GROUPS` order: ``{"name", "group", "options", "summary"}``,
    ``options`` its hyperparameters with their defaults."""
    from ..lm import mlm_draws
    from ..onepass import particles, product_search
    from ..onepass.methods import methods as registered
    from ..pipeline.config import AUTO, AUTO_BUDGET_PER_BLANK

    summaries = {
        **_bullets(mlm_draws.__doc__),  # the orders, where "random-order: the same ..." follows left-to-right
        "particles": _first(particles.__doc__),
        "search": f"{_first(product_search.__doc__)} Needs --top; its budget defaults to {AUTO_BUDGET_PER_BLANK} "
        "encoder sequences per blank token.",
    }
    rows = [_row(AUTO, "auto", {}, _auto())]
    for m in registered().values():  # in GROUPS order
        group = GROUP_OF[m.kind]
        summary = summaries.get(m.name if m.kind == "one-pass" else m.kind)
        docstring = m.sampler if m.kind == "chains" else m.draw  # a sampler's, or a registered draw's
        summary = summary or _first(docstring.__doc__ if docstring else "")
        own = [name for name in m.untaken if name not in CHAIN_SETTINGS]  # beyond its group's
        summary = f"{summary.rstrip('.')} ({_none_of(own)})" if own else summary
        rows.append(_row(m.name, group, m.options(), summary))
    return rows


def _row(name: str, group: str, options: dict, summary: str) -> dict:
    return {"name": name, "group": group, "options": options, "summary": summary}


def _auto() -> str:
    """``auto`` in words, from the constants that resolve it."""
    from ..pipeline.config import AUTO_BUDGET_PER_BLANK, AUTO_TARGET, auto_rule

    return (
        f"picks its run by the number of blank tokens: on one, a single pass of the masked LM; {auto_rule()}; with "
        f"--include chains. On more than one blank token its target is {AUTO_TARGET}; its budget is "
        f"{AUTO_BUDGET_PER_BLANK} encoder sequences per blank token unless --budget."
    )


def _first(doc: str) -> str:
    """A docstring's first paragraph, on one line, as plain text."""
    return " ".join(plain(doc or "").split("\n\n")[0].split())


def _bullets(doc: str) -> dict[str, str]:
    """The ``- ``name``: what it does`` items of a docstring, by name, on one line each."""
    items = re.findall(r"^- ``([\w-]+)``: (.*?)(?=^- |^\s*$)", doc, re.M | re.S)
    return {name: " ".join(plain(text).split()).rstrip(";.") for name, text in items}


def run(args) -> int:
    rows = methods()
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    width = max(len(row["name"]) for row in rows) + 2
    for index, (group, note) in enumerate(GROUPS.items()):
        if index:
            print()
        print(f"{group}: {note}")
        for row in (row for row in rows if row["group"] == group):
            options = "  ".join(f"{k}={v}" for k, v in row["options"].items()) or "(no options)"
            print(f"  {row['name']:{width}s}{options}\n  {'':{width}s}{row['summary']}")
    return 0
