"""The sampler contract: ``init(energy, x0) -> State`` and ``step(energy, state, generator) -> (State, StepInfo)``,
one pair for every sampler, run by the driver (:mod:`.driver`); an adapted sampler (:mod:`.adaptive`) is one
too, its tuning carried in its states. The adaptation contract (:class:`Adaptation`) is here as well.

States hold category indices ``x (B, d)`` and, where the sampler uses them, the cached energy value and
scores of the current state (gradients or exact neighbour differences, :mod:`.scores`), so an MH step costs
one new evaluation. Everything random comes from the ``torch.Generator`` passed to ``step``: the same seed
gives the same trace. Samplers know nothing about text; they see an energy (see :mod:`infill.energies.base`)
and ``K`` categories per variable.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Optional, Protocol

import torch
from torch import Tensor

from ..energies.base import Energy, evaluate, one_hot
from ..errors import InfillError
from ..lm.mlm_draws import sample_categorical  # noqa: F401 (the samplers' draw)
from .scores import ScoreSource


@dataclass(frozen=True)
class Tuning:
    """The record of an adaptation (:mod:`.adaptive`): the kernel argument ``value`` in use (a step size or a
    path length), adapted during the first ``adapt_steps`` steps and frozen afterwards; ``burn_in`` steps tune
    anything at all (``>= adapt_steps``): the warmup; ``steps`` counts the steps taken. Adaptations that learn
    more extend it (e.g. PAVG's preconditioner)."""

    value: float
    adapt_steps: int
    burn_in: int
    steps: int = 0

    def to_dict(self) -> dict:
        """The numbers of the tuning (JSON-ready; a subclass's tensors left out)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), (int, float))
        }


@dataclass(frozen=True)
class State:
    """The chains' current states ``x (B, d)`` with cached ``energy (B,)`` and ``scores (B, d, K)``.

    ``scores`` are the gradient of the energy at the one-hot ``x`` or the exact differences
    ``U(x with x_i := k) - U(x)`` (:mod:`.scores`), None where unused. ``energy`` is NaN where the sampler
    never needs it (plain ``gibbs`` with the model's proposal). ``tuning`` is the adaptation's record where the
    sampler adapts (:class:`.adaptive.Adapted`), None where nothing does.
    """

    x: Tensor
    energy: Tensor
    scores: Optional[Tensor] = None
    num_categories: int = 0
    tuning: Optional[Tuning] = None

    def select(self, chains) -> "State":
        """The state of the chains ``chains`` (a slice, index tensor or mask over ``B``)."""
        return dataclasses.replace(
            self,
            x=self.x[chains],
            energy=self.energy[chains],
            scores=None if self.scores is None else self.scores[chains],
        )


@dataclass(frozen=True)
class StepInfo:
    """Per-chain diagnostics of one step: ``accepted (B,)``, ``hops (B,)`` (coordinates changed),
    ``evaluations`` (energy evaluations per chain, value or value-and-gradient), and of the proposal:
    ``proposed_hops (B,)`` and ``accept_prob (B,)``, its Metropolis-Hastings acceptance probability
    (computed for unadjusted samplers too, which accept regardless); ``proposal (B, d)`` and its
    ``proposal_energy (B,)`` where the step scored a proposal (NaN where it did not compute it)."""

    accepted: Tensor
    hops: Tensor
    evaluations: int
    proposed_hops: Tensor
    accept_prob: Tensor
    proposal: Optional[Tensor] = None
    proposal_energy: Optional[Tensor] = None


@dataclass
class Trace:
    """What a run of ``steps`` steps produced (:func:`.driver.sample`). ``samples (steps, B, d)`` is the state
    after each step; ``burn_in`` the number of first steps spent adapting (the warmup; 0 when nothing adapts):
    from then on the kernel is fixed and exact, tuned as ``tuning`` says (None: nothing adapts).
    ``proposals`` and ``proposal_energies`` hold each step's proposals where the kernel reports them: a rejected
    proposal was scored too. ``energies`` hold ``U / temperature``, ``temperature`` being the energy's
    (:class:`~infill.energies.tempered.Tempered`; 1 for ``U`` itself). A field the run was not asked to keep
    is None."""

    samples: Optional[Tensor]
    energies: Optional[Tensor]
    accepted: Optional[Tensor]
    hops: Optional[Tensor]
    evaluations: int
    final_state: State
    steps: int
    burn_in: int = 0
    proposals: Optional[Tensor] = None
    proposal_energies: Optional[Tensor] = None
    temperature: float = 1.0
    tuning: Optional[Tuning] = None

    @property
    def acceptance_rate(self) -> float:
        return self.accepted.float().mean().item()

    @property
    def mean_hops(self) -> float:
        """Mean number of coordinates changed per chain per step."""
        return self.hops.float().mean().item()

    def candidates(self, decode: str = "visited", top: Optional[int] = None) -> tuple[Tensor, Tensor]:
        """The states ``(S, B, d)`` a ``top``/``decode`` policy chooses from, with their energies ``(S, B)`` at
        temperature 1: the final states without ``top`` or with ``decode="final"``, else (``"visited"``) every
        state after burn-in. (``decode="diverse"`` adds states a trace does not hold: the pipeline's.)"""
        if top is None or decode == "final":
            return self.final_state.x[None], self.final_state.energy[None] * self.temperature
        return self.samples[self.burn_in :], self.energies[self.burn_in :] * self.temperature

    def select(self, chains) -> "Trace":
        """The trace of the chains ``chains`` (a slice, index tensor or mask over ``B``)."""
        kept = {name: getattr(self, name)[:, chains] for name in PER_STEP if getattr(self, name) is not None}
        return dataclasses.replace(self, final_state=self.final_state.select(chains), **kept)


class Adaptation(Protocol):
    """The init/update/final triple of an adaptation and its schedule after the warmup (:mod:`.adaptive`)."""

    def init(self, value: float, steps: Optional[int]) -> Tuning: ...

    def update(self, tuning: Tuning, before: State, after: State, info: StepInfo) -> Tuning: ...

    def final(self, tuning: Tuning) -> tuple: ...

    def schedule(self, tuning: Tuning) -> Tuning: ...


PER_STEP = ("samples", "energies", "accepted", "hops", "proposals", "proposal_energies")


def mh_accept(log_ratio: Tensor, generator: Optional[torch.Generator]) -> Tensor:
    """Metropolis-Hastings test: accept where ``log u < log_ratio``, per chain."""
    u = torch.rand(log_ratio.shape, generator=generator, device=log_ratio.device, dtype=log_ratio.dtype)
    return torch.log(u) < log_ratio


def per_chain(choose: Tensor, new: Tensor, old: Tensor) -> Tensor:
    """Per-chain choice between two batched tensors (first dimension is the chain)."""
    return torch.where(choose.view(-1, *([1] * (new.dim() - 1))), new, old)


def mh_transition(
    state: State,
    y: Tensor,
    y_energy: Tensor,
    y_scores: Optional[Tensor],
    log_q_fwd: Tensor,
    log_q_rev: Tensor,
    evaluations: int,
    generator: Optional[torch.Generator],
    adjusted: bool = True,
) -> tuple[State, StepInfo]:
    """The one Metropolis-Hastings step of every kernel: from ``state`` to the proposals ``y`` (with their
    energy and scores) drawn with log-probability ``log_q_fwd (B,)``, ``log_q_rev (B,)`` that of the reverse
    move. ``adjusted=False`` accepts every proposal (unadjusted samplers); the acceptance probability is
    reported either way."""
    log_ratio = y_energy - state.energy + log_q_rev - log_q_fwd
    accept_prob = torch.nan_to_num(log_ratio.clamp_max(0.0).exp(), nan=0.0)
    if adjusted:
        accept = mh_accept(log_ratio, generator)
    else:
        accept = torch.ones(y.shape[0], dtype=torch.bool, device=y.device)
    x = per_chain(accept, y, state.x)
    scores = None if y_scores is None else per_chain(accept, y_scores, state.scores)
    new_state = dataclasses.replace(state, x=x, energy=per_chain(accept, y_energy, state.energy), scores=scores)
    info = StepInfo(accept, (x != state.x).sum(-1), evaluations, (y != state.x).sum(-1), accept_prob, y, y_energy)
    return new_state, info


def as_indices(energy: Energy, x0: Tensor) -> tuple[Tensor, int]:
    """``x0`` as category indices ``(B, d)`` and the number of categories ``K``."""
    if x0.is_floating_point():
        if x0.dim() != 3:
            raise InfillError(f"a one-hot start must have shape (B, d, K), got {tuple(x0.shape)}")
        return x0.argmax(-1), x0.shape[-1]
    k = getattr(energy, "num_categories", None)
    if k is None:
        raise InfillError("start from a one-hot (B, d, K) tensor, or give the energy a num_categories attribute")
    if x0.dim() != 2 or x0.min() < 0 or x0.max() >= k:
        raise InfillError(f"a start of indices must have shape (B, d) with values in [0, {k})")
    return x0, int(k)


class Sampler:
    """Base class of every sampler: hyperparameters are fields of the subclass, a frozen dataclass, which gives
    :meth:`step` and, where its states cache more than the energy, a ``score_source`` (:mod:`.scores`) or its
    own :meth:`start`. A sampler that is tuned names its default adaptation (:mod:`.adaptive`) in
    ``adaptation`` and the hyperparameter it tunes in ``tuned``; it does not know it is tuned: it steps with its
    own fields (:meth:`fixed` gives the sampler with tuned ones). Run by :func:`.driver.sample`."""

    name: ClassVar[str] = ""
    tuned: ClassVar[str] = ""
    adaptation: ClassVar[Optional[Adaptation]] = None
    score_source: ClassVar[Optional[ScoreSource]] = None

    def init(self, energy: Energy, x0: Tensor) -> State:
        """Start from ``x0``: one-hot ``(B, d, K)``, or indices ``(B, d)`` with ``energy.num_categories``."""
        x_idx, k = as_indices(energy, x0)
        self.check_variables(x_idx.shape[1])
        return self.start(energy, x_idx, k)

    def check_variables(self, d: int) -> None:
        """Refuse, with one line, hyperparameters that do not fit ``d`` variables (before any sampling)."""

    def start(self, energy: Energy, x_idx: Tensor, k: int) -> State:
        if self.score_source is None:
            return State(x_idx, evaluate(energy, one_hot(x_idx, k)), None, k)
        value, scores = self.score_source.evaluate(energy, x_idx, k)
        return State(x_idx, value, scores, k)

    def init_evaluations(self, energy: Energy, d: int, k: int) -> int:
        """Energy evaluations per chain that :meth:`init` spends on ``d`` variables of ``k`` categories."""
        return 1 if self.score_source is None else self.score_source.evaluations(d, k)

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        raise NotImplementedError

    def for_run(self, steps: int) -> "Sampler":
        """The sampler of a run of ``steps`` steps: itself (an adapted one sizes its warmup by the run)."""
        return self

    def fixed(self, value: float) -> "Sampler":
        """The sampler stepping with the tuned hyperparameter at ``value`` (the adaptation's ``final``)."""
        return dataclasses.replace(self, **{self.tuned: value})

    def hyperparameters(self) -> dict:
        return options_of(self)


NOT_AN_OPTION = {"option": False}
"""The metadata of a sampler's field that its adaptation sets but a user does not (AVG's ``curvature``)."""


def option_fields(options) -> list:
    """The fields of a dataclass (or its class) of options: those a user may set."""
    return [f for f in dataclasses.fields(options) if f.metadata.get("option", True)]


def options_of(options) -> dict:
    """The options of a dataclass of options, by name."""
    return {f.name: getattr(options, f.name) for f in option_fields(options)}
