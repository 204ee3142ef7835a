"""Built-ins: type tests, ``ifThenElse``, conversions, rounding and arithmetic, ``eval``, ``unparse``,
``debug``, ``random``, ``interval`` -- each as HTCondor's ``fnCall.cpp`` behaves (arity errors are
``ERROR``; what each does with UNDEFINED is per function and noted where it is not the obvious)."""

from __future__ import annotations

import math
import random as _random
from collections.abc import Callable
from typing import Any, Final

from ._builtins import Library
from ._coerce import c_int, to_int, to_real, to_string
from ._eval import MAX_ATTR_DEPTH, compile_node
from ._logic import truth
from ._parser import parse_expr
from ._unparse import unparse
from ._values import ERROR, UNDEFINED, AbsTime, ClassAdSyntaxError, RelTime, wrap

Value = Any
LIBRARY = Library()
builtin, strict = LIBRARY.builtin, LIBRARY.strict
Fn = Callable[[Any, Any], Value]


def _is_ad(value: Value) -> bool:
    return hasattr(value, "_ex")


_TYPE_TESTS: Final[dict[str, Callable[[Value], bool]]] = {
    "isUndefined": lambda v: v is UNDEFINED,
    "isError": lambda v: v is ERROR,
    "isString": lambda v: type(v) is str,
    "isInteger": lambda v: type(v) is int,
    "isReal": lambda v: type(v) is float,
    "isList": lambda v: isinstance(v, list),
    "isClassAd": _is_ad,
    "isBoolean": lambda v: type(v) is bool,
    "isAbstime": lambda v: type(v) is AbsTime,
    "isReltime": lambda v: type(v) is RelTime,
}


def _type_test(test: Callable[[Value], bool]) -> Callable[[list[Value]], Value]:
    return lambda args: test(args[0]) if len(args) == 1 else ERROR


for _name, _test in _TYPE_TESTS.items():
    strict(_name)(_type_test(_test))


@builtin("ifThenElse")
def if_then_else(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
    if len(args) != 3:
        return ERROR
    test = args[0](env, scope)
    if type(test) is str:
        return ERROR
    test = truth(test)
    if test is True:
        return args[1](env, scope)
    if test is False:
        return args[2](env, scope)
    return test


@strict("int")
def int_(args: list[Value]) -> Value:
    return to_int(args[0]) if len(args) == 1 else ERROR


@strict("real")
def real_(args: list[Value]) -> Value:
    return to_real(args[0]) if len(args) == 1 else ERROR


@strict("string")
def string_(args: list[Value]) -> Value:
    return to_string(args[0]) if len(args) == 1 else ERROR


@strict("bool")
def bool_(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    value = args[0]
    kind = type(value)
    if kind is bool:
        return value
    if kind is int or kind is float:
        return value != 0
    if kind is str:
        lowered = value.lower()
        return True if lowered == "true" else False if lowered == "false" else UNDEFINED
    if kind is RelTime:
        return c_int(value.secs) != 0
    return UNDEFINED if value is UNDEFINED else ERROR


def _rounding(op: Callable[[float], float]) -> Callable[[list[Value]], Value]:
    def rounding(args: list[Value]) -> Value:
        if len(args) != 1:
            return ERROR
        value = args[0]
        if type(value) is int:
            return value
        real = to_real(value)
        return ERROR if type(real) is not float else c_int(op(real))
    return rounding


def _rint(value: float) -> float:
    return value if math.isinf(value) or math.isnan(value) else float(round(value))


strict("floor")(_rounding(lambda v: v if math.isinf(v) or math.isnan(v) else float(math.floor(v))))
strict("ceil", "ceiling")(_rounding(lambda v: v if math.isinf(v) or math.isnan(v) else float(math.ceil(v))))
strict("round")(_rounding(_rint))


def _c_pow(base: float, exponent: float) -> float:
    try:
        result = math.pow(base, exponent)
    except OverflowError:
        return math.inf if base > 0 or exponent % 2 == 0 else -math.inf
    except ValueError:
        return math.inf if base == 0 else math.nan
    return result


@strict("pow")
def pow_(args: list[Value]) -> Value:
    if len(args) != 2:
        return ERROR
    value, power = args
    if type(value) is int and type(power) is int and power >= 0:
        return c_int(_c_pow(float(value), float(power)) + 0.5)
    real, real_power = to_real(value), to_real(power)
    if type(real) is not float or type(real_power) is not float:
        return ERROR
    return _c_pow(real, real_power)


def _quantize_list(value: Value, real: float, items: list[Value]) -> tuple[Value, Value]:
    """The first item not below ``real`` (the answer), else the last item to quantize on."""
    last: Value = 0.0
    for item in items:
        converted = to_real(item)
        if type(converted) is not float:
            return ERROR, None
        if converted >= real:
            return item, None
        last = item
    return None, last


@strict("quantize")
def quantize(args: list[Value]) -> Value:
    if len(args) != 2:
        return ERROR
    value, base = args
    real = to_real(value)
    if type(real) is not float:
        return ERROR
    if isinstance(base, list):
        answer, base = _quantize_list(value, real, base)
        if answer is not None:
            return answer
    real_base = to_real(base)
    if type(real_base) is not float:
        return ERROR
    if type(base) is int:
        if base == 0:
            return value
        if type(value) is int:
            return wrap(_c_div(wrap(value + base - 1), base) * base)  # 64-bit, as the C code overflows
        return _fceil(real / base) * base
    if -1e-8 <= real_base <= 1e-8:
        return value
    return _fceil(real / real_base) * real_base


def _fceil(value: float) -> float:
    return value if math.isnan(value) or value in (math.inf, -math.inf) else float(math.ceil(value))


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@strict("random")
def random_(args: list[Value]) -> Value:
    if len(args) > 1:
        return ERROR
    limit = args[0] if args else 1.0
    if type(limit) is int:
        return _random.randrange(1 << 31) % limit if limit > 0 else ERROR
    if type(limit) is float:
        return limit * _random.random()
    return ERROR


@builtin("eval")
def eval_(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
    if len(args) != 1:
        return ERROR
    text = to_string(args[0](env, scope))
    if type(text) is not str:
        return ERROR
    fn = _compile_text(text)
    if fn is None or env.depth >= MAX_ATTR_DEPTH:
        return ERROR
    env.depth += 1
    value = fn(env, scope)
    env.depth -= 1
    return value


_EVAL_CACHE: dict[str, Fn | None] = {}
_EVAL_CACHE_LIMIT: Final = 1024


def _compile_text(text: str) -> Fn | None:
    """The closure of the expression ``text`` (None if it is not one), kept for the next call."""
    if text in _EVAL_CACHE:
        return _EVAL_CACHE[text]
    try:
        fn: Fn | None = compile_node(parse_expr(text))
    except ClassAdSyntaxError:
        fn = None
    if len(_EVAL_CACHE) >= _EVAL_CACHE_LIMIT:
        _EVAL_CACHE.clear()
    _EVAL_CACHE[text] = fn
    return fn


def unparse_(env: Any, scope: Any, args: tuple[Any, ...]) -> Value:
    node = args[0]
    call_args = node[2]
    if len(call_args) != 1 or call_args[0][0] not in ("attr", "absattr", "sel"):
        return ERROR
    target = call_args[0]
    if target[0] != "attr" or scope is None:
        return ""
    expr = scope._ex.get(target[1].lower())
    return "" if expr is None else unparse(expr.node, condor=True)


unparse_.wants_node = True  # type: ignore[attr-defined]
builtin("unparse")(unparse_)


@builtin("debug")
def debug(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
    return args[0](env, scope) if len(args) == 1 else ERROR


def _c_divmod(a: int, b: int) -> tuple[int, int]:
    q = _c_div(a, b)
    return q, a - q * b


@strict("interval")
def interval(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    total = to_int(args[0])
    if type(total) is not int:
        return ERROR
    total = ((total & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000  # HTCondor reads it into a C int
    days, total = _c_divmod(total, 86400)
    hours, total = _c_divmod(total, 3600)
    minutes, seconds = _c_divmod(total, 60)
    if days:
        return f"{days}+{abs(hours):02d}:{abs(minutes):02d}:{abs(seconds):02d}"
    if hours:
        return f"{hours}:{abs(minutes):02d}:{abs(seconds):02d}"
    if minutes:
        return f"{minutes}:{abs(seconds):02d}"
    return str(seconds)
