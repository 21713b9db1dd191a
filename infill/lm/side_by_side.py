"""Runs side by side: several templates' runs, each in a thread of its own and one running at a time, whose encoder
passes are pooled.

A run that needs a pass of token ids without gradient (:func:`encode`) hands it in and waits; when every run of
its group waits or is done, the passes of one model and one sequence length run together, at most ``rows``
sequences a pass, and each run takes its own rows. On the CPU a row's floats do not depend on its pass mates once
a product has :data:`~.packed.MIN_ROWS` rows (:mod:`.packed`), so a run gets the bits it gets alone, and its
generator, cache and budget are its own: nothing else it computes sees its group. Only one thread runs at a time
(a turn handed from run to run), so a group uses the one core a run alone uses.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, Optional, Sequence

import torch
from torch import Tensor, nn

from .packed import encode_rows

_local = threading.local()


def encode(model: nn.Module, input_ids: Tensor) -> Tensor:
    """``model.base_model``'s hidden states ``(N, L, H)`` for ``input_ids (N, L)``: pooled with the passes of
    this thread's group where it runs in one (:func:`side_by_side`), else at once."""
    group: Optional[_Group] = getattr(_local, "group", None)
    return encode_rows(model, input_ids) if group is None else group.encode(model, input_ids)


def side_by_side(
    items: Sequence[tuple], run: Callable[..., Any], key: Callable[[tuple], Optional[Hashable]], size: int, rows: int
) -> Iterator[tuple[Any, Any]]:
    """``(item[0], run(*item))`` for every item, in ``items``' order: items of one ``key`` run side by side in
    groups of at most ``size`` (pooling their passes of at most ``rows`` sequences), an item of key None alone.
    An exception raised by a run is raised when its item's turn to be yielded comes."""
    groups: dict[Hashable, list[int]] = {}
    for i, item in enumerate(items):
        k = key(item)
        groups.setdefault(("alone", i) if k is None else ("key", k), []).append(i)
    order = [part for members in groups.values() for part in _split(members, size)]
    order.sort(key=lambda part: part[0])
    done: dict[int, tuple[bool, Any]] = {}
    next_out = 0
    for part in order:
        for i, outcome in zip(part, _Group(rows).run([items[i] for i in part], run)):
            done[i] = outcome
        while next_out in done:
            ok, value = done.pop(next_out)
            if not ok:
                raise value
            yield items[next_out][0], value
            next_out += 1


def _split(members: list[int], size: int) -> list[list[int]]:
    return [members[s : s + size] for s in range(0, len(members), size)]


@dataclass
class _Ask:
    model: nn.Module
    input_ids: Tensor
    hidden: Optional[Tensor] = None
    error: Optional[BaseException] = None


class _Group:
    """Runs side by side and the passes they wait on (module docstring)."""

    def __init__(self, rows: int):
        self.rows = rows
        self._cv = threading.Condition()
        self._live = 0
        self._turn = False  # whether a run is running
        self._asked: list[_Ask] = []

    def run(self, items: Sequence[tuple], run: Callable[..., Any]) -> list[tuple[bool, Any]]:
        """``(True, run(*item))`` or ``(False, the exception it raised)`` for every item."""
        if len(items) == 1:  # alone: no thread, no pooling
            return [_outcome(run, items[0])]
        outcomes: list[tuple[bool, Any]] = [(False, None)] * len(items)
        self._live = len(items)

        def worker(i: int) -> None:
            _local.group = self
            with self._cv:
                self._cv.wait_for(lambda: not self._turn)
                self._turn = True
            try:
                outcomes[i] = _outcome(run, items[i])
            finally:
                with self._cv:
                    self._live -= 1
                    self._turn = False
                    self._serve_if_all_wait()
                    self._cv.notify_all()

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(len(items))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return outcomes

    def encode(self, model: nn.Module, input_ids: Tensor) -> Tensor:
        ask = _Ask(model, input_ids)
        with self._cv:
            self._asked.append(ask)
            self._turn = False
            self._serve_if_all_wait()
            self._cv.notify_all()
            self._cv.wait_for(lambda: (ask.hidden is not None or ask.error is not None) and not self._turn)
            self._turn = True
        if ask.error is not None:
            raise ask.error
        return ask.hidden

    def _serve_if_all_wait(self) -> None:
        """With the lock held: where every live run waits on a pass, run them all (each model and length
        together) and hand each run its rows."""
        if not self._asked or len(self._asked) < self._live:
            return
        asked, self._asked = self._asked, []
        pools: dict[tuple[int, int], list[_Ask]] = {}
        for ask in asked:
            pools.setdefault((id(ask.model), ask.input_ids.shape[1]), []).append(ask)
        for pool in pools.values():
            try:
                with torch.inference_mode():
                    ids = torch.cat([ask.input_ids for ask in pool])
                    hidden = torch.cat([encode_rows(pool[0].model, part) for part in ids.split(self.rows)])
                for ask, rows in zip(pool, hidden.split([len(ask.input_ids) for ask in pool])):
                    ask.hidden = rows
            except Exception as exc:  # every run of the pool gets it
                for ask in pool:
                    ask.error = exc


def _outcome(run: Callable[..., Any], item: tuple) -> tuple[bool, Any]:
    try:
        return True, run(*item)
    except Exception as exc:
        return False, exc
