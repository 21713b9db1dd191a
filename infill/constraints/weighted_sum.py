"""An energy that is a weighted sum of terms: ``U(x) = sum_j w_j U_j(x)``.

Every MH sampler targets the sum exactly: each sees only an energy with a value and a gradient (or exact
differences), and its Metropolis-Hastings test uses the sum's value. ``gibbs-mh`` proposes from the sum's
:meth:`~WeightedSum.conditional_logits` and corrects by the sum. Plain ``gibbs`` with a masked-LM term draws
from that proposal without a test, so it targets neither the PLL (as without terms) nor the sum.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Optional, Sequence

import torch
from torch import Tensor

from ..energies.abilities import HasConditionals, HasDifferences, HasValueAndGrad
from ..energies.base import evaluate
from ..energies.masked_lm import MaskedLMEnergy
from ..errors import InfillError
from .terms import Include

INCLUDE_WEIGHT = 20.0  # a missing word costs a factor exp(-20), about 2e-9: in effect a hard constraint


def term_name(term, j: int) -> str:
    """A term's name: its ``name`` attribute, ``pll`` for the masked-LM energy, a function's own name, else
    ``term<j>``."""
    name = getattr(term, "name", None)
    if name is None and isinstance(term, MaskedLMEnergy):
        name = "pll"
    if name is None and getattr(term, "__name__", "<lambda>") != "<lambda>":
        name = term.__name__
    return name or f"term{j}"


class WeightedSum:
    """The energy ``sum_j w_j U_j(x)`` over ``(weight, term)`` or ``(weight, term, name)`` entries.

    A term is any energy callable ``x (B, d, K) -> (B,)`` (a masked-LM energy, :class:`~.terms.Include`,
    :class:`~.terms.Closeness`, a user's function, ...). :meth:`terms` reports each term's own value
    (unweighted) per chain.

    ``conditional_logits`` exists only where the sum can propose a blank from all of its terms at once: one
    term has the model's conditionals (the masked LM) and every other term has exact ``differences``. It is
    then ``w_lm * (the model's logits) + sum_j w_j * differences_j`` at the blank, so a proposal sees every
    include word and the source. Without it, ``gibbs`` and ``gibbs-mh`` enumerate the exact conditional
    (``K`` evaluations per step): use a gradient sampler instead. ``differences`` exists where every term has
    them: their weighted sum. The sum has no ``blank_logits``: a masked blank cannot be scored by the other
    terms, so ``block-mh`` proposes from ``conditional_logits``.
    """

    def __init__(self, terms: Sequence[tuple]):
        if not terms:
            raise InfillError("a sum of terms needs at least one (weight, term)")
        self.weights, self.entries = [], {}
        for j, entry in enumerate(terms):
            if not isinstance(entry, tuple) or len(entry) not in (2, 3) or not callable(entry[1]):
                raise InfillError(f"term {j}: give (weight, term) or (weight, term, name), got {entry!r}")
            weight, term = entry[0], entry[1]
            if isinstance(weight, bool) or not isinstance(weight, Real) or not math.isfinite(weight):
                raise InfillError(f"term {j}: the weight must be a finite number, got {weight!r}")
            name = entry[2] if len(entry) == 3 else term_name(term, j)
            if name in self.entries:
                raise InfillError(f"two terms are named {name!r}: give them distinct names")
            self.entries[name] = term
            self.weights.append(float(weight))
        sizes = {t.num_categories for t in self.entries.values() if hasattr(t, "num_categories")}
        if len(sizes) > 1:
            raise InfillError(f"the terms disagree on the number of categories: {sorted(sizes)}")
        if sizes:
            self.num_categories = sizes.pop()
        model = [n for n, t in self.entries.items() if isinstance(t, HasConditionals)]
        if len(model) == 1 and all(isinstance(t, HasDifferences) for n, t in self.entries.items() if n != model[0]):
            self._model = model[0]
            self.conditional_logits = self._conditional_logits
        if all(isinstance(t, HasDifferences) for t in self.entries.values()):
            self.differences = self._differences

    def entries_with_weights(self) -> list[tuple[float, object, str]]:
        """The ``(weight, term, name)`` entries, in order."""
        return [(w, t, n) for w, (n, t) in self._weighted()]

    def extended(self, *terms: tuple) -> "WeightedSum":
        """This sum with more ``(weight, term[, name])`` entries."""
        return WeightedSum(self.entries_with_weights() + list(terms))

    def term(self, name: str):
        """The term named ``name`` (e.g. ``"pll"``, the run's reported energy)."""
        if name not in self.entries:
            raise InfillError(f"no term named {name!r}; the terms: {', '.join(self.entries)}")
        return self.entries[name]

    def weight(self, name: str) -> float:
        self.term(name)
        return self.weights[list(self.entries).index(name)]

    def _weighted(self):
        return zip(self.weights, self.entries.items())

    def __call__(self, x: Tensor) -> Tensor:
        total = 0.0
        for weight, (name, term) in self._weighted():
            total = total + weight * _checked(name, term(x), x)
        return total

    def value_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Values ``(B,)`` and gradients ``(B, d, K)``, each term by its own ``value_and_grad`` where it has
        one; a term that does not depend differentiably on ``x`` contributes no gradient (the MH test still
        counts its value)."""
        value, grad = 0.0, torch.zeros_like(x)
        for weight, (name, term) in self._weighted():
            v, g = _value_and_grad(term, x)
            value = value + weight * _checked(name, v, x)
            grad = grad if g is None else grad + weight * g
        return value, grad

    def terms(self, x: Tensor, names: Optional[Sequence[str]] = None) -> dict[str, Tensor]:
        """Each term's own (unweighted) value per chain, ``name -> (B,)``, for ``names`` (default all)."""
        return {n: evaluate(self.term(n), x) for n in (names or self.entries)}

    def _differences(self, x_idx: Tensor) -> Tensor:
        return sum(weight * term.differences(x_idx) for weight, (_, term) in self._weighted())

    def _conditional_logits(self, x_idx: Tensor, i: Tensor) -> Tensor:
        rows = torch.arange(len(i), device=i.device)
        logits = 0.0
        for weight, (name, term) in self._weighted():
            part = term.conditional_logits(x_idx, i) if name == self._model else term.differences(x_idx)[rows, i]
            logits = logits + weight * part
        return logits


def constrained_energy(
    pll: MaskedLMEnergy,
    terms: Sequence[tuple] = (),
    include: Optional[Include] = None,
    include_weight: float = INCLUDE_WEIGHT,
) -> WeightedSum:
    """The energy of a run: ``pll`` (named ``pll``), plus ``include_weight * include`` where words must
    appear, plus the user's ``(weight, term[, name])`` entries, a term with a ``bind`` method (a
    :class:`~.terms.SequenceClassifier`) bound to ``pll``'s template(s)."""
    entries = [(1.0, pll, "pll")] + ([] if include is None else [(include_weight, include)])
    for entry in terms:
        if isinstance(entry, tuple) and len(entry) > 1 and hasattr(entry[1], "bind"):
            entry = (entry[0], entry[1].bind(pll), *entry[2:])
        entries.append(entry)
    return WeightedSum(entries)


def _checked(name: str, value: Tensor, x: Tensor) -> Tensor:
    """A term's values, refused with one line unless they are one number per chain."""
    if not isinstance(value, Tensor) or value.shape != x.shape[:1]:
        shape = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
        raise InfillError(f"term {name!r} must return one value per chain, shape ({x.shape[0]},), got {shape}")
    return value


def _value_and_grad(term, x: Tensor) -> tuple[Tensor, Optional[Tensor]]:
    """A term's values and gradient (None where its value does not depend on ``x`` through autograd)."""
    if isinstance(term, HasValueAndGrad):
        return term.value_and_grad(x)
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        value = term(x)
        if not isinstance(value, Tensor) or not value.requires_grad:
            return value, None
        (grad,) = torch.autograd.grad(value.sum(), x, allow_unused=True)
    return value.detach(), grad
