"""What every report shares: means of the defined values, numbers and Markdown tables, the signature block.

Used by the infilling report (:mod:`.report`), the summarization report (:mod:`infill.summarize.evaluation`)
and ``scripts/frontier.py``, so a number reads the same in all of them.
"""

from __future__ import annotations

import json
import statistics
from typing import Iterable, Optional, Sequence


def mean_defined(values: Iterable[Optional[float]]) -> Optional[float]:
    """The mean of the values that are not None (None if there are none)."""
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def fmt(value, digits: int = 2) -> str:
    """A table cell: ``-`` for None, thousands separated, floats with ``digits`` decimals."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table's lines: the first column (the row's name) left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def signature_block(signature: dict) -> list[str]:
    """A ``## Signature`` section: the settings that reproduce the report, as JSON."""
    return ["## Signature", "", "```json", json.dumps(signature, indent=2, ensure_ascii=False), "```"]
