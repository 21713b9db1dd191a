"""Texts longer than the model's window: every token scored in the window centred on it, passes bounded by
``max_copies`` and :data:`~infill.lm.scoring.PASS_TOKENS`, texts that fit the model scored whole as before, whatever the window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, BertForMaskedLM

from infill.lm import scoring
from infill.lm.scoring import rank, score

LIMIT = 32  # the tiny model's window: [CLS], 30 tokens of text, [SEP]
TEXT = LIMIT - 2
MASK = 103
CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora" / "bert-gen" / "wiki103.5k.txt"


@pytest.fixture(scope="module")
def words() -> list[str]:
    if not CORPUS.exists():
        pytest.skip(f"corpus {CORPUS} not available")
    return " ".join(CORPUS.read_text(encoding="utf-8").splitlines()[:6]).split()


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(3)
    config = BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=LIMIT,
        initializer_range=0.2,
    )
    return BertForMaskedLM(config).eval()


@torch.no_grad()
def centred(model, tokenizer, text: str, mode: str, size: int = TEXT) -> list[float]:
    """Each token's score computed directly: the ``size`` tokens of text centred on it (14 to its left of the
    model's 30), slid to stay within the text, between [CLS] and [SEP]; it masked (with word-l2r the rest of its
    word in the window, with repeat-masked its other copies in the window)."""
    encoded = tokenizer(text)
    ids, words = torch.tensor(encoded["input_ids"]), encoded.word_ids()
    n = len(ids) - 2
    out = []
    for i in range(n):
        start = max(min(i - (size - 1) // 2, n - size), 0)
        window = torch.cat([ids[:1], ids[1 + start : 1 + start + size], ids[-1:]])
        word = [None, *words[1 + start : 1 + start + size], None]
        slot = 1 + i - start
        copy, end = window.clone(), slot + 1
        while mode == "word-l2r" and end < len(window) and word[end] is not None and word[end] == word[slot]:
            end += 1
        copy[slot:end] = MASK
        if mode == "repeat-masked":
            copy[1:-1][window[1:-1] == window[slot]] = MASK
        out.append(float(torch.log_softmax(model(input_ids=copy[None]).logits[0, slot], -1)[window[slot]]))
    return out


@pytest.mark.parametrize("mode", scoring.MODES)
@pytest.mark.parametrize("count, length", [(28, LIMIT), (29, LIMIT + 1), (57, 65)])
def test_every_token_is_scored_in_the_window_centred_on_it(model, bert_tokenizer, words, mode, count, length):
    text = " ".join(words[:count])
    assert len(bert_tokenizer(text)["input_ids"]) == length  # fits exactly, one token past, twice the window
    got = score(model, bert_tokenizer, [text], mode, max_copies=7)[0]
    assert [t for t, _ in got.tokens] == bert_tokenizer.tokenize(text)
    assert [v for _, v in got.tokens] == pytest.approx(centred(model, bert_tokenizer, text, mode), abs=1e-5)
    assert got.total == pytest.approx(sum(v for _, v in got.tokens))


def test_windows_keep_half_a_window_on_each_side_where_the_text_has_it():
    length, targets = 100, torch.arange(1, 99)  # [CLS] 98 tokens [SEP]
    at = scoring.windows(targets, length, 1, 1, LIMIT)
    assert (at[:, 0] == 0).all() and (at[:, -1] == length - 1).all()
    body = at[:, 1:-1]
    assert ((body[:, 1:] - body[:, :-1]) == 1).all() and body.min() == 1 and body.max() == length - 2
    left, right, half = targets - body[:, 0], body[:, -1] - targets, (TEXT - 1) // 2
    assert (left >= torch.clamp(targets - 1, max=half)).all() and (left + right == TEXT - 1).all()
    assert (right >= torch.clamp(length - 2 - targets, max=half)).all()


@pytest.mark.parametrize("mode", scoring.MODES)
def test_a_window_under_the_models_scores_each_token_in_that_many_tokens_centred_on_it(
    model, bert_tokenizer, words, mode
):
    text = " ".join(words[:57])  # 63 tokens of text
    got = score(model, bert_tokenizer, [text], mode, max_copies=7, window=16)[0]
    assert [v for _, v in got.tokens] == pytest.approx(centred(model, bert_tokenizer, text, mode, 16), abs=1e-5)


def test_a_text_the_model_takes_is_scored_whole_whatever_the_window(model, bert_tokenizer, words):
    """Scored whole, bit for bit (minicons' PLL), whatever the window: the window reaches only texts longer than
    the model (its 30 tokens of text)."""
    short, fits = " ".join(words[:15]), " ".join(words[:26])
    assert [len(bert_tokenizer.tokenize(t)) for t in (short, fits)] == [15, 28]
    want = score(model, bert_tokenizer, [short, fits], window=None)
    for window in (16, 20, TEXT, scoring.WINDOW):
        assert score(model, bert_tokenizer, [short, fits], window=window) == want
    template = " ".join(words[:10]) + " the [MASK] sat ."
    assert rank(model, bert_tokenizer, template, ["cat", "dog"], window=16) == rank(
        model, bert_tokenizer, template, ["cat", "dog"], window=None
    )


def test_a_long_text_with_the_models_window_scores_as_before(model, bert_tokenizer, words):
    """``window`` at the model's maximum (its 30 tokens of text), past it or ``None``: each token in the model's
    window centred on it, as before the option."""
    text = " ".join(words[:57])
    want = score(model, bert_tokenizer, [text], window=None)
    assert [v for _, v in want[0].tokens] == pytest.approx(centred(model, bert_tokenizer, text, "pll"), abs=1e-5)
    for window in (TEXT, TEXT + 1, 10**6, scoring.WINDOW):
        assert score(model, bert_tokenizer, [text], window=window) == want  # bit for bit


@pytest.mark.parametrize("size", [16, 17, 29])
def test_windows_of_n_tokens_hold_the_target_and_n_minus_one_of_context(size):
    """A copy of ``size + 2`` tokens: [CLS], ``size`` consecutive tokens of text holding the target, [SEP];
    so each masked copy carries at most ``size`` tokens of text besides the special ones."""
    length, targets = 100, torch.arange(1, 99)
    at = scoring.windows(targets, length, 1, 1, size + 2)
    assert at.shape == (98, size + 2) and (at[:, 0] == 0).all() and (at[:, -1] == length - 1).all()
    body = at[:, 1:-1]
    assert ((body[:, 1:] - body[:, :-1]) == 1).all() and body.min() == 1 and body.max() == length - 2
    assert ((body[:, 0] <= targets) & (targets <= body[:, -1])).all()
    left, right, half = targets - body[:, 0], body[:, -1] - targets, (size - 1) // 2
    assert (left + right == size - 1).all()
    assert (left >= torch.clamp(targets - 1, max=half)).all()
    assert (right >= torch.clamp(length - 2 - targets, max=size - 1 - half)).all()


def test_windowed_passes_are_no_wider_than_the_window(model, bert_tokenizer, words):
    widths = []
    hook = model.bert.register_forward_pre_hook(
        lambda _, a, k: widths.append(k["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        score(model, bert_tokenizer, [" ".join(words[:57])], window=16)
    finally:
        hook.remove()
    assert widths and set(widths) == {18}  # [CLS] 16 tokens [SEP]


def test_texts_that_fit_are_scored_whole_beside_a_long_one(model, bert_tokenizer, words):
    short = [" ".join(words[:12]), " ".join(words[20:28])]
    long = " ".join(words[:57])
    alone = score(model, bert_tokenizer, short)
    mixed = score(model, bert_tokenizer, [short[0], long, short[1]])
    assert [mixed[0], mixed[2]] == alone  # bit for bit
    assert mixed[1] == score(model, bert_tokenizer, [long])[0]


@pytest.mark.parametrize("mode", ["pll", "word-l2r"])
def test_passes_hold_at_most_max_copies_and_pass_tokens(model, bert_tokenizer, words, mode, monkeypatch):
    """Rows per forward pass, counted at the encoder: at most ``max_copies`` and, but for a lone copy,
    at most ``PASS_TOKENS`` tokens; a long text's windows reach :func:`token_scores` ``max_copies`` at a time,
    each copy once; ``progress`` counts every scored token, once a pass."""
    monkeypatch.setattr(scoring, "PASS_TOKENS", 100)  # 3 copies of the full window
    passes, calls, done = [], [], []
    hook = model.bert.register_forward_pre_hook(lambda _, a, k: passes.append(k["input_ids"].shape), with_kwargs=True)
    token_scores = scoring.token_scores

    def counted(m, ids, *args, **options):
        calls.append(len(ids))
        return token_scores(m, ids, *args, **options)

    monkeypatch.setattr(scoring, "token_scores", counted)
    texts = [" ".join(words[:57]), " ".join(words[:10])]
    try:
        got = score(model, bert_tokenizer, texts, mode, max_copies=5, progress=done.append)
    finally:
        hook.remove()
    tokens = sum(len(s.tokens) for s in got)
    assert max(calls) == 5 and sum(calls) == len(got[0].tokens) + 1  # the long text's windows; the short's batch
    assert max(rows for rows, _ in passes) == 5 and max(rows * width for rows, width in passes) <= 100
    assert sum(rows for rows, _ in passes) == tokens and len(done) == len(passes) and sum(done) == tokens
    monkeypatch.undo()
    again = score(model, bert_tokenizer, texts, mode)  # one pass a text
    assert [v for s in got for _, v in s.tokens] == pytest.approx([v for s in again for _, v in s.tokens], abs=1e-5)


def test_rank_scores_options_whose_sentence_is_past_the_window(model, bert_tokenizer, words):
    template = " ".join(words[:40]) + " the [MASK] sat ."
    options = ["cat", "ice cream", "xylophonist"]
    ranked = rank(model, bert_tokenizer, template, options, max_copies=16)
    alone = {o: centred(model, bert_tokenizer, template.replace("[MASK]", o), "pll") for o in options}
    assert all(len(bert_tokenizer(r.text)["input_ids"]) > LIMIT for r in ranked)
    assert [r.option for r in ranked] == sorted(options, key=lambda o: -sum(alone[o]))
    assert [r.score.total for r in ranked] == pytest.approx([sum(alone[r.option]) for r in ranked], abs=1e-4)


class Bar:
    """tqdm's constructor and the methods the commands use, recording what they are given."""

    made: list = []

    def __init__(self, **options):
        self.options, self.n = options, 0
        Bar.made.append(self)

    def update(self, n: int) -> None:
        self.n += n

    def write(self, line: str, file) -> None:
        print(line, file=file)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        pass


@pytest.mark.parametrize("terminal", [True, False])
def test_cli_scores_a_long_line_with_a_bar_on_a_terminal(
    tiny_model_dir, words, tmp_path, capsys, monkeypatch, terminal
):
    from infill.cli import main

    model = AutoModelForMaskedLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    long = " ".join(words[:80])  # past the tiny checkpoint's 64 tokens
    path = tmp_path / "s.txt"
    path.write_text(f"the cat sat .\n{long}\n")
    monkeypatch.setattr("tqdm.auto.tqdm", Bar)
    monkeypatch.setattr("sys.stderr.isatty", lambda: terminal)
    Bar.made.clear()
    assert main(["score", "-f", str(path), "--model", str(tiny_model_dir), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    want = score(model, tokenizer, ["the cat sat .", long])
    assert len(tokenizer(long)["input_ids"]) > 64 and [line["text"] for line in lines] == ["the cat sat .", long]
    assert [line["score"] for line in lines] == pytest.approx([w.total for w in want], abs=1e-4)
    tokens = sum(len(w.tokens) for w in want)
    (bar,) = Bar.made
    assert bar.options["total"] == bar.n == tokens and bar.options["disable"] is not terminal
    argv = ["rank", " ".join(words[:70]) + " the [MASK] sat .", "--options", "cat,dog", "--model", str(tiny_model_dir)]
    assert main(argv) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert sorted(r[1] for r in rows) == ["cat", "dog"] and Bar.made[1].n == Bar.made[1].options["total"] > 2 * 64


def test_cli_and_api_window_score_as_the_library(tiny_model_dir, words, tmp_path, capsys):
    from infill import Infiller
    from infill.cli import main
    from infill.cli.score import DECIMALS

    infiller = Infiller(str(tiny_model_dir))
    texts = ["the cat sat .", " ".join(words[:80])]  # the second past the tiny checkpoint's 64 tokens
    want = score(infiller.model, infiller.tokenizer, texts, window=20)
    assert infiller.score(texts, window=20) == want and infiller.score(texts) == infiller.score(texts, window=None)
    assert want[1].total != infiller.score(texts)[1].total
    path = tmp_path / "s.txt"
    path.write_text("\n".join(texts) + "\n")
    assert main(["score", "-f", str(path), "--model", str(tiny_model_dir), "--json", "--window", "20"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["score"] for line in lines] == pytest.approx([w.total for w in want], abs=1e-4)
    template = " ".join(words[:70]) + " the [MASK] sat ."
    assert main(["rank", template, "--options", "cat,dog", "--model", str(tiny_model_dir), "--window", "20"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    ranked = infiller.rank(template, ["cat", "dog"], window=20)
    assert [(r[1], r[0]) for r in rows] == [(r.option, f"{r.score.total:.{DECIMALS}f}") for r in ranked]
