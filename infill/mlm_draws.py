"""Fillings drawn from the masked LM itself, without MCMC: chain starts and the baseline methods.

- ``independent``: every blank from the model's conditional with all blanks masked (one forward pass);
- ``left-to-right``: blank ``j`` from the conditional given blanks ``< j`` as drawn and ``>= j`` masked
  (``d`` forward passes);
- ``argmax``: the all-masked conditional's most likely token at every blank;
- ``uniform``: uniformly random categories (no forward pass).

Logits are divided by ``temperature`` before the softmax. Every draw comes from ``generator``. The energy
must offer ``blank_logits(x_idx, masked) -> (B, d, K)`` (:class:`~infill.energies.masked_lm.MaskedLMEnergy`).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from .samplers import sample_categorical

FORWARDS = {"uniform": lambda d: 0, "independent": lambda d: 1, "argmax": lambda d: 1, "left-to-right": lambda d: d}
"""Forward passes over the chains that each method costs for ``d`` blank tokens."""


def draw(energy, method: str, num_chains: int, generator: Optional[torch.Generator],
         temperature: float = 1.0) -> Tensor:
    """Category indices ``(num_chains, d)`` drawn by ``method`` (a key of :data:`FORWARDS`)."""
    d, k = energy.num_blanks, energy.num_categories
    device = energy.category_ids.device
    if method == "uniform":
        return torch.randint(k, (num_chains, d), generator=generator, device=device)
    x = torch.zeros(num_chains, d, dtype=torch.long, device=device)
    masked = torch.ones(num_chains, d, dtype=torch.bool, device=device)
    if method in ("independent", "argmax"):
        logits = energy.blank_logits(x, masked)
        return logits.argmax(-1) if method == "argmax" else sample_categorical(logits / temperature, generator)
    if method != "left-to-right":
        raise ValueError(f"unknown draw method {method!r}")
    for j in range(d):
        logits = energy.blank_logits(x, masked, read=torch.full((num_chains, 1), j, device=device))[:, 0]
        x[:, j] = sample_categorical(logits / temperature, generator)
        masked[:, j] = False
    return x
