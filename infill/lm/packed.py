"""The first pass of many templates at once: each template's all-masked sequence (every blank the mask token),
which every draw from the masked LM and every chain start reads first, run for a batch of templates in shared
passes that give each template the floats it gets alone; and sequences read at one position each (augment's PLL
copies, :func:`logits_at`), packed the same way.

A row of a matrix product reads only its own row of the input, and attention stays inside its sequence; yet a
product's last bits can depend on its shape. Measured on the CPU (``tests/test_packed.py``; on the dev MLM,
``docs/performance.md``): a row comes out the same whatever the other rows hold, where they sit, or how many there
are, once the product has at least :data:`MIN_ROWS` rows (smaller ones take another kernel); padding a sequence
to a longer length with an attention mask changes its floats. So the buckets are:

- encoder passes of sequences of exactly one length (no padding), at most ``rows`` sequences a pass, each pass
  at least :data:`MIN_ROWS` token rows (a short sequence alone is repeated);
- the prediction head over the blanks of every template of the call at once, in products of
  :data:`HEAD_ROWS` rows at most and :data:`MIN_ROWS` at least (padded with copies), so a template of one
  blank alone takes the same kernel as in a batch.
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from .models import encode

MIN_ROWS = 4
"""The fewest rows a packed product has: below, the CPU's matrix product takes a kernel whose last bits differ."""
HEAD_ROWS = 256
"""The most blanks the prediction head reads in one product (its logits ``(HEAD_ROWS, K)`` stay small)."""


@torch.inference_mode()
def all_masked_logits(
    model: nn.Module,
    head: Callable[[Tensor], Tensor],
    templates: Sequence[tuple[Tensor, Tensor]],
    mask_token_id: int,
    rows: int,
) -> list[Tensor]:
    """The float32 logits ``(d, K)`` at the blanks of each template ``(input_ids (L,), blank_positions (d,))``
    with every blank masked: the encoder over ``model.base_model`` in passes of one length and at most ``rows``
    sequences, then ``head`` (hidden ``(N, H)`` -> logits ``(N, K)``) over all the blanks (module docstring)."""
    hidden: list[Tensor] = [torch.empty(0)] * len(templates)
    for part in _passes([len(ids) for ids, _ in templates], rows):
        ids = torch.stack([templates[t][0].scatter(0, templates[t][1], mask_token_id) for t in part])
        states = encode(model, MIN_ROWS, input_ids=ids)
        for r, t in enumerate(part):
            hidden[t] = states[r, templates[t][1]]
    blanks = torch.cat(hidden)
    logits = torch.cat([_head(head, part) for part in blanks.split(HEAD_ROWS)]).float()
    return list(logits.split([len(positions) for _, positions in templates]))


@torch.inference_mode()
def logits_at(
    model: nn.Module, head: Callable[[Tensor], Tensor], ids: Sequence[Tensor], positions: Sequence[int], rows: int
) -> Iterator[tuple[list[int], Tensor]]:
    """The float32 logits at one position of each sequence, ``ids[s] (L_s,)`` read at ``positions[s]``, some at a
    time: the indices of the sequences and their logits ``(N, K)``, the encoder's passes bucketed as
    :func:`all_masked_logits`', the head run once :data:`HEAD_ROWS` positions are read (and at the end), so the
    logits held stay few."""
    done: list[int] = []
    hidden: list[Tensor] = []
    for part in _passes([len(sequence) for sequence in ids], rows):
        states = encode(model, MIN_ROWS, input_ids=torch.stack([ids[s] for s in part]))
        at = torch.tensor([positions[s] for s in part], device=states.device)
        hidden.append(states[torch.arange(len(part), device=states.device), at])
        done += part
        if len(done) >= HEAD_ROWS:
            yield done, _head(head, torch.cat(hidden)).float()
            done, hidden = [], []
    if done:
        yield done, _head(head, torch.cat(hidden)).float()


def _passes(lengths: Sequence[int], rows: int) -> Iterator[list[int]]:
    """The sequences of each pass: of one length, at most ``rows``, lengths in order of first appearance."""
    by_length: dict[int, list[int]] = {}
    for s, length in enumerate(lengths):
        by_length.setdefault(length, []).append(s)
    for members in by_length.values():
        for start in range(0, len(members), rows):
            yield members[start : start + rows]


def _head(head: Callable[[Tensor], Tensor], hidden: Tensor) -> Tensor:
    """``head`` over ``hidden (N, H)``, its product padded to :data:`MIN_ROWS` rows."""
    n = hidden.shape[0]
    if n >= MIN_ROWS:
        return head(hidden)
    return head(torch.cat([hidden, hidden[:1].expand(MIN_ROWS - n, -1)]))[:n]
