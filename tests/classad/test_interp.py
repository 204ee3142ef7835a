"""Interpret first, compile on the next use: the first evaluation and the later ones agree.

``_eval.compiled`` walks the nodes on an expression's first use (``_eval.interpret``) and compiles it to
closures on the second; both must give the same value for every expression, in both modes.  The
grammar generator's cases are evaluated both ways, each with fresh ads (whose own attributes are
then also interpreted, then compiled).
"""

from __future__ import annotations

from typing import Any

import _gen
import pytest

from sheaf.classad import ClassAd, ClassAdSyntaxError, Expr
from sheaf.classad._classad import evaluate_in
from sheaf.classad._eval import Env, compile_node, interpret
from sheaf.classad._functions import FUNCTIONS
from sheaf.classad._parser import parse_expr


def shown(value: Any) -> tuple[type, str]:
    return type(value), repr(value)


def run(way: str, text: str, my: str | None, target: str | None, strict: bool) -> Any:
    node = parse_expr(text)
    my_ad = ClassAd(my) if my is not None else None
    target_ad = ClassAd(target) if target is not None else None
    env = Env(my_ad, target_ad, strict, ClassAd, FUNCTIONS)
    fn = compile_node(node) if way == "compiled" else (lambda env, scope: interpret(node, env, scope))
    try:
        return fn(env, my_ad)
    except RecursionError:
        return "RecursionError"


@pytest.mark.parametrize("strict", [False, True])
def test_first_and_later_evaluations_agree(strict: bool) -> None:
    compared = 0
    for text, my, target in _gen.batch(7, 2500):
        try:
            first = run("interpreted", text, my, target, strict)
        except ClassAdSyntaxError:  # the generator's text is now and then not ClassAd syntax
            continue
        assert shown(first) == shown(run("compiled", text, my, target, strict)), (text, my, target)
        compared += 1
    assert compared > 2000


def test_an_expression_is_interpreted_once_then_compiled() -> None:
    expr = Expr(parse_expr("TARGET.Memory >= 1024 && Cpus > 1"))
    job, slot = ClassAd({"Cpus": 2}), ClassAd({"Memory": 2048})
    assert evaluate_in(expr, job, slot) is True
    assert expr._fn is None  # the first use built nothing
    assert evaluate_in(expr, job, slot) is True
    assert expr._fn is not None  # the second compiled it
    assert evaluate_in(expr, job, ClassAd({"Memory": 512})) is False
