"""Words that must appear in span fills, whole words of any pieces (include words on word blanks).

:class:`SpanInclude` adds to a span energy ``weight x include``, where ``include`` is minus the number of
listed words that no fill holds as a whole word: a word-start piece and its continuation pieces, matching
one of the word's forms (its piece sequences, e.g. ``so ##uven ##ir`` and ``So ##uven ##ir``). The kernel
is unchanged, so it targets the sum exactly; :func:`plant` makes the chains start from fills that hold
every word, which the masked LM's conditional alone would rarely propose.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import Tensor

from .fills import EMPTY, MASK, Fills, SpanSpace

Form = tuple[int, ...]  # the category indices of one spelling of a word, its pieces in order


class SpanInclude:
    """``energy`` plus ``weight`` times the include term of ``words`` (per word, its forms); ``unit_starts
    (J, K)``: the categories that open a unit (a word) in each blank."""

    def __init__(self, energy, words: Sequence[set[Form]], unit_starts: Tensor, weight: float):
        self.energy, self.words, self.weight = energy, [set(w) for w in words], weight
        self.unit_starts = unit_starts.tolist()
        self.num_categories = energy.num_categories

    @property
    def name(self) -> str:
        return f"{self.energy.name} {self.weight:+g} x include"

    def include(self, fills: Fills) -> Tensor:
        """The include term ``(B,)``: minus the number of words no fill holds."""
        values = []
        for chain in fills.to_lists():
            held = set()
            for blank, row in enumerate(chain):
                starts = [i for i, c in enumerate(row) if self.unit_starts[blank][c]] + [len(row)]
                held.update(tuple(row[a:b]) for a, b in zip(starts, starts[1:]))
            values.append(-sum(not (forms & held) for forms in self.words))
        return torch.tensor(values, dtype=torch.float64, device=fills.tokens.device)

    def __call__(self, fills: Fills) -> Tensor:
        return self.energy(fills).double() + self.weight * self.include(fills)

    def proposal_logits(self, fills: Fills, blank: Tensor, slot: Tensor) -> Tensor:
        return self.energy.proposal_logits(fills, blank, slot)


def plant(
    lengths: Tensor, space: SpanSpace, words: Sequence[Sequence[Form]], generator: Optional[torch.Generator]
) -> Fills:
    """Chain starts ``(B, J)`` of ``lengths`` words (raised, within the blanks' bounds, where a chain has
    fewer word slots than ``words``), each of the ``words`` put at a distinct word slot drawn uniformly in
    a form drawn uniformly, the other slots :data:`~.fills.MASK` (one piece each) for the masked LM to
    draw."""
    rows = []
    for b, chain_lengths in enumerate(lengths.tolist()):
        chain_lengths = list(chain_lengths)
        for j in range(len(chain_lengths)):  # room for every word, the first blanks first
            extra = min(len(words) - sum(chain_lengths), int(space.high[b, j]) - chain_lengths[j])
            chain_lengths[j] += max(0, extra)
        slots = [(j, k) for j, n in enumerate(chain_lengths) for k in range(n)]
        chosen = torch.randperm(len(slots), generator=generator)[: len(words)].tolist()
        forms = [forms[int(torch.randint(len(forms), (1,), generator=generator))] for forms in words]
        fill = [[[MASK] for _ in range(n)] for n in chain_lengths]
        for slot, form in zip(chosen, forms):
            j, k = slots[slot]
            fill[j][k] = list(form)
        rows.append([[c for word in blank for c in word] for blank in fill])
    tokens = torch.full((len(rows), lengths.shape[1], space.width), EMPTY, dtype=torch.long)
    for b, chain in enumerate(rows):
        for j, row in enumerate(chain):
            tokens[b, j, : len(row)] = torch.tensor(row, dtype=torch.long)
    return Fills(tokens.to(lengths.device), torch.tensor([[len(r) for r in c] for c in rows]).to(lengths.device))
