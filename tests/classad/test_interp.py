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
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.classad import ClassAd, ClassAdSyntaxError, Expr
from sheaf.classad._classad import evaluate_in
from sheaf.classad._eval import Env, compile_node, first_evaluation, interpret
from sheaf.classad._functions import FUNCTIONS
from sheaf.classad._parser import accelerator, parse_expr


def shown(value: Any) -> tuple[type, str]:
    return type(value), repr(value)


def run(way: str, text: str, my: str | None, target: str | None, strict: bool) -> Any:
    node = parse_expr(text)
    my_ad = ClassAd(my) if my is not None else None
    target_ad = ClassAd(target) if target is not None else None
    env = Env(my_ad, target_ad, strict, ClassAd, FUNCTIONS)
    if way == "compiled":
        fn = compile_node(node)
    elif way == "first":  # the C walk where it answers, else the Python walk
        fn = lambda env, scope: first_evaluation(Expr(node), env, scope)  # noqa: E731
    else:
        fn = lambda env, scope: interpret(node, env, scope)  # noqa: E731
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
        assert shown(first) == shown(run("first", text, my, target, strict)), (text, my, target)
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


_OPERANDS = st.sampled_from([
    "0", "1", "-3", "2.5", "0.0", "-0.0", "1e308", '"abc"', '"ABC"', '"abd"', '""', '"é"', "true", "false",
    "undefined", "error", "a", "b", "s", "t", "u", "e", "missing", "TARGET.a", "TARGET.s", "TARGET.b",
    "TARGET.missing", "target.A", "MY.a", "(a)", "(TARGET.s)", "TARGET.lst", "TARGET.my",
])
_OPS = st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "&&", "||", "=?=", "+"])
_SIMPLE = st.recursive(_OPERANDS, lambda inner: st.tuples(inner, _OPS, inner).map(
    lambda t: f"{t[0]} {t[1]} {t[2]}" if t[1] in ("&&", "||") else f"({t[0]} {t[1]} {t[2]})"), max_leaves=6)
_MY = '[a = 3; b = true; s = "Abc"; t = 2.5; u = undefined; e = error; f = a + 1]'
_TARGET = '[a = 2; b = 0; s = "abc"; lst = {1}; my = 1; x = a]'


@settings(max_examples=300, deadline=None)
@given(_SIMPLE, st.booleans())
def test_the_compiled_first_evaluation_agrees_where_it_answers(text: str, strict: bool) -> None:
    ways = {way: shown(run(way, text, _MY, _TARGET, strict)) for way in ("first", "interpreted", "compiled")}
    assert ways["first"] == ways["interpreted"] == ways["compiled"], text


def test_the_compiled_first_evaluation_answers_the_common_shapes() -> None:
    quick = accelerator()
    if quick is None:
        pytest.skip("the compiled parser is switched off")
    job, slot = ClassAd(_MY), ClassAd(_TARGET)
    for text in ('TARGET.s == "ABC" && TARGET.a >= 2 && a > TARGET.b', "TARGET.missing < 1 || b",
                 '(s != "abc") || t < 2'):
        value = quick.first_evaluation(parse_expr(text), job, job, slot)
        assert value is not None and shown(value) == shown(run("compiled", text, _MY, _TARGET, False))
    assert quick.first_evaluation(parse_expr("f > 1"), job, job, slot) is None  # not a constant: Python


def test_every_comparison_of_every_pair_of_operands() -> None:
    operands = ['"abc"', '"ABC"', '"abd"', '"ab"', '""', '"é"', "0", "-3", "2.5", "true", "false",
                "undefined", "error", "TARGET.s", "s", "TARGET.b", "b", "u", "e", "TARGET.CurrentTime"]
    for op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
        for a in operands:
            for b in operands:
                text = f"{a} {op} {b}"
                assert shown(run("first", text, _MY, _TARGET, False)) == shown(
                    run("compiled", text, _MY, _TARGET, False)), text
