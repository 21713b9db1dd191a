"""Summaries from MCMC chains over sentence selections.

``run_chains`` runs any registered sampler on the objective's energy and decodes three summaries
from the chains, always within the budget:

* ``best`` (the default) — the feasible selection of largest F seen on the chains, the start included;
* ``sample`` — sample-wise majority vote: the most frequent feasible selection after burn-in (ties
  go to the larger F);
* ``dimension`` — dimension-wise majority vote: sentences by decreasing selection frequency after
  burn-in (ties in document order), each added when it still fits the budget, never one that no
  feasible sample selected.

Chains start from the greedy selection (``start="greedy"``, the default) or from the empty one. From
greedy, ``best`` has F >= F(greedy) by construction. ``anneal`` < 1 lowers the temperature
geometrically over ``segments`` equal parts of the run to ``anneal`` times its start value (the stages of
:func:`infill.samplers.run_annealed`).

Step size of ``una``/``mana``. Their proposal flips sentence ``i`` with probability
``sigmoid(Delta_i / 2 - 1/alpha)``, ``Delta_i`` the exact energy difference of the flip, so a fixed
``alpha`` flips many sentences of a long document at once (from the empty start about 22 of them,
~660 words against a 150-word budget: every proposal is rejected). ``step_size="auto"`` (the default)
sets ``alpha`` at the start of each segment so that a proposal flips ``flips`` sentences on average
(mean over chains), which scales it with the number of sentences, the budget and the temperature.

Burn-in for the votes is the first ``burn_in`` fraction of the steps. If no feasible state is left
after burn-in, the votes use every step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Union

import torch
from torch import Tensor

from ..energies.base import Energy, one_hot
from ..errors import InfillError, check, is_integer
from ..samplers import make_sampler, run_annealed
from .baselines import greedy
from .chain_stats import mean_ess
from .objective import SummaryObjective

DECODINGS = ("best", "sample", "dimension")
STARTS = ("greedy", "empty")
AUTO_STEP = ("una", "mana")  # samplers whose step size "auto" sets from the exact differences


@dataclass(frozen=True)
class ChainSettings:
    """How the chains run: see the module docstring."""

    sampler: str = "mana"
    steps: int = 200
    chains: int = 4
    start: str = "greedy"
    anneal: float = 1.0
    segments: int = 4
    flips: float = 1.0
    step_size: Union[float, str] = "auto"
    burn_in: float = 0.5
    hyperparameters: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.start not in STARTS:
            raise InfillError(f"chains start from {' or '.join(STARTS)}, not {self.start!r}")
        if not 0 < self.anneal <= 1:
            raise InfillError(f"anneal must be in (0, 1], got {self.anneal}")
        check(
            all(is_integer(n, 1) for n in (self.steps, self.chains, self.segments)),
            "steps, chains and segments must be positive",
        )
        if not self.flips > 0 or not 0 <= self.burn_in < 1:
            raise InfillError("flips must be positive and burn_in in [0, 1)")
        number = isinstance(self.step_size, (int, float)) and not isinstance(self.step_size, bool)
        if self.step_size != "auto" and not (number and 0 < self.step_size < float("inf")):
            raise InfillError(f"step_size is 'auto' or a positive number, not {self.step_size!r}")

    def options(self, step_size: Optional[float]) -> dict:
        options = dict(self.hyperparameters)
        if step_size is not None:
            options["step_size"] = step_size
        return options


@dataclass
class ChainResult:
    """Decoded selections ``(N,)`` (0/1) and chain diagnostics."""

    selections: dict[str, Tensor]
    start: Tensor  # (N,) the chains' start
    objective_trace: Tensor  # (steps, B): F(S) - P(S) of each chain's state after each step
    acceptance_rate: float
    mean_hops: float
    ess: float  # mean per-chain ESS of F(S) - P(S) after burn-in
    seconds: float
    step_sizes: list[float]  # per segment (una/mana with step_size "auto"), else empty


def flip_differences(energy: Energy, x: Tensor) -> Tensor:
    """``Delta (B, N)``: the change of ``energy`` on flipping each sentence of selections ``x (B, N)``."""
    b, n = x.shape
    flipped = (x[:, None, :] + torch.eye(n, dtype=x.dtype)) % 2  # (B, N, N)
    values = energy(one_hot(torch.cat([x, flipped.reshape(-1, n)]), 2))
    return values[b:].view(b, n) - values[:b, None]


def auto_step_size(delta: Tensor, flips: float) -> float:
    """``alpha`` with ``mean_b sum_i sigmoid(Delta_bi / 2 - 1/alpha) = flips`` (bisection on ``1/alpha``),
    clamped to [1e-3, 1e3]."""
    low, high = 1e-3, 1e3  # bounds on 1/alpha
    expected = lambda c: float(torch.sigmoid(0.5 * delta - c).sum(-1).mean())  # noqa: E731
    if expected(low) <= flips:
        return 1.0 / low
    for _ in range(60):
        mid = (low * high) ** 0.5
        low, high = (mid, high) if expected(mid) > flips else (low, mid)
    return 1.0 / high


def dimension_vote(objective: SummaryObjective, samples: Tensor) -> Tensor:
    """Dimension-wise majority vote over feasible ``samples (M, N)``."""
    freq = samples.float().mean(0)
    order = sorted(range(len(freq)), key=lambda j: (-float(freq[j]), j))
    chosen = torch.zeros(len(freq))
    spent = 0.0
    for j in order:
        if float(freq[j]) <= 0:
            break
        c = float(objective.costs[j])
        if spent + c <= objective.budget.limit + 1e-6:
            chosen[j] = 1.0
            spent += c
    return chosen


def sample_vote(objective: SummaryObjective, samples: Tensor) -> Tensor:
    """Sample-wise majority vote: the most frequent of the feasible ``samples (M, N)``, ties to larger F."""
    unique, counts = torch.unique(samples, dim=0, return_counts=True)
    values = objective.value(unique.float())
    best = max(range(len(unique)), key=lambda u: (int(counts[u]), float(values[u])))
    return unique[best].float()


def _start(objective: SummaryObjective, settings: ChainSettings) -> Tensor:
    if settings.start == "greedy":
        return greedy(objective)
    return torch.zeros(len(objective))


def _schedule(settings: ChainSettings) -> list[tuple[float, int]]:
    """The annealing stages ``(temperature, steps)``: ``segments`` equal parts of the run, the temperature
    lowered geometrically to ``anneal`` (one stage without annealing)."""
    steps = settings.steps
    segments = max(1, min(settings.segments if settings.anneal != 1 else 1, steps))
    bounds = [round(steps * s / segments) for s in range(segments + 1)]
    return [(settings.anneal ** (s / max(1, segments - 1)), bounds[s + 1] - bounds[s]) for s in range(segments)]


def _stage_sampler(settings: ChainSettings, step_sizes: list[float]):
    """A function of a stage's energy and start ``x`` that builds the stage's sampler (for
    :func:`infill.samplers.run_annealed`), its step size set from ``x`` where it is "auto" (each appended to
    ``step_sizes``)."""
    auto = settings.step_size == "auto" and settings.sampler in AUTO_STEP

    def stage_sampler(energy: Energy, x: Tensor):
        step_size = None
        if auto:
            step_size = auto_step_size(flip_differences(energy, x), settings.flips)
            step_sizes.append(step_size)
        elif settings.step_size != "auto":
            step_size = float(settings.step_size)
        return make_sampler(settings.sampler, **settings.options(step_size))

    return stage_sampler


def _votes(samples: Tensor, feasible: Tensor, first: int, start: Tensor) -> Tensor:
    """The selections that vote: the feasible ``samples (T, B, N)`` from step ``first`` on (from every step
    if none is feasible there), and the start."""
    n = samples.shape[-1]
    kept = samples[first:].reshape(-1, n)
    kept_feasible = feasible[first:].reshape(-1)
    if not kept_feasible.any():
        kept, kept_feasible = samples.reshape(-1, n), feasible.reshape(-1)
    return torch.cat([kept[kept_feasible], start.long()[None]])  # the start is feasible


def _best(objective: SummaryObjective, flat: Tensor, values: Tensor, feasible: Tensor, start: Tensor) -> Tensor:
    """The feasible selection of largest F among the ``flat`` samples (F ``values``) and the start."""
    candidates = values.masked_fill(~feasible, -float("inf")).reshape(-1)
    if candidates.numel() and float(candidates.max()) > float(objective.value(start[None])):
        return flat[int(candidates.argmax())]
    return start


def run_chains(objective: SummaryObjective, settings: ChainSettings = ChainSettings(), seed: int = 0) -> ChainResult:
    """Run the chains of ``settings`` and decode them (see the module docstring)."""
    n, steps = len(objective), settings.steps
    generator = torch.Generator().manual_seed(seed)
    begin = time.perf_counter()
    start = _start(objective, settings)
    x = start.long()[None].repeat(settings.chains, 1)
    parts, accepted, hops, step_sizes = [], [], [], []

    def record(t, state, info):
        parts.append(state.x)
        accepted.append(info.accepted)
        hops.append(info.hops)

    sampler = _stage_sampler(settings, step_sizes)
    run_annealed(sampler, objective, x, _schedule(settings), generator, callback=record, fields=())
    samples = torch.stack(parts)  # (T, B, N)
    flat = samples.reshape(-1, n).float()
    penalised = objective.penalised(flat).view(steps, settings.chains)
    feasible = objective.feasible(flat).view(steps, settings.chains)
    values = objective.value(flat).view(steps, settings.chains)
    first = min(int(settings.burn_in * steps), steps - 1)
    votes = _votes(samples, feasible, first, start)
    return ChainResult(
        selections={
            "best": _best(objective, flat, values, feasible, start),
            "sample": sample_vote(objective, votes),
            "dimension": dimension_vote(objective, votes),
        },
        start=start,
        objective_trace=penalised,
        acceptance_rate=float(torch.stack(accepted).float().mean()),
        mean_hops=float(torch.stack(hops).float().mean()),
        ess=mean_ess(penalised[first:].numpy()),
        seconds=time.perf_counter() - begin,
        step_sizes=step_sizes,
    )


def selected_sentences(objective: SummaryObjective, selection: Tensor) -> list[str]:
    """The selected sentences in document order."""
    return [s for s, keep in zip(objective.sentences, selection.tolist()) if keep > 0.5]
