"""``$$(attr)`` and ``$$([expression])`` in a node's submit description, expanded at match time.

condor_submit leaves ``$$()`` alone; once the job is matched, condor_schedd replaces each reference
by the matched slot's attribute (or the expression evaluated with the job as MY and the slot as
TARGET) and records what it used in the job ad (``MATCH_<Name>``, ``MATCH_EXP_<Attr>``): see
``sheaf.classad.expand``.  The engine has already split the description into an argv, an
environment and file names, so the expansion is applied to each of those texts that holds a ``$$(``
(the same text the schedd would see inside the attribute), with the job ad and the claimed slot's
ad; the ``MATCH_`` records of the references go into the launch's job ad.  An old-syntax
environment entry that is a whole reference (``environment = $$(SiteEnvironment);PATH=...``) is
replaced by the ``name=value;...`` entries its value holds, as the schedd expands the text before
it is split.  A reference that cannot be expanded means the job cannot start: HTCondor holds it with
``Cannot expand $$ expression (Name).`` (Name without its ``:default``), and the backend reports that
reason as a hold.

The schedd expands ``arguments`` before the starter splits it: a description whose ``arguments``
hold ``$$(`` reaches here as one argv element, the whole text behind ``ARGUMENTS_MARK``, which is
split once expanded - so a reference that expands to nothing is no argument, and one that expands to
several words is several, as in HTCondor.  The schedd sees the arguments as the job ad holds them,
with the submit file's new-syntax quoting undone (``""`` is ``"`` there): ``$$([ifThenElse(x,
""a"",""b"")])`` in a quoted ``arguments`` value is the expression ``ifThenElse(x, "a", "b")``.
"""

from __future__ import annotations

__all__ = ["expand_launch", "needs_expansion"]

from dataclasses import replace
from itertools import chain

from sheaf import classad
from sheaf.classad import ClassAd
from sheaf.engine._backend import Launch
from sheaf.engine._submit import ARGUMENTS_MARK, split_arguments, split_environment

_MARK = "$$("
_PREFIX = "SheafText"


def needs_expansion(launch: Launch) -> bool:
    """Whether a text of the launch holds ``$$(`` (asked of every launch as it is scheduled: no
    list of its texts is made)."""
    return any(_MARK in text for text in chain(launch.argv, launch.env.values(),
                                                (launch.cwd, launch.stdout, launch.stderr)))


def _texts(launch: Launch) -> list[str]:
    return [*launch.argv, *launch.env.values(), launch.cwd, launch.stdout, launch.stderr]


def expand_launch(launch: Launch, slot: ClassAd | None) -> tuple[Launch, str | None]:
    """``launch`` with every ``$$()`` expanded against ``slot``, or (launch, the hold reason)."""
    texts = _texts(launch)
    scratch = launch.job_ad.copy()
    marked = [i for i, text in enumerate(texts) if _MARK in text]
    for i in marked:
        scratch[f"{_PREFIX}{i}"] = _as_in_the_ad(texts[i])
    result = classad.expand(scratch, slot)
    if not result.ok:
        return launch, result.reason
    out = list(texts)
    for i in marked:
        value = result.ad.eval(f"{_PREFIX}{i}")
        out[i] = _as_in_the_file(texts[i], value) if isinstance(value, str) else texts[i]
    ad = launch.job_ad.copy()
    for name, expr in result.recorded.items():
        if not name.startswith(f"MATCH_EXP_{_PREFIX}"):
            ad[name] = expr
    argc, envc = len(launch.argv), len(launch.env)
    env: dict[str, str] = {}
    for name, value in zip(launch.env.keys(), out[argc:argc + envc], strict=True):
        if name.startswith(_MARK):  # a whole-entry reference: the entries it expanded to, in its place
            env.update(split_environment(value, name))
        else:
            env[name] = value
    cwd, stdout, stderr = out[argc + envc:]
    argv: list[str] = []
    for text in out[:argc]:
        if not text.startswith(ARGUMENTS_MARK):
            argv.append(text)
            continue
        try:
            argv.extend(split_arguments(text[len(ARGUMENTS_MARK):]))
        except ValueError as exc:  # the expansion broke the text's quoting: the job cannot start
            return launch, f"arguments do not split once $$() are expanded: {exc}"
    return replace(launch, argv=tuple(argv), env=env, cwd=cwd, stdout=stdout, stderr=stderr,
                   job_ad=ad), None


def _new_syntax_arguments(text: str) -> bool:
    body = text[len(ARGUMENTS_MARK):].strip() if text.startswith(ARGUMENTS_MARK) else ""
    return len(body) >= 2 and body[0] == body[-1] == '"'


def _as_in_the_ad(text: str) -> str:
    """New-syntax arguments as the ``Arguments`` attribute holds them: no surrounding quotes, ``""``
    read as ``"`` (what the schedd's expansion sees)."""
    if not _new_syntax_arguments(text):
        return text
    return ARGUMENTS_MARK + text[len(ARGUMENTS_MARK):].strip()[1:-1].replace('""', '"')


def _as_in_the_file(text: str, expanded: str) -> str:
    """The expanded text quoted back as new-syntax arguments, for ``split_arguments``."""
    if not _new_syntax_arguments(text):
        return expanded
    body = expanded[len(ARGUMENTS_MARK):]
    return ARGUMENTS_MARK + '"' + body.replace('"', '""') + '"'
