"""A bounded cache of the masked LM's logits at a masked slot, keyed by exactly what the sequence held.

A forward pass of the masked LM over a template whose blanks hold tokens or the mask token gives, at a
read blank ``j``, logits that depend on the template, on ``j`` and on the tokens (or masks) at every blank:
that triple is the key. The pseudo-log-likelihood term of blank ``j`` of a state is such an entry (blank
``j`` masked, the others filled), and so is a Gibbs step's conditional at ``j`` and a one-pass draw's
conditional (some blanks masked), so every pass of a run feeds every other. Entries are float32 ``(K,)``
logits over the categories; the least recently used go first once ``max_bytes`` would be exceeded.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Hashable, Optional

import torch
from torch import Tensor

CACHE_MIB = 256
"""The default cap of a run's cache, in MiB of logits (an entry is ``4 K`` bytes for ``K`` categories)."""
MASKED = -1
"""The value of a masked blank in a key's row."""

Key = Hashable


def key(template: int, slot: int, row: bytes) -> Key:
    """What the logits at blank ``slot`` depend on: the template, the slot, and every blank's category
    (:data:`MASKED` where masked) as the bytes of an int64 row."""
    return template, slot, row


class ConditionalCache:
    """Logits ``(K,)`` by :func:`key`, at most ``max_bytes`` of them (least recently used evicted).
    ``key_of`` builds the keys; tests replace it to show that a key which omits a blank breaks exactness."""

    def __init__(self, max_bytes: int = CACHE_MIB << 20, key_of: Callable[[int, int, bytes], Key] = key):
        self.max_bytes = max_bytes
        self.key_of = key_of
        self._entries: OrderedDict[Key, Tensor] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, k: Key) -> Optional[Tensor]:
        logits = self._entries.get(k)
        if logits is not None:
            self._entries.move_to_end(k)
        return logits

    def put(self, k: Key, logits: Tensor) -> None:
        size = logits.numel() * logits.element_size()
        if size > self.max_bytes or k in self._entries:
            return
        while self._bytes + size > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.numel() * old.element_size()
        self._entries[k] = logits.detach().float().clone()
        self._bytes += size


def rows_of(x_idx: Tensor, masked: Tensor) -> list[bytes]:
    """Each chain's blanks as key bytes: its categories, :data:`MASKED` where ``masked``."""
    rows = torch.where(masked, MASKED, x_idx).to("cpu", torch.int64).numpy()
    return [r.tobytes() for r in rows]
