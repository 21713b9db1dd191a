"""The kinds of run (:data:`~infill.pipeline.policy.KINDS`), each a module with one ``execute(plan, context)``
that returns the sample stage's :class:`~infill.pipeline.postprocess.Batch`: :mod:`.draws` (one-pass orders, the
product search, particles), :mod:`.chains` (MCMC over token blanks), :mod:`.spans` (word blanks); what a run reads
beside its plan: :class:`~.context.Context`.
"""

from __future__ import annotations

from typing import Callable

from ..policy import Plan
from ..postprocess import Batch
from . import chains, draws, spans
from .context import Context

EXECUTE: dict[str, Callable[[Plan, Context], Batch]] = {
    "one-pass": draws.execute,
    "search": draws.execute,
    "particles": draws.execute,
    "chains": chains.execute,
    "spans": spans.execute,
}
"""Each kind's ``execute``."""


def execute(plan: Plan, context: Context) -> Batch:
    """``plan`` run on ``context``'s template by its kind's module."""
    return EXECUTE[plan.kind](plan, context)


__all__ = ["EXECUTE", "Context", "execute"]
