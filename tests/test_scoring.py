"""Sentence scoring (PLL and PLL-word-l2r) against a slow one-copy-at-a-time reference."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_bert

from infill.errors import InfillError
from infill.lm import scoring
from infill.lm.scoring import rank, score, splice, token_scores

MASK = 103


@torch.no_grad()
def reference(model, ids, scored, starts=None):
    """log p(token t | t and, with ``starts``, the rest of its word masked), one unpadded copy per pass."""
    out = torch.zeros(ids.shape)
    for t in scored.nonzero().flatten().tolist():
        copy = ids.clone()
        end = t + 1
        while starts is not None and end < len(ids) and not starts[end]:
            end += 1
        copy[t:end] = MASK
        logits = model(input_ids=copy[None]).logits[0, t]
        out[t] = torch.log_softmax(logits, -1)[ids[t]]
    return out


@pytest.fixture(scope="module")
def model():
    return tiny_bert(seed=1, init=0.2)


def _batch(lengths, seed=0):
    g = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    attention = torch.zeros(len(lengths), width, dtype=torch.long)
    starts = torch.rand(len(lengths), width, generator=g) < 0.5
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(1000, 5000, (n,), generator=g)
        ids[b, 0], ids[b, n - 1] = 101, 102
        attention[b, :n] = 1
        starts[b, 0] = starts[b, n - 1] = True
    scored = attention.bool().clone()
    scored[:, 0] = False
    scored[torch.arange(len(lengths)), torch.tensor(lengths) - 1] = False
    return ids, attention, scored, starts


@pytest.mark.parametrize("word_l2r", [False, True])
@pytest.mark.parametrize("max_copies", [3, 512])
def test_batched_scores_equal_the_one_copy_reference(model, word_l2r, max_copies):
    lengths = [7, 4, 10]
    ids, attention, scored, starts = _batch(lengths)
    got, copies = token_scores(
        model, ids, attention, scored, word_l2r=word_l2r, word_starts=starts, max_copies=max_copies, mask_token_id=MASK
    )
    assert copies == int(scored.sum())
    for b, n in enumerate(lengths):
        want = reference(model, ids[b, :n], scored[b, :n], starts[b, :n] if word_l2r else None)
        torch.testing.assert_close(got[b, :n], want, atol=1e-5, rtol=1e-5)
        assert not got[b, n:].any()  # nothing at padding


def test_word_l2r_masks_the_rest_of_the_word_only(model):
    ids, attention, scored, starts = _batch([9])
    starts[0] = torch.tensor([1, 1, 0, 0, 1, 0, 1, 1, 1], dtype=torch.bool)  # words [1 2 3] [4 5]
    pll, _ = token_scores(model, ids, attention, scored, mask_token_id=MASK)
    l2r, _ = token_scores(model, ids, attention, scored, word_l2r=True, word_starts=starts, mask_token_id=MASK)
    same = [3, 5, 6, 7]  # last pieces and one-piece words see the same context
    torch.testing.assert_close(pll[0, same], l2r[0, same])
    assert (pll[0, [1, 2, 4]] - l2r[0, [1, 2, 4]]).abs().min() > 1e-4


def test_padding_does_not_change_scores(model):
    ids, attention, scored, _ = _batch([6, 12])
    alone, _ = token_scores(model, ids[:1, :6], attention[:1, :6], scored[:1, :6], mask_token_id=MASK)
    padded, _ = token_scores(model, ids, attention, scored, mask_token_id=MASK)
    torch.testing.assert_close(padded[:1, :6], alone, atol=1e-5, rtol=1e-5)


def test_full_logits_fallback_equals_the_head(model, monkeypatch):
    ids, attention, scored, _ = _batch([5, 8])
    fast, _ = token_scores(model, ids, attention, scored, mask_token_id=MASK)
    monkeypatch.setattr(scoring, "prediction_head", lambda m: None)
    slow, _ = token_scores(model, ids, attention, scored, mask_token_id=MASK)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)


def test_mask_id_is_required_for_bert_configs(model):
    ids, attention, scored, _ = _batch([5])
    with pytest.raises(InfillError, match="mask_token_id"):
        token_scores(model, ids, attention, scored)


def test_score_sums_reference_token_scores(model, bert_tokenizer):
    texts = ["the cat sat on the mat.", "an unbelievably xylophonic tune"]
    for mode in ("pll", "word-l2r"):
        got = score(model, bert_tokenizer, texts, mode=mode, max_copies=5)
        for text, result in zip(texts, got):
            enc = bert_tokenizer(text)
            ids = torch.tensor(enc["input_ids"])
            scored = torch.ones(len(ids), dtype=torch.bool)
            scored[[0, -1]] = False
            words = enc.word_ids()
            starts = torch.tensor([w is None or i == 0 or w != words[i - 1] for i, w in enumerate(words)])
            want = reference(model, ids, scored, starts if mode == "word-l2r" else None)
            assert [t for t, _ in result.tokens] == bert_tokenizer.convert_ids_to_tokens(ids[1:-1].tolist())
            assert result.total == pytest.approx(float(want.sum()), abs=1e-4)
            assert [v for _, v in result.tokens] == pytest.approx(want[1:-1].tolist(), abs=1e-5)


def test_rank_orders_spliced_sentences_by_their_score(model, bert_tokenizer):
    options = ["cat", "dog", "ice cream", "xylophonist"]
    ranked = rank(model, bert_tokenizer, "the [MASK] sat .", options)
    assert sorted(r.option for r in ranked) == sorted(options)
    assert {r.text for r in ranked} >= {"the ice cream sat .", "the cat sat ."}
    alone = {o: score(model, bert_tokenizer, [f"the {o} sat ."])[0].total for o in options}
    assert [r.option for r in ranked] == sorted(options, key=lambda o: -alone[o])
    assert [r.score.total for r in ranked] == pytest.approx([alone[r.option] for r in ranked], abs=1e-4)


def test_a_copy_shared_by_sentences_goes_through_once(model, bert_tokenizer):
    """A repeated sentence, and the options of one blank (the copy that masks the option is the same for
    every one-token option), cost no extra copies; their scores are those of each sentence alone."""
    texts = ["the cat sat .", "the dog sat .", "the cat sat ."]
    batch = bert_tokenizer(texts, padding=True, return_special_tokens_mask=True, return_tensors="pt")
    scored = batch["special_tokens_mask"] == 0
    logp, copies = token_scores(
        model, batch["input_ids"], batch["attention_mask"], scored, mask_token_id=bert_tokenizer.mask_token_id
    )
    assert copies == 4 + 3  # "the cat sat ." (4 copies), "the dog sat ." shares the copy that masks its noun
    for text, row in zip(texts, logp):
        alone = score(model, bert_tokenizer, [text])[0]
        assert row[1:5].tolist() == pytest.approx([v for _, v in alone.tokens], abs=1e-5)


@pytest.mark.parametrize(
    "template, options, message",
    [
        ("the cat sat .", ["a"], "exactly one"),
        ("the [MASK] sat on [MASK] .", ["a"], "exactly one"),
        ("the [MASK sat .", ["a"], "exactly one"),
        ("the [MASK] sat .", [], "at least one"),
        ("the [MASK] sat .", ["a", " "], "non-empty"),
    ],
)
def test_rank_bad_input(template, options, message):
    with pytest.raises(InfillError, match=message):
        splice(template, options)


def test_score_bad_input(model, bert_tokenizer):
    with pytest.raises(InfillError, match="sentence 2 is empty"):
        score(model, bert_tokenizer, ["a b", " "])
    with pytest.raises(InfillError, match="mode must be one of"):
        score(model, bert_tokenizer, ["a b"], mode="l2r")
    for window in (15, 0, 64.0, "64", True):
        with pytest.raises(InfillError, match=f"window must be an integer >= 16, got {window!r}"):
            score(model, bert_tokenizer, ["a b"], window=window)
        with pytest.raises(InfillError, match="window must be an integer >= 16"):
            rank(model, bert_tokenizer, "the [MASK] sat .", ["a"], window=window)


def test_cli_score_and_rank_print_the_library_scores(tiny_model_dir, tmp_path, capsys):
    import json

    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from infill.cli import main
    from infill.cli.score import DECIMALS

    model = AutoModelForMaskedLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    path = tmp_path / "s.txt"
    path.write_text("the cat sat .\n\nan unbelievable tune\n")
    assert main(["score", "-f", str(path), "--model", str(tiny_model_dir), "--word-l2r", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    want = score(model, tokenizer, ["the cat sat .", "an unbelievable tune"], mode="word-l2r")
    assert [line["text"] for line in lines] == ["the cat sat .", "an unbelievable tune"]
    assert [line["score"] for line in lines] == pytest.approx([w.total for w in want], abs=1e-4)
    assert [t["token"] for t in lines[1]["tokens"]] == [t for t, _ in want[1].tokens]
    assert (
        main(
            [
                "rank",
                "the [MASK] sat .",
                "--options",
                "cat,ice cream",
                "--options",
                "dog",
                "--model",
                str(tiny_model_dir),
            ]
        )
        == 0
    )
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    want = rank(model, tokenizer, "the [MASK] sat .", ["cat", "ice cream", "dog"])
    assert [(r[1], r[2]) for r in rows] == [(w.option, w.text) for w in want]
    assert [r[0] for r in rows] == [f"{w.score.total:.{DECIMALS}f}" for w in want]


def test_cli_score_takes_sentences_as_arguments_or_stdin_as_sample_takes_templates(tiny_model_dir, monkeypatch, capsys):
    import io

    from infill.cli import main

    sentences = ["the cat sat on the mat .", "a dog ."]
    assert main(["score", *sentences, "--model", str(tiny_model_dir)]) == 0
    given = capsys.readouterr().out
    assert [line.split("\t")[1] for line in given.splitlines()] == sentences
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(sentences) + "\n"))
    assert main(["score", "-", "--model", str(tiny_model_dir)]) == 0
    assert capsys.readouterr().out == given


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rank", "the cat sat ."], "--options"),
        (["rank", "the cat sat .", "--options", "a"], "exactly one [MASK]"),
        (["rank", "the [MASK] sat .", "--options", "a,,b"], "non-empty"),
        (["score", "-f", "/no/such/file"], "cannot read /no/such/file"),
        (["score"], "give a SENTENCE (e.g. 'the cat sat on the mat .'), - for stdin, or --file FILE"),
        (["score", "a cat .", "-f", "s.txt"], "give a SENTENCE or --file, not both"),
        (["score", "a cat .", " "], "sentence 2 is empty"),
        (["score", "--mode", "l2r"], "invalid choice"),
        (["score", "--chunk-size", "0"], "--chunk-size must be a positive integer"),
        (["score", "a cat .", "--window", "15"], "--window must be an integer >= 16, got 15"),
        (["score", "a cat .", "--window", "-1"], "--window must be an integer >= 16, got -1"),
        (["score", "a cat .", "--window", "64.5"], "argument --window: invalid int value: '64.5'"),
        (["rank", "the [MASK] sat .", "--options", "a", "--window", "0"], "--window must be an integer >= 16, got 0"),
    ],
)
def test_cli_bad_input_is_one_line_before_the_model_loads(argv, message, capsys, monkeypatch):
    from infill.cli import main
    from infill.lm import models

    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_repeat_masked_scores_mask_every_copy_of_the_token(model, bert_tokenizer):
    """``the`` twice: each is scored with both masked; the other tokens as the plain PLL scores them."""
    text = "the cat sat on the mat."
    enc = bert_tokenizer(text)
    ids = torch.tensor(enc["input_ids"])
    want = []
    with torch.no_grad():
        for t in range(1, len(ids) - 1):
            copy = ids.clone()
            copy[(ids == ids[t]) & (torch.arange(len(ids)) > 0) & (torch.arange(len(ids)) < len(ids) - 1)] = MASK
            want.append(torch.log_softmax(model(input_ids=copy[None]).logits[0, t], -1)[ids[t]].item())
    got = score(model, bert_tokenizer, [text], mode="repeat-masked", max_copies=4)[0]
    plain = score(model, bert_tokenizer, [text])[0]
    assert [v for _, v in got.tokens] == pytest.approx(want, abs=1e-5)
    the = [i for i, (token, _) in enumerate(got.tokens) if token == "the"]
    assert len(the) == 2 and all(abs(got.tokens[i][1] - plain.tokens[i][1]) > 1e-4 for i in the)
    assert [v for i, (_, v) in enumerate(got.tokens) if i not in the] == pytest.approx(
        [v for i, (_, v) in enumerate(plain.tokens) if i not in the], abs=1e-5
    )
