"""The one exception type for bad input: the CLI prints its message on one line and exits non-zero."""


class InfillError(ValueError):
    """A user-facing error with a one-line message saying what is wrong and what to do."""

