"""An exact reversible-jump Metropolis-Hastings kernel over variable-length fills (CGMH moves).

Per chain and step: a blank ``j`` uniformly, then a move among those possible at its length ``n`` (weights
``move_weights`` renormalised: insert needs ``n`` below the blank's capacity, delete ``n`` above its least
number of units, replace ``n > 0``), then a position uniformly:

- **insert** at slot ``s`` in ``0..n``: a category drawn from the energy's proposal at a mask inserted there;
- **delete** position ``s`` in ``0..n-1``: its reverse is the insert at slot ``s`` of the category deleted;
- **replace** position ``s``: a category drawn from the proposal with position ``s`` masked (gibbs-mh).

Each labelled move has one reverse labelled move (insert at ``s`` <-> delete ``s``; replace ``s`` <-> replace
``s``), so the per-move ratio ``pi(y) q(x | y) / (pi(x) q(y | x))``, with the move choice, the position and the
proposal's category probability on both sides, is exact even where a fill repeats a category. Proposals are
masked to valid fills (:meth:`SpanSpace.proposal_mask`), forward and reverse alike, so an invalid fill is never
proposed except by a delete, which is then refused without evaluating it.

The energy (:class:`SpanEnergy`) gives the log-probability of fills and the proposal's logits at a mask; the
kernel knows nothing about text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

import torch
from torch import Tensor

from ..errors import InfillError
from ..samplers import sample_categorical
from ..samplers.base import mh_accept
from .fills import EMPTY, MASK, Fills, SpanSpace

MOVES = ("insert", "delete", "replace")
REVERSE = (1, 0, 2)  # the reverse of each move, by index
NO_MOVE = -1


class SpanEnergy(Protocol):
    """What the span kernel needs from an energy over ``K = num_categories`` categories."""

    num_categories: int

    def __call__(self, fills: Fills) -> Tensor:
        """The unnormalised log-probability ``(B,)`` of each chain's fills (no mask in them)."""

    def proposal_logits(self, fills: Fills, blank: Tensor, slot: Tensor) -> Tensor:
        """Logits ``(B, K)`` of the proposal at the one :data:`MASK` of each chain, at position ``slot[b]`` of
        blank ``blank[b]``; they must depend on the fills around the mask only."""


@dataclass(frozen=True)
class SpanState:
    """Fills of the chains and their cached energy ``(B,)`` (float64, at temperature 1)."""

    fills: Fills
    energy: Tensor

    def select(self, chains) -> "SpanState":
        return SpanState(self.fills.select(chains), self.energy[chains])


@dataclass(frozen=True)
class SpanStepInfo:
    """Per chain: ``move`` (index into :data:`MOVES`, :data:`NO_MOVE` where no valid proposal was made),
    ``accepted``, and the proposal's acceptance probability ``accept_prob`` (0 where none)."""

    move: Tensor
    accepted: Tensor
    accept_prob: Tensor


@dataclass
class SpanKernel:
    """Reversible-jump MH over fills; ``temperature`` divides the energy and the proposal's logits."""

    move_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)
    temperature: float = 1.0

    def __post_init__(self):
        if len(self.move_weights) != 3 or min(self.move_weights) < 0 or max(self.move_weights) <= 0:
            raise InfillError(f"move_weights must be 3 non-negative weights (insert, delete, replace), "
                              f"got {self.move_weights}")
        if not self.temperature > 0:
            raise InfillError(f"temperature must be positive, got {self.temperature}")

    def init(self, energy: SpanEnergy, space: SpanSpace, fills: Fills) -> SpanState:
        """The state of ``fills`` (valid in ``space``), widened to the space's capacity."""
        if not bool(space.fill_valid(fills, torch.arange(len(fills.lengths), device=fills.lengths.device)).all()):
            raise InfillError("a chain starts from a fill outside its span space")
        width = space.width - fills.tokens.shape[2]
        if width > 0:
            fills = Fills(torch.nn.functional.pad(fills.tokens, (0, width), value=EMPTY), fills.lengths)
        return SpanState(fills, energy(fills).double())

    def move_log_probs(self, space: SpanSpace, lengths: Tensor, blank: Tensor, chains: Tensor) -> Tensor:
        """Log-probabilities ``(B, 3)`` of each move at fill length ``lengths (B,)`` (``-inf``: impossible)."""
        possible = torch.stack([lengths < space.capacity[chains, blank], lengths > space.low[chains, blank],
                                lengths > 0], 1)
        weights = torch.tensor(self.move_weights, dtype=torch.float64, device=lengths.device) * possible
        return torch.log(weights / weights.sum(1, keepdim=True).clamp_min(1e-300))

    def log_proposals(self, move: Tensor, n: Tensor, log_p_x: Tensor, log_p_y: Tensor, log_q_new: Tensor,
                      log_q_old: Tensor) -> tuple[Tensor, Tensor]:
        """``(log q(y | x), log q(x | y))`` of labelled moves ``move`` from fill length ``n``: the move's
        choice, its position among the slots, and the drawn category (inserts and replaces forward, deletes
        and replaces backward)."""
        rows = torch.arange(len(move), device=move.device)
        insert, delete = move == 0, move == 1
        n_y = n + insert.long() - delete.long()
        slots_x = (n + insert.long()).double()
        slots_y = (n_y + delete.long()).double()
        forward = log_p_x[rows, move] - slots_x.log() + torch.where(delete, 0.0, log_q_new)
        reverse = log_p_y[rows, torch.tensor(REVERSE, device=move.device)[move]] - slots_y.log()
        return forward, reverse + torch.where(insert, 0.0, log_q_old)

    def step(self, energy: SpanEnergy, space: SpanSpace, state: SpanState,
             generator: Optional[torch.Generator]) -> tuple[SpanState, SpanStepInfo]:
        fills = state.fills
        b, j = fills.lengths.shape
        device = fills.tokens.device
        chains = torch.arange(b, device=device)
        blank = torch.randint(j, (b,), generator=generator, device=device)
        n = fills.lengths[chains, blank]
        log_p_x = self.move_log_probs(space, n, blank, chains)
        move = torch.where(torch.isfinite(log_p_x).any(1), sample_categorical(log_p_x, generator), NO_MOVE)
        insert = move == 0
        slots = n + insert.long()
        slot = (torch.rand(b, generator=generator, device=device, dtype=torch.float64) * slots).long()
        slot = torch.minimum(slot, (slots - 1).clamp_min(0))

        a = (move != NO_MOVE).nonzero().flatten()  # chains that propose
        x, bl, sl, mv, na = fills.select(a), blank[a], slot[a], move[a], n[a]
        ins = insert[a]
        mask_token = torch.full_like(bl, MASK)
        context = x.insert(bl, sl, mask_token).where(ins, x.put(bl, sl, mask_token))
        logits = energy.proposal_logits(context, bl, sl).double() / self.temperature
        allowed = space.proposal_mask(x, bl, sl, ins, a)
        log_q = torch.log_softmax(logits.masked_fill(~allowed, float("-inf")), -1)
        drawn = sample_categorical(log_q.nan_to_num(nan=float("-inf")), generator)
        rows_a = torch.arange(len(a), device=device)
        old = x.rows(bl)[rows_a, sl.clamp_max(x.tokens.shape[2] - 1)].clamp_min(0)
        deleted = x.delete(bl, sl)
        y = x.insert(bl, sl, drawn).where(ins, x.put(bl, sl, drawn)).where(mv != 1, deleted)
        n_y = y.lengths[rows_a, bl]
        ok = torch.where(mv == 1, space.valid(space.kinds(deleted.rows(bl), bl), n_y, bl, a), allowed.any(1))

        log_p_y = self.move_log_probs(space, n_y, bl, a)
        forward, reverse = self.log_proposals(mv, na, log_p_x[a], log_p_y, log_q[rows_a, drawn], log_q[rows_a, old])
        p = ok.nonzero().flatten()  # valid proposals: evaluate them
        energy_y = torch.full((len(a),), float("-inf"), dtype=torch.float64, device=device)
        if len(p):
            energy_y[p] = energy(y.select(p)).double()
        log_ratio = (energy_y - state.energy[a]) / self.temperature + reverse - forward
        log_ratio = torch.where(ok, log_ratio, float("-inf"))
        accept_a = mh_accept(log_ratio, generator)

        accepted = torch.zeros(b, dtype=torch.bool, device=device)
        accepted[a] = accept_a
        accept_prob = torch.zeros(b, dtype=torch.float64, device=device)
        accept_prob[a] = log_ratio.clamp_max(0).exp().double().nan_to_num(nan=0.0)
        tokens, lengths, values = fills.tokens.clone(), fills.lengths.clone(), state.energy.clone()
        keep = a[accept_a]
        tokens[keep], lengths[keep], values[keep] = y.tokens[accept_a], y.lengths[accept_a], energy_y[accept_a]
        move = torch.where(torch.isin(chains, a[ok]), move, NO_MOVE)
        return SpanState(Fills(tokens, lengths), values), SpanStepInfo(move, accepted, accept_prob)
