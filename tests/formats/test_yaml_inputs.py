"""The Pegasus manual's YAML snippets and hand-made bad inputs: each problem is an error or a warning with a
line.

``data/chapter/`` holds every YAML example of the Pegasus 5.x optimization chapter, dedented as a
reader would copy it.  Some are broken on purpose or by accident; none may pass in silence.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import formats
from sheaf.errors import FormatError, InputError, ValidationError

CHAPTER = Path(__file__).parent / "data" / "chapter"


def _tc(name: str) -> tuple[formats.TransformationCatalog, list[str]]:
    warnings: list[str] = []
    return formats.read_transformation_catalog(CHAPTER / name, warnings=warnings), warnings


def _write(tmp_path: Path, text: str, name: str = "wf.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["tc_clusters_size.yml", "tc_clusters_num.yml", "tc_job_aggregator.yml"])
def test_clean_seed_catalogs(name: str) -> None:
    tc, warnings = _tc(name)
    assert warnings == []
    b = tc.lookup(None, "B", None)
    assert b is not None and b.sites[0].name == "siteX"
    assert set(b.profiles["pegasus"]) <= {"clusters.size", "clusters.num", "job.aggregator"}


def test_seed_alias_clusters_size_is_canonical() -> None:
    tc, _ = _tc("tc_clusters_size.yml")  # the chapter writes clusters_size
    assert tc.lookup(None, "B", None).profiles == {"pegasus": {"clusters.size": "3"}}  # type: ignore[union-attr]


def test_flow_mapping_without_space_is_warned_with_line() -> None:
    tc, warnings = _tc("tc_num_and_size_broken_flow.yml")
    b = tc.lookup(None, "B", None)
    assert b is not None and b.profiles["pegasus"]["clusters.num"] == "3"
    text = "\n".join(warnings)
    assert "'clusters.size:3'" in text and "missing space after ':'" in text
    assert all(w.startswith(f"{CHAPTER / 'tc_num_and_size_broken_flow.yml'}:8: ") for w in warnings)


def test_maxruntime_slip_names_clusters_maxruntime() -> None:
    _, warnings = _tc("tc_runtime_maxruntime.yml")
    assert len(warnings) == 1
    assert ":13: unknown pegasus profile key 'maxruntime'" in warnings[0]
    assert "did you mean 'clusters.maxruntime'" in warnings[0]


@pytest.mark.parametrize(("name", "wrong", "right"), [
    ("tc_seqexec_swapped.yml", "seqexec::pegasus", "pegasus::seqexec"),
    ("tc_mpiexec_swapped.yml", "mpiexec::pegasus", "pegasus::mpiexec"),
])
def test_swapped_namespace_and_name(name: str, wrong: str, right: str) -> None:
    _, warnings = _tc(name)
    assert [w.split(": ", 1)[1] for w in warnings] == [
        f"transformation '{wrong}' looks like '{right}' with namespace and name swapped"]
    assert warnings[0].startswith(f"{CHAPTER / name}:4: ")


def test_decaf_swapped_the_other_way(tmp_path: Path) -> None:
    path = _write(tmp_path, "pegasus: '5.0'\ntransformations:\n- namespace: decaf\n  name: dataflow\n"
                  "  sites:\n  - {name: cori, pfn: 1Kgenome.json, type: installed}\n", "tc.yml")
    warnings: list[str] = []
    formats.read_transformation_catalog(path, warnings=warnings)
    assert "'decaf::dataflow' looks like 'dataflow::decaf'" in warnings[0]


def test_decaf_seed_with_misindented_header() -> None:
    tc, warnings = _tc("tc_decaf_misindented_header.yml")
    decaf = tc.lookup("dataflow", "decaf", None)
    assert decaf is not None and decaf.profiles["pegasus"]["runtime"] == "12000"
    assert decaf.profiles["pegasus"]["glite.arguments"].endswith("--ntasks-per-node=1 --ntasks=17")
    assert len(warnings) == 1 and ":2: " in warnings[0]
    assert "belong under 'x-pegasus'" in warnings[0] and "misindented" in warnings[0]


def test_root_workflow_seed_does_not_parse() -> None:
    with pytest.raises(FormatError) as info:
        formats.read_workflow(CHAPTER / "wf_root_misindented.yml")
    err = info.value
    assert (err.line, err.column) == (2, 2)
    assert "YAML syntax error" in str(err) and "indented 1 more" in str(err)


@pytest.mark.parametrize("name", ["wf_pegasus_workflow_job.yml", "wf_condor_workflow_job.yml",
                                  "wf_subworkflow_and_compute.yml"])
def test_seed_workflows(name: str) -> None:
    warnings: list[str] = []
    wf = formats.read_workflow(CHAPTER / name, warnings=warnings)
    assert warnings == []
    assert wf.jobs["ID0000001"].is_subworkflow
    assert wf.jobs["ID0000001"].profiles.get("dagman", {}).get("maxjobs") in ("10", None)


def test_version_number_and_numeric_ids_become_text(tmp_path: Path) -> None:
    path = _write(tmp_path, "pegasus: 5.0\nname: n\njobs:\n- {type: job, id: 7, name: t, version: 4.0,"
                  " arguments: [-T, 60, 1.5, true], uses: [{lfn: 3, type: output}]}\n"
                  "jobDependencies: []\n")
    wf = formats.read_workflow(path)
    job = wf.jobs["7"]
    assert job.version == "4.0" and job.arguments == ("-T", "60", "1.5", "true")
    assert job.uses[0].lfn == "3" and job.uses[0].stage_out and job.uses[0].register_replica
    assert wf.format_version == "5.0"


def test_output_defaults_and_explicit_flags(tmp_path: Path) -> None:
    path = _write(tmp_path, "pegasus: '5.0'\nname: n\njobs:\n- type: job\n  id: a\n  name: t\n  uses:\n"
                  "  - {lfn: o1, type: output}\n  - {lfn: o2, type: output, stageOut: false}\n"
                  "  - {lfn: c, type: checkpoint}\n  - {lfn: i, type: input, bypass: true, optional: true}\n")
    uses = {u.lfn: u for u in formats.read_workflow(path).jobs["a"].uses}
    assert uses["o1"].stage_out and uses["o1"].register_replica
    assert not uses["o2"].stage_out and uses["o2"].register_replica
    assert uses["c"].stage_out and uses["c"].type == "checkpoint"
    assert uses["i"].bypass_staging and uses["i"].optional and not uses["i"].stage_out


def test_older_schema_job_types(tmp_path: Path) -> None:
    path = _write(tmp_path, "pegasus: '5.0'\nname: n\njobs:\n- {type: dax, id: a, file: s.yml}\n"
                  "- {type: dag, id: b, file: s.dag}\n")
    wf = formats.read_workflow(path)
    assert [j.type for j in wf.jobs.values()] == ["pegasusWorkflow", "condorWorkflow"]


# --- errors: file, line, rule, value ------------------------------------------------------------------

_HEAD = "pegasus: '5.0'\nname: w\njobs:\n"


@pytest.mark.parametrize(("body", "line", "words"), [
    ("- {type: job, id: a, name: t}\n- {type: job, id: b, name: t}\n- {type: job, id: a, name: u}\n",
     6, "duplicate job id"),
    ("- {type: job, id: a}\n", None, "missing the required key 'name' (rule: a job of type job has 'name')"),
    ("- {type: job, name: t}\n", 4, "has no 'id'"),
    ("- {type: task, id: a, name: t}\n", 4, "must be job, pegasusWorkflow or condorWorkflow"),
    ("- {type: job, id: a, name: t, arguments: -a}\n", 4, "'arguments' of job 'a' must be a list"),
    ("- {type: job, id: a, name: t, uses: [{lfn: f, type: inout}]}\n", 4, "must have type input, output"),
    ("- {type: job, id: a, name: t, uses: [{lfn: f, type: output, stageOut: maybe}]}\n", 4,
     "'stageOut' of the use of 'f'"),
    ("- {type: job, id: a, name: [t]}\n", 4, "'name' of job 'a' must be a single value"),
    ("- [a, b]\n", None, "job #1 must be a mapping"),
    ("- {type: pegasusWorkflow, id: a}\n", 4, "missing the required key 'file'"),
    ("- {type: job, id: a, name: t, profiles: {pegasus: [1]}}\n", None, "profiles of namespace 'pegasus'"),
    ("- {type: job, id: a, name: t, profiles: {pegasus: {clusters.size: [1, 2]}}}\n", 4,
     "must be a single value"),
    ("- {type: job, id: a, name: t}\njobDependencies:\n- {id: a, children: b}\n", 6, "must be a list"),
])
def test_bad_jobs_are_located(tmp_path: Path, body: str, line: int | None, words: str) -> None:
    with pytest.raises(InputError) as info:
        formats.read_workflow(_write(tmp_path, _HEAD + body))
    assert words in str(info.value)
    assert info.value.path == str(tmp_path / "wf.yml")
    if line is not None:
        assert info.value.line == line, str(info.value)


def test_duplicate_job_id_is_reported_at_the_second(tmp_path: Path) -> None:
    body = "".join(f"- type: job\n  id: j{i}\n  name: t\n" for i in range(5))
    body += "- type: job\n  id: j3\n  name: t\n"
    with pytest.raises(FormatError) as info:
        formats.read_workflow(_write(tmp_path, _HEAD + body))
    assert (info.value.line, info.value.column, info.value.value) == (20, 7, "j3")
    assert "job ids are unique" in str(info.value)


@pytest.mark.parametrize(("text", "where"), [
    ("pegasus: '5.0'\nname: a\nname: b\njobs: []\n", (3, 1)),
    # the key of another mapping in between is not the duplicate: the workflow's second 'name' is
    ("pegasus: '5.0'\nname: w\njobs:\n- type: job\n  name: t\n  id: ID1\nname: x\n", (7, 1)),
    (("pegasus: '5.0'\nname: w\njobs:\n- type: job\n  name: t\n  id: ID1\n- type: job\n  name: t\n"
      "  id: ID2\n  name: u\n"), (10, 3)),
    ("pegasus: '5.0'\nname: w\njobs:\n- {type: job, name: t, id: ID1, name: u}\n", (4, 33)),
])
def test_duplicate_yaml_key_is_located(tmp_path: Path, text: str, where: tuple[int, int]) -> None:
    with pytest.raises(FormatError) as info:
        formats.read_workflow(_write(tmp_path, text))
    assert (info.value.line, info.value.column) == where and "duplicate mapping key" in str(info.value)


@pytest.mark.parametrize(("text", "words"), [
    ("", "a Pegasus workflow is a YAML mapping"),
    ("- 1\n- 2\n", "a Pegasus workflow is a YAML mapping"),
    ("pegasus: '5.0'\njobs: []\n", "missing the required key 'name'"),
    ("pegasus: '5.0'\nname: x\n", "missing the required key 'jobs'"),
    ("pegasus: '5.0'\nname: x\njobs: {a: 1}\n", "'jobs' of the workflow must be a list"),
    ("pegasus: '5.0'\nname: x\njobs: [\n", "YAML syntax error"),
    ("a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join(["*" + chr(97 + i)] * 10) + "]\n" for i in range(8)),
     "alias replay limit"),
])
def test_bad_documents(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        formats.read_workflow(_write(tmp_path, text))
    assert words in str(info.value)


_TWO = "- {type: job, id: a, name: t}\n- {type: job, id: b, name: t}\n"


@pytest.mark.parametrize(("body", "line", "message"), [
    ("- {type: job, id: a, name: t, argument: [x]}\n", 4,
     "unknown key 'argument' in job 'a'; did you mean 'arguments'?"),
    ("- {type: job, id: a, name: t}\njobDependency: []\n", 5,
     "unknown key 'jobDependency' in the workflow; did you mean 'jobDependencies'?"),
    ("- {type: job, id: a, name: t, uses: [{lfn: f, type: input, stageout: true}]}\n", 4,
     "unknown key 'stageout' in the use of 'f' by job 'a'; did you mean 'stageOut'?"),
    (_TWO + "jobDependencies:\n- {id: a, childern: [b]}\n", 7,
     "unknown key 'childern' in a job dependency; did you mean 'children'?"),
    ("- {type: job, id: a, name: t, 17: x}\n", 4, "job 'a' has a key that is not a string"),
    ("- {type: job, id: a, name: t, uses: [{lfn: f, type: input, 17: x}]}\n", 4,
     "the use of 'f' by job 'a' has a key that is not a string"),
])
def test_unknown_keys_are_refused_with_the_nearest(tmp_path: Path, body: str, line: int,
                                                   message: str) -> None:
    """Pegasus's parser refuses a key its schema lacks ("Illegal key"): a misspelt one would change what
    runs.  x-* vendor keys are kept out of the way."""
    path = _write(tmp_path, _HEAD + body)
    with pytest.raises(FormatError) as info:
        formats.read_workflow(path)
    assert f"{path}:{line}:" in str(info.value) and message in str(info.value), str(info.value)
    assert formats.read_workflow(_write(tmp_path, _HEAD + "- {type: job, id: a, name: t, x-mine: 1}\n"
                                        "x-tool: {a: 1}\n")).jobs


def test_not_utf8_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(FormatError, match="not UTF-8"):
        formats.read_workflow(bad)
    with pytest.raises(InputError, match="cannot read file"):
        formats.read_workflow(tmp_path / "nope.yml")


def test_validation_errors_are_located(tmp_path: Path) -> None:
    text = (_HEAD + "- {type: job, id: a, name: t, uses: [{lfn: f, type: output}]}\n"
            "- {type: job, id: b, name: t, uses: [{lfn: f, type: output}]}\n"
            "jobDependencies:\n- {id: a, children: [zz]}\n")
    path = _write(tmp_path, text)
    inputs = formats.load_inputs(path, cwd=tmp_path)
    with pytest.raises(ValidationError) as info:
        formats.validate_inputs(inputs)
    assert info.value.value == "zz" and info.value.line == 7 and info.value.path == str(path)


def test_cycle_is_located_with_its_path(tmp_path: Path) -> None:
    text = (_HEAD + "- {type: job, id: a, name: t}\n- {type: job, id: b, name: t}\n"
            "- {type: job, id: c, name: t}\njobDependencies:\n- {id: a, children: [b]}\n"
            "- {id: b, children: [c]}\n- {id: c, children: [a]}\n")
    with pytest.raises(ValidationError) as info:
        formats.validate_inputs(formats.load_inputs(_write(tmp_path, text), cwd=tmp_path))
    first = info.value.value
    assert info.value.line == 4 + "abc".index(first)
    cycle = str(info.value).split("cycle: ")[1].split(" -> ")
    assert len(cycle) == 4 and cycle[0] == cycle[-1] == first and set(cycle) == {"a", "b", "c"}


def test_a_file_two_jobs_produce_is_valid(tmp_path: Path) -> None:
    """As pegasus-plan plans it: the planner warns (tests/planner/test_pegasus_shared_outputs.py)."""
    text = (_HEAD + "- {type: job, id: a, name: t, uses: [{lfn: f.out, type: output}]}\n"
            "- {type: job, id: b, name: t, uses: [{lfn: f.out, type: output}]}\n")
    graph, _, _ = formats.validate_inputs(formats.load_inputs(_write(tmp_path, text), cwd=tmp_path))
    assert graph.shared_outputs == {"f.out": [0, 1]}


def test_equal_profile_blocks_of_different_types_are_not_confused(tmp_path: Path) -> None:
    path = _write(tmp_path, _HEAD + "- {type: job, id: a, name: t, profiles: {pegasus: {runtime: 1}}}\n"
                  "- {type: job, id: b, name: t, profiles: {pegasus: {runtime: true}}}\n"
                  "- {type: job, id: c, name: t, profiles: {pegasus: {runtime: 1}}}\n")
    wf = formats.read_workflow(path)
    assert [j.profiles["pegasus"]["runtime"] for j in wf.jobs.values()] == ["1", "true", "1"]
    assert wf.jobs["a"].profiles is wf.jobs["c"].profiles  # equal blocks share one normalized dict
