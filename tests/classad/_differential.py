"""Differential testing against the official ClassAd library: run the oracle in a subprocess per
mode, evaluate the same cases with sheaf, compare value and type, count operator/function coverage."""

from __future__ import annotations

import collections
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from sheaf import classad
from sheaf.classad import ERROR, UNDEFINED, AbsTime, ClassAd, RelTime

WORKER = Path(__file__).with_name("_oracle_worker.py")
Case = tuple[str, "str | None", "str | None"]


def run_oracle(cases: list[Case], strict: bool, workdir: str) -> list[Any]:
    """The official library's results for ``cases`` in one mode.  A case that crashes it (a
    segfault) gets ``["crash"]`` and the worker restarts after it."""
    tag = "strict" if strict else "compat"
    cases_path, results_path = os.path.join(workdir, f"{tag}-in.json"), os.path.join(workdir, f"{tag}.jsonl")
    with open(cases_path, "w") as f:
        json.dump(cases, f)
    env = dict(os.environ, CONDOR_CONFIG="/dev/null")
    env.pop("_CONDOR_STRICT_CLASSAD_EVALUATION", None)
    if strict:
        env["_CONDOR_STRICT_CLASSAD_EVALUATION"] = "true"
    done = 0
    while done < len(cases):
        code = subprocess.run([sys.executable, str(WORKER), cases_path, results_path, str(done)], env=env,
                              timeout=900, check=False).returncode
        with open(results_path) as f:
            done = sum(1 for _ in f)
        if code != 0 and done < len(cases):
            with open(results_path, "a") as f:
                f.write(json.dumps(["crash"]) + "\n")
            done += 1
    with open(results_path) as f:
        return [json.loads(line) for line in f]


def normalise(value: Any) -> Any:
    if value is UNDEFINED:
        return ["undef"]
    if value is ERROR:
        return ["error"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["real", repr(value)]
    if isinstance(value, RelTime):
        return ["real", repr(float(value.secs))]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, AbsTime):
        return ["abstime", int(value.secs)]
    if isinstance(value, ClassAd):
        return ["ad", sorted(key.lower() for key in value)]
    if isinstance(value, list):
        return ["list", [normalise(item) for item in value]]
    return ["other", repr(value)]


def ours(cases: list[Case], strict: bool) -> list[Any]:
    ads: dict[tuple[str, str], ClassAd] = {}

    def ad(text: str | None, role: str) -> ClassAd | None:
        # one object per text and role: MY and TARGET are never the same object
        if text is None:
            return None
        if (text, role) not in ads:
            ads[text, role] = ClassAd.parse(text) if text.startswith("[") else ClassAd.parse_old(text)
        return ads[text, role]

    results = []
    for expr_text, my_text, target_text in cases:
        try:
            expr = classad.parse(expr_text)
            my, target = ad(my_text, "my"), ad(target_text, "target")
        except classad.ClassAdSyntaxError:
            results.append(["syntax"])
            continue
        results.append(normalise(expr.evaluate_in(my, target, strict)))
    return results


def same(mine: Any, theirs: Any) -> bool:
    if theirs[0] in ("expr", "crash", "exception"):
        return True  # an unevaluated list element; the library crashed or failed to evaluate
    if mine[0] == theirs[0] == "str" and "[" in theirs[1] and sorted(mine[1]) == sorted(theirs[1]):
        return True  # an ad literal turned into text: the library writes attributes in hash order
    if mine[0] == theirs[0] == "abstime":
        return abs(mine[1] - theirs[1]) <= 5  # absTime() with no argument is "now"
    if mine[0] != theirs[0]:
        return False
    if mine[0] == "list":
        return len(mine[1]) == len(theirs[1]) and all(
            same(a, b) for a, b in zip(mine[1], theirs[1], strict=True))
    if mine[0] == "real":
        a, b = float(mine[1]), float(theirs[1])
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12)
    return bool(mine == theirs)


def coverage(cases: list[Case]) -> collections.Counter[str]:
    """How many cases exercise each operator and built-in (expression and ads together)."""
    counts: collections.Counter[str] = collections.Counter()
    for case in cases:
        seen: set[str] = set()
        for text in case:
            if text is None:
                continue
            try:
                node = classad.parse(text).node if text is case[0] else ClassAd(text)
            except classad.ClassAdSyntaxError:
                continue
            roots = [e.node for e in node._ex.values()] if isinstance(node, ClassAd) else [node]
            _walk(roots, seen)
        counts.update(seen)
    return counts


# The language constructs the differential cases cover, found in a case's text (expression and ads).
_STRING = r'"(?:[^"\\]|\\.)*"'
CONSTRUCTS: Final = {
    "adjacent strings": re.compile(_STRING + r"\s+\""),
    "empty statements ;;": re.compile(r"\[\s*;|;\s*;|;\s*\]"),
    "old-syntax ad": re.compile(r"\A(?!\[)\w+ = ", re.MULTILINE),
    "minus INF": re.compile(r'(?i)-real\("inf"\)|real\("-inf"\)'),
    "stringListSubsetMatch blank items": re.compile(
        r'(?i)stringListI?SubsetMatch\((?:"[ ,]*"|"a,,b"|"a, ,c")'),
    "fractional relTime": re.compile(r'(?i)relTime\("[^"]*\.\d'),
    "lenient absTime": re.compile(r'(?i)absTime\("\d{4}(?:-\d\d(?:-\d\dT?)?)?Z"|absTime\("\d{14}Z"'
                                  r'|absTime\("\d{4}-\d\d-\d\dT\d\dZ"'),
    "in-each-context reference": re.compile(
        r"(?i)(?:countMatches|evalInEachContext)\((?:MY\.)?(?:nested\.\w+|pe|qe),"),
    "unresolved()": re.compile(r"(?i)unresolved\("),
}


def constructs(case: Case) -> list[str]:
    """The Language-list constructs ``case`` exercises (by its text)."""
    texts = [text for text in case if text is not None]
    return [name for name, pattern in CONSTRUCTS.items() if any(pattern.search(text) for text in texts)]


def per_construct(cases: list[Case], reported: list[str]) -> dict[str, tuple[int, int]]:
    """``{construct: (cases, mismatches)}``; ``reported`` are ``compare``'s lines (they start with
    the case's repr)."""
    bad = {line.split(": sheaf ", 1)[0] for line in reported}
    table = {name: [0, 0] for name in CONSTRUCTS}
    for case in cases:
        for name in constructs(case):
            table[name][0] += 1
            table[name][1] += repr(case) in bad
    return {name: (count, wrong) for name, (count, wrong) in table.items()}


def _walk(stack: list[Any], seen: set[str]) -> None:
    while stack:
        node = stack.pop()
        kind = node[0]
        if kind in ("bin", "un"):
            seen.add(("unary " if kind == "un" else "") + node[1])
            stack.extend(node[2:])
        elif kind == "call":
            seen.add(node[1].lower() + "()")
            stack.extend(node[2])
        elif kind in ("cond", "elvis"):
            seen.add("?:" if kind == "cond" else "elvis")
            stack.extend(node[1:])
        elif kind in ("sel", "sub"):
            seen.add("select" if kind == "sel" else "subscript")
            stack.append(node[1])
            if kind == "sub":
                stack.append(node[2])
        elif kind == "list":
            seen.add("list")
            stack.extend(node[1])
        elif kind == "ad":
            seen.add("ad")
            stack.extend(value for _, value in node[1])
        elif kind == "paren":
            stack.append(node[1])


def compare(cases: list[Case], strict: bool, theirs: list[Any]) -> list[str]:
    mine = ours(cases, strict)
    return [f"{case!r}: sheaf {a!r} != htcondor {b!r}" for case, a, b in zip(cases, mine, theirs, strict=True)
            if not same(a, b)]


def run(cases: list[Case]) -> tuple[dict[str, list[str]], int]:
    """Both modes, the two oracles in parallel threads; the mismatches per mode and the number of
    cases that crashed the official library (not compared)."""
    from concurrent.futures import ThreadPoolExecutor
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(2) as pool:
        compat = pool.submit(run_oracle, cases, False, workdir)
        strict = pool.submit(run_oracle, cases, True, workdir)
        theirs_compat, theirs_strict = compat.result(), strict.result()
    crashes = sum(1 for result in theirs_compat + theirs_strict if result == ["crash"])
    return {"compat": compare(cases, False, theirs_compat),
            "strict": compare(cases, True, theirs_strict)}, crashes
