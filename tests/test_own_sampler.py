"""The examples of docs/own-sampler.md run as written: its kernel passes the total-variation check against
the exact target, the same kernel without its MH test fails it, and the registered name fills a template; its
one-pass method, registered, fills a template, charged as its passes say, and refuses what no one-pass method
takes."""

import re
from pathlib import Path

import pytest

from infill.cli import main
from infill.errors import InfillError
from infill.lm.registry import METHODS, ONE_PASS
from infill.samplers import SAMPLERS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "own-sampler.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


@pytest.fixture
def example():
    """The namespace of the page's first block run (the kernel registered only for the test)."""
    assert "random-scan" not in SAMPLERS
    namespace = {"__name__": "own_sampler"}
    try:
        exec(compile(blocks()[0], str(PAGE), "exec"), namespace)
        yield namespace
    finally:
        METHODS.pop("random-scan", None)


def test_the_kernel_passes_the_exactness_check_and_its_unadjusted_control_fails(example):
    assert len(blocks()) == 3 and SAMPLERS["random-scan"] is example["RandomScan"]
    tv, floor = example["total_variation_of"](example["RandomScan"](adjusted=False))
    assert tv > min(0.02, 2.5 * floor)


@pytest.mark.slow
def test_the_registered_kernel_fills_a_template(example, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # the page's model path is relative to the repository
    exec(compile(blocks()[1], str(PAGE), "exec"), example)
    result = example["result"]
    assert len(result.texts) == 3 and result.diagnostics.sampler == "random-scan"
    assert "random-scan" in capsys.readouterr().out


@pytest.mark.slow
def test_the_registered_one_pass_method_fills_a_template_and_refuses_chain_settings(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    namespace = {"__name__": "own_one_pass"}
    try:
        exec(compile(blocks()[2], str(PAGE), "exec"), namespace)
        result, infiller = namespace["result"], namespace["infiller"]
        assert len(result.texts) == 3 and result.diagnostics.sampler == "nucleus"
        assert result.diagnostics.forwards == 1 and "nucleus" in capsys.readouterr().out
        assert main(["samplers"]) == 0  # listed with its draw's docstring
        assert "the all-masked conditional cut to its top-p mass" in capsys.readouterr().out
        budgeted = infiller.sample("The [MASK] sat on the [MASK] .", sampler="nucleus", top=3, seed=0, budget=40)
        assert budgeted.diagnostics.encoder_sequences <= 40
        with pytest.raises(InfillError, match="nucleus is a one-pass method: it takes no steps"):
            infiller.sample("The [MASK] sat .", sampler="nucleus", steps=5)
        with pytest.raises(ValueError, match="exists"):
            namespace["register"](ONE_PASS["nucleus"])
    finally:
        METHODS.pop("nucleus", None)
