"""HTCondor's new argument/environment syntax, checked against the manual's examples, the official
bindings' macro expansion, and the engine's independent tokeniser."""

from __future__ import annotations

import os
import re

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

import htcondor2
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sheaf.codegen import quote_arguments, quote_environment
from sheaf.condor._submit_lang import Unwritable, classad_string
from sheaf.engine import split_arguments, split_environment

# The three examples of the condor_submit manual ("arguments", new syntax).
MANUAL = [
    (["3", "simple", "arguments"], '"3 simple arguments"'),
    (["one", "two with spaces", "3"], "\"one 'two with spaces' 3\""),
    (["one", '"two"', "spacey 'quoted' argument"], "\"one \"\"two\"\" 'spacey ''quoted'' argument'\""),
]


@pytest.mark.parametrize(("argv", "expected"), MANUAL)
def test_manual_examples(argv: list[str], expected: str) -> None:
    assert quote_arguments(argv) == expected


def test_empty_argument_and_backslash() -> None:
    assert quote_arguments(["", "a\\b"]) == "\"'' a\\b\""  # backslash has no special meaning


def _submit(value: str, key: str = "arguments") -> htcondor2.Submit:
    return htcondor2.Submit(f"executable = /bin/echo\n{key} = {value}\nqueue\n")


# What ends a line for str.splitlines (sheaf's submit and DAG readers), and NUL: never written.
LINE_BREAKS = "\n\r\0\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Arguments as users write them: anything on one line, quotes, dollars, tabs included.
ARG = st.text(st.one_of(st.sampled_from(list("$()'\" \tab\x1f\xa0")),
                        st.characters(blacklist_characters=LINE_BREAKS, blacklist_categories=("Cs",))),
              max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(ARG, max_size=6))
def test_arguments_round_trip_through_condor_submit_and_the_engine(argv: list[str]) -> None:
    assume(not any(re.search(r"\$\$\(|\$\(dollar\)", arg, re.IGNORECASE) for arg in argv))
    value = quote_arguments(argv)
    submit = _submit(value)
    assert submit["arguments"] == value  # the official parser keeps the line as written
    expanded = submit.expand("arguments")  # condor_submit's macro expansion: $(DOLLAR) -> $
    assert split_arguments(expanded) == argv


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), ARG, max_size=5))
def test_environment_round_trip(env: dict[str, str]) -> None:
    assume(not any(re.search(r"\$\$\(|\$\(dollar\)", v, re.IGNORECASE) for v in env.values()))
    value = quote_environment(env.items())
    expanded = _submit(value, "environment").expand("environment")
    assert split_environment(expanded) == env


def test_dollar_that_is_not_a_macro_stays_literal() -> None:
    argv = ["$HOME", "$(x)", "$$HOME", "$ENV(z)", "a$", "$("]
    value = quote_arguments(argv)
    assert value == '"$HOME $(DOLLAR)(x) $$HOME $(DOLLAR)ENV(z) a$ $(DOLLAR)("'
    assert split_arguments(_submit(value).expand("arguments")) == argv


@pytest.mark.parametrize("bad", ["$$(attr)", "x$$$(y)", "$(DOLLAR)", "a$(dollar)b"])
def test_unwritable_dollars_are_refused(bad: str) -> None:
    with pytest.raises(Unwritable):
        quote_arguments([bad])


@pytest.mark.parametrize("bad", [f"a{c}b" for c in LINE_BREAKS])
def test_line_breaks_are_refused(bad: str) -> None:
    with pytest.raises(Unwritable):
        quote_arguments(["ok", bad])
    with pytest.raises(Unwritable):
        classad_string(bad)


def test_classad_string_escapes() -> None:
    assert classad_string('a "b" \\c') == '"a \\"b\\" \\\\c"'


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(st.one_of(st.sampled_from(list("$()'\" \\#=")), st.sampled_from(list(LINE_BREAKS)),
                                  st.characters(blacklist_categories=("Cs",))), max_size=10), max_size=5))
def test_whole_submit_file_round_trip_through_the_engine(tmp_path_factory: pytest.TempPathFactory,
                                                         argv: list[str]) -> None:
    """render_submit -> file -> the engine's reader gives back argv, or the plan refuses it."""
    from sheaf.codegen._submit import Command, SubmitContext, render_submit
    from sheaf.engine import parse_submit
    from sheaf.engine._submit import render
    from sheaf.errors import PlanningError
    from sheaf.planner import ExecJob, Task

    assume(not any(re.search(r"\$\$\(|\$\(dollar\)", arg, re.IGNORECASE) for arg in argv))
    task = Task("ID1", "tr", "/bin/echo", tuple(argv), {}, 1)
    job = ExecJob("j1", "compute", "local", "tr", 1, (task,))
    directory = tmp_path_factory.mktemp("sub")
    command = Command("/bin/echo", tuple(argv), str(directory))
    try:
        text = render_submit(job, {}, command, str(directory / "j1"),
                             SubmitContext("wf", str(directory / "log")))
    except PlanningError:
        assert any(c in arg for arg in argv for c in LINE_BREAKS)
        return
    path = directory / "j1.sub"
    path.write_text(text, encoding="utf-8")
    spec = render(parse_submit(str(path)), "j1", 0, 1, str(directory), {})
    assert list(spec.argv[1:]) == argv
