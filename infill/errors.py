"""The one exception type for bad input: the CLI prints its message on one line and exits non-zero."""


class InfillError(ValueError):
    """A user-facing error with a one-line message saying what is wrong and what to do."""


def quote(text: str, limit: int = 80) -> str:
    """``repr`` of ``text`` for a message, cut to about ``limit`` characters with an ellipsis."""
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")
