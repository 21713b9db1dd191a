"""A run is a typed plan (:func:`infill.pipeline.policy.resolve`): the kind, the method's settings without ``top``
and ``budget``, the budget split and the keep rule, every budget refusal before any model work."""

from types import SimpleNamespace

import pytest

from infill.errors import InfillError
from infill.pipeline.choose import DIVERSE_POOL, FINALISTS
from infill.pipeline.config import AUTO_BUDGET_PER_BLANK, RunConfig
from infill.pipeline.policy import KINDS, Keep, Spend, resolve
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
    assert plan.config.top is None and plan.config.budget is None  # no later stage can read them
    assert plan.keep.top == config.top
    if config.method == "auto" and kind in ("search", "chains", "particles"):
        assert plan.spend.limit == AUTO_BUDGET_PER_BLANK * d
    assert plan.steps == (plan.config.steps if kind == "chains" else 0)


def test_every_kind_has_its_module_and_word_blanks_plan_the_span_sampler():
    assert set(EXECUTE) == set(KINDS)
    plan = resolve(RunConfig.create(top=3, budget=500), WORDS)
    assert plan.kind == "spans" and plan.keep == Keep(3, "visited", None) and plan.spend == Spend(500)


def test_chains_hold_back_what_choosing_takes_and_lower_precision_the_float32_finalists():
    config = RunConfig.create(method="gibbs", num_samples=8, top=2, decode="diverse", budget=400)
    plan = resolve(config, blanks(3))
    assert plan.spend == Spend(400, 3 * 2, 0)
    lower = resolve(config, blanks(3), lower_precision=True)
    assert lower.spend == Spend(400, 3 * 2, 3 * FINALISTS * 2 * DIVERSE_POOL)
    constrained = resolve(config, blanks(3), constrained=True, lower_precision=True)
    assert constrained.spend.float32 == 3 * 2  # with terms, the reported fillings' float32 PLLs


def test_a_budget_that_cannot_pay_the_float32_re_scoring_is_refused_by_the_plan_in_one_line():
    config = RunConfig.create(method="gibbs", num_samples=4, top=2, init="confident-first", decode="diverse", budget=30)
    resolve(config, blanks(3))  # enough in float32
    with pytest.raises(InfillError, match="re-scored in float32: at least") as caught:
        resolve(config, blanks(3), lower_precision=True)
    assert "\n" not in str(caught.value)
