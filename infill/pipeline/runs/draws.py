"""One-pass runs (an order of the masked LM, the product search, particles): draws on the float32 model, the
chains' precision not applying (:func:`~infill.pipeline.one_pass.draw`)."""

from __future__ import annotations

from .. import one_pass
from ..policy import Plan
from ..postprocess import Batch
from .context import Context


def execute(plan: Plan, context: Context) -> Batch:
    """``plan``'s draws with their PLLs where the method scored them."""
    pll = context.energy(context.model)
    x, values = one_pass.draw(pll, plan, context.generator)
    return Batch(
        template=context.template,
        plan=plan,
        method=plan.settings.method,
        chains=len(x),
        steps=0,
        start=context.start,
        energy=pll,
        target=pll,
        x=x,
        starts=x,
        energies=values,
    )
