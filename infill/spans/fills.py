"""Variable-length fills of a template's blanks, batched over chains, and the space of fills they may take.

A fill is a sequence of category indices per chain and blank, held in ``Fills.tokens (B, J, C)`` with
:data:`EMPTY` past each ``Fills.lengths (B, J)``; :data:`MASK` marks a mask token (proposal contexts and
left-to-right starts); :meth:`Fills.pack` makes them one integer row per chain, the state of the span sampler.
:class:`SpanSpace` says which sequences are valid: a blank holds ``low..high`` units,
a unit being a token (token blanks) or a word (word blanks): a word-start category followed by at most
``pieces - 1`` continuation categories.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor

EMPTY = -1
MASK = -2


def insert_at(rows: Tensor, slot: Tensor, value: Tensor) -> Tensor:
    """``rows (B, C)`` with ``value (B,)`` inserted before position ``slot (B,)``, the last column dropped."""
    pos = torch.arange(rows.shape[1], device=rows.device)
    shifted = rows.gather(1, (pos - 1).clamp_min(0).expand_as(rows))
    out = torch.where(pos < slot[:, None], rows, shifted)
    return torch.where(pos == slot[:, None], value[:, None].to(rows.dtype), out)


def delete_at(rows: Tensor, slot: Tensor, fill) -> Tensor:
    """``rows (B, C)`` without position ``slot (B,)``, ``fill`` appended."""
    c = rows.shape[1]
    pos = torch.arange(c, device=rows.device)
    shifted = torch.cat([rows[:, 1:], torch.full_like(rows[:, :1], fill)], 1)
    return torch.where(pos < slot[:, None], rows, shifted)


def put_at(rows: Tensor, slot: Tensor, value: Tensor) -> Tensor:
    """``rows (B, C)`` with position ``slot (B,)`` set to ``value (B,)``."""
    return rows.scatter(1, slot[:, None], value[:, None].to(rows.dtype))


@dataclass(frozen=True)
class Fills:
    """Category indices ``tokens (B, J, C)`` (:data:`EMPTY` past ``lengths (B, J)``) of ``J`` blanks."""

    tokens: Tensor
    lengths: Tensor

    @classmethod
    def masks(cls, lengths: Tensor, width: int) -> "Fills":
        """Fills of ``lengths (B, J)`` mask tokens, in a tensor of width ``width``."""
        pos = torch.arange(width, device=lengths.device)
        tokens = torch.where(pos < lengths[..., None], MASK, EMPTY)
        return cls(tokens, lengths.clone())

    def select(self, chains) -> "Fills":
        """The fills of ``chains`` (a slice, index tensor or mask over ``B``)."""
        return Fills(self.tokens[chains], self.lengths[chains])

    def rows(self, blank: Tensor) -> Tensor:
        """The sequence ``(B, C)`` of blank ``blank[b]`` in each chain ``b``."""
        return self.tokens[torch.arange(len(blank), device=blank.device), blank]

    def with_rows(self, blank: Tensor, rows: Tensor, lengths: Tensor) -> "Fills":
        """Blank ``blank[b]`` of chain ``b`` replaced by ``rows (B, C)`` of length ``lengths (B,)``."""
        chains = torch.arange(len(blank), device=blank.device)
        tokens, new_lengths = self.tokens.clone(), self.lengths.clone()
        tokens[chains, blank] = rows
        new_lengths[chains, blank] = lengths
        return Fills(tokens, new_lengths)

    def insert(self, blank: Tensor, slot: Tensor, value: Tensor) -> "Fills":
        n = self.lengths[torch.arange(len(blank), device=blank.device), blank]
        return self.with_rows(blank, insert_at(self.rows(blank), slot, value), n + 1)

    def delete(self, blank: Tensor, slot: Tensor) -> "Fills":
        n = self.lengths[torch.arange(len(blank), device=blank.device), blank]
        return self.with_rows(blank, delete_at(self.rows(blank), slot, EMPTY), n - 1)

    def put(self, blank: Tensor, slot: Tensor, value: Tensor) -> "Fills":
        n = self.lengths[torch.arange(len(blank), device=blank.device), blank]
        return self.with_rows(blank, put_at(self.rows(blank), slot, value), n)

    def where(self, choose: Tensor, other: "Fills") -> "Fills":
        """Per chain: these fills where ``choose (B,)``, else ``other``'s."""
        return Fills(
            torch.where(choose[:, None, None], self.tokens, other.tokens),
            torch.where(choose[:, None], self.lengths, other.lengths),
        )

    def pack(self) -> Tensor:
        """One integer row per chain, ``(B, J * C + J)``: the tokens, then the lengths (a sampler's state)."""
        return torch.cat([self.tokens.flatten(1), self.lengths], 1)

    @classmethod
    def unpack(cls, x: Tensor, blanks: int) -> "Fills":
        """The fills of ``J = blanks`` blanks packed in ``x`` by :meth:`pack`."""
        width = (x.shape[1] - blanks) // blanks
        return cls(x[:, : blanks * width].reshape(len(x), blanks, width), x[:, blanks * width :])

    def to_lists(self) -> list[list[list[int]]]:
        """Per chain, per blank, the category indices of the fill."""
        tokens, lengths = self.tokens.tolist(), self.lengths.tolist()
        return [[row[:n] for row, n in zip(chain, ns)] for chain, ns in zip(tokens, lengths)]

    def pieces(self, categories: Tensor) -> list[list[list[int]]]:
        """Per chain, per blank, the token ids of the fill (``categories (K,)``: the token of each category)."""
        categories = categories.cpu()
        return [[categories[f].tolist() for f in chain] for chain in self.to_lists()]


@dataclass(frozen=True)
class SpanSpace:
    """The valid fills: per blank ``j``, categories ``allowed (J, K)``, of which ``starts (J, K)`` open a unit
    (all of them in a token blank), at most ``pieces (J,)`` categories per unit (1 in a token blank), and per
    chain ``low (B, J)`` to ``high (B, J)`` units (per chain, so that chains may pin different lengths)."""

    allowed: Tensor
    starts: Tensor
    pieces: Tensor
    low: Tensor
    high: Tensor

    @property
    def capacity(self) -> Tensor:
        """The most categories a blank can hold, per chain ``(B, J)``."""
        return self.high * self.pieces

    @property
    def width(self) -> int:
        return max(int(self.capacity.max()), 1)

    def select(self, chains) -> "SpanSpace":
        return dataclasses.replace(self, low=self.low[chains], high=self.high[chains])

    def kinds(self, rows: Tensor, blank: Tensor) -> Tensor:
        """Whether each category of ``rows (B, C)`` opens a unit of blank ``blank[b]`` (False where empty)."""
        return (self.starts[blank[:, None], rows.clamp_min(0)]) & (rows >= 0)

    def valid(self, opens: Tensor, lengths: Tensor, blank: Tensor, chains: Tensor) -> Tensor:
        """Whether sequences of ``lengths (B,)`` in blank ``blank (B,)`` of chains ``chains (B,)``, whose
        positions open a unit where ``opens (B, C)``, have a valid unit structure (categories not checked)."""
        pos = torch.arange(opens.shape[1], device=opens.device)
        inside = pos < lengths[:, None]
        opens = opens & inside
        last_open = torch.where(opens, pos, -1).cummax(1).values
        pieces_ok = ((pos - last_open < self.pieces[blank][:, None]) | ~inside).all(1)
        first_ok = (lengths == 0) | opens[:, 0]
        units = opens.sum(1)
        return first_ok & pieces_ok & (units >= self.low[chains, blank]) & (units <= self.high[chains, blank])

    def proposal_mask(self, fills: Fills, blank: Tensor, slot: Tensor, insert: Tensor, chains: Tensor) -> Tensor:
        """``(B, K)``: the categories that, inserted before position ``slot`` (where ``insert``) or put at it
        (elsewhere) in blank ``blank`` of ``fills``, give a valid fill (an insert needs a free column)."""
        rows, n = fills.rows(blank), fills.lengths[torch.arange(len(blank), device=blank.device), blank]
        opens = self.kinds(rows, blank)
        length = n + insert.long()
        ok = []
        for kind in (True, False):
            value = torch.full_like(blank, kind, dtype=torch.bool)
            candidate = torch.where(insert[:, None], insert_at(opens, slot, value), put_at(opens, slot, value))
            ok.append(self.valid(candidate, length, blank, chains))
        starts = self.starts[blank]
        return self.allowed[blank] & torch.where(starts, ok[0][:, None], ok[1][:, None])

    def fill_valid(self, fills: Fills, chains: Tensor) -> Tensor:
        """``(B,)``: whether every blank of each chain holds a valid fill (categories included)."""
        b, j = fills.lengths.shape
        ok = torch.ones(b, dtype=torch.bool, device=fills.tokens.device)
        for blank in range(j):
            index = torch.full((b,), blank, dtype=torch.long, device=ok.device)
            rows, n = fills.tokens[:, blank], fills.lengths[:, blank]
            inside = torch.arange(rows.shape[1], device=ok.device) < n[:, None]
            allowed = (self.allowed[blank][rows.clamp_min(0)] | ~inside).all(1)
            ok &= allowed & self.valid(self.kinds(rows, index), n, index, chains)
        return ok
