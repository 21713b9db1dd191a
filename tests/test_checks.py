"""The argument checks every layer refuses bad input with (infill/errors.py)."""

import math

import pytest

from infill.errors import (
    InfillError,
    at_least,
    finite_number,
    is_integer,
    is_number,
    number_in,
    one_of,
    positive_integer,
)


def test_predicates():
    assert is_integer(3) and is_integer(0, 0) and not is_integer(0, 1)
    assert not any(is_integer(v) for v in (True, 2.0, "2", None))
    assert is_number(0.5, 0, 1) and is_number(0, 0, 1) and not is_number(0, 0, 1, open_low=True)
    assert not is_number(1, 0, 1, open_high=True) and not is_number(2, 0, 1)
    assert not any(is_number(v) for v in (True, math.nan, math.inf, "1", None))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: positive_integer("steps", 0), "steps must be a positive integer, got 0"),
        (lambda: positive_integer("seed", -1, minimum=0), "seed must be an integer >= 0, got -1"),
        (lambda: positive_integer("top", True), "top must be a positive integer, got True"),
        (lambda: finite_number("step_size", "abc"), "step_size must be a finite number, got 'abc'"),
        (lambda: at_least("smc tilt", -1.0, 0), "smc tilt must be a number >= 0, got -1.0"),
        (lambda: number_in("smc ess", 1.5, 0, 1), r"smc ess must be in \[0, 1\], got 1.5"),
        (lambda: one_of("decode", "best", ("visited", "final")), "decode must be one of visited, final, got 'best'"),
    ],
)
def test_checks_refuse_in_one_line(call, message):
    with pytest.raises(InfillError, match=f"^{message}$"):
        call()


def test_checks_return_what_they_accept():
    assert positive_integer("n", 2) == 2 and finite_number("x", 1) == 1.0 and number_in("p", 1, 0, 1) == 1.0
    assert at_least("t", 0, 0) == 0.0 and one_of("o", "a", ("a", "b")) == "a"


def test_one_of_refuses_what_is_no_string():
    with pytest.raises(InfillError, match=r"^task must be one of a, b, got \['a'\]$"):
        one_of("task", ["a"], {"a": 1, "b": 2})
