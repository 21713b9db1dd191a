"""Energies of all Hamming-1 neighbours of a state, for samplers that need no gradient (``una``, ``mana``, ``lb``)."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ..energies.base import Energy, evaluate, one_hot

_CHUNK_ELEMENTS = 1 << 24


def neighbour_values(
    energy: Energy, x_idx: Tensor, k: int, include_self: bool = True
) -> tuple[Optional[Tensor], Tensor]:
    """Energy of every Hamming-1 neighbour of each state, in one batched evaluation.

    Returns ``(value, table)``: ``value (B,)`` the energy of ``x_idx`` itself (``None`` unless
    ``include_self``) and ``table (B, d, K)`` with ``table[b, i, c] = U(x_b with x_i := c)``; the
    entries at the current categories are filled with ``value`` (or ``nan`` without ``include_self``).
    """
    b, d = x_idx.shape
    shifts = torch.arange(1, k, device=x_idx.device)  # (K-1,)
    alt = (x_idx[:, :, None] + shifts) % k  # (B, d, K-1)
    nb = x_idx[:, None, None, :].expand(b, d, k - 1, d).clone()  # (B, d, K-1, d)
    coord = torch.arange(d, device=x_idx.device)
    nb[:, coord, :, coord] = alt.permute(1, 0, 2)  # set x_i := alt
    batch = nb.reshape(-1, d)
    if include_self:
        batch = torch.cat([x_idx, batch])
    rows = max(1, _CHUNK_ELEMENTS // (d * k))  # bound the one-hot batch of long documents
    values = torch.cat([evaluate(energy, one_hot(part, k)) for part in batch.split(rows)])
    value = values[:b] if include_self else None
    nb_values = values[b:] if include_self else values
    fill = value if include_self else torch.full((b,), float("nan"), dtype=values.dtype, device=values.device)
    table = fill[:, None, None].expand(b, d, k).clone()
    table.scatter_(2, alt, nb_values.view(b, d, k - 1))
    return value, table


def differences(value: Tensor, table: Tensor, x_idx: Tensor) -> Tensor:
    """``Delta (B, d, K) = table - value``, exactly zero at the current categories."""
    delta = table - value[:, None, None]
    return delta.scatter(2, x_idx[:, :, None], 0.0)
