"""Small exactly-enumerable energies for tests and benchmarks."""

from __future__ import annotations

import torch
from torch import Tensor

from .exact import empirical_distribution, exact_distribution, state_index, total_variation


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


class TwoScalePotts(PottsEnergy):
    """Variables on two scales of plausibility, in two independent blocks: ``many`` variables with ``k``
    plausible categories each, coupled as a ferromagnetic Potts model (``coupling`` on equal categories), and
    ``binary`` independent variables with two plausible categories (weak random fields; the others at -30).

    In one-hot form every change costs the same, so a variable with ``k`` plausible values changes about
    ``k - 1`` times as often as a binary one at the same step size: a step small enough for the coupled
    many-valued block's joint changes to be accepted leaves the binary block nearly frozen, a larger one gets
    most proposals rejected. A per-variable step (DLP's preconditioner) serves both.
    """

    def __init__(self, many: int = 2, binary: int = 6, k: int = 32, coupling: float = 2.0, seed: int = 1):
        d = many + binary
        fields = torch.zeros(d, k)
        fields[many:, :2] = 0.3 * torch.randn(binary, 2, generator=torch.Generator().manual_seed(seed))
        fields[many:, 2:] = -30.0
        couplings = torch.zeros(d, k, d, k)
        for a in range(many):
            for b in range(many):
                if a != b:
                    couplings[a, :, b, :] = coupling * torch.eye(k)
        super().__init__(fields, couplings)
        self.many = many
        self.many_marginal = exact_distribution(PottsEnergy(fields[:many], couplings[:many, :, :many]), many, k)
        self.binary_marginal = exact_distribution(
            PottsEnergy(fields[many:, :2], torch.zeros(binary, 2, binary, 2)), binary, 2
        )

    def block_distances(self, samples: Tensor) -> tuple[float, float]:
        """Total variation of each block's empirical distribution over ``samples (n, d)`` from its exact
        marginal: ``(many-valued block, binary block)``; a binary variable off its two plausible categories
        counts as mass off the target."""
        binary = samples[:, self.many :]
        plausible = (binary < 2).all(1)
        q_binary = torch.bincount(state_index(binary[plausible], 2), minlength=2 ** binary.shape[1]) / len(samples)
        off = 1.0 - plausible.double().mean().item()
        q_many = empirical_distribution(samples[:, : self.many], self.num_categories)
        return total_variation(self.many_marginal, q_many), total_variation(self.binary_marginal, q_binary) + off / 2
