"""A run is a typed plan (:func:`infill.pipeline.policy.resolve`): the kind, the method's settings without ``top``
and ``budget``, the budget split and the keep rule, every budget refusal before any model work."""

from types import SimpleNamespace

import pytest

from infill.errors import InfillError
from infill.pipeline.config import AUTO_BUDGET_PER_BLANK, RunConfig
from infill.pipeline.policy import DIVERSE_POOL, FINALISTS, KINDS, Keep, Spend, resolve
from infill.pipeline.postprocess import CHOICES
from infill.pipeline.runs import EXECUTE


def blanks(d: int) -> SimpleNamespace:
    return SimpleNamespace(fixed=True, num_blanks=d)


WORDS = SimpleNamespace(fixed=False)


@pytest.mark.parametrize(
    "options, d, kind",
    [
        ({"top": 5}, 1, "one-pass"),
        ({"top": 5}, 2, "search"),
        ({"top": 5}, 3, "particles"),
        ({"top": 5}, 5, "particles"),
        ({"top": 5}, 6, "particles"),
        ({}, 3, "chains"),
        ({}, 6, "one-pass"),
        ({"method": "gibbs", "top": 2}, 6, "chains"),
        ({"method": "left-to-right"}, 3, "one-pass"),
    ],
)
def test_the_plan_names_its_kind_and_keeps_top_and_budget_apart(options, d, kind):
    config = RunConfig.create(**options)
    plan = resolve(config, blanks(d))
    assert plan.kind == kind and plan.kind in EXECUTE
    assert not hasattr(plan.settings, "top") and not hasattr(plan.settings, "budget")  # no later stage reads them
    assert plan.keep.top == config.top and plan.goal == ("samples" if config.top is None else "best")
    if config.method == "auto" and kind in ("search", "chains", "particles"):
        assert plan.spend.limit == AUTO_BUDGET_PER_BLANK * d
    assert plan.steps == (plan.settings.steps if kind == "chains" else 0)


def test_every_kind_has_its_module_and_word_blanks_plan_the_span_sampler():
    assert set(EXECUTE) == set(KINDS) == set(CHOICES)
    plan = resolve(RunConfig.create(top=3, budget=500), WORDS)
    assert plan.kind == "spans" and plan.keep == Keep(3, "visited", None) and plan.spend == Spend(500)


def test_chains_hold_back_what_choosing_takes_and_lower_precision_the_float32_finalists():
    config = RunConfig.create(method="gibbs", num_samples=8, top=2, decode="diverse", budget=400)
    plan = resolve(config, blanks(3))
    assert plan.spend == Spend(400, 3 * 2, 0, blanks=3, settled=3 * 2)
    lower = resolve(config, blanks(3), lower_precision=True)
    assert lower.spend == Spend(400, 3 * 2, 3 * FINALISTS * 2 * DIVERSE_POOL, blanks=3, settled=3 * 2)
    constrained = resolve(config, blanks(3), constrained=True, lower_precision=True)
    assert constrained.spend.rescoring == 3 * 2  # with terms, the reported fillings' float32 PLLs


def test_a_budget_that_cannot_pay_the_float32_re_scoring_is_refused_by_the_plan_in_one_line():
    config = RunConfig.create(method="gibbs", num_samples=4, top=2, init="confident-first", decode="diverse", budget=30)
    resolve(config, blanks(3))  # enough in float32
    with pytest.raises(InfillError, match="re-scored in float32: at least") as caught:
        resolve(config, blanks(3), lower_precision=True)
    assert "\n" not in str(caught.value)


def test_the_request_is_checked_without_torch():
    """``RunConfig`` is built and checked where torch is not installed (the CLI validates before loading a model):
    a sampler's name there too, its options then where the sampler is built."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from infill.pipeline.config import RunConfig\n"
        "RunConfig(); RunConfig.create(method='gibbs', num_samples=4, top=2, step_size=0.5)\n"
        "RunConfig.create(method='left-to-right', top=3, budget=200)\n"
        "try:\n    RunConfig.create(method='nope')\n"
        "except ValueError as exc:\n    assert str(exc).startswith(\"unknown sampler 'nope'; choose from auto, avg,\")\n"
        "else:\n    raise SystemExit('an unknown sampler was accepted')\n"
        "assert sys.modules['torch'] is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_resolving_checks_the_request_once(monkeypatch):
    """The plan's settings are built from the checked request without checking it again."""
    config = RunConfig.create(top=5)
    monkeypatch.setattr(RunConfig, "__post_init__", lambda self: pytest.fail("the request was checked again"))
    for d in (1, 2, 3, 6, 12):
        resolve(config, blanks(d))
    resolve(config, WORDS)
