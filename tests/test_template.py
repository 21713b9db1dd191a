"""Template parsing and detokenization with the bert-base-uncased tokenizer."""
import pytest
import torch

from infill.errors import InfillError
from infill.template import detokenize, fill, parse


def test_blanks_and_spans(bert_tokenizer):
    t = parse("The [MASK] sat on the [MASK*3].", bert_tokenizer, 512)
    tokens = bert_tokenizer.convert_ids_to_tokens(t.input_ids.tolist())
    assert tokens == ["[CLS]", "the", "[MASK]", "sat", "on", "the", "[MASK]", "[MASK]", "[MASK]", ".", "[SEP]"]
    assert t.blank_positions.tolist() == [2, 6, 7, 8]
    assert t.spans == ((0, 1), (1, 3))
    assert t.num_blanks == 4 and t.length == 11
    assert t.content.tolist() == list(range(1, 10))


def test_spaced_count_and_adjacent_punctuation(bert_tokenizer):
    t = parse("[MASK * 2], he said.", bert_tokenizer, 512)
    assert t.spans == ((0, 2),)
    assert bert_tokenizer.convert_ids_to_tokens(t.input_ids[3:5].tolist()) == [",", "he"]


def test_punctuation_glued_to_a_blank_is_kept_where_wordpiece_splits_it(bert_tokenizer):
    t = parse('he said "[MASK]" ([MASK]).', bert_tokenizer, 512)
    tokens = bert_tokenizer.convert_ids_to_tokens(t.input_ids.tolist())
    assert tokens == ["[CLS]", "he", "said", '"', "[MASK]", '"', "(", "[MASK]", ")", ".", "[SEP]"]


def test_fill_decodes_uncased_with_punctuation_cleanup(bert_tokenizer):
    t = parse("Don't you think, [MASK]?", bert_tokenizer, 512)
    ids = t.input_ids.clone()
    ids[t.blank_positions] = bert_tokenizer.convert_tokens_to_ids(["sir"])[0]
    text, fills = fill(t, bert_tokenizer, ids)
    assert text == "don't you think, sir?"
    assert fills == ["sir"]


def test_multi_token_fill_and_unknown_characters(bert_tokenizer):
    t = parse("I like [MASK*2] 😀", bert_tokenizer, 512)
    ids = t.input_ids.clone()
    ids[t.blank_positions] = torch.tensor(bert_tokenizer.convert_tokens_to_ids(["ice", "cream"]))
    assert fill(t, bert_tokenizer, ids) == ("i like ice cream [UNK]", ["ice cream"])
    assert detokenize(bert_tokenizer, bert_tokenizer.convert_tokens_to_ids(["play", "##ing"])) == "playing"


@pytest.mark.parametrize("text, message", [
    ("no blank here", r"no \[MASK\] blank"),
    ("[MASK*3]", "only blanks"),
    ("  [MASK] [MASK*2] ", "only blanks"),
    ("The [MASK*0] sat", "at least one token"),
    ("The [MASK*x] sat", "malformed"),
    ("The [mask] sat [MASK]", "malformed"),
    ("The [MASK*100000000] sat", "more than the model.s maximum"),
    ("un[MASK] cat", "glued to 'n'"),
    ("the [MASK]ing cat", "glued to 'i'"),
    ("the [MASK][MASK] cat", "glued to the text next to it"),
])
def test_bad_templates(bert_tokenizer, text, message):
    with pytest.raises(InfillError, match=message):
        parse(text, bert_tokenizer, 512)


def test_too_long(bert_tokenizer):
    parse("a " * 8 + "[MASK]", bert_tokenizer, 11)  # [CLS] + 9 + [SEP]
    with pytest.raises(InfillError, match="11 tokens, longer than the model's maximum of 10"):
        parse("a " * 8 + "[MASK]", bert_tokenizer, 10)


def test_unknown_token_is_text_but_other_special_tokens_are_refused(bert_tokenizer):
    """[UNK] stands for text outside the vocabulary (WikiText's @@UNKNOWN@@): kept, and visible in the output."""
    t = parse("guitarist [UNK] [MASK] bassist .", bert_tokenizer, 64)
    assert bert_tokenizer.convert_ids_to_tokens(t.input_ids.tolist())[1:4] == ["guitarist", "[UNK]", "[MASK]"]
    with pytest.raises(InfillError, match="special token '\\[SEP\\]'"):
        parse("a [SEP] [MASK] .", bert_tokenizer, 64)
