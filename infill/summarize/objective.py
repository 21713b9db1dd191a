"""Lin & Bilmes (2011) summarization objective as an energy over binary selections.

For sentences ``V`` with vectors, ``w_ij`` is their cosine similarity clipped at 0, and

    F(S) = L(S) + lambda * R(S)
    L(S) = sum_{i in V} min(C_i(S), alpha * C_i(V)),        C_i(S) = sum_{j in S} w_ij
    R(S) = sum_k sqrt( sum_{j in P_k and S} r_j ),          r_j = (1/N) sum_{i in V} w_ij

with ``P_k`` the k-means clusters of the vectors. The vectors (``similarity``) are tf-idf (scikit-learn,
fitted on the document's own sentences, English stop words removed) or ``minilm`` sentence embeddings
(:mod:`.embeddings`). ``alpha = a / N`` (capped at 1), ``0.2 N`` clusters. The paper uses ``a = 5``,
``lambda = 6``; the defaults ``a = 13``, ``lambda = 0`` (coverage only, no k-means) and tf-idf were
chosen by ROUGE of the greedy summary on ACLSum train and val (``scripts/summarization_tuning.py``,
``eval/summarization-aclsum/summarization-tuning-*.md``).

The energy (log-probability) of a selection ``S`` (one-hot ``(B, N, 2)``, category 1 = selected) is

    U(S) = (F(S) - P(S)) / (temperature * F1),   F1 = max_k F({k}) (the best single sentence),
    P(S) = penalty * F1 * ( [c(S) > budget] + max(0, c(S) - budget) / mean_j c_j ),

``c`` the cost of a sentence (its words, or 1 for a sentence budget). Dividing by ``F1`` makes the
temperature scale-free. The budget penalty: since ``F`` is monotone submodular, adding any one
sentence gains at most ``F1``, so with ``penalty >= 1`` a selection that breaks the budget is always
less probable than the feasible selection it came from. The default ``0.3`` is softer on purpose:
chains may step over the budget by a sentence and back, which is how they swap sentences at a full
budget (from there every single addition is otherwise rejected); the linear part pushes further-off
states back. The penalty is finite so that every sampler (UNA included) sees finite energies; decoding only
returns feasible selections (see :mod:`infill.summarize.decoding`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from ..errors import InfillError, check, is_integer
from .sentences import word_count

_EPS = 1e-12
SIMILARITIES = ("tfidf", "minilm")


@dataclass(frozen=True)
class ObjectiveConfig:
    """Parameters of F and of the energy built on it (see the module docstring for the defaults)."""

    a: float = 13.0  # alpha = a / N
    alpha: Optional[float] = None  # overrides a / N when given
    lam: float = 0.0  # weight of the diversity reward
    cluster_fraction: float = 0.2  # number of k-means clusters = round(fraction * N), at least 1
    temperature: float = 0.1  # in units of F1 (the best single sentence's F)
    penalty: float = 0.3  # budget penalty, in units of F1 (see the module docstring)
    kmeans_seed: int = 0
    similarity: str = "tfidf"  # "tfidf" or "minilm" (sentence embeddings)

    def __post_init__(self):
        values = [self.a, self.lam, self.cluster_fraction, self.temperature, self.penalty, self.alpha or 1.0]
        if not all(math.isfinite(v) for v in values):
            raise InfillError("objective parameters must be finite numbers")
        if not self.a > 0 or (self.alpha is not None and not 0 < self.alpha <= 1):
            raise InfillError("alpha must be in (0, 1] (and a > 0)")
        if self.lam < 0:
            raise InfillError(f"lambda must be non-negative, got {self.lam}")
        if not 0 < self.cluster_fraction <= 1:
            raise InfillError(f"cluster fraction must be in (0, 1], got {self.cluster_fraction}")
        if not self.temperature > 0:
            raise InfillError(f"temperature must be positive, got {self.temperature}")
        if self.similarity not in SIMILARITIES:
            raise InfillError(f"similarity is one of {', '.join(SIMILARITIES)}, not {self.similarity!r}")
        if self.penalty < 0:
            raise InfillError(f"penalty must be non-negative, got {self.penalty}")


@dataclass(frozen=True)
class Budget:
    """A length budget: at most ``limit`` words (``unit="words"``) or sentences (``unit="sentences"``)."""

    limit: int
    unit: str = "sentences"

    def __post_init__(self):
        if self.unit not in ("words", "sentences"):
            raise InfillError(f"a budget counts words or sentences, not {self.unit!r}")
        check(is_integer(self.limit, 1), f"the budget must be at least 1 {self.unit[:-1]}, got {self.limit}")

    def costs(self, sentences: list[str]) -> Tensor:
        if self.unit == "sentences":
            return torch.ones(len(sentences))
        return torch.tensor([float(word_count(s)) for s in sentences])

    def describe(self) -> str:
        return f"{self.limit} {self.unit if self.limit != 1 else self.unit[:-1]}"


def similarity_matrix(sentences: list[str], similarity: str = "tfidf") -> tuple[np.ndarray, np.ndarray]:
    """l2-normalised sentence vectors (tf-idf ``(N, vocab)`` sparse, or minilm ``(N, 384)``) and their
    cosine similarities ``(N, N)`` clipped to [0, 1]."""
    if similarity == "minilm":
        from .embeddings import embed

        vectors = embed(sentences)
        return vectors, np.clip(vectors @ vectors.T, 0.0, 1.0)
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        vectors = TfidfVectorizer(stop_words="english").fit_transform(sentences)
    except ValueError:  # empty vocabulary: only stop words, numbers of one digit, punctuation
        try:
            vectors = TfidfVectorizer(token_pattern=r"(?u)\b\w+\b").fit_transform(sentences)
        except ValueError:
            raise InfillError("the document has no words to compare its sentences by") from None
    w = (vectors @ vectors.T).toarray()
    return vectors, np.clip(w, 0.0, 1.0)


def cluster_labels(vectors, n_clusters: int, seed: int) -> np.ndarray:
    """k-means cluster of each sentence vector."""
    n = vectors.shape[0]
    if n_clusters <= 1:
        return np.zeros(n, dtype=np.int64)
    from sklearn.cluster import KMeans

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer distinct points than clusters
        return KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit_predict(vectors).astype(np.int64)


class SummaryObjective:
    """F(S), the costs and the budget of one document; callable as an energy on ``(B, N, 2)``."""

    num_categories = 2

    def __init__(self, sentences: list[str], budget: Budget, config: ObjectiveConfig = ObjectiveConfig()):
        if not sentences:
            raise InfillError("the document has no sentences")
        self.sentences = list(sentences)
        self.budget = budget
        self.config = config
        n = len(sentences)
        vectors, w = similarity_matrix(self.sentences, config.similarity)
        self.w = torch.tensor(w, dtype=torch.float32)
        self.alpha = config.alpha if config.alpha is not None else min(1.0, config.a / n)
        self.coverage_cap = self.alpha * self.w.sum(1)  # alpha * C_i(V)
        self.reward = self.w.mean(0)  # r_j = (1/N) sum_i w_ij
        # without the diversity term the clusters do not matter: skip k-means (seconds on long documents)
        n_clusters = max(1, min(n, round(config.cluster_fraction * n))) if config.lam > 0 else 1
        self.labels = torch.from_numpy(cluster_labels(vectors, n_clusters, config.kmeans_seed))
        self.clusters = torch.nn.functional.one_hot(self.labels, int(self.labels.max()) + 1).T.float()  # (m, N)
        self.costs = budget.costs(self.sentences)
        self.mean_cost = float(self.costs.mean())
        singles = self.value(torch.eye(n))
        self.f1 = max(float(singles.max()), 1e-6)

    def __len__(self) -> int:
        return len(self.sentences)

    def value(self, s: Tensor) -> Tensor:
        """F(S) for selections ``s (B, N)`` (0/1 floats)."""
        s = s.to(self.w.dtype)
        coverage = torch.minimum(s @ self.w, self.coverage_cap).sum(-1)
        mass = (s * self.reward) @ self.clusters.T
        # sqrt(m + eps) - sqrt(eps): sqrt(m) within 1e-6, with a finite gradient at 0 (gradient samplers)
        diversity = (torch.sqrt(mass + _EPS) - _EPS**0.5).sum(-1)
        return coverage + self.config.lam * diversity

    def gains(self, s: Tensor) -> Tensor:
        """``F(S + {k}) - F(S)`` for every sentence ``k`` (0 for ``k`` in ``S``) of one selection ``s (N,)``,
        in ``O(N^2)``: the greedy step."""
        s = s.to(self.w.dtype)
        current = s @ self.w  # C_i(S)
        cap = self.coverage_cap
        before = torch.minimum(current, cap)[:, None]
        coverage = (torch.minimum(current[:, None] + self.w, cap[:, None]) - before).sum(0)
        mass = (self.clusters @ (s * self.reward))[self.labels]  # mass of k's cluster
        diversity = torch.sqrt(mass + self.reward + _EPS) - torch.sqrt(mass + _EPS)
        return (coverage + self.config.lam * diversity) * (1 - s)

    def cost(self, s: Tensor) -> Tensor:
        """Length ``c(S)`` of selections ``s (B, N)``."""
        return s.to(self.costs.dtype) @ self.costs

    def feasible(self, s: Tensor) -> Tensor:
        return self.cost(s) <= self.budget.limit + 1e-6

    def penalty(self, s: Tensor) -> Tensor:
        """``P(S)`` of the module docstring (0 on feasible selections)."""
        excess = (self.cost(s) - self.budget.limit).clamp_min(0.0)
        return self.config.penalty * self.f1 * ((excess > 1e-6).float() + excess / self.mean_cost)

    def penalised(self, s: Tensor) -> Tensor:
        """``F(S) - P(S)``: F on feasible selections."""
        return self.value(s) - self.penalty(s)

    def __call__(self, x: Tensor) -> Tensor:
        """The energy ``U`` of one-hot selections ``x (B, N, 2)``."""
        s = x[..., 1]
        return (self.penalised(s) / (self.config.temperature * self.f1)).to(x.dtype)
