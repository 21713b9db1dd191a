"""Repeated content words: which fillings repeat one, and the diverse pick keeping them out while others are left."""

from __future__ import annotations

import pytest
import torch

from infill import Infiller
from infill.pipeline.choose import spread
from infill.text.repeats import repeats
from infill.text.template import parse


def _repeats(tokenizer, text: str, words: list[str]):
    categories = torch.tensor(tokenizer.convert_tokens_to_ids(words))
    return repeats(tokenizer, categories, parse(text, tokenizer, 64))


def test_a_content_word_at_two_blanks_or_copied_from_the_template_repeats(bert_tokenizer):
    found = _repeats(
        bert_tokenizer,
        "the [MASK] of the [MASK] was [MASK] by the river .",
        ["war", "state", "his", "river", "Senate".lower(), "fought"],
    )
    war, state, his, river, senate, fought = range(6)
    rows = torch.tensor(
        [
            [war, state, fought],  # three content words, none twice
            [war, war, fought],  # a content word at two blanks
            [his, his, fought],  # a stop word twice: no repetition (nor a doubled word)
            [war, state, river],  # a copy of the template's "river"
            [senate, state, his],
        ]
    )
    assert found.of(rows).tolist() == [False, True, False, True, False]


def test_a_word_of_the_template_split_into_pieces_is_not_a_copy_of_its_first_piece(bert_tokenizer):
    pieces = bert_tokenizer.tokenize("the mountaineering club")
    assert len(pieces) > 3  # "mountaineering" is several pieces
    first = pieces[1]
    found = _repeats(bert_tokenizer, "the mountaineering club [MASK] the [MASK] .", [first, "club", "met"])
    assert found.of(torch.tensor([[0, 2], [1, 2]])).tolist() == [False, True]


def test_spread_keeps_fillings_that_repeat_only_where_too_few_others_are_left():
    rows = torch.tensor([[0, 0], [1, 2], [3, 4], [5, 6]])
    values = torch.tensor([-1.0, -1.5, -2.0, -9.0])
    fresh = torch.tensor([False, True, True, True])
    assert spread(rows, values, 2, 1.0, fresh).tolist() == [1, 2]  # the best repeats: left out
    assert spread(rows, values, 4, 1.0, fresh).tolist() == [1, 2, 3, 0]  # kept last, once the others are
    assert spread(rows, values, 2, 1.0, torch.zeros(4, dtype=torch.bool)).tolist() == [0, 1]  # none fresh: best
    assert spread(rows, values, 2, 1.0, torch.ones(4, dtype=torch.bool)).tolist() == spread(rows, values, 2).tolist()


@pytest.mark.slow
def test_the_default_keeps_no_filling_that_repeats_where_others_are_found(dev_model_path):
    infiller = Infiller(str(dev_model_path))
    template = "the [MASK] of the [MASK] was [MASK] by the [MASK] in [MASK] [MASK] ."
    result = infiller.sample(template, top=5, seed=0)
    parsed = infiller.parse(template)
    categories = infiller.category_ids()
    found = repeats(infiller.tokenizer, categories, parsed)
    index, blanks = {int(c): i for i, c in enumerate(categories)}, parsed.blank_positions.tolist()

    def rows(result):
        return torch.tensor([[index[s.token_ids[p]] for p in blanks] for s in result.samples])

    assert len(result.samples) == 5 and not found.of(rows(result)).any()
    plain = infiller.sample(template, top=5, seed=0, decode="visited")  # no diverse pick: repeats come back
    assert found.of(rows(plain)).any()
