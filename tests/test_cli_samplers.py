"""``infill samplers`` lists every method ``--sampler`` takes, grouped, with the options each takes and their
defaults as the code has them."""

import json
import re

import pytest

from infill.cli import main
from infill.cli.samplers import GROUPS
from infill.errors import InfillError
from infill.onepass.methods import ONE_PASS
from infill.onepass.particles import SMC
from infill.pipeline.config import AUTO, RunConfig
from infill.samplers import SAMPLERS, make_sampler, options_of, sampler_options


def listing(capsys, *args) -> str:
    assert main(["samplers", *args]) == 0
    return capsys.readouterr().out


def accepted() -> set[str]:
    """The names ``--sampler`` takes, as its refusal of an unknown one lists them, each checked to be taken."""
    with pytest.raises(InfillError) as refusal:
        RunConfig.create(method="no-such-method")
    choices = str(refusal.value).partition("choose from ")[2]
    names = set(re.findall(r"[a-z][\w-]*", choices)) - {"or", "a", "baseline"}
    for name in names:
        RunConfig.create(method=name, top=1)
    assert names >= {AUTO, *SAMPLERS, *ONE_PASS}
    return names


def test_every_name_sampler_takes_is_listed_once_with_a_summary(capsys):
    rows = [json.loads(line) for line in listing(capsys, "--json").splitlines()]
    names = [row["name"] for row in rows]
    assert sorted(names) == sorted(accepted()) and len(set(names)) == len(names)
    assert all(row["summary"] and row["group"] in GROUPS for row in rows), rows
    assert [row["group"] for row in rows] == sorted((row["group"] for row in rows), key=list(GROUPS).index)
    text = listing(capsys)
    listed = re.findall(r"^  (\S+)  ", text, re.M)
    assert listed == names and all(f"{group}: " in text for group in GROUPS)


def test_options_and_defaults_are_the_codes(capsys):
    by_name = {row["name"]: row for row in map(json.loads, listing(capsys, "--json").splitlines())}
    assert by_name["smc"]["options"] == options_of(SMC()) and by_name["smc"]["group"] == "particles and search"
    assert {"tilt", "weight", "moves"} <= set(by_name["smc"]["options"])
    assert all(by_name[name]["options"] == sampler_options(name) for name in SAMPLERS)
    assert by_name[AUTO]["options"] == {} and by_name["left-to-right"]["group"] == "one-pass orders"
    assert "product search" in by_name[AUTO]["summary"] and "Needs --top" in by_name["product-search"]["summary"]
    assert by_name[AUTO]["summary"].count("with --top") == 1  # said once, by the rule's own words
    text = listing(capsys)
    assert "tilt=1.0" in text and "step_size=0.1" in text and "--target-accept" not in text
    for name, row in by_name.items():  # every listed option is one the method takes
        for key, value in row["options"].items():
            RunConfig.create(method=name, top=1, **{key: value})


def test_the_registry_has_every_method_once_with_its_kind_options_and_sampler():
    from infill.onepass.methods import KINDS, methods

    registry = methods()
    assert sorted(registry) == sorted({*SAMPLERS, *ONE_PASS}) and list(registry)[: len(SAMPLERS)] == sorted(SAMPLERS)
    assert [m.kind for m in registry.values()] == sorted((m.kind for m in registry.values()), key=KINDS.index)
    dmala = registry["dmala"]
    assert dmala.kind == "chains" and dmala.untaken == () and dmala.options() == sampler_options("dmala")
    assert dmala.sampler is SAMPLERS["dmala"] and make_sampler("dmala", step_size=0.3).sampler.step_size == 0.3
    assert registry["smc"].options() == options_of(SMC()) and registry["argmax"].options() == {}


def test_the_samplers_named_before_torch_loads_are_the_ones_the_package_registers():
    """The registry names the package's samplers without importing them (an unknown name costs no torch): the
    same names, in the order importing :mod:`infill.samplers` registers them."""
    from infill.lm.registry import BUILT_IN_SAMPLERS, sampler_names

    assert tuple(name for name, cls in SAMPLERS.items() if cls.__module__.startswith("infill.")) == BUILT_IN_SAMPLERS
    assert sampler_names() == sorted(SAMPLERS)  # once imported, the names are the registry's
