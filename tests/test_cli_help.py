"""Every command's ``--help`` against what runs: the defaults it states are the ones resolved, and no
docstring markup reaches it."""

import argparse
import inspect
import re

import pytest

from infill.cli import COMMANDS, build_parser, plain
from infill.cli.summarize import DEFAULT_METHOD, DEFAULT_SAMPLER, DEFAULT_WORDS
from infill.pipeline.config import (
    AUTO,
    AUTO_BUDGET_PER_BLANK,
    AUTO_CHAINS,
    REWRITE_SAMPLER,
    SAMPLES,
    STEPS,
    RunConfig,
    settings,
)


def subparser(command: str) -> argparse.ArgumentParser:
    actions = build_parser(command)._actions
    return next(a for a in actions if isinstance(a, argparse._SubParsersAction)).choices[command]


def helps(command: str) -> dict[str, str]:
    """Each option's help, by its first flag (a positional's by its name), whitespace collapsed."""
    return {
        a.option_strings[0] if a.option_strings else a.dest: " ".join((a.help or "").split())
        for a in subparser(command)._actions
    }


@pytest.mark.parametrize("command", COMMANDS)
def test_no_docstring_markup_and_every_argparse_default_stated(command):
    text = subparser(command).format_help()
    assert not re.search(r"``|:(meth|func|data|class|mod|attr):", text), text
    for action in subparser(command)._actions:
        if action.default not in (None, False, [], argparse.SUPPRESS) and action.dest != "help":
            default = f"{action.default:g}" if isinstance(action.default, float) else str(action.default)
            assert default in action.help, (action.dest, action.help)


def test_sample_help_states_auto_and_its_budget():
    options = helps("sample")
    assert RunConfig().method == AUTO and options["--sampler"].endswith(f"(default: {AUTO})")
    assert f"{AUTO}'s default: {AUTO_BUDGET_PER_BLANK} per blank token" in options["--budget"]
    assert f"default {SAMPLES}; {AUTO}: {AUTO_CHAINS['num_samples']} chains" in options["--num-samples"]
    assert f"default {STEPS}; {AUTO}: until its budget is spent, at most {AUTO_CHAINS['steps']}" in options["--steps"]


def test_rewrite_help_states_its_sampler_chains_and_steps_and_no_budget():
    from infill.pipeline.infiller import Infiller

    options = helps("rewrite")
    text = subparser("rewrite").format_usage() + " ".join(options.values())  # the description names what it lacks
    assert inspect.signature(Infiller.rewrite).parameters["sampler"].default == REWRITE_SAMPLER
    assert options["--sampler"].endswith(f"(default: {REWRITE_SAMPLER})")
    assert options["--num-samples"] == f"chains (default: {SAMPLES})"
    assert options["--steps"] == f"MCMC steps per chain (default: {STEPS})"
    assert "budget" not in text and "--init" not in text and "(default: auto)" not in text


def test_summarize_helps_state_the_objective_and_chain_defaults():
    from infill.summarize import ChainSettings, ObjectiveConfig

    objective, chains = ObjectiveConfig(), ChainSettings(sampler=DEFAULT_SAMPLER)
    for command in ("summarize", "eval-summarization"):
        options = helps(command)
        assert options["--words"].endswith(f"(default {DEFAULT_WORDS})")
        stated = {
            "--similarity": objective.similarity,
            "--lambda": objective.lam,
            "--alpha-a": objective.a,
            "--temperature": objective.temperature,
            "--steps": chains.steps,
            "--chains": chains.chains,
            "--start": chains.start,
            "--anneal": chains.anneal,
            "--step-size": chains.step_size,
        }
        for flag, value in stated.items():
            assert (f"(default {value:g}" if isinstance(value, float) else f"(default {value}") in options[flag], flag
    assert helps("summarize")["--method"].endswith(f"(default {DEFAULT_METHOD})")


def test_plain_drops_roles_and_literals():
    assert plain("see :meth:`infill.Infiller.rewrite` and ``--change``") == "see infill.Infiller.rewrite and --change"
    assert plain(":class:`~.config.RunConfig`, :data:`MAX_DRAWS`") == "RunConfig, MAX_DRAWS"


def test_rewrite_help_describes_what_rewrite_runs():
    """No flag of rewrite is described by what auto does, by templates or word blanks (which it has not), as the
    flags it shares with sample were; its --sampler says it refuses auto."""
    options = helps("rewrite")
    assert "not auto" in options["--sampler"]
    for flag, text in options.items():
        if flag != "--sampler":
            assert not re.search(rf"\b{AUTO}(:|'s| with)|template|word blanks", text), (flag, text)
    assert "source_bleu" in options["--json"] and "terminal" in options["--quiet"]
    run_flags = {s.metadata.get("flag") or "--" + s.name.replace("_", "-") for s in settings()}
    left_out = re.findall(r"--[\w-]+", subparser("rewrite").description.split(" but ")[1].split(";")[0])
    assert set(left_out) == run_flags - set(options)  # the sample flags it says it lacks are those it lacks
    assert re.search(rf"\b{AUTO}(:|'s| with)", " ".join(helps("sample").values()))  # sample's do: the check bites
