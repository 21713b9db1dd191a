"""Optional dependencies: a missing one is one line naming the extra (``pip install 'infill[EXTRA]'``)."""
from __future__ import annotations

import importlib
from types import ModuleType

from .errors import InfillError


def missing(module: str, extra: str) -> InfillError:
    """The error for an optional ``module`` that is not installed; ``extra`` installs it."""
    return InfillError(f"{module.split('.')[0]} is not installed; install it with: pip install 'infill[{extra}]'")


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise :func:`missing`'s error."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise missing(module, extra) from None
