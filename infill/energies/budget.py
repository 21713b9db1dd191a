"""Encoder sequences as a hard cap: a :class:`Meter` shared by the energies of one run.

Every pass through the encoder is charged to the meter before it runs; a pass that would take the spent
sequences past the limit raises :class:`BudgetSpent` and runs nothing, so what a run reports it spent never
exceeds its budget. Samplers stop where a step raises it (:func:`infill.samplers.sample`).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional


class BudgetSpent(Exception):
    """A pass would have spent more encoder sequences than the meter's limit: nothing of it ran."""


@dataclass
class Meter:
    """Encoder sequences ``spent`` by the energies sharing it, at most ``limit`` (None: no limit)."""

    limit: Optional[int] = None
    spent: int = 0

    def spend(self, sequences: int, ahead: int = 0) -> None:
        """Charge ``sequences``, refused with :class:`BudgetSpent` (nothing charged) unless ``ahead`` more would
        still fit (a backward pass that must follow)."""
        if self.limit is not None and self.spent + sequences + ahead > self.limit:
            raise BudgetSpent(f"{self.spent} of {self.limit} encoder sequences spent; a pass needs {sequences + ahead}")
        self.spent += sequences

    @contextmanager
    def holding(self, sequences: int) -> Iterator[None]:
        """Keep ``sequences`` of the limit back from the passes run inside (what a later stage needs)."""
        if self.limit is None:
            yield
            return
        self.limit -= sequences
        try:
            yield
        finally:
            self.limit += sequences
