"""Optional dependencies: a missing one is one line naming the extra (``pip install 'infill-mcmc[EXTRA]'``)."""

from __future__ import annotations

from .errors import InfillError


def missing(module: str, extra: str) -> InfillError:
    """The error for an optional ``module`` that is not installed; ``extra`` installs it."""
    return InfillError(f"{module.split('.')[0]} is not installed; install it with: pip install 'infill-mcmc[{extra}]'")
