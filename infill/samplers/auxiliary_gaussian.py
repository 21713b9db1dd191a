"""Auxiliary Gaussian gradient samplers, AVG and PAVG (Rhodes & Gutmann, 2022).

Both sample the extended target ``pi(x) N(z; A x, I)`` over one-hot ``x`` (flattened to ``dK``) and a
Gaussian ``z``, with ``A^T A = S = c I + gamma W``. A step is block-wise: draw ``z | x`` exactly, then an MH
step for ``x | z`` whose proposal is the exact conditional under the quadratic model
``f(x') ≈ f(x) + grad f(x)^T (x' - x) + gamma/2 (x' - x)^T W (x' - x)``:

    q(x' | x, z) ∝ exp((grad f(x) - gamma W x + u)^T x'),   u = A^T z = S x + N(0, S) noise,

which factorises over the variables because ``W`` has no same-site entries and ``x'^T x' = d`` on one-hot
vectors. The MH ratio in the extended space is

    pi(x') N(z; A x', I) q(x | x', z) / (pi(x) N(z; A x, I) q(x' | x, z)),
    log N(z; A x', I) - log N(z; A x, I) = u^T (x' - x) - gamma/2 (x'^T W x' - x^T W x);

``A`` itself is never formed. A proposal is exact (always accepted) when ``f`` is quadratic with cross-site
curvature ``gamma W``. One value-and-gradient evaluation per step (at ``x'``, cached). AVG's step size adapts during
the warmup (:mod:`.adaptive`). The kernel steps with its step size and preconditioner (``curvature``, set by
:meth:`AVG.fixed`); PAVG's learning is its adaptation (:class:`Preconditioning`).

- AVG: ``gamma = 0``, ``c = 1/alpha`` with ``alpha`` the ``step_size``, i.e. ``z ~ N(x, alpha I)``: logits
  ``grad f(x) + x/alpha + N(0, I/alpha)``, exact for linear ``f``.
- PAVG: ``W`` is estimated from the chains' states over the first half of ``burn_in`` (pooled over chains and
  steps, run as AVG), from their covariance ``C``: either ``W = -(C + delta I)^{-1}`` (``precision``; the
  curvature of a Gaussian with covariance ``C``) or ``W = D^{-1} C D^{-1}``, ``D = diag(C) + delta``
  (``covariance``; the linear-response estimate of the couplings); then the same-site entries are removed
  (the cross terms of one variable's categories are zero on one-hot vectors, its diagonal is linear).
  ``gamma`` is learned over the second half: the candidates in ``GAMMAS`` take turns, and the one with the
  largest mean jump ``(x' - x)^T C (x' - x)`` (accepted moves, weighted toward the directions in which the
  target varies most) wins; ``gamma = 0`` is AVG. ``c = 1/alpha + gamma max(0, -lambda_min(W))`` keeps
  ``S`` positive definite. After ``burn_in`` steps ``W`` and ``gamma`` are frozen, so the chain is exact.
  The step size adapts (:mod:`.adaptive`) during the first half of the run, at most ``burn_in`` steps.
  ``W`` is a dense ``dK x dK`` matrix: PAVG is for small category sets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar, Optional

import torch
from torch import Tensor

from ..energies.base import Energy, one_hot
from ..errors import InfillError
from .adaptive import StepSize
from .base import NOT_AN_OPTION, Adaptation, Sampler, State, StepInfo, Tuning, mh_transition, sample_categorical
from .factorised import gather_sum
from .registry import register
from .scores import GRADIENT

GAMMAS = (0.0, 0.0625, 0.125, 0.25, 0.5, 1.0, 2.0)
DELTA = 1e-2  # ridge added to the variances
MAX_PRECONDITIONED = 4096  # largest d * K for which PAVG keeps a dense preconditioner


@dataclass(frozen=True)
class Preconditioner:
    """``W = basis diag(spectrum) basis^T`` (``dK x dK``) and the scale ``gamma`` in use."""

    basis: Tensor
    spectrum: Tensor
    gamma: float

    def apply(self, flat: Tensor) -> Tensor:
        """``gamma W v`` for each row ``v`` of ``flat (B, dK)``."""
        return self.gamma * ((flat @ self.basis) * self.spectrum) @ self.basis.T


def auxiliary_move(
    energy: Energy, state: State, alpha: float, pre: Optional[Preconditioner], generator: Optional[torch.Generator]
) -> tuple[State, StepInfo]:
    """One block-wise step: ``z | x`` exactly, then MH for ``x | z`` (module docstring; ``pre=None`` is AVG)."""
    x, k = state.x, state.num_categories
    b, d = x.shape
    pre = pre if pre is not None and pre.gamma != 0 else None
    flat_x = one_hot(x, k, state.scores.dtype).flatten(1)
    noise = torch.randn(flat_x.shape, generator=generator, device=x.device, dtype=flat_x.dtype)
    c = 1.0 / alpha
    if pre is None:
        u = c * flat_x + c**0.5 * noise
        curv_x = torch.zeros_like(flat_x)
    else:
        c += pre.gamma * max(0.0, -pre.spectrum.min().item())
        scale = (c + pre.gamma * pre.spectrum).clamp_min(0.0).sqrt()
        curv_x = pre.apply(flat_x)
        u = c * flat_x + curv_x + ((noise @ pre.basis) * scale) @ pre.basis.T
    u = u.view(b, d, k)
    log_fwd = torch.log_softmax(state.scores - curv_x.view(b, d, k) + u, dim=-1)
    y = sample_categorical(log_fwd, generator)
    y_energy, y_scores = GRADIENT.evaluate(energy, y, k)
    flat_y = one_hot(y, k, flat_x.dtype).flatten(1)
    curv_y = torch.zeros_like(flat_y) if pre is None else pre.apply(flat_y)
    log_rev = torch.log_softmax(y_scores - curv_y.view(b, d, k) + u, dim=-1)
    quadratic = (flat_y * curv_y).sum(-1) - (flat_x * curv_x).sum(-1)
    log_z = (u.flatten(1) * (flat_y - flat_x)).sum(-1) - 0.5 * quadratic  # the auxiliary density's ratio
    return mh_transition(
        state, y, y_energy, y_scores, gather_sum(log_fwd, y) - log_z, gather_sum(log_rev, x), 1, generator
    )


def estimate_curvature(cov: Tensor, d: int, k: int, kind: str) -> tuple[Tensor, Tensor]:
    """Eigen-decomposition ``(basis, spectrum)`` of ``W`` from the covariance ``(dK, dK)`` of one-hot states."""
    eye = torch.eye(d * k, dtype=cov.dtype, device=cov.device)
    same_site = torch.block_diag(*[torch.ones(k, k, dtype=torch.bool, device=cov.device)] * d)
    if kind == "precision":
        w = -torch.linalg.inv(cov + DELTA * eye)
    else:
        scale = 1.0 / (cov.diagonal() + DELTA)
        w = scale[:, None] * cov * scale[None, :]
    w = w.masked_fill(same_site, 0.0)
    spectrum, basis = torch.linalg.eigh(0.5 * (w + w.T))
    return basis, spectrum


@register
@dataclass(frozen=True)
class AVG(Sampler):
    """Auxiliary variable gradient sampler: ``z ~ N(x, alpha I)``, ``alpha`` = ``step_size``; with a
    ``curvature`` (PAVG's, learned), its preconditioned proposal."""

    name = "avg"
    tuned = "step_size"
    adaptation: ClassVar[Adaptation] = StepSize()
    score_source = GRADIENT
    step_size: float = 1.0
    curvature: Optional[Preconditioner] = field(default=None, compare=False, metadata=NOT_AN_OPTION)

    def __post_init__(self):
        if not self.step_size > 0:
            raise InfillError(f"step_size must be positive, got {self.step_size}")

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        return auxiliary_move(energy, state, self.step_size, self.curvature, generator)

    def fixed(self, value: float, curvature: Optional[Preconditioner] = None) -> "AVG":
        return dataclasses.replace(self, step_size=value, curvature=curvature)


@dataclass(frozen=True)
class PreconditionerTuning(Tuning):
    """PAVG's burn-in record: moment sums (first half), ``W`` and ``C``, and the summed jumps of each
    candidate ``gamma`` (second half) with the best so far."""

    count: int = 0
    first: Optional[Tensor] = None
    second: Optional[Tensor] = None
    basis: Optional[Tensor] = None
    spectrum: Optional[Tensor] = None
    covariance: Optional[Tensor] = None
    jumps: tuple = (0.0,) * len(GAMMAS)
    gamma: float = 0.0


@dataclass(frozen=True)
class Preconditioning(StepSize):
    """PAVG's adaptation: the step size as :class:`.adaptive.StepSize` (at most ``burn_in`` steps) and, over
    the first ``burn_in`` steps, ``W`` (``preconditioner``: ``precision`` or ``covariance``) and ``gamma``
    learned as the module docstring says, then frozen. The kernel's arguments: ``(alpha, Preconditioner)``."""

    burn_in: int = 100
    preconditioner: str = "precision"

    def __post_init__(self):
        super().__post_init__()
        if self.preconditioner not in ("precision", "covariance"):
            raise InfillError(f"preconditioner must be 'precision' or 'covariance', got {self.preconditioner!r}")
        if self.burn_in < 2 * len(GAMMAS):
            raise InfillError(f"burn_in must be at least {2 * len(GAMMAS)} steps, got {self.burn_in}")
        if self.adapt_steps is not None and self.adapt_steps > self.burn_in:  # all tuning ends with burn-in
            raise InfillError(f"adapt_steps ({self.adapt_steps}) cannot exceed burn_in ({self.burn_in})")

    def init(self, value: float, steps: Optional[int]) -> PreconditionerTuning:
        adapt = min(super().init(value, steps).adapt_steps, self.burn_in)
        return PreconditionerTuning(float(value), adapt, self.burn_in)

    def update(self, tuning: PreconditionerTuning, before: State, after: State, info: StepInfo) -> Tuning:
        return super().update(self.learn(tuning, before, after), before, after, info)

    def final(self, tuning: PreconditionerTuning) -> tuple:
        """The step size and the preconditioner of the next step: none while moments are gathered, then the
        candidates in turn, then the best."""
        if tuning.basis is None:
            return tuning.value, None
        if tuning.steps < self.burn_in:
            gamma = GAMMAS[(tuning.steps - self.burn_in // 2) % len(GAMMAS)]
        else:
            gamma = tuning.gamma
        return tuning.value, Preconditioner(tuning.basis, tuning.spectrum, gamma)

    def learn(self, tuning: PreconditionerTuning, before: State, after: State) -> PreconditionerTuning:
        """After step ``t`` (``before -> after``): moments (first half of burn-in), then the jumps of ``gamma``."""
        t, half = tuning.steps, self.burn_in // 2
        k = after.num_categories
        b, d = after.x.shape
        if t < half:
            flat = one_hot(after.x, k, torch.float64).flatten(1)
            first = flat.sum(0) if tuning.first is None else tuning.first + flat.sum(0)
            second = flat.T @ flat if tuning.second is None else tuning.second + flat.T @ flat
            tuning = dataclasses.replace(tuning, count=tuning.count + b, first=first, second=second)
            if t + 1 == half:
                mean = first / tuning.count
                cov = second / tuning.count - torch.outer(mean, mean)
                basis, spectrum = estimate_curvature(cov, d, k, self.preconditioner)
                dtype = after.scores.dtype
                tuning = dataclasses.replace(
                    tuning,
                    first=None,
                    second=None,
                    basis=basis.to(dtype),
                    spectrum=spectrum.to(dtype),
                    covariance=cov.to(dtype),
                )
        elif t < self.burn_in:
            jumps = list(tuning.jumps)
            dtype = tuning.covariance.dtype
            jump = (one_hot(after.x, k, dtype) - one_hot(before.x, k, dtype)).flatten(1)
            jumps[(t - half) % len(GAMMAS)] += ((jump @ tuning.covariance) * jump).sum(-1).mean().item()
            turns = [len(range(j, t + 1 - half, len(GAMMAS))) or 1 for j in range(len(GAMMAS))]
            gamma = GAMMAS[max(range(len(GAMMAS)), key=lambda j: jumps[j] / turns[j])]
            tuning = dataclasses.replace(tuning, jumps=tuple(jumps), gamma=gamma)
        return tuning


@register
@dataclass(frozen=True)
class PAVG(AVG):
    """Preconditioned AVG: ``W`` (``preconditioner``: ``precision`` or ``covariance``) and ``gamma`` learned
    during the first ``burn_in`` steps, then frozen. ``trace.tuning.gamma`` is the chosen scale."""

    name = "pavg"
    adaptation = Preconditioning()

    def start(self, energy: Energy, x_idx: Tensor, k: int) -> State:
        if x_idx.shape[1] * k > MAX_PRECONDITIONED:
            raise InfillError(
                f"pavg keeps a dense (d*K)^2 preconditioner; d*K = {x_idx.shape[1] * k} exceeds "
                f"{MAX_PRECONDITIONED}: use avg or fewer categories"
            )
        return super().start(energy, x_idx, k)
