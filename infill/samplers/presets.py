"""The registered samplers as thin presets of the kernels (:mod:`.factorised`, :mod:`.single_change`,
:mod:`.gibbs`; the auxiliary-Gaussian family registers in :mod:`.auxiliary_gaussian`).

Every step size (and PAS's path length) adapts during the first half of a run by default (:mod:`.adaptive`):
the ``step_size`` given is where the adaptation starts; ``adapt_steps=0`` keeps it fixed. A preset's
``adaptation`` is its default adaptation, whose options are the sampler's too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ..errors import InfillError
from .adaptive import DecayingStepSize, PathLength, StepSize
from .balancing import balancing_function
from .dlmc import euler_log_proposal, interpolated_log_proposal
from .factorised import Factorised
from .gibbs import Gibbs
from .langevin import langevin_log_proposal, ncg_log_proposal
from .registry import register
from .scores import DIFFERENCES
from .single_change import SingleChange


@dataclass(frozen=True)
class Langevin(Factorised):
    """The discrete Langevin proposal (:func:`.langevin.langevin_log_proposal`) on the gradient.

    ``preconditioner`` (DLP's preconditioned proposal, Zhang et al. 2022, App. H) is a constant diagonal
    ``g``, one positive number per variable: variable ``i`` moves with step ``step_size * g[i]``
    (``None``: ``g = 1``); the reverse proposal uses the same ``g``, so DMALA stays exact. In one-hot form a
    change costs the same for every variable, so a variable with many plausible values changes far more often
    than a binary one at one step size; ``g > 1`` on the few-valued variables lets both mix
    (``eval/preconditioner/``). The paper's ``G`` on values ``{a_i, b_i}`` is ``g_i = 2 G_i / (b_i - a_i)^2``."""

    step_size: float = 0.1
    preconditioner: Optional[tuple] = None

    def __post_init__(self):
        super().__post_init__()
        g = self.preconditioner
        if g is not None and (
            isinstance(g, (str, bytes))
            or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in g
            )
        ):
            raise InfillError(f"preconditioner must be a list of positive numbers, one per variable, got {g!r}")

    def check_variables(self, d: int) -> None:
        if self.preconditioner is not None and len(self.preconditioner) != d:
            n = len(self.preconditioner)
            raise InfillError(
                f"preconditioner has {n} entr{'y' if n == 1 else 'ies'} for {d} "
                f"variable{'s' * (d != 1)}: give one per variable"
            )

    def log_proposal(self, x: Tensor, scores: Tensor, value: float) -> Tensor:
        if self.preconditioner is None:
            return langevin_log_proposal(x, scores, value)
        g = torch.tensor(self.preconditioner, dtype=scores.dtype, device=scores.device)
        return langevin_log_proposal(x, scores, value * g[:, None])


@register
@dataclass(frozen=True)
class DULA(Langevin):
    """Discrete unadjusted Langevin (Zhang, Liu & Liu, 2022): every proposal accepted; biased, the bias
    shrinking with ``step_size``. It adapts toward a high would-be acceptance (``target_accept`` 0.9), which
    keeps the bias small."""

    name = "dula"
    adjusted = False
    adaptation = StepSize(target_accept=0.9)


@register
@dataclass(frozen=True)
class DMALA(Langevin):
    """Discrete Metropolis-adjusted Langevin (Zhang, Liu & Liu, 2022): the discrete Langevin proposal plus an
    MH test with the reverse proposal."""

    name = "dmala"


@register
@dataclass(frozen=True)
class NCG(Langevin):
    """Norm-constrained gradient sampler (Rhodes & Gutmann, 2022) with step ``eps`` (``step_size``): DMALA
    with ``alpha = 2 eps`` for binary variables and ``alpha = eps`` for categorical ones."""

    name = "ncg"

    def log_proposal(self, x: Tensor, scores: Tensor, value: float) -> Tensor:
        return ncg_log_proposal(x, scores, value)


@dataclass(frozen=True)
class NewtonSeries(Factorised):
    """The discrete Langevin proposal on exact differences (Xiang et al., 2023): no gradient, one batch of
    ``1 + d (K - 1)`` evaluations per step. ``decay < 1`` also shrinks the step by ``decay`` every step, down
    to ``min_step_size`` (:class:`.adaptive.DecayingStepSize`)."""

    score_source = DIFFERENCES
    adaptation = DecayingStepSize()

    def log_proposal(self, x: Tensor, scores: Tensor, value: float) -> Tensor:
        return langevin_log_proposal(x, scores, value)


@register
@dataclass(frozen=True)
class UNA(NewtonSeries):
    """Unadjusted Newton approximation: the Newton proposal, always accepted (biased for ``alpha > 0``; it
    adapts toward a high would-be acceptance, ``target_accept`` 0.9)."""

    name = "una"
    adjusted = False
    step_size: float = 0.5
    adaptation = DecayingStepSize(target_accept=0.9)


@register
@dataclass(frozen=True)
class MANA(NewtonSeries):
    """Metropolis-adjusted Newton approximation: the Newton proposal with the MH correction (exact)."""

    name = "mana"
    step_size: float = 1.0


@dataclass(frozen=True)
class DiscreteLangevinMC(Factorised):
    """Discrete Langevin Monte Carlo (Sun et al., 2023, :mod:`.dlmc`): simulation time ``h`` (``step_size``)
    of the locally balanced rate matrix with ``balancing`` ``sqrt`` or ``ratio``, MH-corrected."""

    balancing: str = "sqrt"

    def __post_init__(self):
        super().__post_init__()
        balancing_function(self.balancing)


@register
@dataclass(frozen=True)
class DLMC(DiscreteLangevinMC):
    """DLMC: the interpolated transition of eq. 39 (exact for binary variables), MH-corrected."""

    name = "dlmc"

    def log_proposal(self, x: Tensor, scores: Tensor, value: float) -> Tensor:
        return interpolated_log_proposal(x, scores, value, self.balancing)


@register
@dataclass(frozen=True)
class DLMCf(DiscreteLangevinMC):
    """DLMCf: the forward-Euler transition ``I + hQ``, MH-corrected (a shorter start ``h``: Euler overshoots)."""

    name = "dlmcf"
    step_size: float = 0.5

    def log_proposal(self, x: Tensor, scores: Tensor, value: float) -> Tensor:
        return euler_log_proposal(x, scores, value, self.balancing)


@register
@dataclass(frozen=True)
class GWG(SingleChange):
    """Gibbs-with-Gradients (Grathwohl et al., 2021): one (variable, category) change per step proposed from
    the gradient's estimate of the energy change, MH-corrected. One value-and-gradient evaluation per step."""

    name = "gwg"
    adaptation = PathLength(adapt_steps=0)


@register
@dataclass(frozen=True)
class PAS(SingleChange):
    """Path auxiliary sampler (Sun et al., 2022): on average ``path_length`` gradient-informed single-variable
    moves per MH step, the mean adapted during burn-in."""

    name = "pas"
    path_length: float = 2.0


@register
@dataclass(frozen=True)
class LocallyBalanced(SingleChange):
    """Zanella's locally balanced sampler (2020) over single-variable changes, from exact neighbour
    differences (no gradient): ``d (K - 1)`` evaluations per step."""

    name = "lb"
    adaptation = PathLength(adapt_steps=0)
    score_source = DIFFERENCES


@register
@dataclass(frozen=True)
class GibbsSampler(Gibbs):
    """Random-scan Gibbs: one variable per chain redrawn from its conditional; ``proposal="model"`` (default) is
    Wang & Cho's sampler on a masked LM, which does not target the PLL energy (``gibbs-mh`` does)."""

    name = "gibbs"


@register
@dataclass(frozen=True)
class GibbsMH(Gibbs):
    """Gibbs proposal with a Metropolis-Hastings test, so the chain targets the energy exactly (with the
    exact conditional every move is accepted)."""

    name = "gibbs-mh"
    corrected = True
