"""What :meth:`infill.Infiller.sample` returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Hashable, Iterable, Optional, TypeVar

from ..samplers import Trace

T = TypeVar("T")


def top_distinct(
    items: Iterable[T], k: Optional[int], key: Callable[[T], Hashable], energy: Callable[[T], float]
) -> list[T]:
    """The ``k`` items of highest ``energy`` with distinct ``key`` (all distinct ones if ``k`` is None),
    best first; ties go to the smaller key, so the choice never depends on the order of ``items``."""
    best: dict = {}
    for item in items:
        if key(item) not in best or energy(item) > energy(best[key(item)]):
            best[key(item)] = item
    return sorted(best.values(), key=lambda item: (-energy(item), key(item)))[:k]


@dataclass(frozen=True)
class Sample:
    """One filling (a chain's final state, or a state it visited): the filled ``text``, the decoded ``fills``
    (one per blank), the content ``tokens`` (WordPiece strings, no ``[CLS]``/``[SEP]``), ``token_ids`` of the whole
    sequence, its ``energy`` (pseudo-log-likelihood; higher is more likely) and the ``chain`` that reached it
    (the draw's index for a baseline method); under constraints, ``terms`` holds the value of each term
    of the sampled energy (``pll``, or ``span`` for word blanks: the span energy; ``include``: minus the
    missing words, ``closeness``: minus the changed blanks, the user's terms), unweighted."""

    text: str
    fills: list[str]
    tokens: list[str]
    token_ids: list[int]
    energy: float
    chain: int
    terms: Optional[dict] = None

    def to_dict(self) -> dict:
        """The JSON record: every field but ``token_ids``; ``terms`` where it is not None."""
        record = {name: getattr(self, name) for name in ("text", "fills", "energy", "chain", "tokens")}
        return record if self.terms is None else {**record, "terms": self.terms}


@dataclass(frozen=True)
class Diagnostics:
    """How the run went. ``acceptance_rate`` and ``mean_hops`` (blank tokens changed per step) are over
    this template's chains (None for a baseline method, which has no steps); ``tuned`` is what the
    sampler adapted during its ``burn_in`` steps (``Tuning.to_dict()``: the tuned ``value``, e.g. the step size);
    ``evaluations`` counts
    energy evaluations per chain and ``forwards`` the masked-LM forward passes over the chains spent on
    starts or baseline draws; ``encoder_sequences`` is the run's compute in sequences through the encoder
    (every masked copy of a forward pass, each backward pass counted again; starts, chains and re-scoring
    included), ``cache_hits`` the masked copies the run asked
    for that did not go through it (read from the cache of conditionals, or the same sequence of a pass), ``budget``
    the encoder sequences the run was given (None: its steps or draws as configured); ``candidates`` is the
    number of distinct fillings ``top`` chose from;
    ``seconds`` is the wall time of the run; ``energy`` names the energy of the samples (``pll``: over the blank tokens;
    word blanks: the span energy of :mod:`infill.spans`, e.g. ``word-l2r``, whole sentence)."""

    sampler: str
    hyperparameters: dict
    model: str
    steps: int
    num_samples: int
    seed: int
    init: str
    temperature: float
    decode: str
    acceptance_rate: Optional[float]
    mean_hops: Optional[float]
    tuned: Optional[dict]
    burn_in: int
    evaluations: int
    forwards: int
    encoder_sequences: int
    candidates: int
    seconds: float
    energy: str = "pll"
    cache_hits: int = 0
    budget: Optional[int] = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class InfillResult:
    """The ``samples`` of one template (all chains, or the ``top`` distinct ones by energy), the run's
    ``diagnostics``, the raw sampler ``trace`` of this template's chains (category indices; its
    ``energies`` filled with the PLL / T where the run re-scored visited states) and the ``marginals``:
    for each written blank, its most frequent fills over the states visited after burn-in (the draws of
    a baseline), as ``{"fill", "frequency"}``, most frequent first."""

    template: str
    samples: list[Sample]
    diagnostics: Diagnostics
    trace: Optional[Trace] = field(default=None, repr=False, compare=False)
    marginals: list[list[dict]] = field(default_factory=list, compare=False)

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.samples]

    def to_dict(self) -> dict:
        """JSON-ready: ``template``, ``samples``, ``diagnostics`` and ``marginals``."""
        return {
            "template": self.template,
            "samples": [s.to_dict() for s in self.samples],
            "diagnostics": self.diagnostics.to_dict(),
            "marginals": self.marginals,
        }
