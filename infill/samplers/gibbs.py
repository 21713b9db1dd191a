"""The random-scan Gibbs kernel: pick one variable per chain uniformly, redraw it from a conditional.

``proposal`` says which conditional:

- ``exact``: the energy's own conditional, all ``K`` values enumerated in one batch (``K`` evaluations).
  Every move is then accepted, and the chain targets the energy.
- ``model``: the energy's ``conditional_logits(x_idx, i)`` (one forward pass), e.g. the masked LM's own
  prediction at the blank, as in Wang & Cho (2019). That is *not* the conditional of the pseudo-log-likelihood
  energy, so a plain chain does not target the PLL distribution; ``gibbs-mh`` adds the Metropolis-Hastings
  test that makes it exact. An energy without ``conditional_logits`` is its own model: its exact conditional.

Plain Gibbs with the model's proposal never needs the energy: it costs one forward pass per step, and its
``State.energy`` (hence ``Trace.energies``) is NaN. Compute the energies of the states you use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

import torch
from torch import Tensor

from ..energies.base import Energy, HasConditionals, evaluate, one_hot
from ..errors import InfillError
from .base import Sampler, State, StepInfo, mh_transition, sample_categorical

PROPOSALS = ("model", "exact")


def enumerate_conditional(energy: Energy, x_idx: Tensor, i: Tensor, k: int) -> Tensor:
    """Exact conditional log-weights ``(B, K)`` of variable ``i[b]``: all K values in one batch."""
    b, d = x_idx.shape
    candidates = x_idx.unsqueeze(1).repeat(1, k, 1)  # (B, K, d)
    candidates[torch.arange(b, device=x_idx.device), :, i] = torch.arange(k, device=x_idx.device)
    return evaluate(energy, one_hot(candidates.reshape(b * k, d), k)).reshape(b, k)


@dataclass(frozen=True)
class Gibbs(Sampler):
    """Random-scan Gibbs with the conditional named by ``proposal`` (``model`` or ``exact``), MH-tested where
    ``corrected``."""

    proposal: str = "model"
    corrected: ClassVar[bool] = False

    def __post_init__(self):
        if self.proposal not in PROPOSALS:
            raise InfillError(f"proposal must be one of {', '.join(PROPOSALS)}, got {self.proposal!r}")

    def uses_model(self, energy: Energy) -> bool:
        return self.proposal == "model" and isinstance(energy, HasConditionals)

    def needs_energy(self, energy: Energy) -> bool:
        return self.corrected or not self.uses_model(energy)

    def start(self, energy: Energy, x_idx: Tensor, k: int) -> State:
        if self.needs_energy(energy):
            value = evaluate(energy, one_hot(x_idx, k))
        else:
            value = torch.full((x_idx.shape[0],), float("nan"), device=x_idx.device)
        return State(x_idx, value, None, k)

    def init_evaluations(self, energy: Energy, d: int, k: int) -> int:
        return int(self.needs_energy(energy))

    def step(self, energy: Energy, state: State, generator: Optional[torch.Generator]) -> tuple[State, StepInfo]:
        x, k = state.x, state.num_categories
        b, d = x.shape
        rows = torch.arange(b, device=x.device)
        i = torch.randint(d, (b,), generator=generator, device=x.device)
        model = self.uses_model(energy)
        logits = energy.conditional_logits(x, i) if model else enumerate_conditional(energy, x, i, k)
        value = sample_categorical(logits, generator)
        y = x.clone()
        y[rows, i] = value
        if not model:  # the enumerated conditional holds the proposal's energy
            y_energy, evaluations = logits[rows, value], k
        elif self.corrected:
            y_energy, evaluations = evaluate(energy, one_hot(y, k)), 2
        else:
            y_energy, evaluations = torch.full_like(state.energy, float("nan")), 1
        if model and not self.corrected:  # every proposal accepted, its energy unknown: q is not read
            log_fwd = log_rev = torch.zeros_like(y_energy)
        else:
            log_q = torch.log_softmax(logits.to(y_energy.dtype), dim=-1)
            log_fwd, log_rev = log_q[rows, value], log_q[rows, x[rows, i]]
        return mh_transition(state, y, y_energy, None, log_fwd, log_rev, evaluations, generator, self.corrected)
