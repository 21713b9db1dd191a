"""What a run reads beside its plan (:class:`Context`), and the :class:`~..postprocess.Batch` it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import torch
from torch import Tensor, nn

from ...energies.budget import Meter
from ...energies.masked_lm import MaskedLMEnergy
from ...text.template import Template
from ..policy import Plan
from ..postprocess import Batch
from ..prepare import Prepared

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


@dataclass(frozen=True)
class Context:
    """What a run reads beside its plan: the ``template``, the request's ``prepared`` templates, the float32
    ``model`` and the ``chain_model`` (the same where the chains run in float32), its ``tokenizer``,
    ``energy(model)`` building a PLL energy of the template charged to ``meter`` (holding its all-masked logits
    where a shared pass gave them), the run's ``generator``, ``callback(t, state, info)`` after every step, the user's
    ``terms``, ``rewrite``'s ``(source, change)``, and ``start``, when the run began."""

    template: Template
    prepared: Prepared
    model: nn.Module
    chain_model: nn.Module
    tokenizer: PreTrainedTokenizerBase
    energy: Callable[[nn.Module], MaskedLMEnergy]
    meter: Meter
    generator: torch.Generator
    callback: Optional[Callable] = None
    terms: Sequence[tuple] = ()
    rewrite: Optional[tuple[Tensor, float]] = None
    start: float = 0.0

    def batch(self, plan: Plan, **fields) -> Batch:
        """The run of ``plan`` on this template, begun at ``start``, as the sample stage's :class:`Batch`; ``fields``
        are the rest of it."""
        return Batch(template=self.template, plan=plan, start=self.start, **fields)
