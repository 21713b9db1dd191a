"""A variant as edits of its source: each changed word's span in the source and in the variant, its old and new
text; the variant spliced into the source string (never detokenized), so every character outside the edits is the
user's, and edits applied to the source give the variant, reverted to the variant give the source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Edit:
    """One changed word: ``source[source_span[0]:source_span[1]] == old`` and
    ``variant[variant_span[0]:variant_span[1]] == new``."""

    source_span: tuple[int, int]
    variant_span: tuple[int, int]
    old: str
    new: str

    def to_dict(self) -> dict:
        return {
            "source_span": list(self.source_span),
            "variant_span": list(self.variant_span),
            "old": self.old,
            "new": self.new,
        }


def cased(new: str, old: str) -> str:
    """``new`` in ``old``'s casing: UPPER (2 letters or more), Capitalised, or lower; another (``iPhone``) leaves
    ``new`` as the model wrote it."""
    if len(old) > 1 and old.isupper():
        return new.upper()
    if old[:1].isupper() and (len(old) == 1 or old[1:].islower()):
        return new[:1].upper() + new[1:]
    if old.islower():
        return new.lower()
    return new


def splice(source: str, changes: Sequence[tuple[int, int, str]]) -> tuple[str, tuple[Edit, ...]]:
    """``source`` with ``source[start:end]`` replaced by ``new`` for each ``(start, end, new)`` (in order, not
    overlapping), and the edits."""
    pieces, edits, at, shift = [], [], 0, 0
    for start, end, new in changes:
        if start < at:
            raise ValueError("changes overlap or are out of order")
        pieces += [source[at:start], new]
        edits.append(Edit((start, end), (start + shift, start + shift + len(new)), source[start:end], new))
        shift += len(new) - (end - start)
        at = end
    return "".join(pieces) + source[at:], tuple(edits)


def apply(source: str, edits: Sequence[Edit]) -> str:
    """The variant: ``edits`` applied to ``source`` (each edit's ``old`` checked against it)."""
    _check(source, edits, "source_span", "old")
    return splice(source, [(*e.source_span, e.new) for e in edits])[0]


def revert(variant: str, edits: Sequence[Edit]) -> str:
    """The source: ``edits`` undone in ``variant`` (each edit's ``new`` checked against it)."""
    _check(variant, edits, "variant_span", "new")
    return splice(variant, [(*e.variant_span, e.old) for e in edits])[0]


def _check(text: str, edits: Sequence[Edit], span: str, field: str) -> None:
    for e in edits:
        start, end = getattr(e, span)
        if text[start:end] != getattr(e, field):
            raise ValueError(f"edit {e} does not match the text at {start}:{end} ({text[start:end]!r})")
