"""One-pass runs (:data:`infill.onepass.methods.ONE_PASS`), by the plan's kind: fillings drawn from the masked LM
without chains, by one of the orders of :mod:`infill.lm.mlm_draws` or as particles (:mod:`infill.onepass.particles`),
or searched for (:mod:`infill.onepass.product_search`), until the budget is spent where one is set (what a draw
costs: :meth:`~infill.onepass.methods.OnePass.cost`); on the float32 model, the chains' precision not applying.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import torch
from torch import Tensor

from ...energies.budget import BudgetSpent
from ...energies.masked_lm import MaskedLMEnergy
from ...onepass import product_search
from ...onepass.particles import SMC, smc
from ..config import MAX_DRAWS
from ..policy import Plan, Settings, budget_spent
from ..postprocess import Batch
from .context import Context

Draw = Callable[[int], tuple[Tensor, Optional[Tensor]]]
"""``draw(n) -> (x (m, d), energies (m,) or None)``: ``n`` draws (or particles) of a one-pass method."""


def execute(plan: Plan, context: Context) -> Batch:
    """``plan``'s draws with their PLLs where the method scored them."""
    pll = context.energy(context.model)
    x, values = draw(pll, plan, context.generator)
    method = plan.settings.method
    return context.batch(
        plan, method=method, chains=len(x), steps=0, energy=pll, target=pll, x=x, starts=x, energies=values
    )


def draw(energy: MaskedLMEnergy, plan: Plan, generator: torch.Generator) -> tuple[Tensor, Optional[Tensor]]:
    """The draws ``(N, d)`` of ``plan`` with their PLLs ``(N,)`` where the method scored
    them (None where not): ``num_samples`` of them, or with a budget as many as it buys (:func:`_to_budget`); the
    product search's every filling scored (:func:`infill.onepass.product_search.search`)."""
    if plan.kind == "search":
        return product_search.search(energy)
    method = (_particles if plan.kind == "particles" else _order)(energy, plan, generator)
    return method(plan.settings.num_samples) if plan.spend.limit is None else _to_budget(energy, plan, method)


def _order(energy: MaskedLMEnergy, plan: Plan, generator: torch.Generator) -> Draw:
    """``plan``'s method of draws (:meth:`~infill.onepass.methods.OnePass.draws`), unscored."""
    settings: Settings = plan.settings
    return lambda n: (settings.one_pass.draws(energy, n, generator, settings.token_temperature), None)


def _particles(energy: MaskedLMEnergy, plan: Plan, generator: torch.Generator) -> Draw:
    """``n`` particles of ``smc`` (:func:`~infill.onepass.particles.smc`) in the runs ``SMC.split`` says, scored:
    for the ``top`` best (the plan's goal) every particle and every state its moves visited are candidates; for
    samples, its samples (resampled and moved)."""
    settings = SMC(**plan.settings.options)

    def particles(n: int) -> tuple[Tensor, Tensor]:
        out = smc(energy, settings, *settings.split(n), generator, plan.settings.token_temperature)
        if plan.goal == "samples":
            return out.samples, out.sample_energy
        if out.visited is None:  # no moves
            return out.x, out.energy
        return torch.cat([out.x, out.visited]), torch.cat([out.energy, out.visited_energy])

    return particles


def _to_budget(energy: MaskedLMEnergy, plan, method: Draw) -> tuple[Tensor, Tensor]:
    """Draws ``(N, d)`` of ``method`` until ``plan``'s budget is spent, with their PLLs ``(N,)``: each distinct
    draw is scored as it comes (where the method did not), so a sequence a pass or an earlier draw computed is
    not paid twice (the cache), and the next round takes as many draws as what is left surely buys
    (:meth:`~infill.pipeline.policy.Spend.next_round`; the first round ``num_samples``). The draws stop when the
    rest buys fewer than the plan's ``least_round``, a round brings fewer new fillings than that (at least one)
    or cannot be paid, or :data:`~infill.pipeline.config.MAX_DRAWS` are drawn."""
    d, settings = energy.num_blanks, plan.settings
    cost = settings.one_pass.cost(settings.options, d)
    draws, scores, n, drawn = [], {}, settings.num_samples, 0
    while n >= 1 and drawn + n <= MAX_DRAWS:
        try:
            x, values = method(n)
        except BudgetSpent:  # the round cost more than it surely would (a cache that kept too little)
            if not draws:
                raise budget_spent(plan, f"before a round of {n} {settings.method} draws on {d} blank tokens") from None
            break
        keys = list(map(tuple, x.tolist()))
        fresh = {
            key: value
            for key, value in zip(keys, [math.nan] * len(keys) if values is None else values.tolist())
            if key not in scores
        }
        draws.append(x)
        drawn += x.shape[0]
        unscored = [key for key, value in fresh.items() if math.isnan(value)]
        if unscored:
            fresh.update(zip(unscored, energy.of_indices(torch.tensor(unscored, device=x.device)).tolist()))
        scores.update(fresh)
        n = plan.spend.next_round(energy.meter.spent, cost)  # the first pass again, if the cache let it go
        if min(n, len(fresh)) < plan.spend.least_round:
            break
    x = torch.cat(draws)
    return x, torch.tensor([scores[tuple(row)] for row in x.tolist()])
