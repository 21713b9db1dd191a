"""What augment returns: a :class:`Variant` (text, edits, score) and each source's :class:`Variants`, a list
that says how many variants it lacks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from .edits import Edit


@dataclass(frozen=True)
class Variant:
    """One variant of a source: its ``text``, the ``edits`` that make it from the source (one per changed word, in
    order), ``score``, the PLL (nats) of its filled blanks under the masked LM (with ``pll=False``, the
    log-probability of its fills along the order that drew them; 0 for a delete, which fills none), and
    ``changed``, the share of the source's words it changed (substituted, inserted or deleted); ``closeness``, the
    mean cosine similarity of each substituted word's token and its new one in the masked LM's input embeddings
    (None for an insert or a delete); ``label_probability``, the classifier's probability of the label kept (None
    without a classifier)."""

    text: str
    edits: tuple[Edit, ...]
    score: float
    changed: float
    closeness: Optional[float] = None
    label_probability: Optional[float] = None

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "edits": [e.to_dict() for e in self.edits],
            "score": self.score,
            "changed": self.changed,
            "closeness": self.closeness,
            "label_probability": self.label_probability,
        }


class Variants(list):
    """A source's variants (a list of :class:`Variant`, highest score first, every one distinct and differing from
    the source), with the ``source``, ``shortfall`` (how many fewer than asked for: the draws found no more
    distinct variants) and ``encoder_sequences`` (the compute its fill spent)."""

    def __init__(self, variants: Iterable[Variant], source: str, shortfall: int = 0, encoder_sequences: int = 0):
        super().__init__(variants)
        self.source, self.shortfall, self.encoder_sequences = source, shortfall, encoder_sequences

    def to_dict(self) -> dict:
        """``--json``'s record: ``source``, ``variants``, ``shortfall``, ``encoder_sequences``."""
        return {
            "source": self.source,
            "variants": [v.to_dict() for v in self],
            "shortfall": self.shortfall,
            "encoder_sequences": self.encoder_sequences,
        }

    def __repr__(self) -> str:
        return f"Variants({list.__repr__(self)}, source={self.source!r}, shortfall={self.shortfall})"
