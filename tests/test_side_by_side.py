"""Runs side by side (infill/lm/side_by_side.py): results in the items' order, a run's exception raised at its turn
without stopping the others, one run running at a time, and the passes of runs waiting together pooled, each run
getting the bits it gets alone."""

import time

import pytest
import torch
from conftest import tiny_bert

from infill import Infiller
from infill.energies.masked_lm import MaskedLMEnergy
from infill.lm.side_by_side import side_by_side
from infill.text.vocabulary import sampleable_token_ids

TEMPLATES = ["the [MASK] sat on the [MASK] .", "a [MASK] ran to my [MASK] !", "I [MASK] it.", "we [MASK] [MASK] ."]


def test_results_come_in_order_and_an_exception_at_its_turn():
    def run(i: int) -> int:
        if i == 3:
            raise ValueError("three")
        return i * i

    out = side_by_side([(i,) for i in range(7)], run, key=lambda item: item[0] % 2, size=2, rows=8)
    assert [next(out) for _ in range(3)] == [(0, 0), (1, 1), (2, 4)]
    with pytest.raises(ValueError, match="three"):
        next(out)


@pytest.fixture(scope="module")
def energies(bert_tokenizer):
    model = tiny_bert()
    infiller = Infiller(model, tokenizer=bert_tokenizer)
    categories = sampleable_token_ids(bert_tokenizer, False, (), False)

    def build():
        return [
            MaskedLMEnergy(model, t.input_ids, t.blank_positions, categories, bert_tokenizer.mask_token_id)
            for t in map(infiller.parse, TEMPLATES)
        ]

    return model, build


def _passes(energy: MaskedLMEnergy) -> list[torch.Tensor]:
    """Two passes of the energy: every blank masked, then blank 0 alone masked."""
    x = torch.arange(6, dtype=torch.long).view(3, 2).remainder(energy.num_blanks + 1)[:, : energy.num_blanks]
    every = torch.ones_like(x, dtype=torch.bool)
    first = torch.zeros_like(every)
    first[:, 0] = True
    return [energy.blank_logits(x, every), energy.blank_logits(x, first)]


def test_runs_waiting_together_share_passes_and_get_their_own_bits(energies, monkeypatch):
    model, build = energies
    alone = [_passes(energy) for energy in build()]
    calls, forward = [], model.base_model.forward
    monkeypatch.setattr(
        model.base_model, "forward", lambda *a, **k: calls.append(k["input_ids"].shape) or forward(*a, **k)
    )
    items = [(i, energy) for i, energy in enumerate(build())]
    together = dict(side_by_side(items, lambda i, energy: _passes(energy), key=lambda item: 0, size=4, rows=64))
    for i, logits in enumerate(alone):
        assert all(torch.equal(a, b) for a, b in zip(logits, together[i]))
    lengths = {len(energy.input_ids[0]) for _, energy in items}
    assert len(calls) == 2 * len(lengths) < 2 * len(items)  # each round: one pass a length


def test_one_run_runs_at_a_time(energies):
    _, build = energies
    running, most = [0], [0]

    def run(i: int, energy: MaskedLMEnergy) -> None:
        for j in range(energy.num_blanks):
            running[0] += 1
            most[0] = max(most[0], running[0])
            time.sleep(0.01)  # room for another thread to break in
            running[0] -= 1
            masked = torch.zeros(2, energy.num_blanks, dtype=torch.bool)
            masked[:, j] = True
            energy.blank_logits(torch.zeros(2, energy.num_blanks, dtype=torch.long), masked)

    list(side_by_side([(i, e) for i, e in enumerate(build())], run, key=lambda item: 0, size=4, rows=64))
    assert most[0] == 1
