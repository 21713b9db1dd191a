"""What augment adds to a candidate variant's rank beside its draw's log-probability: its closeness to the source
(the mean cosine similarity of each changed word's token and its new token in the masked LM's input embeddings,
weighted by ``keep_close``) and, given a classifier, the log-probability of the label to keep (``log p(label |
variant)``, weight 1, as a term of an energy adds). A classifier is any callable from a list of texts to their
label probabilities ``(n, labels)`` (scikit-learn's ``predict_proba``, a wrapped model; a Hugging Face sequence
classifier by hub id or path is one: :func:`infill.lm.classifier.hub_classifier`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Sequence, Union

from ..errors import InfillError, check, is_integer, is_number

if TYPE_CHECKING:
    import torch

Classifier = Callable[[list[str]], Sequence[Sequence[float]]]


def check_terms(keep_close, classifier, label, action: str = "substitute") -> None:
    """Refuse bad term arguments in one line (before a model loads); ``keep_close`` only weighs substitutes."""
    check(
        is_number(keep_close) and math.isfinite(keep_close) and keep_close >= 0,
        f"keep_close must be a number >= 0, got {keep_close!r}",
    )
    check(not keep_close or action == "substitute", "keep_close weighs substituted words: it needs action substitute")
    check(classifier is None or callable(classifier) or isinstance(classifier, str), "a classifier must be callable")
    check(label is None or classifier is not None, "label needs a classifier")
    check(
        label is None or is_integer(label) or isinstance(label, str),
        f"label must be an index or a name, got {label!r}",
    )


class Label:
    """``classifier``'s probability of the label to keep: ``label`` (an index, or a name of the classifier's
    ``labels``), or where None each source's own most likely label."""

    def __init__(self, classifier: Classifier, label: Union[int, str, None]):
        self.classifier = classifier
        if isinstance(label, str):
            names = list(getattr(self.classifier, "labels", ()))
            check(
                label in names, f"the classifier has no label {label!r}; its labels: {', '.join(names) or 'none named'}"
            )
            label = names.index(label)
        self.label = label

    def probabilities(self, texts: list[str]) -> torch.Tensor:
        """``(n, labels)``: the classifier on ``texts``, checked (a failure or a bad shape is one line)."""
        import torch

        try:
            p = torch.as_tensor(self.classifier(list(texts)), dtype=torch.float64)
        except Exception as exc:  # a user's callable: whatever it raises is reported in one line
            raise InfillError(f"the classifier failed on {len(texts)} texts: {type(exc).__name__}: {exc}") from None
        check(
            p.ndim == 2 and len(p) == len(texts) and bool(torch.isfinite(p).all()),
            f"the classifier must give finite probabilities (texts, labels), got shape {tuple(p.shape)}",
        )
        check(self.label is None or 0 <= self.label < p.shape[1], f"label {self.label} is out of range")
        return p

    def targets(self, sources: list[str]) -> list[int]:
        """The label each source keeps."""
        if self.label is not None:
            return [self.label] * len(sources)
        return self.probabilities(sources).argmax(1).tolist()


def closeness(embeddings: torch.Tensor, old: Sequence[int], new: torch.Tensor) -> torch.Tensor:
    """``(m,)``: the mean cosine similarity of the token ids ``old (d,)`` and each row of ``new (m, d)``."""
    import torch

    a = torch.nn.functional.normalize(embeddings[torch.as_tensor(list(old))].float(), dim=-1)
    b = torch.nn.functional.normalize(embeddings[new].float(), dim=-1)
    return (a[None] * b).sum(-1).mean(-1)
