"""Exact Metropolis-Hastings kernels whose proposals are the masked LM's own one-pass draws.

- ``block-mh``: re-draw a random subset of ``block_size`` blanks, one at a time in ``order`` (left to right
  within the subset, or a random order), each from the masked LM given the blanks outside the subset and
  those already re-drawn, the rest of the subset masked. The proposal does not depend on the subset's
  current tokens, so the reverse move replays them along the same order: its contexts are known before the
  step and go through the encoder in one batched pass, the first (the whole subset masked) shared with the
  forward draw.
- ``mlm-independence``: with probability ``independence`` all chains propose a whole filling drawn by a
  one-pass ``order`` (by default ``confident-first``: :mod:`infill.lm.mlm_draws`), an independence proposal whose
  reverse probability replays the current filling along its own order; otherwise one local ``gibbs-mh`` step.

Both accept by the energy ratio times the reverse over the forward proposal probability, so they target
the energy exactly. An energy with ``blank_logits(x_idx, masked, read)`` (a masked LM) proposes from it;
any other proposes each blank from its ``conditional_logits`` or its exact conditional given the other
variables' current values (masked blanks then read their current tokens), and the reverse path is replayed
the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

import torch
from torch import Tensor

from ..energies.base import Energy, HasConditionals, evaluate, one_hot
from ..errors import InfillError
from ..lm import mlm_draws
from .base import Sampler, State, StepInfo, mh_transition
from .gibbs import enumerate_conditional
from .presets import GibbsMH
from .registry import register

BLOCK_ORDERS = {"left-to-right": True, "random": False}
"""``block-mh``'s orders: whether the block is re-drawn left to right (else in the random order it was chosen in)."""
ONE_PASS_ORDERS = sorted(name for name, order in mlm_draws.ORDERS.items() if order.blanks is not None)
"""The one-pass orders of :data:`infill.lm.mlm_draws.ORDERS` that ``mlm-independence`` proposes by: those that
fill the blanks one at a time."""


def is_masked_lm(energy: Energy) -> bool:
    """Whether ``energy`` offers the masked LM's ``blank_logits`` (masked blanks then read nothing)."""
    return hasattr(energy, "blank_logits")


def proposal_logits(energy: Energy, k: int):
    """``logits(z, masked, read) -> (N, S, K)``: the masked LM's, else each read blank's conditional given
    ``z``'s other values (``masked`` unused)."""
    if is_masked_lm(energy):
        return energy.blank_logits

    def single(z: Tensor, i: Tensor) -> Tensor:
        if isinstance(energy, HasConditionals):
            return energy.conditional_logits(z, i)
        return enumerate_conditional(energy, z, i, k)

    return lambda z, masked, read: torch.stack([single(z, read[:, s]) for s in range(read.shape[1])], 1)


def accept(
    energy: Energy,
    state: State,
    y: Tensor,
    log_q_fwd: Tensor,
    log_q_rev: Tensor,
    evaluations: int,
    generator: Optional[torch.Generator],
) -> tuple[State, StepInfo]:
    """The MH step to ``y``, its energy evaluated."""
    y_energy = evaluate(energy, one_hot(y, state.num_categories))
    return mh_transition(state, y, y_energy, None, log_q_fwd, log_q_rev.to(log_q_fwd.dtype), evaluations, generator)


def replay_batched(logits, x: Tensor, y: Tensor, blocks: Tensor, first: Optional[Tensor]) -> Tensor:
    """``log q(x | y)`` of a fixed order: ``x``'s tokens at ``blocks (B, m)`` replayed in column order from
    ``y``, every step's context in one batch; ``first`` (masked LMs: the step with the whole block masked,
    the forward draw's own) is reused."""
    b, m = blocks.shape
    rows = torch.arange(b, device=x.device)
    steps = range(0 if first is None else 1, m)
    contexts, masks = [], []
    for t in steps:
        z = y.clone()
        z[rows[:, None], blocks[:, :t]] = x[rows[:, None], blocks[:, :t]]
        masked = torch.zeros_like(z, dtype=torch.bool)
        masked[rows[:, None], blocks[:, t:]] = True
        contexts.append(z)
        masks.append(masked)
    parts = [] if first is None else [first[:, 0]]
    if contexts:
        read = torch.cat([blocks[:, t : t + 1] for t in steps])
        parts += list(logits(torch.cat(contexts), torch.cat(masks), read)[:, 0].split(b))
    log_p = torch.log_softmax(torch.stack(parts, 1).float(), dim=-1)  # (B, m, K)
    return log_p.gather(-1, x.gather(1, blocks)[..., None]).squeeze(-1).sum(1)


@register
@dataclass(frozen=True)
class BlockMH(Sampler):
    """MH with block proposals from the masked LM: ``block_size`` random blanks re-drawn in ``order``
    (``left-to-right`` or ``random``) given the rest, accepted by the PLL ratio with the reverse proposal."""

    name: ClassVar[str] = "block-mh"
    block_size: int = 2
    order: str = "left-to-right"

    def __post_init__(self):
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or self.block_size < 1:
            raise InfillError(f"block_size must be a positive integer, got {self.block_size!r}")
        if self.order not in BLOCK_ORDERS:
            raise InfillError(f"order must be one of {', '.join(BLOCK_ORDERS)}, got {self.order!r}")

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        x, k = state.x, state.num_categories
        b, d = x.shape
        m = min(self.block_size, d)
        blocks = torch.rand(b, d, generator=generator, device=x.device).argsort(-1)[:, :m]
        if BLOCK_ORDERS[self.order]:
            blocks = blocks.sort(-1).values
        logits = proposal_logits(energy, k)
        y, log_q_fwd, first = mlm_draws.fill(logits, x, blocks, mlm_draws.Drawing(False, generator))
        log_q_rev = self.reverse(logits, x, y, blocks, first if is_masked_lm(energy) else None)
        reverse_passes = int(m > 1 or not is_masked_lm(energy))
        return accept(energy, state, y, log_q_fwd, log_q_rev, m + reverse_passes + 1, generator)

    def reverse(self, logits, x: Tensor, y: Tensor, blocks: Tensor, first: Optional[Tensor]) -> Tensor:
        """``log q(x | y)``, the reverse move's proposal probability."""
        return replay_batched(logits, x, y, blocks, first)


@register
@dataclass(frozen=True)
class MLMIndependence(Sampler):
    """An independence proposal, a whole filling drawn by a one-pass ``order`` of the masked LM (its
    probability replayed along the order for the reverse), with probability ``independence`` per step;
    else one ``gibbs-mh`` step."""

    name: ClassVar[str] = "mlm-independence"
    independence: float = 0.5
    order: str = "confident-first"

    def __post_init__(self):
        if not 0 <= self.independence <= 1:
            raise InfillError(f"independence must be a probability in [0, 1], got {self.independence!r}")
        if self.order not in ONE_PASS_ORDERS:
            raise InfillError(f"order must be one of {', '.join(ONE_PASS_ORDERS)}, got {self.order!r}")

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        x = state.x
        if torch.rand((), generator=generator, device=x.device) >= self.independence:
            return GibbsMH().step(energy, state, generator)
        b, d = x.shape
        order = mlm_draws.ORDERS[self.order]
        blanks, confident = order.blanks(b, d, generator, x.device), order.confident
        first = mlm_draws.first_step_logits(energy.first_pass(), blanks, confident) if is_masked_lm(energy) else None
        logits = proposal_logits(energy, state.num_categories)
        y, log_q_fwd, _ = mlm_draws.fill(logits, x, blanks, mlm_draws.Drawing(confident, generator), first)
        log_q_rev = self.reverse(logits, x, y, blanks, confident, first)
        return accept(energy, state, y, log_q_fwd, log_q_rev, 2 * d + (first is None), generator)

    def reverse(self, logits, x: Tensor, y: Tensor, blanks: Tensor, confident: bool, first: Optional[Tensor]) -> Tensor:
        """``log q(x | y)``: ``x`` replayed along its own order from ``y`` (step by step where the order
        depends on the tokens, else in one batch)."""
        if confident:
            return mlm_draws.fill(logits, y, blanks, mlm_draws.Drawing(True, None, values=x), first)[1]
        return replay_batched(logits, x, y, blanks, first)
