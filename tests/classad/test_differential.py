"""Differential conformance: sheaf's ClassAd evaluation against the official library (``classad2``).

``test_bulk_differential`` generates ``CASES`` random cases (expression, MY ad, TARGET ad) from the
seeded grammar generator ``_gen`` and compares value and type in both modes -- compat, and strict with
``_CONDOR_STRICT_CLASSAD_EVALUATION=true`` (each mode's oracle runs in its own subprocess, the two in
parallel).  It prints how many cases exercised each operator and built-in and fails if any was
exercised fewer than ``MIN_PER_FEATURE`` times.  ``test_hypothesis_differential`` does the same one
example at a time with a hypothesis strategy over the grammar, against the library in this process.

Deliberate differences that the comparison tolerates (``_differential.same``): the binding hands
back unevaluated list elements (they are not compared); attribute order when an ad literal is turned
into text (the library uses its hash order, sheaf the source order); inputs that crash the library
or make its evaluation fail outright.  ``evalInEachContext``/``countMatches`` get literal lists of ads
whose attribute names MY and TARGET do not use (which scope wins otherwise is murky in the library).

The cases also carry the language constructs (``_differential.CONSTRUCTS``:
adjacent string literals, ``;;`` in ads, old-syntax ads with backslashes in strings, ``-INF``,
``stringListSubsetMatch`` with blank items, fractional ``relTime``, lenient ``absTime``,
``countMatches``/``evalInEachContext`` with an attribute reference, ``unresolved()``); the test prints
how many cases carried each and how many of those mismatched, and fails if one is carried by fewer
than ``MIN_PER_FEATURE`` cases.

Known and not copied: after ``unresolved``, ``countMatches`` or ``evalInEachContext`` has run, the
official library reads a later ``TARGET.`` reference of the same evaluation as UNDEFINED
(``unresolved(nosuch) && TARGET.e`` with ``e = error`` is UNDEFINED there, ``undefined && TARGET.e``
is ERROR; ``(countMatches(q, {}) == 0) && TARGET.e`` likewise).  Mismatches in cases that use those
functions are reported, and fail only above one per 5,000 cases.
"""

from __future__ import annotations

import os
import re

import _differential
import _gen
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sheaf import classad

_EACH = re.compile(r"(?i)(evalInEachContext|countMatches|unresolved)\(")
CASES = int(os.environ.get("SHEAF_CLASSAD_DIFF_CASES", "50000"))  # per mode: 2 x 50,000 compared in CI
MIN_PER_FEATURE = 50
SEED = 20261122


def test_bulk_differential(capsys: pytest.CaptureFixture[str]) -> None:
    cases = _gen.batch(SEED, CASES)
    mismatches, crashes = _differential.run(cases)
    counts = _differential.coverage(cases)
    features = [f"unary {op}" for op in _gen.UNARY_OPS] + [
        {"=?=": "is", "=!=": "isnt"}.get(op, op) for op in _gen.BINARY_OPS] + [
        "?:", "elvis", "select", "subscript", "list", "ad"] + [f"{name.lower()}()" for name in _gen.FUNCTIONS]
    with capsys.disabled():
        print(f"\nClassAd differential: {2 * len(cases)} evaluations ({len(cases)} cases x compat+strict), "
              f"{crashes} crashed the official library; mismatches compat={len(mismatches['compat'])} "
              f"strict={len(mismatches['strict'])}")
        print("cases per feature: "
              + ", ".join(f"{f}={counts[f]}" for f in sorted(features, key=counts.__getitem__)))
    table = {mode: _differential.per_construct(cases, reported) for mode, reported in mismatches.items()}
    with capsys.disabled():
        print("Language-list constructs (cases, compat mismatches, strict mismatches): " + ", ".join(
            f"{name}=({count}, {wrong}, {table['strict'][name][1]})"
            for name, (count, wrong) in table["compat"].items()))
    rare = {f: counts[f] for f in features if counts[f] < MIN_PER_FEATURE}
    rare.update({name: count for name, (count, _) in table["compat"].items() if count < MIN_PER_FEATURE})
    assert not rare, f"features exercised fewer than {MIN_PER_FEATURE} times: {rare}"
    for mode, reported in mismatches.items():
        # evalInEachContext/countMatches/unresolved inside larger expressions differ now and then
        # (about 1 case in 5,000): the official library's later TARGET lookups after them (see the
        # module docstring).  Those are reported, not failed; every other mismatch fails.
        murky = [line for line in reported if _EACH.search(line)]
        bad = [line for line in reported if not _EACH.search(line)]
        if murky:
            with capsys.disabled():
                print(f"{mode}: {len(murky)} known evalInEachContext/countMatches/unresolved "
                      "difference(s):\n  "
                      + "\n  ".join(line[:300] for line in murky))
        assert len(murky) <= len(cases) // 5000, (
            f"too many evalInEachContext/countMatches/unresolved differences: {len(murky)}")
        assert not bad, f"{len(bad)} {mode} mismatches, first ones:\n" + "\n".join(bad[:10])


# -- one at a time, with hypothesis ------------------------------------------------------------

_LEAVES = st.sampled_from(["0", "1", "-3", "7", "2.5", "-0.5", "1e308", '"abc"', '"ABC"', '""', "true",
                           "false", "undefined", "error", "a", "b", "x", "MY.a", "TARGET.a", "TARGET.x",
                           "nested.inner", "Memory", '"1,2"', "{1, 2}", "{}", "[a = 1]"])


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from(_gen.BINARY_OPS), children).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})")
    unary = st.tuples(st.sampled_from(_gen.UNARY_OPS), children).map(lambda t: f"{t[0]}({t[1]})")
    cond = st.tuples(children, children, children).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})")
    elvis = st.tuples(children, children).map(lambda t: f"({t[0]}) ?: ({t[1]})")
    call = st.tuples(st.sampled_from(sorted(_gen.FUNCTIONS)), st.lists(children, max_size=3)).map(
        lambda t: f"{t[0]}({', '.join(t[1])})")
    listed = st.lists(children, max_size=3).map(lambda items: "{" + ", ".join(items) + "}")
    subscript = st.tuples(children, children).map(lambda t: f"({t[0]})[{t[1]}]")
    return binary | unary | cond | elvis | call | listed | subscript


EXPRESSIONS = st.recursive(_LEAVES, _extend, max_leaves=25)
MY_AD = "[a = 1; b = a + 1; x = TARGET.x; nested = [inner = b * 2]; Memory = 2048]"
TARGET_AD = '[a = "s"; x = 10; Memory = 512; Requirements = MY.Memory > 1000]'


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRESSIONS)
def test_hypothesis_differential(text: str) -> None:
    import classad2
    import htcondor2  # noqa: F401  (before classad2)
    try:
        theirs_expr = classad2.ExprTree(text)
    except Exception:  # noqa: BLE001  (whatever the binding raises for bad text)
        with pytest.raises(classad.ClassAdSyntaxError):
            classad.parse(text)
        return
    import _oracle_worker
    try:
        theirs = _oracle_worker.normalise(theirs_expr.eval(classad2.ClassAd(MY_AD),
                                                           classad2.ClassAd(TARGET_AD)))
    except Exception:  # noqa: BLE001  (the binding raises when its evaluation fails outright)
        return

    mine = _differential.normalise(classad.evaluate(text, my=MY_AD, target=TARGET_AD))
    assert _differential.same(mine, theirs), f"{text!r}: sheaf {mine!r} != htcondor {theirs!r}"
