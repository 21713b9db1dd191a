"""The kinds of run (:data:`~infill.pipeline.policy.KINDS`), each a module with one ``execute(plan, context)``
that returns the sample stage's :class:`~infill.pipeline.postprocess.Batch`: :mod:`.draws` (one-pass orders, the
product search, particles), :mod:`.chains` (MCMC over token blanks), :mod:`.spans` (word blanks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from torch import Tensor, nn

from ...energies.budget import Meter
from ...energies.masked_lm import MaskedLMEnergy
from ...text.template import Template
from ..policy import Plan
from ..postprocess import Batch
from . import chains, draws, spans


@dataclass(frozen=True)
class Context:
    """What a run reads beside its plan: the ``template``, the request's ``prepared`` templates, the float32
    ``model`` and the ``chain_model`` (the same where the chains run in float32), ``energy(model)`` building a
    PLL energy of the template charged to ``meter`` (holding its all-masked logits where a shared pass gave them), the
    run's ``generator``, ``callback(t, state, info)`` after every step, the user's ``terms``, ``rewrite``'s
    ``(source, change)``, and ``start``, when the run began."""

    template: Template
    prepared: object
    model: nn.Module
    chain_model: nn.Module
    tokenizer: object
    energy: Callable[..., MaskedLMEnergy]
    meter: Meter
    generator: object
    callback: Optional[Callable] = None
    terms: Sequence[tuple] = ()
    rewrite: Optional[tuple[Tensor, float]] = None
    start: float = 0.0


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
