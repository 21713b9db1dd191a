"""The masked LM as a :class:`~infill.spans.kernel.SpanEnergy`: an energy that compares fills of different
lengths, and the model's conditional at a mask as the proposal.

``U(fills) = score(filled sentence) + word_bonus * units``, where ``units`` counts the words of word blanks
and the tokens of token blanks, and the score sums, over the scored tokens, ``log p(token | sentence with
it masked)`` (:func:`infill.lm.scoring.token_scores`, all masked copies batched):

- ``scoring="pll"``: the pseudo-log-likelihood (Salazar et al. 2020), each token masked alone;
  ``"word-l2r"``: PLL-word-l2r (Kauf & Ivanova 2023), each token masked with the later pieces of its word,
  so that a word of several pieces is not inflated by its own visible pieces;
- ``window=None``: every token of the sentence is scored (``L`` copies per sentence); ``window=w``: the
  fill tokens and the ``w`` text tokens on each side of each blank only, a cheaper form (``n + 2 w`` copies
  per blank of ``n`` tokens). The same text tokens are scored whatever the fills' lengths, so an empty fill
  is still judged by its neighbours.

Every sequence that goes through the encoder (masked copies and proposal forwards) is charged to ``meter``
(:class:`~infill.energies.budget.Meter`) before it runs: a pass its limit cannot pay raises
:class:`~infill.energies.budget.BudgetSpent` and runs nothing. A fill already scored is not scored again.
``name`` says which energy it is, for diagnostics and report signatures.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import Tensor, nn

from ..energies.budget import Meter
from ..errors import InfillError
from ..lm.models import logits_at, prediction_head
from ..lm.scoring import token_scores
from .fills import MASK, Fills

SCORINGS = ("pll", "word-l2r")
DEFAULTS = {"scoring": "word-l2r", "window": 4, "word_bonus": 0.25}
"""Chosen by measurement (``eval/spans-calibration/``): the fill and 4 text tokens each side (half the
copies of the whole sentence, as good at picking lengths), PLL-word-l2r (as good as the PLL at re-ranking
draws, and better in the sampler itself), and a bonus of 0.25 per word, fitted on the best fill of each length
among the default sampler's visited states (temperature 0.5) on 50 calibration spans: 0.75, fitted on three
draws per length, made the sampler's top fill too long (mean error 1.20 words against 0.94)."""


class MaskedLMSpanEnergy:
    """``segments``: the template's token ids around its ``J`` blanks (``J + 1`` tensors, special tokens in
    the first and last); ``category_ids (K,)`` the token of each category; ``word_starts`` which of them are
    word starts (for ``word-l2r``; text tokens are told by ``text_starts``, one boolean tensor per segment);
    ``unit_starts (J, K)``: the categories that open a unit of each blank (:attr:`SpanSpace.starts`);
    ``special``: per segment, its special tokens (never scored); ``meter`` counts (and may cap) the encoder
    sequences, shared with the run's other energies."""

    def __init__(
        self,
        model: nn.Module,
        segments: Sequence[Tensor],
        category_ids: Tensor,
        word_starts: Tensor,
        text_starts: Sequence[Tensor],
        special: Sequence[Tensor],
        unit_starts: Tensor,
        mask_token_id: int,
        pad_token_id: int,
        scoring: str = DEFAULTS["scoring"],
        window: Optional[int] = DEFAULTS["window"],
        word_bonus: float = DEFAULTS["word_bonus"],
        max_copies: int = 512,
        meter: Optional[Meter] = None,
    ):
        if scoring not in SCORINGS:
            raise InfillError(f"span scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")
        if window is not None and window < 0:
            raise InfillError(f"the energy's window must be >= 0 tokens, got {window}")
        self.model = model.eval().requires_grad_(False)
        self.device = model.get_input_embeddings().weight.device
        self.segments = [s.to(self.device) for s in segments]
        self.category_ids = category_ids.to(self.device)
        self.word_starts = word_starts.to(self.device)
        self.text_starts = [s.to(self.device) | p.to(self.device) for s, p in zip(text_starts, special)]
        self.unit_starts = unit_starts.to(self.device)
        self.num_categories = len(category_ids)
        self.mask_token_id, self.pad_token_id = mask_token_id, pad_token_id
        self.scoring, self.window, self.word_bonus, self.max_copies = scoring, window, word_bonus, max_copies
        self.text_scored = [self._scored_text(j, ~p.to(self.device)) for j, p in enumerate(special)]
        self.meter = Meter() if meter is None else meter
        self._values: dict[str, float] = {}
        self._head = prediction_head(model)

    @property
    def encoder_sequences(self) -> int:
        return self.meter.spent

    @property
    def name(self) -> str:
        window = "" if self.window is None else f" window {self.window}"
        return self.scoring + window + (f" {self.word_bonus:+g}/word" if self.word_bonus else "")

    def _scored_text(self, j: int, content: Tensor) -> Tensor:
        """Which tokens of segment ``j`` are scored: all its text, or those within ``window`` text tokens of a
        blank."""
        if self.window is None or not len(content):
            return content
        rank = content.long().cumsum(0)  # 1-based rank of each text token in the segment
        near_left_blank = (rank <= self.window) if j > 0 else torch.zeros_like(content)
        near_right_blank = (rank > rank[-1] - self.window) if j < len(self.segments) - 1 else torch.zeros_like(content)
        return content & (near_left_blank | near_right_blank)

    def layout(self, fills: Fills) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``(input_ids, attention_mask, scored, word_starts)``, each ``(B, L)`` right-padded (the last three
        boolean), of the filled sentences (:data:`MASK` as the mask token), and the position ``(B, J)`` where
        each fill begins."""
        b, j, c = fills.tokens.shape
        text = sum(len(s) for s in self.segments)
        width = text + int(fills.lengths.sum(1).max())
        ids = torch.full((b, width + 1), self.pad_token_id, dtype=torch.long, device=self.device)  # + a dump column
        attention, scored, starts = (torch.zeros(b, width + 1, dtype=torch.bool, device=self.device) for _ in range(3))
        begins = torch.zeros(b, j, dtype=torch.long, device=self.device)
        cursor = torch.zeros(b, dtype=torch.long, device=self.device)
        tokens = fills.tokens.to(self.device)
        for k, segment in enumerate(self.segments):
            pos = cursor[:, None] + torch.arange(len(segment), device=self.device)
            for out, values in (
                (ids, segment),
                (scored, self.text_scored[k]),
                (starts, self.text_starts[k]),
                (attention, torch.ones_like(segment, dtype=torch.bool)),
            ):
                out.scatter_(1, pos, values.expand(b, -1))
            cursor = cursor + len(segment)
            if k == j:
                break
            begins[:, k] = cursor
            n = fills.lengths[:, k].to(self.device)
            inside = torch.arange(c, device=self.device) < n[:, None]
            pos = torch.where(inside, cursor[:, None] + torch.arange(c, device=self.device), width)
            category = tokens[:, k].clamp_min(0)
            values = torch.where(tokens[:, k] == MASK, self.mask_token_id, self.category_ids[category])
            for out, value in (
                (ids, values),
                (scored, inside),
                (starts, self.word_starts[category] | ~inside),
                (attention, inside),
            ):
                out.scatter_(1, pos, value)
            cursor = cursor + n
        return ids[:, :width], attention[:, :width], scored[:, :width], starts[:, :width], begins

    def units(self, fills: Fills) -> Tensor:
        """Words of word blanks plus tokens of token blanks, per chain ``(B,)``."""
        tokens = fills.tokens.to(self.device)
        blanks = torch.arange(tokens.shape[1], device=self.device)[None, :, None]
        return (self.unit_starts[blanks, tokens.clamp_min(0)] & (tokens >= 0)).sum((1, 2))

    def __call__(self, fills: Fills) -> Tensor:
        """Energies ``(B,)``; each distinct fill is scored once per energy object (a cache of its values)."""
        keys = [repr(chain) for chain in fills.to_lists()]
        new: dict[str, int] = {}  # a fill not scored yet -> its first chain
        for chain, key in enumerate(keys):
            if key not in self._values:
                new.setdefault(key, chain)
        if new:
            values = self._evaluate(fills.select(torch.tensor(list(new.values()), dtype=torch.long)))
            self._values.update(zip(new, values.tolist()))
        return torch.tensor([self._values[k] for k in keys], dtype=torch.float64, device=fills.tokens.device)

    def _evaluate(self, fills: Fills) -> Tensor:
        ids, attention, scored, starts, _ = self.layout(fills)
        scores, _ = token_scores(
            self.model,
            ids,
            attention.long(),
            scored,
            word_l2r=self.scoring == "word-l2r",
            word_starts=starts,
            max_copies=self.max_copies,
            mask_token_id=self.mask_token_id,
            charge=self.meter.spend,
        )
        return scores.double().sum(1) + self.word_bonus * self.units(fills)

    @torch.no_grad()
    def proposal_logits(self, fills: Fills, blank: Tensor, slot: Tensor) -> Tensor:
        """The model's logits ``(B, K)`` over the categories at the mask at ``slot`` of blank ``blank``, one
        forward pass over the ``B`` sequences (other masks in the fills stay masked)."""
        ids, attention, _, _, begins = self.layout(fills)
        rows = torch.arange(len(ids), device=self.device)
        at = begins[rows, blank.to(self.device)] + slot.to(self.device)
        self.meter.spend(len(ids))
        logits = logits_at(self.model, self._head, (rows, at), input_ids=ids, attention_mask=attention.long())
        return logits[:, self.category_ids].float().to(fills.tokens.device)
