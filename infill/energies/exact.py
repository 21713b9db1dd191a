"""Exact enumeration of small energies and distances between distributions (for tests and checks)."""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor

from .base import Energy, evaluate, one_hot


def all_states(d: int, k: int) -> Tensor:
    """Every state of ``d`` variables with ``k`` categories, ``(k**d, d)``, in row-major index order."""
    return torch.tensor(list(itertools.product(range(k), repeat=d)), dtype=torch.long).reshape(-1, d)


def state_index(x_idx: Tensor, k: int) -> Tensor:
    """Row-major index of each state ``(..., d)`` -> ``(...)``, matching :func:`all_states`."""
    d = x_idx.shape[-1]
    weights = k ** torch.arange(d - 1, -1, -1, device=x_idx.device)
    return (x_idx * weights).sum(-1)


def exact_distribution(energy: Energy, d: int, k: int, batch_size: int = 4096) -> Tensor:
    """Normalised probabilities of all ``k**d`` states under ``energy``."""
    states = all_states(d, k)
    values = torch.cat([evaluate(energy, one_hot(s, k)) for s in states.split(batch_size)])
    return torch.softmax(values.double(), dim=0)


def empirical_distribution(samples: Tensor, k: int) -> Tensor:
    """Frequencies of the states in ``samples (..., d)`` over all ``k**d`` states."""
    d = samples.shape[-1]
    counts = torch.bincount(state_index(samples.reshape(-1, d), k), minlength=k**d)
    return counts.double() / counts.sum()


def total_variation(p: Tensor, q: Tensor) -> float:
    """Total variation distance ``1/2 sum |p - q|``."""
    return 0.5 * (p.double() - q.double()).abs().sum().item()


def tv_noise_floor(p: Tensor, n: float) -> float:
    """Expected total variation between ``p`` and the empirical distribution of ``n`` independent draws from
    it (normal approximation, ``1/2 sum_i sqrt(2 p_i (1 - p_i) / (pi n))``): the least TV a sampler can reach
    with ``n`` effective samples."""
    p = p.double()
    return 0.5 * torch.sqrt(2 * p * (1 - p) / (math.pi * n)).sum().item()
