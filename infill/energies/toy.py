"""Small exactly-enumerable energies for tests and benchmarks."""
from __future__ import annotations

import torch
from torch import Tensor


class PottsEnergy:
    """Pairwise categorical energy ``U(x) = sum_i h_i . x_i + 1/2 sum_{i != j} x_i^T J_ij x_j``.

    ``fields (d, K)`` and couplings ``(d, K, d, K)`` (symmetrised, zero on the diagonal blocks). With
    ``K = 2`` it is an Ising model in one-hot form.
    """

    def __init__(self, fields: Tensor, couplings: Tensor):
        d, k = fields.shape
        j = 0.5 * (couplings + couplings.permute(2, 3, 0, 1))
        eye = torch.eye(d, dtype=torch.bool, device=fields.device)[:, None, :, None].expand(d, k, d, k)
        self.fields = fields
        self.couplings = j.masked_fill(eye, 0.0)
        self.num_categories = k

    @classmethod
    def random(cls, d: int, k: int, scale: float = 1.0, seed: int = 0) -> "PottsEnergy":
        g = torch.Generator().manual_seed(seed)
        fields = scale * torch.randn(d, k, generator=g)
        couplings = scale * torch.randn(d, k, d, k, generator=g) / d**0.5
        return cls(fields, couplings)

    def __call__(self, x: Tensor) -> Tensor:
        flat = x.flatten(1)
        j = self.couplings.to(x).reshape(flat.shape[1], flat.shape[1])
        return flat @ self.fields.to(x).flatten() + 0.5 * ((flat @ j) * flat).sum(-1)
