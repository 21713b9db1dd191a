"""Chains over token blanks: the plan's sampler, all its chains one batch, from draws of the masked LM (or, for
rewrite, from where the closeness's calibration left them), stopped where the budget less what choosing takes is
spent."""

from __future__ import annotations

from typing import Callable

from torch import Tensor

from ...constraints import calibrate_closeness, constrained_energy
from ...energies.budget import BudgetSpent, Meter
from ...energies.masked_lm import MaskedLMEnergy
from ...lm import mlm_draws
from ...samplers import run_annealed
from ..policy import Plan, budget_spent
from ..postprocess import Batch
from .context import Context


def execute(plan: Plan, context: Context) -> Batch:
    """The chains of ``plan``. With a budget they spend it less what choosing the fillings takes, and stop as
    :meth:`~infill.pipeline.policy.Spend.chains_done` says; where the starts took it all, the starts are the
    candidates."""
    config, d = plan.settings, context.template.num_blanks
    pll = context.energy(context.chain_model)
    float32_pll = None if context.chain_model is context.model else context.energy(context.model)
    include = context.prepared.include
    target = pll if include is None and not context.terms else constrained_energy(pll, context.terms, include)
    target, x = _starts(plan, pll, target, context)
    stop = None if plan.spend.limit is None else _budget_stop(plan, x, context.meter)
    batch = dict(energy=pll, target=target, starts=x, float32_pll=float32_pll, chains=config.num_samples)
    try:
        with context.meter.holding(plan.spend.held):
            trace = run_annealed(
                plan.sampler, target, x, config.annealing_schedule(), context.generator, context.callback, stop
            )
    except BudgetSpent:  # the starts took what the chains could spend: they are the candidates
        if not mlm_draws.ORDERS[config.init].forwards(d):  # uniform starts: no draw of the model
            stage = f"before a step of {config.method} from {config.init} starts on {d} blank tokens"
            raise budget_spent(plan, stage) from None
        return context.batch(plan, method=config.init, steps=0, x=x, **batch)
    steps = len(trace.samples) if plan.spend.limit is not None else config.steps
    final = trace.final_state.x
    return context.batch(plan, method=config.method, steps=steps, x=final, trace=trace, sampler=plan.sampler, **batch)


def _starts(plan: Plan, pll: MaskedLMEnergy, target, context: Context) -> tuple:
    """The target and the chains' starts: draws from the masked LM (at ``anneal_from`` where the run is
    annealed), or for rewrite the state the closeness's calibration left the chains in, with the calibrated
    target."""
    config = plan.settings
    if context.rewrite is None:
        temperature = config.anneal_from or config.token_temperature
        return target, mlm_draws.draw(pll, config.init, config.num_samples, context.generator, temperature)
    source, change = context.rewrite[0].to(pll.category_ids.device), context.rewrite[1]
    return calibrate_closeness(  # the chains go on from the calibration's
        target,
        source,
        change,
        plan.sampler,
        chains=config.num_samples,
        steps=max(4, config.steps // 2),
        generator=context.generator,
        with_state=True,
    )


def _budget_stop(plan: Plan, x: Tensor, meter: Meter) -> Callable:
    """``stop(state)`` for chains with a budget (:meth:`~infill.pipeline.policy.Spend.chains_done`), counting the
    distinct states visited from the starts ``x`` where the kernel leaves them to score."""
    seen = set(map(tuple, x.tolist()))

    def stop(state) -> bool:
        if state.energy.isnan().any():  # the states visited are still to score
            seen.update(map(tuple, state.x.tolist()))
            return plan.spend.chains_done(meter.spent, len(seen))
        return plan.spend.chains_done(meter.spent, None)

    return stop
