"""Rewrite mode: ``PLL + lambda * closeness(source)``, with ``lambda`` calibrated so that the expected
fraction of changed blanks is the user's ``change``.

Among all distributions whose expected fraction of changed blanks is ``change``, the one closest to the
PLL target (least KL divergence) is ``exp(PLL - lambda * changed)`` for the one ``lambda`` that meets it:
an exponential tilt, i.e. a closeness term with weight ``lambda`` (negative where ``change`` is above what
the PLL alone gives). The fraction falls monotonically in ``lambda``; :func:`calibrate_closeness` finds it
in two stages:

1. A start from single-blank conditionals at the source (the masked LM's own, or the energy's exact ones):
   treating blanks as independent, blank ``i`` changes with probability
   ``(1 - p_i) e^-lambda / (p_i + (1 - p_i) e^-lambda)`` (``p_i`` its conditional probability of the source
   token); ``lambda`` solves ``mean_i = change`` by bisection.
2. A short adaptation with the sampler: ``rounds`` runs of ``steps`` steps, the chains going on from run to
   run, each run's fraction ``f`` (over its second half) moving ``lambda`` by ``logit f - logit change``: for
   independent blanks a step no longer than Newton's (the slope of a mean of logistic curves is at most
   ``f (1 - f)``).

``lambda`` is then frozen: a run on the returned sum is an exact MH chain for it.

:func:`source_bleu` scores each variant against the source, as ``infill rewrite --json`` and the page report it.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor

from ..energies.base import Energy, HasConditionals
from ..errors import InfillError, check, is_number
from ..samplers.base import Sampler
from ..samplers.driver import sample
from ..samplers.neighbours import neighbour_values
from .terms import Closeness
from .weighted_sum import WeightedSum

BRACKET = 30.0  # lambda is sought in [-BRACKET, BRACKET]


def check_change(change: float) -> float:
    check(
        is_number(change, 0, 1, open_low=True, open_high=True),
        f"change must be a fraction strictly between 0 and 1, got {change!r}",
    )
    return float(change)


def source_bleu(variants: list[str], source: str) -> tuple[list, str | None]:
    """Each variant's sacrebleu sentence BLEU (percent) against ``source``, and sacrebleu's signature; Nones
    without the eval extra."""
    try:
        from .. import metrics

        metrics.check_bleu("sacrebleu")
    except (ImportError, InfillError):
        return [None] * len(variants), None
    return (
        [100 * metrics.sentence_bleu(variant, source) for variant in variants],
        metrics.sacrebleu_signature(1, effective_order=True),
    )


def source_log_probs(energy: Energy, source: Tensor) -> Tensor:
    """``log p_i(source_i)`` at every blank ``(d,)`` from single-blank conditionals at the source: the
    model's (one forward pass of ``d`` sequences) where the energy has them, else the energy's exact ones."""
    d = source.shape[-1]
    rows = source.reshape(1, d).expand(d, d)
    if isinstance(energy, HasConditionals):
        logits = energy.conditional_logits(rows, torch.arange(d, device=source.device))
    else:
        logits = neighbour_values(energy, source.reshape(1, d), energy.num_categories)[1][0]
    return torch.log_softmax(logits.double(), -1).gather(1, source.reshape(d, 1)).squeeze(1)


def independent_fraction(log_p: Tensor, weight: float) -> float:
    """Expected fraction of changed blanks when blank ``i`` keeps its source with probability
    ``p_i / (p_i + (1 - p_i) e^-weight)``."""
    log_other = torch.log1p(-log_p.exp().clamp_max(1 - 1e-12)) - weight
    return torch.sigmoid(log_other - log_p).mean().item()


def solve_weight(log_p: Tensor, change: float) -> float:
    """The weight at which :func:`independent_fraction` is ``change`` (bisection, clipped to the bracket)."""
    low, high = -BRACKET, BRACKET
    for _ in range(60):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if independent_fraction(log_p, mid) > change else (low, mid)
    return 0.5 * (low + high)


def closeness_sum(energy: Energy, source: Tensor, weight: float) -> WeightedSum:
    """``energy + weight * closeness(source)``: a sum extended, any other energy named ``pll``."""
    closeness = (weight, Closeness(source, energy.num_categories))
    if isinstance(energy, WeightedSum):
        return energy.extended(closeness)
    return WeightedSum([(1.0, energy, "pll"), closeness])


def calibrate_closeness(
    energy: Energy,
    source: Tensor,
    change: float,
    sampler: Optional[Sampler] = None,
    chains: int = 16,
    steps: int = 20,
    rounds: int = 3,
    generator: Optional[torch.Generator] = None,
    with_state: bool = False,
):
    """``energy + lambda * closeness(source)`` (``energy`` the PLL, or a sum of terms with it) with ``lambda``
    set so that about a fraction ``change`` of the ``d`` blanks differ from ``source (d,)`` (category
    indices) in expectation (module docstring); with a ``sampler``, refined by ``rounds`` runs of ``chains``
    chains x ``steps`` steps started at the source. ``with_state``: also the chains' states ``(chains, d)``
    after those runs (the source where none ran), for a run to go on from."""
    change = check_change(change)
    source = torch.as_tensor(source, dtype=torch.long).reshape(-1)
    weight = solve_weight(source_log_probs(energy, source), change)
    x = source.expand(chains, -1).clone()
    for _ in range(rounds if sampler is not None else 0):
        trace = sample(sampler, closeness_sum(energy, source, weight), x, steps, generator, ("samples",))
        x = trace.final_state.x
        kept = trace.samples[steps // 2 :]
        observed = (kept != source.to(kept.device)).double().mean().item()
        floor = 0.5 / kept.numel()  # a fraction no run can tell from 0 (or 1)
        observed = min(max(observed, floor), 1 - floor)
        step = math.log(observed / (1 - observed)) - math.log(change / (1 - change))
        weight = min(max(weight + step, -BRACKET), BRACKET)
    total = closeness_sum(energy, source, weight)
    return (total, x) if with_state else total
