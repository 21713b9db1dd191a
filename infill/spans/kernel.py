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

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Optional, Protocol

import torch
from torch import Tensor

from ..errors import InfillError
from ..samplers.base import Sampler, State, StepInfo, mh_transition, sample_categorical
from .fills import MASK, Fills, SpanSpace

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
class SpanSampler(Sampler):
    """Reversible-jump MH over the fills of ``space``, a sampler of the one contract (:class:`Sampler`): its
    state ``x (B, J * C + J)`` is the fills packed (:meth:`Fills.pack`), run by the one driver
    (:func:`~infill.samplers.sample`, :func:`~infill.samplers.run_annealed`). At temperature ``T`` the energy is
    :class:`~infill.energies.tempered.Tempered`, which divides the energy and the proposal's logits alike."""

    name: ClassVar[str] = "rjmcmc"
    space: SpanSpace
    move_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def __post_init__(self):
        if len(self.move_weights) != 3 or min(self.move_weights) < 0 or max(self.move_weights) <= 0:
            raise InfillError(
                f"move_weights must be 3 non-negative weights (insert, delete, replace), got {self.move_weights}"
            )

    def hyperparameters(self) -> dict:
        return {"move_weights": self.move_weights}

    def fills(self, x: Tensor) -> Fills:
        """The fills packed in the states ``x``."""
        return Fills.unpack(x, self.space.allowed.shape[0])

    def init(self, energy: SpanEnergy, x0: Tensor) -> State:
        """The state of the packed fills ``x0``, valid in the space and as wide as its capacity."""
        j = self.space.allowed.shape[0]
        if x0.dim() != 2 or x0.shape[1] != j * self.space.width + j:
            raise InfillError(f"span starts are fills packed as (B, {j * self.space.width + j}), got {tuple(x0.shape)}")
        fills = self.fills(x0)
        if not bool(self.space.fill_valid(fills, torch.arange(len(x0), device=x0.device)).all()):
            raise InfillError("a chain starts from a fill outside its span space")
        return State(x0, energy(fills).double(), num_categories=energy.num_categories)

    def move_log_probs(self, lengths: Tensor, blank: Tensor, chains: Tensor) -> Tensor:
        """Log-probabilities ``(B, 3)`` of each move at fill length ``lengths (B,)`` (``-inf``: impossible)."""
        space = self.space
        possible = torch.stack(
            [lengths < space.capacity[chains, blank], lengths > space.low[chains, blank], lengths > 0], 1
        )
        weights = torch.tensor(self.move_weights, dtype=torch.float64, device=lengths.device) * possible
        return torch.log(weights / weights.sum(1, keepdim=True).clamp_min(1e-300))

    def log_proposals(
        self, move: Tensor, n: Tensor, log_p_x: Tensor, log_p_y: Tensor, log_q_new: Tensor, log_q_old: Tensor
    ) -> tuple[Tensor, Tensor]:
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

    def choose_moves(self, fills: Fills, generator: Optional[torch.Generator]):
        """Per chain: ``(blank, move, slot, log_p)``: a blank uniformly, a possible move (:data:`NO_MOVE` where
        none is), a position uniformly among its slots, and the log-probabilities ``(B, 3)`` of the moves."""
        b, j = fills.lengths.shape
        device = fills.tokens.device
        chains = torch.arange(b, device=device)
        blank = torch.randint(j, (b,), generator=generator, device=device)
        n = fills.lengths[chains, blank]
        log_p = self.move_log_probs(n, blank, chains)
        move = torch.where(torch.isfinite(log_p).any(1), sample_categorical(log_p, generator), NO_MOVE)
        slots = n + (move == 0).long()
        slot = (torch.rand(b, generator=generator, device=device, dtype=torch.float64) * slots).long()
        return blank, move, torch.minimum(slot, (slots - 1).clamp_min(0)), log_p

    def propose(
        self,
        energy: SpanEnergy,
        x: Fills,
        chains: Tensor,
        blank: Tensor,
        move: Tensor,
        slot: Tensor,
        log_p_x: Tensor,
        generator: Optional[torch.Generator],
    ):
        """The proposals ``y`` from fills ``x`` of ``chains`` (moves chosen), whether each is valid, and
        ``(log q(y | x), log q(x | y))``."""
        rows, space = torch.arange(len(chains), device=chains.device), self.space
        insert, n = move == 0, x.lengths[rows, blank]
        mask_token = torch.full_like(blank, MASK)
        context = x.insert(blank, slot, mask_token).where(insert, x.put(blank, slot, mask_token))
        logits = energy.proposal_logits(context, blank, slot).double()
        allowed = space.proposal_mask(x, blank, slot, insert, chains)
        log_q = torch.log_softmax(logits.masked_fill(~allowed, float("-inf")), -1)
        drawn = sample_categorical(log_q.nan_to_num(nan=float("-inf")), generator)
        old = x.rows(blank)[rows, slot.clamp_max(x.tokens.shape[2] - 1)].clamp_min(0)  # the category replaced
        deleted = x.delete(blank, slot)
        y = x.insert(blank, slot, drawn).where(insert, x.put(blank, slot, drawn)).where(move != 1, deleted)
        n_y = y.lengths[rows, blank]
        valid = torch.where(
            move == 1, space.valid(space.kinds(deleted.rows(blank), blank), n_y, blank, chains), allowed.any(1)
        )
        log_p_y = self.move_log_probs(n_y, blank, chains)
        return y, valid, *self.log_proposals(move, n, log_p_x, log_p_y, log_q[rows, drawn], log_q[rows, old])

    def step(self, energy: SpanEnergy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        """One move per chain, tested by Metropolis-Hastings; one proposal forward pass, and one energy
        evaluation over the chains that propose a valid fill other than their own."""
        fills = self.fills(state.x)
        blank, move, slot, log_p = self.choose_moves(fills, generator)
        a = (move != NO_MOVE).nonzero().flatten()  # chains that propose
        x = fills.select(a)
        y, valid, forward, reverse = self.propose(energy, x, a, blank[a], move[a], slot[a], log_p[a], generator)
        same = (y.tokens == x.tokens).all(2).all(1) & (y.lengths == x.lengths).all(1)  # a replace by itself
        energy_y = torch.where(same, state.energy[a], float("-inf"))
        new = valid & ~same
        if bool(new.any()):
            energy_y[new] = energy(y.select(new)).double()
        reverse = torch.where(valid, reverse, float("-inf"))  # an invalid fill is refused
        moved, info = mh_transition(state.select(a), y.pack(), energy_y, None, forward, reverse, 1, generator)
        return every_chain(state, a, moved, info)


def every_chain(state: State, chains: Tensor, moved: State, info: StepInfo) -> tuple[State, StepInfo]:
    """The step ``moved``, ``info`` of the chains ``chains`` of ``state`` as a step of all of them: the others stay,
    having proposed nothing."""
    x, energy = state.x.clone(), state.energy.clone()
    x[chains], energy[chains] = moved.x, moved.energy

    def spread(values: Tensor) -> Tensor:
        return values.new_zeros(len(state.x)).index_copy_(0, chains, values)

    proposed = spread(info.proposed_hops)
    info = StepInfo(spread(info.accepted), (x != state.x).sum(-1), 1, proposed, spread(info.accept_prob))
    return dataclasses.replace(state, x=x, energy=energy), info
