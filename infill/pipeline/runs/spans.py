"""Word blanks: the span sampler's chains (:func:`infill.spans.span_run`: reversible-jump MH, or
``span_method="per-length"``: chains pinned at every combination of lengths), run by
:func:`~infill.samplers.run_annealed` at the span temperature (annealed from ``anneal_from``), every encoder pass
charged to the run's meter."""

from __future__ import annotations

import dataclasses

from ...energies.budget import BudgetSpent
from ...samplers import run_annealed
from ...spans import span_run
from ...text.blanks import quote
from ..policy import Plan, budget_spent
from ..postprocess import Batch
from .context import Context


def execute(plan: Plan, context: Context) -> Batch:
    """The span sampler's chains of ``plan`` on the context's template."""
    config, template = plan.settings, context.template
    schedule = dataclasses.replace(config, temperature=config.span_temperature).annealing_schedule()
    try:
        run = span_run(
            context.model,
            context.tokenizer,
            template,
            context.prepared.pieces,
            config.num_samples,
            context.generator,
            schedule[0][0],
            config.init,
            config.span_method,
            include=context.prepared.span_include or (),
            meter=context.meter,
        )
        trace = run_annealed(run.sampler, run.target, run.x0, schedule, context.generator, context.callback)
    except BudgetSpent:
        stage = f"before a step of the span sampler ({config.num_samples} chains) on {quote(template.text)}"
        raise budget_spent(plan, stage) from None
    stopped = len(trace.samples) < schedule[-1][1]  # the budget stopped the chains
    return context.batch(
        plan,
        method=config.span_method,
        chains=config.num_samples,
        steps=len(trace.samples) if stopped else config.steps,
        energy=run.energy,
        target=run.target,
        x=trace.final_state.x,
        starts=run.x0,
        trace=trace,
        sampler=run.sampler,
    )
