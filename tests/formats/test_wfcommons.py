"""WfCommons JSON: the five real traces, schema 1.4 and 1.5, round trip, malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import FormatError
from sheaf.formats import read_workflow
from sheaf.formats._wfcommons import dumps_wfcommons, loads_wfcommons, read_wfcommons
from sheaf.model import (
    Job,
    Properties,
    Use,
    Workflow,
    build_graph,
    check_names,
    join_arguments,
    quote_words,
    split_arguments,
    validate,
)
from sheaf.planner import plan

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
EXPECTED = {  # file: (tasks, levels, transformations) -- from the traces' README and their content
    "montage-chameleon-2mass-005d-001.json": (58, 8, 8),
    "seismology-chameleon-1000p-001.json": (1001, 2, 2),
    "1000genome-chameleon-22ch-250k-001.json": (902, 3, 5),
    "bwa-chameleon-large-001.json": (1004, 3, 5),
    "epigenomics-chameleon-ilmn-6seq-50k-001.json": (1695, 9, 8),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_traces_load_validate_and_round_trip(name: str) -> None:
    path = TRACES / name
    workflow = read_wfcommons(path)
    _, _, summary = validate(workflow)
    assert (summary.jobs, summary.levels, summary.transformations) == EXPECTED[name]
    raw = json.loads(path.read_text())["workflow"]
    runtimes = {t["id"]: t["runtimeInSeconds"] for t in raw["execution"]["tasks"]}
    for job in workflow.jobs.values():
        assert float(job.profiles["pegasus"]["runtime"]) == runtimes[job.id]
    # every explicit parent of the trace is an edge of the graph
    graph = build_graph(workflow)
    for task in raw["specification"]["tasks"]:
        child = graph.index[task["id"]]
        assert {graph.ids[p] for p in graph.parents(child)} >= set(task["parents"])
    assert loads_wfcommons(dumps_wfcommons(workflow)) == workflow


def test_seismology_is_the_textbook_horizontal_shape() -> None:
    path = TRACES / "seismology-chameleon-1000p-001.json"
    workflow = read_wfcommons(path)
    names = {job.name for job in workflow.jobs.values()}
    assert len(names) == 2
    _, levels, _ = validate(workflow)
    assert sorted(levels).count(1) == 1000


def test_schema_14_tasks_with_files_and_links() -> None:
    doc = {"name": "w", "schemaVersion": "1.4", "workflow": {"tasks": [
        {"name": "a_ID01", "id": "ID01", "type": "compute",
         "command": {"program": "/usr/bin/a", "arguments": ["-x", 1]},
         "parents": [], "children": ["ID02"], "runtimeInSeconds": 2.5, "cores": 2,
         "files": [{"link": "input", "name": "in", "sizeInBytes": 10}, {"link": "output", "name": "mid"}]},
        {"name": "b_ID02", "id": "ID02", "parents": ["a_ID01"], "runtime": 1,
         "files": [{"link": "input", "name": "mid"}, {"link": "output", "name": "out", "size": 3}]},
    ]}}
    workflow = loads_wfcommons(json.dumps(doc))
    a, b = workflow.jobs["ID01"], workflow.jobs["ID02"]
    assert a.name == "a" and a.arguments == ("-x", "1")
    assert a.profiles == {"pegasus": {"runtime": "2.5", "cores": "2"}}
    assert b.name == "b" and b.profiles == {"pegasus": {"runtime": "1"}}
    assert a.uses[0] == Use("in", "input", size=10)
    assert b.uses[1] == Use("out", "output", stage_out=True, register_replica=True, size=3)
    assert workflow.dependencies == {"ID01": ["ID02"]}


@pytest.mark.parametrize(("text", "rule", "line"), [
    ('{"name": "w",\n "workflow": {"specification": {"tasks": [\n}', "WfCommons files are JSON", 3),
    ('[1, 2]', "a top-level object with a 'workflow' object", 1),
    ('{"workflow": {"specification": {"tasks": [{"id": "a"},\n {"id": "a"}]}}}', "task ids are unique", 1),
    ('{"workflow": {"specification": {"tasks": [\n{"id": "a", "parents": ["ghost"]}]}}}',
     "parents/children name tasks of the workflow", 2),
    ('{"workflow": {"tasks": [{"id": "a", "files": [{"link": "both", "name": "f"}]}]}}', "files[].link", 1),
])
def test_malformed_files_are_format_errors_with_a_line(tmp_path: Path, text: str, rule: str,
                                                       line: int) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_wfcommons(path)
    assert info.value.rule == rule
    assert info.value.path == str(path) and info.value.line == line


_ids = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


@st.composite
def wfcommons_workflows(draw: st.DrawFn) -> Workflow:
    ids = draw(st.lists(_ids, min_size=1, max_size=8, unique=True))
    workflow = Workflow(draw(_ids))
    for i, job_id in enumerate(ids):
        uses = tuple(Use(f"{job_id}.out{k}", "output", stage_out=True, register_replica=True,
                         size=draw(st.none() | st.integers(0, 10**9)))
                     for k in range(draw(st.integers(0, 2))))
        runtime = draw(st.floats(0, 1e5, allow_nan=False).map(lambda x: round(x, 3)))
        workflow.jobs[job_id] = Job(job_id, draw(_ids), arguments=tuple(draw(st.lists(_ids, max_size=3))),
                                    uses=uses, profiles={"pegasus": {"runtime": repr(float(runtime))}})
        for parent in ids[:i]:
            if draw(st.booleans()):
                workflow.add_dependency(parent, job_id)
    return workflow


@settings(max_examples=50, deadline=None)
@given(wfcommons_workflows())
def test_round_trip(workflow: Workflow) -> None:
    back = loads_wfcommons(dumps_wfcommons(workflow))
    assert back.jobs == workflow.jobs
    assert {p: sorted(c) for p, c in back.dependencies.items()} == \
        {p: sorted(c) for p, c in workflow.dependencies.items() if c}


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=120) | st.text(alphabet='{}[]":,workflowtasksidparents 1\n', max_size=120))
def test_fuzz_only_format_errors(data: bytes | str) -> None:
    try:
        loads_wfcommons(data, source="fuzz")
    except FormatError as error:
        assert error.path == "fuzz"


@pytest.mark.parametrize(("task", "rule"), [
    ({"id": "a", "inputFiles": 5}, "inputFiles is a JSON array"),
    ({"id": "a", "parents": [{"x": 1}]}, "parents holds strings"),
    ({"id": "a", "children": "b"}, "children is a JSON array"),
    ({"id": "a", "runtimeInSeconds": "fast"}, "runtime is a number >= 0"),
    ({"id": "a", "command": {"program": "p", "arguments": "-x"}}, "arguments is a JSON array"),
    ({"id": True}, "every task has an 'id' (or a 'name')"),
])
def test_wrongly_typed_fields_are_format_errors(task: dict[str, object], rule: str) -> None:
    doc = {"workflow": {"specification": {"tasks": [task]}}}
    with pytest.raises(FormatError) as info:
        loads_wfcommons(json.dumps(doc))
    assert info.value.rule == rule


def test_wrongly_typed_execution_block() -> None:
    doc = {"workflow": {"specification": {"tasks": []}, "execution": {"tasks": {"a": 1}}}}
    with pytest.raises(FormatError, match="tasks"):
        loads_wfcommons(json.dumps(doc))


def _spec(tasks: list[dict[str, object]], execution: list[object] | None = None,
          version: object = "1.5") -> str:
    doc: dict[str, object] = {"name": "w", "workflow": {"specification": {"tasks": tasks},
                                                        "execution": {"tasks": execution or []}}}
    if version is not None:
        doc["schemaVersion"] = version
    return json.dumps(doc)


@pytest.mark.parametrize(("text", "rule"), [
    (_spec([]), "a WfCommons workflow has at least one task"),
    (_spec([{"id": "a"}], [{"id": "ghost", "runtimeInSeconds": 1}]),
     "execution.tasks[].id is the id of a specification task"),
    (_spec([{"id": "a"}], [{"id": "a", "runtimeInSeconds": 1}, {"id": "a", "runtimeInSeconds": 2}]),
     "execution.tasks[].id is unique"),
    (_spec([{"id": "a"}], [{"id": "a", "command": "ls"}]),
     "command is an object with 'program' and 'arguments'"),
    (_spec([{"id": "a"}], [{"id": "a", "command": {"program": ""}}]),
     "command.program is a non-empty string"),
    (_spec([{"id": "a"}], [[1]]), "execution.tasks[] are objects"),
])
def test_what_the_schema_requires_is_refused_by_name(text: str, rule: str) -> None:
    """WfFormat's schema: at least one task, each execution record of one task, once; a command object
    with a non-empty program -- a record or field that breaks it was dropped without a word."""
    with pytest.raises(FormatError) as info:
        loads_wfcommons(text)
    assert info.value.rule == rule


@pytest.mark.parametrize(("version", "said"), [
    (None, "no schemaVersion"), ("9.9", "schemaVersion '9.9', which WfCommons never published"),
    ("1.5", None), ("1.3", None),
])
def test_an_unknown_or_missing_schema_version_is_warned_about(version: object, said: str | None) -> None:
    warnings: list[str] = []
    loads_wfcommons(_spec([{"id": "a"}], version=version), warnings=warnings)
    assert [said in w for w in warnings] == ([True] if said else []), warnings


def test_a_nextflow_trace_plans_with_its_task_names_and_relative_files() -> None:
    """Nextflow's traces give a process's whole script as ``program`` and name the files in its work
    directories by absolute paths: the task's name is the transformation, the files are relative."""
    script = "check_samplesheet.py sheet.csv\n    cat <<-END_VERSIONS > versions.yml\n"
    text = _spec([{"name": "NFCORE_X.CHECK", "id": "NFCORE_X.CHECK_3", "parents": [], "children": [],
                   "inputFiles": ["/data/sheet.csv"], "outputFiles": ["/3e/92a5/sheet.valid.csv"]}],
                 [{"id": "NFCORE_X.CHECK_3", "runtimeInSeconds": 2.0, "command": {"program": script}}])
    warnings: list[str] = []
    job = loads_wfcommons(text, warnings=warnings).jobs["NFCORE_X.CHECK_3"]
    assert job.name == "NFCORE_X.CHECK"
    assert [(u.lfn, u.type) for u in job.uses] == [("data/sheet.csv", "input"), ("3e/92a5/sheet.valid.csv",
                                                                                 "output")]
    assert len(warnings) == 1 and "2 file name(s) are absolute paths" in warnings[0]


def test_a_task_id_or_process_name_too_long_for_a_job_keeps_its_head_and_a_digest() -> None:
    """Nextflow names a task by its process path and inputs, past the 100 bytes a job id or a
    transformation name may take: each keeps its first bytes and a digest of the whole, so two long ids
    that share their head stay apart, and the edges between them hold."""
    process = "NFCORE_ATACSEQ.ATACSEQ." + "FASTQ_ALIGN_DEDUP_BWA.BAM_SORT_STATS_SAMTOOLS." * 2 + "SORT"
    first, second = f"{process} (sample_1)_ID001", f"{process} (sample_2)_ID002"
    text = _spec([{"name": first, "id": first, "parents": [], "children": [second]},
                  {"name": second, "id": second, "parents": [first], "children": []}],
                 [{"id": first, "runtimeInSeconds": 1.0}, {"id": second, "runtimeInSeconds": 1.0}])
    warnings: list[str] = []
    wf = loads_wfcommons(text, warnings=warnings)
    ids = list(wf.jobs)
    assert len(ids) == 2 and ids[0] != ids[1]
    assert all(len(i.encode()) <= 100 and i.startswith(process[:60]) for i in ids)
    assert {parent: list(children) for parent, children in wf.dependencies.items()} == {ids[0]: [ids[1]]}
    for job in wf.jobs.values():  # the transformation: the name without its _ID suffix, fitted too
        assert len(job.name.encode()) <= 100 and job.name.startswith(process[:60])
    assert any("2 task id(s) are longer than a job id may be" in w for w in warnings), warnings
    check_names(wf)  # the model takes every name now


def _argv(job: Job) -> tuple[str, ...]:
    return split_arguments(join_arguments(job.arguments))


def test_a_wfbench_command_line_is_read_as_a_shell_reads_it(tmp_path: Path) -> None:
    """WfBench writes a task's output sizes as ``--out "{\\"f\\":16}"`` and its inputs in double quotes,
    for a shell: the job's program receives the shell's words, and the workflow plans."""
    args = ["t1", "--percent-cpu 0.6", '--out "{\\"t1_out.txt\\":16}"', '"in.txt"']
    text = _spec([{"name": "t1", "id": "t1", "parents": [], "children": [], "inputFiles": ["in.txt"],
                   "outputFiles": ["t1_out.txt"]}],
                 [{"id": "t1", "runtimeInSeconds": 1.0,
                   "command": {"program": "wfbench", "arguments": args}}])
    path = tmp_path / "bench.json"
    path.write_text(text)
    job = read_workflow(path).jobs["t1"]
    assert _argv(job) == ("t1", "--percent-cpu", "0.6", "--out", '{"t1_out.txt":16}', "in.txt")
    planned = plan(read_workflow(path), tc=None, sc=None, rc=None, properties=Properties({}))
    assert planned.jobs[0].tasks[0].argv == _argv(job)


@pytest.mark.parametrize(("args", "words"), [
    (["-x", "1"], ("-x", "1")),                     # plain: as they are
    (["'a b'", '"c d"'], ("a b", "c d")),            # both rules agree: as they are
    (['"a\\"b"'], ('a"b',)),                         # a shell's escape inside double quotes
    (['"x\\\\y"', "'p\\q'"], ("x\\y", "p\\q")),
])
def test_command_lines_read_and_written_back_keep_their_words(args: list[str],
                                                             words: tuple[str, ...]) -> None:
    text = _spec([{"name": "t", "id": "t", "parents": [], "children": []}],
                 [{"id": "t", "runtimeInSeconds": 1.0, "command": {"program": "p", "arguments": args}}])
    job = loads_wfcommons(text).jobs["t"]
    assert _argv(job) == words
    if words == tuple(args):
        assert job.arguments == tuple(args)
    assert _argv(loads_wfcommons(dumps_wfcommons(loads_wfcommons(text))).jobs["t"]) == words


def test_an_unclosed_quote_in_a_command_line_is_a_format_error_at_its_task() -> None:
    text = _spec([{"name": "t", "id": "t", "parents": [], "children": []}],
                 [{"id": "t", "runtimeInSeconds": 1.0, "command": {"program": "p", "arguments": ['"a\\"']}}])
    with pytest.raises(FormatError) as caught:
        loads_wfcommons(text)
    assert caught.value.rule == "command.arguments are shell words" and "'t'" in str(caught.value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab \t'\"\\$#"), max_size=6), max_size=4))
def test_any_argv_written_by_sheaf_is_read_back(words: list[str]) -> None:
    """A job's argv survives the trip through WfCommons's command-line text."""
    wf = Workflow("w")
    wf.jobs["t"] = Job("t", "p", arguments=quote_words(words))
    back = loads_wfcommons(dumps_wfcommons(wf)).jobs["t"]
    assert _argv(back) == tuple(words)
