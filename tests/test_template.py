"""Template parsing, syntax, segments and splicing, with the bert-base-uncased tokenizer."""

import pytest
import torch
from families import tokenizer

from infill.errors import InfillError
from infill.text.template import detokenize, fill, fill_pieces, parse
from infill.text.vocabulary import casefolded_words, token_words, word_forms, word_key


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


def test_fill_is_the_template_text_with_the_fills_spliced_in(bert_tokenizer):
    t = parse("Don't you think, [MASK]?", bert_tokenizer, 512)
    ids = t.input_ids.clone()
    ids[t.blank_positions] = bert_tokenizer.convert_tokens_to_ids(["sir"])[0]
    assert fill(t, bert_tokenizer, ids) == ("Don't you think, sir?", ["sir"])
    assert t.fixed and t.splice(["madam"]) == "Don't you think, madam?"


def test_multi_token_fill_and_unknown_characters(bert_tokenizer):
    t = parse("I like [MASK*2] 😀", bert_tokenizer, 512)
    ids = t.input_ids.clone()
    ids[t.blank_positions] = torch.tensor(bert_tokenizer.convert_tokens_to_ids(["ice", "cream"]))
    assert bert_tokenizer.convert_ids_to_tokens(t.input_ids[-2:].tolist()) == ["[UNK]", "[SEP]"]
    assert fill(t, bert_tokenizer, ids) == ("I like ice cream 😀", ["ice cream"])
    assert detokenize(bert_tokenizer, bert_tokenizer.convert_tokens_to_ids(["play", "##ing"])) == "playing"
    assert fill_pieces(t, bert_tokenizer, [bert_tokenizer.convert_tokens_to_ids(["##ing"])])[1] == ["ing"]


@pytest.mark.parametrize(
    "text, fills, expected",
    [
        ("They paid $[MASK] for 40,000 tickets in the café.", ["12"], "They paid $12 for 40,000 tickets in the café."),
        ("It was night; the [MASK] slept.", ["dog"], "It was night; the dog slept."),
        (
            "[MASK] sat. The [MASK] ran! [MASK]? (no)  [MASK]",
            ["cats", "dog", "why", "yes"],
            "Cats sat. The dog ran! Why? (no)  yes",
        ),
        ('"[MASK] me," Tom said. "[MASK]!"', ["help", "now"], '"Help me," Tom said. "Now!"'),
        ('He said: "[MASK] me."', ["help"], 'He said: "help me."'),  # a sentence starts after . ! ? only
        ("[MASK] sat. the [MASK] ran! [MASK]", ["cats", "dog", "why"], "cats sat. the dog ran! why"),  # all lower case
        ("I saw [MASK*0-2] cats.", [""], "I saw cats."),
        ("I saw the [MASK*0-2].", [""], "I saw the."),
        ("I saw the [MASK*0-2], then left", [""], "I saw the, then left"),
        (
            "[MASK*0-1] The cats sat",
            [
                "",
            ],
            "The cats sat",
        ),
        ("[MASK*0-1] [MASK] sat. Yes", ["", "cats"], "Cats sat. Yes"),
        ("the cats ([MASK*0-1]) sat [MASK*0-1]", ["", ""], "the cats () sat"),
        ('the "[MASK*0-2]" sat', [""], 'the "" sat'),
        ("the ( [MASK*0-1] ) sat", [""], "the ( ) sat"),
    ],
)
def test_splice(bert_tokenizer, text, fills, expected):
    t = parse(text, bert_tokenizer, 64)
    assert t.splice(fills) == expected


def test_fills_keep_their_case_with_a_cased_tokenizer(bert_tokenizer):
    cased = tokenizer("bpe")
    assert parse("[MASK] sat. The [MASK] ran.", cased, 64).splice(["cats", "Dog"]) == "cats sat. The Dog ran."
    assert parse("[MASK] sat. The [MASK] ran.", bert_tokenizer, 64).splice(["cats", "Dog"]) == "Cats sat. The Dog ran."


def test_blanks_and_syntax(bert_tokenizer):
    text = "The [MASK] and [MASK*2] of [MASK*1-3] then [MASK * 0 - 2] or [MASK*?]."
    t = parse(text, bert_tokenizer, 64)
    assert [text[b.start : b.end] for b in t.blanks] == [
        "[MASK]",
        "[MASK*2]",
        "[MASK*1-3]",
        "[MASK * 0 - 2]",
        "[MASK*?]",
    ]
    assert [(b.unit, b.min, b.max) for b in t.blanks] == [
        ("token", 1, 1),
        ("token", 2, 2),
        ("word", 1, 3),
        ("word", 0, 2),
        ("word", 1, 4),
    ]
    assert not t.fixed and t.spans == ((0, 1), (1, 2), (3, 1), (4, 0), (4, 1))
    words = parse(text, bert_tokenizer, 64, blank_unit="word")
    assert [(b.unit, b.min, b.max) for b in words.blanks][:2] == [("word", 1, 1), ("word", 2, 2)]
    assert [s.tolist() for s in words.segments] == [s.tolist() for s in t.segments]
    assert parse("The [MASK*2] sat", bert_tokenizer, 64, blank_unit="word").length == 6


def test_segments_and_lengths_of_a_fixed_template(bert_tokenizer):
    t = parse("The [MASK] sat on the [MASK*3].", bert_tokenizer, 64)
    assert [b.min for b in t.blanks] == [1, 3] and len(t.segments) == 3
    filled = t.sequence([[5], torch.tensor([6, 7, 8])])
    assert (
        filled.tolist()
        == torch.cat([t.segments[0], torch.tensor([5]), t.segments[1], torch.tensor([6, 7, 8]), t.segments[2]]).tolist()
    )
    ids = t.input_ids.clone()
    ids[t.blank_positions] = torch.tensor([5, 6, 7, 8])
    assert filled.tolist() == ids.tolist()
    longer = t.with_lengths([2, 0])
    assert bert_tokenizer.convert_ids_to_tokens(longer.input_ids.tolist()) == [
        "[CLS]",
        "the",
        "[MASK]",
        "[MASK]",
        "sat",
        "on",
        "the",
        ".",
        "[SEP]",
    ]
    assert longer.spans == ((0, 2), (2, 0)) and longer.blank_positions.tolist() == [2, 3]
    assert longer.content.tolist() == list(range(1, 8))


def test_parse_needs_the_tokenizer_only(bert_tokenizer):
    """The CLI parses before the model loads: no pass over the vocabulary (token_words) either."""
    before = token_words.cache_info()
    parse("The [MASK] sat on the [MASK*?].", bert_tokenizer, 64, blank_unit="word")
    assert token_words.cache_info()[:2] == before[:2]


def test_error_messages_quote_at_most_about_80_characters(bert_tokenizer):
    long = "word " * 400
    for text in (long + "[MASK*3-1] " + long, long, long + "[MASK] [CLS]", long + "un[MASK]", long + "[MASK*x]"):
        with pytest.raises(InfillError) as error:
            parse(text, bert_tokenizer, 4096)
        assert len(str(error.value)) < 200 and "..." in str(error.value)
    with pytest.raises(InfillError, match=r"\[MASK\*3-1\]"):
        parse(long + "[MASK*3-1] " + long, bert_tokenizer, 4096)


@pytest.mark.parametrize(
    "text, message",
    [
        ("no blank here", r"no \[MASK\] blank"),
        ("[MASK*3]", "only blanks"),
        ("  [MASK] [MASK*2] ", "only blanks"),
        ("The [MASK*0] sat", "at least one token"),
        ("The [MASK*x] sat", "malformed"),
        ("The [mask] sat [MASK]", "malformed blank '\\[mask\\]'"),
        ("The [MASK*3-1] sat", "needs M <= N"),
        ("The [MASK*0-0] sat", "at least one word"),
        ("The [MASK*2-17] sat", "at most 16 words"),
        ("The [MASK*-2] sat", r"malformed blank '\[MASK\*-2\]'"),
        ("The [MASK*?3] sat", r"malformed blank '\[MASK\*\?3\]'"),
        ("The [MASK*100000000] sat", "more than the model.s maximum"),
        ("un[MASK] cat", "glued to 'n'"),
        ("the [MASK]ing cat", "glued to 'i'"),
        ("the [MASK][MASK] cat", "glued to the text next to it"),
    ],
)
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


def test_a_words_forms_are_looked_up_as_searched(bert_tokenizer):
    texts = token_words(bert_tokenizer)[0]
    for word in ("The", "cat", "SAT", "mat", "zzzqx", "running"):
        looked_up = casefolded_words(bert_tokenizer).get(word_key(bert_tokenizer, word), frozenset())
        assert looked_up == word_forms(bert_tokenizer, word, texts)
