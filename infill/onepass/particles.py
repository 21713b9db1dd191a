"""Sequential Monte Carlo through the masked LM's one-pass order (Del Moral, Doucet & Jasra 2006).

``R`` independent runs of ``N`` particles each fill the blanks one step at a time, as the one-pass orders of
:mod:`infill.lm.mlm_draws` do (``confident-first``: the still-masked blank whose conditional is most peaked;
``random-order``: a uniformly random order per particle), each token drawn from the masked LM's tempered
conditional ``q``. Particles carry log-weights toward intermediate targets ``gamma_t`` that end at the
target ``exp(U / T)`` (``U`` the energy, the PLL) after the last blank:

- ``weight="path"``: ``gamma_t`` is the path's own probability under the masked LM raised to ``tilt``
  (no extra sequences); ``tilt=1`` leaves the weights equal until the last step (plain draws re-weighted);
  ``tilt > 1`` favours paths the model finds likely, so resampling keeps them;
- ``weight="partial"``: ``gamma_t`` is the partial PLL of the blanks filled so far, the others masked (one
  more masked copy per filled blank and particle, counted as every sequence is).

A run whose effective sample size falls below ``ess`` x ``N`` is resampled (systematic resampling). After
the last blank every run is weighted by the target; ``moves`` steps of an exact kernel (``move``, e.g.
``gibbs-mh``) then move its particles, resampled by those weights, leaving the target invariant. The
pipeline runs a round of particles as one run, or with ``run_size`` as independent runs of that many
(:meth:`SMC.split`): a run's resampling pulls its particles toward a few ancestors, so more runs keep more
distinct fillings.

The energy must offer ``blank_logits(x_idx, masked, read)`` and ``first_pass()`` (a masked LM:
:class:`~infill.energies.masked_lm.MaskedLMEnergy`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from ..energies.abilities import HasIndexedValues
from ..energies.base import Energy, evaluate, one_hot
from ..energies.tempered import Tempered
from ..errors import at_least, number_in, one_of, positive_integer
from ..lm import mlm_draws
from ..samplers import make_sampler, sample

SMC_ORDERS = ("confident-first", "random-order")
"""The orders of :data:`infill.lm.mlm_draws.ORDERS` that particles take."""
WEIGHTS = ("path", "partial")


@dataclass(frozen=True)
class Particles:
    """What :func:`smc` produced, the runs' particles laid end to end (run ``r``'s ``N`` first, rows ``r N`` to
    ``(r + 1) N - 1``): the particles after the last blank ``x (R N, d)`` with their energies ``energy (R N,)`` and
    normalised log-weights ``log_weight (R, N)`` toward the target; the ``samples (R N, d)`` with ``sample_energy
    (R N,)``: the particles resampled by their weights, then moved; and every state the moves visited, ``visited
    (S, d)`` with ``visited_energy (S,)`` (None without moves). Energies and weights are on the host."""

    x: Tensor
    energy: Tensor
    log_weight: Tensor
    samples: Tensor
    sample_energy: Tensor
    visited: Optional[Tensor] = None
    visited_energy: Optional[Tensor] = None


def systematic(log_weight: np.ndarray, generator: Optional[torch.Generator], device: torch.device) -> np.ndarray:
    """Ancestor indices ``(R, N)`` by systematic resampling of each row of ``log_weight (R, N)``: one uniform per
    row (drawn on ``device`` from ``generator``), ``N`` evenly spaced points through the cumulative weights."""
    r, n = log_weight.shape
    w = log_weight.astype(np.float64)
    w = np.exp(w - w.max(-1, keepdims=True))
    cumulative = (w / w.sum(-1, keepdims=True)).cumsum(-1)
    u = torch.rand(r, 1, generator=generator, device=device, dtype=torch.float64).numpy(force=True)
    points = (u + np.arange(n)) / n
    return np.minimum(np.stack([np.searchsorted(c, q) for c, q in zip(cumulative, points)]), n - 1)


def effective_size(log_weight: np.ndarray) -> np.ndarray:
    """The effective sample size ``(R,)`` of each row of ``log_weight (R, N)``."""
    w = log_weight.astype(np.float64)
    return np.exp(2 * np.logaddexp.reduce(w, -1) - np.logaddexp.reduce(2 * w, -1))


@dataclass(frozen=True)
class SMC:
    """The settings of :func:`smc` (see the module docstring); ``run_size`` is not read by :func:`smc`, which is
    given its runs: it says how the pipeline splits a round of particles into them (:meth:`split`)."""

    order: str = "confident-first"
    weight: str = "path"
    tilt: float = 1.0
    ess: float = 0.5
    moves: int = 0
    move: str = "gibbs-mh"
    run_size: int = 0

    def __post_init__(self):
        positive_integer("smc run_size", self.run_size, minimum=0)
        one_of("smc order", self.order, SMC_ORDERS)
        one_of("smc weight", self.weight, WEIGHTS)
        at_least("smc tilt", self.tilt, 0)
        number_in("smc ess", self.ess, 0, 1)
        positive_integer("smc moves", self.moves, minimum=0)
        make_sampler(self.move)  # an unknown kernel is refused here

    def passes(self, d: int) -> int:
        """Encoder sequences one particle costs at most on ``d`` blank tokens, less the shared first pass: its
        later passes, the target's ``d`` masked copies, the partial PLLs and the moves (a ``gibbs-mh`` step:
        one proposal pass and ``d`` copies)."""
        partial = d * (d - 1) // 2 if self.weight == "partial" else 0
        return (d - 1) + d + partial + self.moves * (d + 1)

    def split(self, n: int) -> tuple[int, int]:
        """``(runs, particles a run)`` for a round of ``n`` particles: one run, or with ``run_size`` independent
        runs of that many (at least one run, the last few particles left out)."""
        runs = max(1, n // self.run_size) if self.run_size else 1
        return runs, n // runs


def smc(
    energy: Energy,
    settings: SMC,
    runs: int,
    particles: int,
    generator: Optional[torch.Generator],
    temperature: float = 1.0,
) -> Particles:
    """``runs`` independent runs of ``particles`` particles through the blanks of ``energy`` (module docstring)."""
    first = energy.first_pass()  # every particle's first pass, the same for every run on the template
    d, k = first.shape
    device = first.device
    n = runs * particles
    z = torch.zeros(n, d, dtype=torch.long, device=device)
    masked = torch.ones(n, d, dtype=torch.bool, device=device)
    order = mlm_draws.ORDERS[settings.order]
    confident = order.confident
    # random-order: an order per particle, resampled with it; confident-first reads every blank still masked
    blanks = None if confident else order.blanks(n, d, generator, device)
    opening = mlm_draws.first_step_logits(first, blanks, confident)
    drawing = mlm_draws.Drawing(confident, generator, temperature)
    log_gamma = np.zeros(n, np.float32)  # the intermediate target of each particle's partial filling
    log_weight = np.zeros((runs, particles), np.float32)  # weights live on the host: (R, N) numbers a step
    for t in range(d):
        opened = opening if t == 0 else None  # the first pass, shared: (1, d, K) until a particle's own row is taken
        log_q, _ = mlm_draws.fill_next(energy.blank_logits, z, masked, blanks, t, drawing, first=opened)
        log_q = log_q.numpy(force=True)
        if t == d - 1:
            new_gamma = _energy(energy, z, k) / temperature
        elif settings.weight == "path":
            new_gamma = log_gamma + settings.tilt * log_q
        else:
            new_gamma = _partial_pll(energy, z, masked, t + 1) / temperature
        log_weight = log_weight + (new_gamma - log_gamma - log_q).reshape(runs, particles)
        log_gamma = new_gamma
        if t < d - 1:
            pick, log_weight = _resample(log_weight, settings, generator, device)
            if pick is not None:
                log_gamma, pick = log_gamma[pick], torch.as_tensor(pick, device=device)
                z, masked = z[pick], masked[pick]
                blanks = blanks if blanks is None else blanks[pick]
    return _finish(energy, settings, z, log_gamma, log_weight, temperature, generator)


def _resample(
    log_weight: np.ndarray, settings: SMC, generator: Optional[torch.Generator], device: torch.device
) -> tuple[Optional[np.ndarray], np.ndarray]:
    """The rows ``(R * N,)`` that resample the runs whose effective size fell below ``settings.ess`` of theirs (the
    other runs' particles stay where they are), and the weights, those runs' reset; no rows where no run fell."""
    particles = log_weight.shape[1]
    low = (effective_size(log_weight) < settings.ess * particles)[:, None]
    if not low.any():
        return None, log_weight
    ancestors = np.where(low, systematic(log_weight, generator, device), np.arange(particles))
    return _flat(ancestors), np.where(low, np.float32(0), log_weight)


def _finish(
    energy: Energy,
    settings: SMC,
    z: Tensor,
    log_gamma: Tensor,
    log_weight: Tensor,
    temperature: float,
    generator: Optional[torch.Generator],
) -> Particles:
    """The filled particles with their normalised weights, resampled into samples and moved by
    ``settings.moves`` steps of ``settings.move`` (every state the moves visit kept)."""
    log_weight = log_weight - np.logaddexp.reduce(log_weight, -1, keepdims=True)
    energies = log_gamma * temperature
    pick = _flat(systematic(log_weight, generator, z.device))
    samples, sample_energy = z[torch.as_tensor(pick, device=z.device)], torch.from_numpy(energies[pick])
    out = Particles(z, torch.from_numpy(energies), torch.from_numpy(log_weight), samples, sample_energy)
    if not settings.moves:
        return out
    target = energy if temperature == 1 else Tempered(energy, temperature)
    trace = sample(make_sampler(settings.move), target, samples, settings.moves, generator, ("samples", "energies"))
    return replace(
        out,
        samples=trace.final_state.x,
        sample_energy=(trace.final_state.energy * temperature).cpu(),
        visited=trace.samples.flatten(0, 1),
        visited_energy=(trace.energies.flatten() * temperature).cpu(),
    )


def _flat(ancestors: np.ndarray) -> np.ndarray:
    """Ancestor indices ``(R, N)`` within each run as rows ``(R * N,)`` of the runs' particles laid end to end."""
    runs, particles = ancestors.shape
    return (ancestors + particles * np.arange(runs)[:, None]).ravel()


def _energy(energy: Energy, x: Tensor, k: int) -> np.ndarray:
    """The energy ``(N,)`` of category indices ``x (N, d)``, on the host."""
    values = energy.of_indices(x) if isinstance(energy, HasIndexedValues) else evaluate(energy, one_hot(x, k))
    return values.float().numpy(force=True)


def _partial_pll(energy: Energy, z: Tensor, masked: Tensor, filled: int) -> np.ndarray:
    """``sum_{i filled} log p(z_i | the other filled blanks, i and the unfilled blanks masked)`` ``(N,)`` on the
    host: ``filled`` masked copies per row, one pass."""
    n, d = z.shape
    at = (~masked).nonzero()[:, 1].view(n, filled)  # each row's filled blanks
    copies = masked.repeat_interleave(filled, 0)
    copies[torch.arange(n * filled, device=z.device), at.flatten()] = True
    logits = energy.blank_logits(z.repeat_interleave(filled, 0), copies, at.flatten()[:, None])[:, 0]
    log_p = torch.log_softmax(logits.float(), -1).gather(-1, z.gather(1, at).flatten()[:, None])
    return log_p.view(n, filled).sum(1).numpy(force=True)
