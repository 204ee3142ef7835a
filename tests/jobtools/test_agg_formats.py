"""The .in (seqexec) and PMC DAG formats: parsers reject bad input with a located rule, and the
writers codegen uses round-trip through the parsers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import FormatError, InputError, ValidationError
from sheaf.formats._pmcdag import PmcTask, parse_pmc_dag, parse_rescue, write_pmc_dag
from sheaf.formats._seqexec_in import SeqexecTask, parse_seqexec_input, write_seqexec_input

# Any text an argument may hold on one line (no NUL, CR, LF); includes quotes, backslashes, '#', '$'.
_arg = st.text(st.characters(blacklist_characters="\n\r\0", blacklist_categories=("Cs",)), max_size=12)
_word = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters="_-.:"),
                min_size=1, max_size=10).filter(lambda w: not w.startswith(("#", "-")))


@st.composite
def _seq_tasks(draw: st.DrawFn) -> list[SeqexecTask]:
    tasks = []
    for n in range(1, draw(st.integers(0, 6)) + 1):
        argv = tuple(draw(st.lists(_arg, min_size=1, max_size=4)))
        if draw(st.booleans()):
            tasks.append(SeqexecTask(argv, n, draw(_word), draw(_word)))
        else:
            tasks.append(SeqexecTask(argv))
    return tasks


def _strip_lines(tasks: list[SeqexecTask]) -> list[tuple[object, ...]]:
    return [(t.argv, t.number, t.transformation, t.job_id) for t in tasks]


@settings(max_examples=80, deadline=None)
@given(_seq_tasks())
def test_seqexec_writer_round_trips(tasks: list[SeqexecTask]) -> None:
    text = write_seqexec_input(tasks)
    again = parse_seqexec_input(text, "x.in")
    assert _strip_lines(again) == _strip_lines(tasks)
    # line numbers point at the command lines
    lines = text.split("\n")
    for task in again:
        assert not lines[task.line - 1].startswith("#")


def test_seqexec_comments_blank_lines_and_quoting() -> None:
    text = "# a comment\n\n#@ 1 diamond::preprocess:4.0 ID0000001\n/bin/echo 'a b' \"c d\" e\\ f #g\r\n"
    (task,) = parse_seqexec_input(text)
    assert task.argv == ("/bin/echo", "a b", "c d", "e f", "#g")
    assert (task.number, task.transformation, task.job_id, task.line) == (
        1, "diamond::preprocess:4.0", "ID0000001", 4)


@pytest.mark.parametrize(("text", "line", "rule"), [
    ("echo 'open\n", 1, "quoting"),
    ("echo ok\necho dangling\\", 2, "quoting"),
    ("#@ 1 only-two\necho\n", 1, "'#@' needs"),
    ("#@ x tr id\necho\n", 1, "integer >= 1"),
    ("#@ 1 tr id\n#@ 2 tr id\necho\n", 1, "followed by"),
    ("echo\n#@ 2 tr id\n", 2, "followed by"),
])
def test_seqexec_bad_input_names_line_and_rule(text: str, line: int, rule: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_seqexec_input(text, "job.in")
    assert info.value.path == "job.in" and info.value.line == line
    assert rule in str(info.value)


def test_seqexec_writer_refuses_multiline_arguments() -> None:
    with pytest.raises(ValueError):
        write_seqexec_input([SeqexecTask(("echo", "a\nb"))])


@st.composite
def _pmc(draw: st.DrawFn) -> tuple[list[PmcTask], list[tuple[str, str]]]:
    names = draw(st.lists(_word, min_size=1, max_size=6, unique=True))
    tasks = []
    for name in names:
        argv = (draw(_word), *draw(st.lists(_arg, max_size=3)))
        meta = draw(st.one_of(st.none(), st.tuples(_word, _word, _word)))
        fwd = st.tuples(_word.filter(lambda w: "=" not in w), _word)
        tasks.append(PmcTask(
            name, argv, draw(st.integers(0, 10**6)), draw(st.integers(0, 64)),
            draw(st.one_of(st.none(), st.integers(1, 9))), draw(st.integers(-100, 100)),
            tuple(draw(st.lists(fwd, max_size=2, unique_by=lambda p: p[0]))),
            tuple(draw(st.lists(fwd, max_size=2, unique_by=lambda p: p[0]))),
            *(meta or (None, None, None))))
    # edges only forward in the list order: acyclic by construction
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    return tasks, edges


@settings(max_examples=30, deadline=None)
@given(_pmc())
def test_pmc_writer_round_trips(case: tuple[list[PmcTask], list[tuple[str, str]]]) -> None:
    tasks, edges = case
    dag = parse_pmc_dag(write_pmc_dag(tasks, edges), "w.dag")
    assert [t.name for t in dag.tasks.values()] == [t.name for t in tasks]
    for want in tasks:
        got = dag.tasks[want.name]
        assert got.line > 0
        assert got == PmcTask(**{**{s: getattr(want, s) for s in PmcTask.__slots__}, "line": got.line})
    assert list(dag.edges) == edges


def test_pmc_manpage_examples() -> None:
    dag = parse_pmc_dag(
        "# diamond.dag\nTASK A /bin/echo \"I am A\"\nTASK B /bin/echo \"I am B\"\n"
        "TASK C /bin/echo \"I am C\"\nTASK D /bin/echo \"I am D\"\n\n"
        "EDGE A B\nEDGE A C\nEDGE B D\nEDGE C D\n"
        "TASK t01 -m 10 -c 2 /bin/program -a -b\n"
        "TASK mytask_ID00000001 -m 1024 -c 4 -p 10 /path/to/mytask -a 1 -b 2 -c 3\n"
        "TASK fw -f A=/tmp/myfile.a -F /tmp/foo.0=/scratch/foo /bin/mytask -o /tmp/foo.0\n")
    assert dag.tasks["A"].argv == ("/bin/echo", "I am A")
    assert (dag.tasks["t01"].memory, dag.tasks["t01"].cpus, dag.tasks["t01"].argv) == (
        10, 2, ("/bin/program", "-a", "-b"))
    task = dag.tasks["mytask_ID00000001"]
    assert (task.memory, task.cpus, task.priority) == (1024, 4, 10)
    assert task.argv[-2:] == ("-c", "3")  # options end at the executable
    assert dag.tasks["fw"].pipe_forwards == (("A", "/tmp/myfile.a"),)
    assert dag.tasks["fw"].file_forwards == (("/tmp/foo.0", "/scratch/foo"),)
    assert dag.edges == (("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"))


@pytest.mark.parametrize(("text", "line", "kind", "needle"), [
    ("TASK A\n", 1, FormatError, "TASK name"),
    ("TASK A -m lots /bin/true\n", 1, FormatError, "number >= 0"),
    ("TASK A -m -1 /bin/true\n", 1, FormatError, "number >= 0"),
    ("TASK A -p 1.5 /bin/true\n", 1, FormatError, "integer"),
    ("TASK A -t 0 /bin/true\n", 1, FormatError, ">= 1"),
    ("TASK A --bogus 1 /bin/true\n", 1, FormatError, "task options"),
    ("TASK A -f novalue /bin/true\n", 1, FormatError, "VAR=FILE"),
    ("TASK A /bin/true\nTASK A /bin/true\n", 2, ValidationError, "unique"),
    ("TASK A /bin/true\nEDGE A B\n", 2, ValidationError, "'B'"),
    ("TASK A /bin/true\nEDGE A\n", 2, FormatError, "EDGE parent child"),
    ("JOB A a.sub\n", 1, FormatError, "records are"),
    ("TASK A /b\nTASK B /b\nEDGE A B\nEDGE B A\n", 4, ValidationError, "A -> B -> A"),
])
def test_pmc_bad_input_names_line_and_rule(text: str, line: int, kind: type[InputError],
                                           needle: str) -> None:
    with pytest.raises(kind) as info:
        parse_pmc_dag(text, "w.dag")
    assert info.value.path == "w.dag" and info.value.line == line
    assert needle in str(info.value)


def test_rescue_log() -> None:
    assert parse_rescue("\nDONE A\n# c\nDONE B\n\nDONE A", "w.dag.rescue", ["A", "B", "C"]) == {"A", "B"}
    with pytest.raises(ValidationError, match="'Z'"):
        parse_rescue("DONE Z\n", "r", ["A"])
    with pytest.raises(FormatError) as info:
        parse_rescue("DONE A\nFAILED B\n", "r", ["A", "B"])
    assert info.value.line == 2


_junk = st.text(st.sampled_from(list("TASKEDGE #@-'\"\\\t\n mcpt0123=.x/")), max_size=80)


@settings(max_examples=100, deadline=None)
@given(_junk)
def test_parsers_fail_only_with_located_input_errors(text: str) -> None:
    for parse in (parse_seqexec_input, parse_pmc_dag):
        try:
            parse(text, "f")
        except InputError as exc:  # nothing else may escape: the CLI turns this into exit 2
            assert exc.path == "f" and exc.line is not None and exc.rule
