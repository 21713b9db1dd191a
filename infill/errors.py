"""The one exception type for bad input, and the argument checks every layer refuses bad input with: predicates
(:func:`is_integer`, :func:`is_number`) for a layer's own wording, and checks that raise the common one-line
messages (``name must be a positive integer, got 0``)."""

from __future__ import annotations

import math
from typing import Any, Sequence


class InfillError(ValueError):
    """A user-facing error with a one-line message saying what is wrong and what to do."""


def is_integer(value: Any, minimum: int | None = None) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``minimum``."""
    return not isinstance(value, bool) and isinstance(value, int) and (minimum is None or value >= minimum)


def is_number(
    value: Any, low: float = -math.inf, high: float = math.inf, open_low: bool = False, open_high: bool = False
) -> bool:
    """Whether ``value`` is a finite number (not a bool) in the interval from ``low`` to ``high`` (each end
    closed unless ``open_low`` / ``open_high``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    return (low < value if open_low else low <= value) and (value < high if open_high else value <= high)


def check(ok: bool, message: str) -> None:
    """Refuse with ``message`` unless ``ok``."""
    if not ok:
        raise InfillError(message)


def positive_integer(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` if it is an integer of at least ``minimum``, else one line naming ``name``."""
    kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    check(is_integer(value, minimum), f"{name} must be {kind}, got {value!r}")
    return value


def finite_number(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite number, else one line naming ``name``."""
    check(is_number(value), f"{name} must be a finite number, got {value!r}")
    return float(value)


def at_least(name: str, value: Any, low: float) -> float:
    """``value`` as a float if it is a finite number of at least ``low``."""
    check(is_number(value, low), f"{name} must be a number >= {low:g}, got {value!r}")
    return float(value)


def number_in(name: str, value: Any, low: float, high: float) -> float:
    """``value`` as a float if it is a number in ``[low, high]``."""
    check(is_number(value, low, high), f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def one_of(name: str, value: Any, choices: Sequence[str]) -> str:
    """``value`` if it is one of the strings ``choices``, else one line listing them."""
    check(isinstance(value, str) and value in choices, f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value
