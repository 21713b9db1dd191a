"""A bounded cache of the masked LM's logits at a masked slot, keyed by exactly what the sequence held.

A forward pass of the masked LM over a template whose blanks hold tokens or the mask token gives, at a
read blank ``j``, logits that depend on the template, on ``j`` and on the tokens (or masks) at every blank: a
cache serves one template, and the pair is the key. The pseudo-log-likelihood term of blank ``j`` of a state is
such an entry (blank ``j`` masked, the others filled), and so is a Gibbs step's conditional at ``j`` and a
one-pass draw's conditional (some blanks masked), so every pass of a run feeds every other. Entries are float32 ``(K,)``
logits over the categories, rows of one tensor; the least recently used go first once ``max_bytes`` would be
exceeded.

The host does one dictionary operation an entry: keys are built for a whole batch as int64 rows and read
back once as bytes, logits move in and out as one indexed copy a batch, never one tensor an entry.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Optional

import numpy as np
import torch
from torch import Tensor

CACHE_MIB = 256
"""The default cap of a run's cache, in MiB of logits (an entry is ``4 K`` bytes for ``K`` categories)."""
MASKED = -1
"""The value of a masked blank in a key's row."""
_SPARE: list[Tensor] = []
"""The logits tensor of the last cache that is gone, for the next one of its shape: its pages already backed."""


def key(slot: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """What the logits at blank ``slot[m]`` of the template depend on, for each of ``M`` entries: the slot, and
    every blank's category (:data:`MASKED` where masked) in ``rows (M, d)``, as int64 rows ``(M, 1 + d)`` (host
    arrays: the keys never go to the device)."""
    return np.concatenate([slot[:, None], rows], 1)


def as_bytes(rows: np.ndarray) -> list[bytes]:
    """Each int64 row of ``rows (M, W)`` as bytes, in one conversion."""
    values = np.ascontiguousarray(rows, dtype=np.int64)
    return values.view(f"V{8 * values.shape[1]}").ravel().tolist()


class ConditionalCache:
    """Logits ``(K,)`` by :func:`key`, at most ``max_bytes`` of them (least recently used evicted), as rows of
    one float32 tensor: :data:`CACHE_MIB` MiB of rows at first (the cap if less; pages are backed as rows are
    written), twice as many whenever more are needed, up to the cap; a cache that is gone leaves it to the next.
    ``key_of`` builds the keys; tests replace it to show that a key which omits a blank breaks exactness."""

    def __init__(self, max_bytes: int = CACHE_MIB << 20, key_of: Callable[[np.ndarray, np.ndarray], np.ndarray] = key):
        self.max_bytes = max_bytes
        self.key_of = key_of
        self._entries: OrderedDict[bytes, int] = OrderedDict()  # key -> its row of _logits
        self._logits: Optional[Tensor] = None  # (rows, K)
        self._normalisers: Optional[Tensor] = None  # (rows,) each row's logsumexp, NaN until bound asks

    def __del__(self):
        if self._logits is not None:
            _SPARE[:] = [self._logits]

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return 0 if self._logits is None else len(self._entries) * self._logits.shape[1] * 4

    def keys(self, slot: np.ndarray, rows: np.ndarray) -> list[bytes]:
        """The keys of ``M`` entries (the arguments of :func:`key`), as bytes."""
        return as_bytes(self.key_of(slot, rows))

    def find(self, keys: list[bytes]) -> list[int]:
        """The row of each key held (-1 for the others); those held become the most recently used, in order."""
        entries, found = self._entries, []
        for k in keys:
            row = entries.get(k, -1)
            if row >= 0:
                entries.move_to_end(k)
            found.append(row)
        return found

    def capacity(self, categories: int) -> int:
        """How many entries over ``categories`` categories fit in ``max_bytes``."""
        return self.max_bytes // (4 * categories)

    def logits(self, rows: Tensor) -> Tensor:
        """The logits ``(N, K)`` held in ``rows`` (from :meth:`find` or :meth:`put`), a copy."""
        return self._logits.index_select(0, rows)

    def logit(self, rows: Tensor, columns: Tensor) -> Tensor:
        """The logit ``(N,)`` in column ``columns[i]`` of the entry held in ``rows[i]``."""
        return self._logits[rows, columns]

    @torch.inference_mode()
    def normalisers(self, rows: Tensor) -> Tensor:
        """The logsumexp ``(N,)`` of the logits held in ``rows``, each computed once while held."""
        missing = rows[self._normalisers[rows].isnan()].unique()
        if len(missing):
            self._normalisers[missing] = torch.logsumexp(self._logits[missing], dim=-1)
        return self._normalisers[rows]

    @torch.inference_mode()  # the tensor is written inside passes without gradient and outside them
    def put(self, keys: list[Optional[bytes]], logits: Tensor) -> list[int]:
        """Keep row ``i`` of ``logits (P, K)`` under ``keys[i]``, in order (each put past the cap evicts the least
        recently used entry); a key held already, or None, is skipped. Returns the row each key is held in
        after its put (-1: None, or none held)."""
        capacity = self.capacity(logits.shape[1])
        if capacity == 0:
            return [-1] * len(keys)
        if self._logits is not None and logits.shape[1] != self._logits.shape[1]:
            raise ValueError(f"this cache holds logits over {self._logits.shape[1]} categories, not {logits.shape[1]}")
        entries, held, placed = self._entries, [], {}  # placed: row of _logits -> row of logits (the last put)
        for i, k in enumerate(keys):
            if k is None or k in entries:
                held.append(-1 if k is None else entries[k])
                continue
            row = entries.popitem(last=False)[1] if len(entries) >= capacity else len(entries)
            entries[k] = row
            placed[row] = i
            held.append(row)
        if placed:
            self._make_room(len(entries), logits)
            rows = torch.tensor(list(placed), device=logits.device)
            source = list(placed.values())
            if source != list(range(logits.shape[0])):
                logits = logits.index_select(0, torch.tensor(source, device=logits.device))
            self._logits.index_copy_(0, rows, logits if logits.dtype == torch.float32 else logits.float())
            self._normalisers[rows] = float("nan")
        return held

    def _make_room(self, rows: int, like: Tensor) -> None:
        """Let the logits tensor (its rows kept) hold ``rows`` rows, over ``like``'s categories and on its device."""
        have = 0 if self._logits is None else self._logits.shape[0]
        if rows <= have:
            return
        k = like.shape[1]
        size = min(self.capacity(k), max(rows, 2 * have, (CACHE_MIB << 20) // (4 * k)))
        grown, normalisers = _spare(size, like), like.new_empty(size, dtype=torch.float32)
        if have:
            grown[:have], normalisers[:have] = self._logits, self._normalisers
        self._logits, self._normalisers = grown, normalisers


def _spare(rows: int, like: Tensor) -> Tensor:
    """A float32 tensor ``(rows, K)`` on ``like``'s device: the spare one if it fits (taken either way), else a
    new one."""
    try:
        spare = _SPARE.pop()
    except IndexError:  # none spare
        spare = None
    if spare is not None and spare.shape == (rows, like.shape[1]) and spare.device == like.device:
        return spare
    return like.new_empty(rows, like.shape[1], dtype=torch.float32)
