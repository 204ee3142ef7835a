"""Evaluate cases with the official library (run as a subprocess: the evaluation mode is fixed by
``_CONDOR_STRICT_CLASSAD_EVALUATION`` before the library loads).

    python _oracle_worker.py CASES.json RESULTS.jsonl START

CASES is a JSON list of ``[expression, my_ad_or_null, target_ad_or_null]``; from case START on, one
normalised value per case (see ``normalise``) is appended to RESULTS as a JSON line, flushed, so that
when the official library crashes (it segfaults on a few inputs) the caller knows where.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
import classad2
import htcondor2  # noqa: F401  (must come before classad2)


def normalise(value: Any) -> Any:
    if isinstance(value, classad2.Value):
        return ["undef"] if value == classad2.Value.Undefined else ["error"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["real", repr(value)]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, datetime.datetime):
        return ["abstime", int(value.timestamp())]
    if isinstance(value, classad2.ClassAd):
        return ["ad", sorted(key.lower() for key in value)]
    if isinstance(value, list):
        return ["list", [normalise(item) for item in value]]
    if isinstance(value, classad2.ExprTree):
        return ["expr"]
    return ["other", repr(value)]


def main() -> None:
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    ads: dict[tuple[str, str], Any] = {}

    def ad(text: str | None, role: str) -> Any:
        # one object per text and role: MY and TARGET are never the same object
        if text is None:
            return None
        if (text, role) not in ads:
            ads[text, role] = classad2.ClassAd(text) if text.startswith("[") else _old_ad(text)
        return ads[text, role]

    with open(sys.argv[2], "a") as out:
        for expr_text, my_text, target_text in cases[int(sys.argv[3]):]:
            out.write(json.dumps(_evaluate(expr_text, my_text, target_text, ad)) + "\n")
            out.flush()


def _old_ad(text: str) -> Any:
    """An old-syntax ad; the binding skips a line it cannot parse, which counts as a syntax error."""
    ad = classad2.parseOne(text, classad2.ParserType.Old)
    if len(ad) < sum(1 for line in text.splitlines() if line.strip()):
        raise ValueError("an old-syntax line did not parse")
    return ad


def _evaluate(expr_text: str, my_text: str | None, target_text: str | None,
              ad: Callable[[str | None, str], Any]) -> Any:
    try:
        expr = classad2.ExprTree(expr_text)
        my, target = ad(my_text, "my"), ad(target_text, "target")
    except Exception:  # noqa: BLE001  (the binding raises many kinds)
        return ["syntax"]
    try:
        if my is None:
            value = expr.eval()
        elif target is None:
            value = expr.eval(my)
        else:
            value = expr.eval(my, target)
        return normalise(value)
    except Exception as exc:  # noqa: BLE001  (the binding raises when evaluation fails outright)
        return ["exception", str(exc)[:80]]


if __name__ == "__main__":
    main()
