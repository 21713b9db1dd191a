"""Every bad input is refused with one line: non-zero exit, no traceback, nothing printed or written.

CLI cases run ``infill.cli.main`` in-process from an empty working directory (so default outputs are
caught too); ``{dir}`` in an argument is that directory, ``{model}`` the tiny random BERT checkpoint.
API cases expect an ``InfillError`` with a one-line message in the API's words (no ``--flag``).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
from test_cli_reliability import CORPUS, PROTOCOL

from infill.cli import main
from infill.errors import InfillError

T = "a [MASK] day ."
LONG_TEXT = "".join(f"Sentence number {i} says something long enough about the topic at hand. " for i in range(8))


class Case(NamedTuple):
    argv: list[str]
    files: dict = {}  # name -> str or bytes, written into {dir} before the call
    expect: str = ""  # a fragment the message must contain (lower case)


def _protocol_text(**changes: str) -> str:
    text = PROTOCOL.format(sentences=2, steps=2)
    for old, new in changes.items():
        text = text.replace(old, new)
    return text


def _eval(*extra: str, protocol: str | None = None, files: dict | None = None, expect: str = "") -> Case:
    files = {"corpus.txt": CORPUS, "p.toml": _protocol_text() if protocol is None else protocol, **(files or {})}
    return Case(
        ["eval", "{dir}/p.toml", "--model", "{model}", "--out", "{dir}/out", "--no-progress", *extra], files, expect
    )


def _sample(*args: str, files: dict | None = None, expect: str = "") -> Case:
    return Case(["sample", *args, "--model", "{model}", "-q"], files or {}, expect)


def _summarize(*args: str, text: str | bytes = LONG_TEXT, expect: str = "") -> Case:
    return Case(["summarize", "{dir}/doc.txt", *args], {"doc.txt": text}, expect)


CLI_CASES = {
    # infill sample: run options
    "sample-no-template": _sample(expect="template"),
    "sample-empty-template": _sample("", expect="template"),
    "sample-blank-template": _sample("   ", expect="template"),
    "sample-no-blank": _sample("no blanks here ."),
    "sample-zero-mask-count": _sample("a [MASK*0] day ."),
    "sample-huge-mask-count": _sample("a [MASK*100000] day ."),
    "sample-literal-cls": _sample("[CLS] a [MASK] day .", expect="[cls]"),
    "sample-literal-sep": _sample("a [MASK] day . [SEP] more", expect="[sep]"),
    "sample-steps-zero": _sample(T, "--steps", "0", expect="steps"),
    "sample-steps-negative": _sample(T, "--steps", "-5", expect="steps"),
    "sample-steps-text": _sample(T, "--steps", "many", expect="steps"),
    "sample-num-samples-zero": _sample(T, "-n", "0", expect="num_samples"),
    "sample-top-zero": _sample(T, "--top", "0", expect="top"),
    "sample-seed-text": _sample(T, "--seed", "x", expect="seed"),
    "sample-seed-negative": _sample(T, "--seed", "-1", expect="seed"),
    "sample-unknown-sampler": _sample(T, "--sampler", "nope", expect="nope"),
    "sample-unknown-flag": _sample(T, "--stepz", "3", expect="--stepz"),
    "sample-chunk-size-zero": _sample(T, "--chunk-size", "0", expect="chunk"),
    "sample-bad-dtype": _sample(T, "--dtype", "float8", expect="float8"),
    "sample-bad-device": _sample(T, "--device", "toaster", expect="toaster"),
    "sample-missing-model": Case(["sample", T, "--model", "{dir}/no-such-model"], expect="no-such-model"),
    "sample-model-dir-without-files": Case(
        ["sample", T, "--model", "{dir}/empty"], {"empty/README": "x"}, expect="empty"
    ),
    # sampler hyperparameters
    "sample-step-size-inf": _sample(T, "--sampler", "dmala", "--step-size", "inf", expect="step_size"),
    "sample-step-size-nan": _sample(T, "--sampler", "dmala", "--step-size", "nan", expect="step_size"),
    "sample-step-size-negative": _sample(T, "--sampler", "dmala", "--step-size", "-0.1", expect="step_size"),
    "sample-adapt-steps-fraction": _sample(T, "--sampler", "dmala", "--adapt-steps", "1.5", expect="adapt_steps"),
    "sample-option-text-for-number": _sample(T, "--sampler", "dmala", "-o", "step_size=abc", expect="number"),
    "sample-preconditioner-length": _sample(
        T, "--sampler", "dmala", "-o", "preconditioner=[1, 2]", expect="preconditioner has 2 entries for 1 variable:"
    ),
    "sample-preconditioner-negative": _sample(
        T, "--sampler", "dmala", "-o", "preconditioner=[-1]", expect="positive numbers"
    ),
    "sample-preconditioner-second-template": _sample(
        "--file",
        "{dir}/t.txt",
        "--sampler",
        "dmala",
        "-o",
        "preconditioner=[1]",
        files={"t.txt": f"{T}\na [MASK] [MASK] .\n"},
        expect="t.txt:2: preconditioner",
    ),
    "sample-option-without-equals": _sample(T, "-o", "step_size", expect="key=value"),
    "sample-option-unknown": _sample(T, "--sampler", "dmala", "-o", "bogus=1", expect="bogus"),
    "sample-option-for-other-sampler": _sample(T, "--sampler", "gibbs", "--step-size", "0.1", expect="step_size"),
    # a one-pass method refuses the settings it does not take (infill samplers says which), it does not drop them
    "sample-steps-to-argmax": _sample(T, "--sampler", "argmax", "--steps", "5", expect="takes no steps"),
    "sample-init-to-left-to-right": _sample(T, "--sampler", "left-to-right", "--init", "uniform", expect="no init"),
    "sample-steps-to-smc": _sample(T, "--sampler", "smc", "--steps", "5", expect="smc is a one-pass method"),
    # argmax gives one filling on several blank tokens: --top 2 there is refused, not answered with one line
    "sample-top-2-to-argmax": _sample(
        "a [MASK] [MASK] b", "--sampler", "argmax", "--top", "2", expect="argmax gives one filling on 2 blank"
    ),
    "sample-temperature-to-argmax": _sample(T, "--sampler", "argmax", "--temperature", "0.5", expect="no temperature"),
    "sample-num-samples-to-search": _sample(
        T, "--sampler", "product-search", "--top", "2", "-n", "4", expect="takes no num_samples"
    ),
    "sample-temperature-to-search": _sample(
        T, "--sampler", "product-search", "--top", "2", "--temperature", "0.5", expect="takes no temperature"
    ),
    # infill sample --forbid: a word no blank could take would do nothing, so it is refused
    "sample-forbid-empty": _sample(T, "--forbid", "", expect="--forbid needs a word"),
    "sample-forbid-punctuation": _sample(
        T, "--forbid", ",", expect="cannot forbid ',': a blank never takes punctuation"
    ),
    "sample-forbid-punctuation-span": _sample("a [MASK*?] day .", "--forbid", "!", expect="cannot forbid '!'"),
    "sample-forbid-not-in-vocabulary": _sample(T, "--forbid", "\u2603", expect="no word of this model's vocabulary"),
    "sample-forbid-special-token": _sample(T, "--forbid", "[SEP]", expect="cannot forbid '[sep]'"),
    "sample-forbid-several-tokens": _sample(T, "--forbid", "souvenir", expect="3 tokens"),
    # infill sample --file
    "file-missing": _sample("--file", "{dir}/missing.txt", expect="missing.txt"),
    "file-and-template": _sample(T, "--file", "{dir}/t.txt", files={"t.txt": T + "\n"}, expect="not both"),
    "file-empty": _sample("--file", "{dir}/t.txt", files={"t.txt": "\n\n"}, expect="no templates"),
    "file-not-utf8": _sample(
        "--file", "{dir}/t.txt", files={"t.txt": b"a [MASK] \xff\xfe day\n"}, expect="t.txt: it is not utf-8 text"
    ),
    "score-file-not-utf8": Case(
        ["score", "--file", "{dir}/t.txt", "--model", "{model}"],
        {"t.txt": b"caf\xe9 au lait .\n"},
        "it is not utf-8 text",
    ),
    "file-bad-json": _sample("--file", "{dir}/t.txt", files={"t.txt": '{"template": \n'}, expect="t.txt:1"),
    "file-json-without-template": _sample(
        "--file", "{dir}/t.txt", files={"t.txt": '{"steps": 3}\n'}, expect="template"
    ),
    "file-json-bad-option": _sample(
        "--file", "{dir}/t.txt", files={"t.txt": T + '\n{"template": "' + T + '", "steps": -1}\n'}, expect="t.txt:2"
    ),
    "file-second-line-no-blank": _sample(
        "--file", "{dir}/t.txt", files={"t.txt": T + "\nno blank\n"}, expect="t.txt:2"
    ),
    # infill eval
    "eval-no-out": Case(["eval", "p.toml"], expect="--out"),
    "eval-missing-protocol": Case(["eval", "{dir}/none.toml", "--out", "{dir}/out"], expect="none.toml"),
    "eval-protocol-not-toml": _eval(protocol="name = [unclosed\n", expect="p.toml"),
    "eval-protocol-unknown-key": _eval(
        protocol=_protocol_text(**{"seed = 1": "seed = 1\ncolour = 3"}), expect="colour"
    ),
    "eval-protocol-no-samplers": _eval(protocol=_protocol_text(**{'["gibbs"]': "[]"}), expect="samplers"),
    "eval-protocol-unknown-sampler": _eval(protocol=_protocol_text(**{'["gibbs"]': '["nope"]'}), expect="nope"),
    "eval-protocol-options-unlisted": _eval(
        protocol=_protocol_text() + "\n[sampling.options.dmala]\nstep_size = 0.2\n", expect="dmala"
    ),
    "eval-protocol-bad-option": _eval(
        protocol=_protocol_text() + "\n[sampling.options.gibbs]\nstep_size = 0.2\n", expect="step_size"
    ),
    "eval-protocol-top-over-chains": _eval(
        protocol=_protocol_text(**{"top = 1": 'top = 5\ndecode = "final"'}), expect="top"
    ),
    "eval-protocol-steps-zero": _eval(protocol=_protocol_text(**{"steps = 2": "steps = 0"}), expect="steps"),
    "eval-protocol-too-many-masked": _eval(protocol=_protocol_text(**{"count = 2": "count = 40"}), expect="mask"),
    "eval-protocol-missing-corpus": _eval(files={"corpus.txt": None}, expect="corpus.txt"),
    "eval-limit-zero": _eval("--limit", "0", expect="limit"),
    "eval-samplers-empty-name": _eval("--samplers", "gibbs,,dmala", expect="empty"),
    "eval-samplers-unknown": _eval("--samplers", "nope", expect="nope"),
    "eval-out-is-a-file": _eval(files={"out": "not a directory"}, expect="out"),
    "eval-missing-model": Case(
        ["eval", "{dir}/p.toml", "--model", "{dir}/no-such-model", "--out", "{dir}/out"],
        {"corpus.txt": CORPUS, "p.toml": _protocol_text()},
        expect="no-such-model",
    ),
    "eval-bad-device": _eval("--device", "toaster", expect="toaster"),
    # infill summarize
    "summarize-missing-file": Case(["summarize", "{dir}/none.txt"], expect="none.txt"),
    "summarize-empty-file": _summarize(text="", expect="doc.txt"),
    "summarize-binary-file": _summarize(text=b"\x00\x01\xff\xfe" * 50, expect="doc.txt"),
    "summarize-no-sentence-fits": _summarize("--words", "2", expect="fits"),
    "summarize-sentences-zero": _summarize("--sentences", "0", expect="sentences"),
    "summarize-words-negative": _summarize("--words", "-3", expect="words"),
    "summarize-both-budgets": _summarize("--words", "10", "--sentences", "2", expect="not allowed"),
    "summarize-unknown-sampler": _summarize("--sampler", "nope", expect="nope"),
    "summarize-bad-decode": _summarize("--decode", "nope", expect="decode"),
    "summarize-chains-zero": _summarize("--chains", "0", expect="chains"),
    "summarize-temperature-zero": _summarize("--temperature", "0", expect="temperature"),
    "summarize-step-size-negative": _summarize("--step-size", "-1", expect="step-size"),
    "summarize-steps-text": _summarize("--steps", "many", expect="steps"),
    # infill eval-summarization
    "evalsum-unknown-method": Case(["eval-summarization", "--methods", "lead,nope"], expect="nope"),
    "evalsum-empty-methods": Case(["eval-summarization", "--methods", ","], expect="methods"),
    "evalsum-limit-zero": Case(["eval-summarization", "--limit", "0"], expect="limit"),
    "evalsum-unknown-dataset": Case(["eval-summarization", "--dataset", "cnn"], expect="dataset"),
    "evalsum-unknown-split": Case(["eval-summarization", "--split", "dev"], expect="split"),
    "evalsum-steps-zero": Case(["eval-summarization", "--steps", "0"], expect="steps"),
    "evalsum-output-under-a-file": Case(
        ["eval-summarization", "--methods", "lead", "--limit", "1", "--output", "{dir}/f/report"],
        {"f": "a file"},
        expect="f",
    ),
    # infill augment
    "augment-empty-sentence": Case(["augment", "", "--model", "{model}"], expect="empty"),
    "augment-all-protected": Case(["augment", "42 NASA x9", "--model", "{model}"], expect="nothing to change"),
    "augment-n-zero": Case(["augment", "a day", "-n", "0", "--model", "{model}"], expect="n must"),
    "augment-change-zero": Case(["augment", "a day", "--change", "0", "--model", "{model}"], expect="change"),
    "augment-change-one": Case(["augment", "a day", "--change", "1", "--model", "{model}"], expect="change"),
    "augment-bad-regex": Case(["augment", "a day", "--protect", "(", "--model", "{model}"], expect="regular"),
    "augment-not-utf8": Case(
        ["augment", "-f", "{dir}/s.txt", "--model", "{model}"], {"s.txt": b"caf\xe9 day\n"}, expect="utf-8"
    ),
    "augment-missing-file": Case(["augment", "-f", "{dir}/none.txt", "--model", "{model}"], expect="cannot read"),
    "augment-bad-line-writes-nothing": Case(
        ["augment", "-f", "{dir}/s.txt", "--out", "{dir}/o.jsonl", "--model", "{model}"],
        {"s.txt": "a good day\n42 NASA\n"},
        expect="nothing to change",
    ),
    # the command itself
    "no-command": Case([], expect="command"),
    "unknown-command": Case(["sampel"], expect="sampel"),
}


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.mark.parametrize("case", CLI_CASES.values(), ids=CLI_CASES.keys())
def test_cli_refuses_bad_input_with_one_line(case, tmp_path, monkeypatch, capsys, tiny_model_dir):
    for name, content in case.files.items():
        if content is None:
            continue
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    argv = [a.replace("{dir}", str(tmp_path)).replace("{model}", str(tiny_model_dir)) for a in case.argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    out, err = capsys.readouterr()
    assert code not in (0, None)
    assert err.startswith("infill: error: ") and err.count("\n") == 1, err
    assert not err.rstrip().endswith(":"), err  # not cut mid-sentence
    assert case.expect.lower() in err.lower()
    assert out == ""
    after = {name: stat for name, stat in _tree(tmp_path).items() if not name.endswith(".jsonl.lock")}
    assert after == before  # --out's OUT.lock, taken first, stays by design (the OS lock goes with the run)


@pytest.fixture(scope="module")
def infiller(tiny_model_dir):
    import infill

    return infill.Infiller(str(tiny_model_dir))


API_CASES = {
    "api-template-none": lambda inf, model: inf.sample(None),
    "api-template-bytes": lambda inf, model: inf.sample(b"a [MASK] day ."),
    "api-template-empty": lambda inf, model: inf.sample(""),
    "api-template-no-blank": lambda inf, model: inf.sample("no blanks ."),
    "api-sample-many-string": lambda inf, model: inf.sample_many(T),
    "api-sample-many-none": lambda inf, model: inf.sample_many(None),
    "api-forbid-string": lambda inf, model: inf.sample(T, forbid="day"),
    "api-forbid-empty": lambda inf, model: inf.sample(T, forbid=[""]),
    "api-forbid-punctuation": lambda inf, model: inf.sample(T, forbid=[","]),
    "api-forbid-not-in-vocabulary": lambda inf, model: inf.sample(T, forbid=["\u2603"]),
    "api-steps-zero": lambda inf, model: inf.sample(T, steps=0),
    "api-steps-float": lambda inf, model: inf.sample(T, steps=2.5),
    "api-num-samples-bool": lambda inf, model: inf.sample(T, num_samples=True),
    "api-unknown-sampler": lambda inf, model: inf.sample(T, sampler="nope"),
    "api-step-size-inf": lambda inf, model: inf.sample(T, sampler="dmala", step_size=float("inf")),
    "api-step-size-text": lambda inf, model: inf.sample(T, sampler="dmala", step_size="big"),
    "api-unknown-option": lambda inf, model: inf.sample(T, sampler="dmala", bogus=1),
    "api-seed-text": lambda inf, model: inf.sample(T, seed="x"),
    "api-allow-subwords-text": lambda inf, model: inf.sample(T, allow_subwords="yes"),
    "api-missing-model": lambda inf, model: type(inf)("/no/such/model"),
    "api-bad-device": lambda inf, model: type(inf)(model, device="toaster"),
    "api-bad-dtype": lambda inf, model: type(inf)(model, dtype="float8"),
    "api-chunk-size-zero": lambda inf, model: type(inf)(model, chunk_size=0),
    "api-augment-empty": lambda inf, model: inf.augment(""),
    "api-augment-all-protected": lambda inf, model: inf.augment("42 NASA x9"),
    "api-augment-n-zero": lambda inf, model: inf.augment("a day", n=0),
    "api-augment-change-one": lambda inf, model: inf.augment("a day", change=1.0),
    "api-augment-bad-regex": lambda inf, model: inf.augment("a day", protect=["("]),
    "api-augment-bytes": lambda inf, model: inf.augment([b"a day"]),
}


@pytest.mark.parametrize("call", API_CASES.values(), ids=API_CASES.keys())
def test_api_refuses_bad_input_with_an_infill_error(call, infiller, tiny_model_dir):
    with pytest.raises(InfillError) as error:
        call(infiller, str(tiny_model_dir))
    message = str(error.value)
    assert message and "\n" not in message and not message.endswith(":")
    assert "--" not in message, message  # worded for the API, not the CLI
