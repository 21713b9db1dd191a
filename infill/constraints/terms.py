"""Terms of a sum energy: each maps one-hot ``x (B, d, K)`` to ``(B,)``, differentiable in ``x``.

:class:`Include` and :class:`Closeness` are *affine in each variable's one-hot vector* (multilinear over the
variables), so their gradient at a one-hot ``x`` gives the exact change of a single-variable move:
``grad[b, i, k] - grad[b, i, x_i] = U(x with x_i := k) - U(x)``. A gradient sampler thus sees them without
error, and their :meth:`differences` give the same table in ``O(d K)`` without any model call (the
proposal of ``gibbs``/``gibbs-mh`` on a sum adds them to the masked LM's conditional).
"""

from __future__ import annotations

from typing import Sequence, Union

import torch
from torch import Tensor, nn

from ..energies.masked_lm import MaskedLMEnergy
from ..errors import InfillError


def per_chain(rows: Tensor, chains: int) -> Tensor:
    """Rows ``(G, ...)`` given to ``chains`` chains split into ``G`` equal contiguous blocks (block ``g`` gets
    row ``g``)."""
    g = len(rows)
    if chains % g:
        raise InfillError(f"{chains} chains do not split evenly over {g} templates")
    return rows.repeat_interleave(chains // g, dim=0)


class Include:
    """``U(x) = -(number of listed words that no blank holds)``: each word must appear somewhere.

    ``forms`` holds one set of category indices per word (its forms: ``cat``, ``Cat``, ``Ġcat``...); a word
    is present where some blank holds one of its forms. On one-hot ``x`` the count of missing words is the
    multilinear ``sum_w prod_i (1 - sum_{k in w} x_ik)``, whose gradient is exact for single changes (module
    docstring): placing a missing word gains 1, removing a word's only occurrence costs 1, anything else 0.
    With weight ``w`` in a sum, fillings missing a word are ``exp(-w)`` times less likely per missing word;
    among fillings that hold every word the distribution is the rest of the sum's, unchanged.
    """

    name = "include"

    def __init__(self, forms: Sequence[Sequence[int]], num_categories: int):
        if not forms or any(len(f) == 0 for f in forms):
            raise InfillError("an include term needs at least one word, each with at least one form")
        self.num_categories = num_categories
        self.members = torch.zeros(num_categories, len(forms))  # (K, n): category k is a form of word w
        for w, word in enumerate(forms):
            self.members[torch.as_tensor(list(word), dtype=torch.long), w] = 1.0

    def missing(self, x: Tensor) -> Tensor:
        """Per chain and word, 1 where the word is missing: ``(B, n)`` (multilinear in ``x``)."""
        held = x @ self.members.to(x)  # (B, d, n): blank i holds a form of word w
        return (1 - held).prod(1)

    def __call__(self, x: Tensor) -> Tensor:
        return 0.0 - self.missing(x).sum(-1)  # 0.0, not -0.0, where nothing is missing

    def differences(self, x_idx: Tensor) -> Tensor:
        """``U(x with x_i := k) - U(x)`` for every blank and category, ``(B, d, K)``, in ``O(d K n)``."""
        members = self.members.to(x_idx.device)
        held = members[x_idx]  # (B, d, n)
        elsewhere = held.sum(1, keepdim=True) - held  # occurrences of word w outside blank i
        missing_after = (elsewhere == 0).float() @ (1 - members).T  # (B, d, K)
        missing_now = (held.sum(1) == 0).float().sum(-1)  # (B,)
        return missing_now[:, None, None] - missing_after


class Closeness:
    """``U(x) = -(number of blanks whose category differs from the source's)``: minus a Hamming distance.

    ``source`` is ``(d,)`` category indices, or ``(G, d)`` for chains split into ``G`` equal contiguous blocks
    (:func:`per_chain`). Linear in ``x``, so its gradient is exact for single changes.
    """

    name = "closeness"

    def __init__(self, source: Tensor, num_categories: int):
        self.source = torch.atleast_2d(torch.as_tensor(source, dtype=torch.long))
        if self.source.min() < 0 or self.source.max() >= num_categories:
            raise InfillError(f"a source filling must hold category indices in [0, {num_categories})")
        self.num_categories = num_categories

    def sources(self, chains: int) -> Tensor:
        """Each chain's source ``(B, d)``."""
        return per_chain(self.source, chains)

    def __call__(self, x: Tensor) -> Tensor:
        kept = x.gather(2, self.sources(x.shape[0]).to(x.device)[..., None]).squeeze(-1)
        return kept.sum(-1) - x.shape[1]

    def changed(self, x_idx: Tensor) -> Tensor:
        """Number of changed blanks per chain ``(B,)``."""
        return (x_idx != self.sources(len(x_idx)).to(x_idx.device)).sum(-1)

    def differences(self, x_idx: Tensor) -> Tensor:
        source = self.sources(len(x_idx)).to(x_idx.device)
        after = torch.ones(*x_idx.shape, self.num_categories, device=x_idx.device)
        after.scatter_(2, source[..., None], 0.0)  # changed after the move
        return (x_idx != source).float()[..., None] - after


class SequenceClassifier:
    """A user's term: ``U(x) = log p(label | the filled sequence)`` under a Hugging Face sequence classifier
    that shares the masked LM's tokenizer. ``label`` is an index or a name of ``config.label2id``. It needs the
    template: :meth:`bind` gives the term for a masked-LM energy's template(s), blanks and categories (a sum
    built by :func:`~.weighted_sum.constrained_energy` binds it)."""

    def __init__(self, classifier: nn.Module, label: Union[int, str], name: str = "classifier"):
        config = classifier.config
        if isinstance(label, str):
            if label not in config.label2id:
                raise InfillError(
                    f"the classifier has no label {label!r}; its labels: {', '.join(map(str, config.label2id))}"
                )
            label = config.label2id[label]
        if not 0 <= label < config.num_labels:
            raise InfillError(f"label {label} is out of range for a classifier of {config.num_labels} labels")
        self.classifier = classifier.eval().requires_grad_(False)
        self.label, self.name = int(label), name

    def bind(self, energy: MaskedLMEnergy) -> "ClassifierTerm":
        return ClassifierTerm(self, energy)


class ClassifierTerm:
    """:class:`SequenceClassifier` on the template of ``energy``: the filled sequence enters the classifier
    through ``inputs_embeds``, blank ``i`` embedded as ``x_i @ E[category_ids]`` with the classifier's own
    embedding matrix ``E``, so gradients reach ``x``."""

    def __init__(self, spec: SequenceClassifier, energy: MaskedLMEnergy):
        embeddings = spec.classifier.get_input_embeddings().weight
        top = max(int(energy.input_ids.max()), int(energy.category_ids.max()))
        if top >= len(embeddings):
            raise InfillError(
                f"the classifier knows {len(embeddings)} tokens, the template uses id {top}: "
                "it must share the masked LM's tokenizer"
            )
        self.classifier, self.label, self.name = spec.classifier, spec.label, spec.name
        self.input_ids = energy.input_ids.to(embeddings.device)
        self.blank_positions = energy.blank_positions.to(embeddings.device)
        self.category_ids = energy.category_ids.to(embeddings.device)
        self.num_categories = energy.num_categories

    def __call__(self, x: Tensor) -> Tensor:
        embeddings = self.classifier.get_input_embeddings().weight
        b = x.shape[0]
        ids, positions = self.input_ids.expand(b, -1), self.blank_positions.expand(b, -1)
        filled = embeddings[ids]  # (B, L, H)
        rows = torch.arange(b, device=ids.device)[:, None]
        filled[rows, positions] = x.to(embeddings) @ embeddings[self.category_ids]
        logits = self.classifier(inputs_embeds=filled).logits
        return torch.log_softmax(logits.float(), dim=-1)[:, self.label]
