"""WfCommons traces of the older WfFormat schemas (1.0 to 1.4) through ``sheaf validate``, ``sheaf plan``
and ``sheaf predict``: what each schema version names differently is read, not dropped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sheaf.cli import main
from sheaf.formats import read_workflow
from sheaf.model import Job, Properties, Workflow, job_argv
from sheaf.planner import plan


def _sheaf(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _planned(tmp_path: Path, doc: dict[str, Any]) -> Path:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(doc))
    code, _, err = _sheaf("plan", str(trace), "--dir", str(tmp_path / "runs"), "--relative-dir", "run", "-q")
    assert code == 0, err
    return tmp_path / "runs" / "run"


def _read(tmp_path: Path, doc: dict[str, Any]) -> Workflow:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(doc))
    return read_workflow(trace)


def _dag_arguments(directory: Path) -> dict[str, str]:
    """Each compute task's arguments as the DAG hands them to its node (``sheaf_args``)."""
    text = next(directory.glob("*.dag")).read_text()
    found = re.findall(r'^VARS \S+ .*sheaf_args="((?:[^"\\]|\\.)*)" sheaf_task="([^"]*)"', text, re.MULTILINE)
    return {task: args for args, task in found}


# schema 1.0 (Pegasus's epigenomics runs of 2020): a list of ``jobs``, no ids, arguments on the job and no
# command, parents by name, ``runtime`` and file ``size``; names with and without an ``_ID`` suffix
SCHEMA_10 = {"name": "epi", "schemaVersion": "1.0", "workflow": {
    "makespan": 9, "executedAt": "20200408T000000+0000", "machines": [{"nodeName": "n1"}], "jobs": [
        {"name": "sol2sanger_sol2sanger_HEP_s_1_sequence_1", "type": "compute", "runtime": 1.5,
         "parents": [], "arguments": ["HEP_s_1.sfq", "HEP_s_1.fq"], "machine": "n1",
         "files": [{"link": "input", "name": "HEP_s_1.sfq", "size": 2048},
                   {"link": "output", "name": "HEP_s_1.fq", "size": 1024}]},
        {"name": "sol2sanger_sol2sanger_HEP_s_1_sequence_2", "type": "compute", "runtime": 2.5,
         "parents": [], "arguments": ["HEP_s_2.sfq", "HEP_s_2.fq"],
         "files": [{"link": "input", "name": "HEP_s_2.sfq", "size": 10},
                   {"link": "output", "name": "HEP_s_2.fq", "size": 20}]},
        {"name": "fast2bfq_ID0000003", "type": "compute", "runtime": 4.0, "cores": 2,
         "parents": ["sol2sanger_sol2sanger_HEP_s_1_sequence_1", "sol2sanger_sol2sanger_HEP_s_1_sequence_2"],
         "arguments": ["-v", "HEP_s_1.fq", "HEP_s_2.fq"],
         "files": [{"link": "input", "name": "HEP_s_1.fq", "size": 1024},
                   {"link": "input", "name": "HEP_s_2.fq", "size": 20}]}]}}


def test_a_schema_10_trace_keeps_its_jobs_arguments_and_programs(tmp_path: Path) -> None:
    """A 1.0/1.1 job names no program and gives its arguments on itself: the program is its category as
    WfCommons's migration to 1.2 makes it (``sol2sanger_sol2sanger_..._1`` runs ``sol2sanger``), and
    the arguments reach the job's command line."""
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(SCHEMA_10))
    code, out, err = _sheaf("validate", str(trace))
    assert code == 0, err
    assert "jobs: 3 (3 compute, 0 sub-workflow)" in out and "edges: 2" in out
    assert "transformations: 2" in out
    directory = _planned(tmp_path, SCHEMA_10)
    plan = json.loads((directory / "plan.json").read_text())
    compute = {j["tasks"][0]: j for j in plan["jobs"] if j["type"] == "compute"}
    assert {t: j["transformation"] for t, j in compute.items()} == {
        "sol2sanger_sol2sanger_HEP_s_1_sequence_1": "sol2sanger",
        "sol2sanger_sol2sanger_HEP_s_1_sequence_2": "sol2sanger", "fast2bfq_ID0000003": "fast2bfq"}
    assert {t: j["runtimes"] for t, j in compute.items()} == {
        "sol2sanger_sol2sanger_HEP_s_1_sequence_1": [1.5], "sol2sanger_sol2sanger_HEP_s_1_sequence_2": [2.5],
        "fast2bfq_ID0000003": [4.0]}
    assert _dag_arguments(directory) == {
        "sol2sanger_sol2sanger_HEP_s_1_sequence_1": '\\"HEP_s_1.sfq HEP_s_1.fq\\"',
        "sol2sanger_sol2sanger_HEP_s_1_sequence_2": '\\"HEP_s_2.sfq HEP_s_2.fq\\"',
        "fast2bfq_ID0000003": '\\"-v HEP_s_1.fq HEP_s_2.fq\\"'}


def test_a_schema_12_job_list_keeps_its_command(tmp_path: Path) -> None:
    """From 1.2 on a job carries ``command`` (and ``category``): that is read, as for 1.4's tasks."""
    doc = json.loads(json.dumps(SCHEMA_10))
    doc["schemaVersion"] = "1.2"
    for job in doc["workflow"]["jobs"]:
        job["command"] = {"program": "/opt/bin/tool", "arguments": ["--x", *job.pop("arguments")]}
        job["category"] = "cat"
    workflow = _read(tmp_path, doc)
    assert {job.name for job in workflow.jobs.values()} == {"tool"}
    assert workflow.jobs["fast2bfq_ID0000003"].arguments == ("--x", "-v", "HEP_s_1.fq", "HEP_s_2.fq")


@pytest.mark.parametrize("version", ["1.0", "1.1"])
def test_a_legacy_job_without_arguments_still_gets_its_category(tmp_path: Path, version: str) -> None:
    doc = {"name": "w", "schemaVersion": version, "workflow": {"jobs": [
        {"name": "mapMerge_mapMerge_HEP", "type": "compute", "runtime": 1, "parents": []},
        {"name": "chr21_chr21", "type": "compute", "runtime": 1, "parents": ["mapMerge_mapMerge_HEP"]}]}}
    workflow = _read(tmp_path, doc)
    assert [job.name for job in workflow.jobs.values()] == ["mapMerge", "chr21"]
    assert all(job.arguments == () for job in workflow.jobs.values())


# schema 1.4 as Pegasus's soykb runs have it: kickstart's argv, one argument holding blanks and shell
# operators (GATK's filter expression), and a program name with no path
def _pegasus_14(wms: str) -> dict[str, Any]:
    return {"name": "soykb", "schemaVersion": "1.4", "wms": {"name": wms, "version": "4.9.3"}, "workflow": {
        "makespanInSeconds": 5, "executedAt": "20200407T225740+0000", "machines": [], "tasks": [
            {"name": "filtering_snp_ID0000094", "id": "ID0000094", "type": "compute", "runtimeInSeconds": 5,
             "parents": [], "files": [],
             "command": {"program": "filtering_snp", "arguments": [
                 "--filterExpression", "QD < 2.0 || FS > 60.0 || MQ < 40.0  || Haplotypescore > 20.0",
                 "--filterName", "it's", "-o", "out.vcf"]}}]}}


def test_a_pegasus_trace_keeps_each_recorded_argument_one_word(tmp_path: Path) -> None:
    """A Pegasus trace's arguments are the program's argv as kickstart recorded it: the filter
    expression reaches the program as one argument, its double blank kept, not split as shell words."""
    expression = "QD < 2.0 || FS > 60.0 || MQ < 40.0  || Haplotypescore > 20.0"
    planned = plan(_read(tmp_path, _pegasus_14("Pegasus")), tc=None, sc=None, rc=None,
                   properties=Properties({}))
    assert planned.jobs[0].tasks[0].argv == ("--filterExpression", expression, "--filterName", "it's",
                                             "-o", "out.vcf")
    directory = _planned(tmp_path, _pegasus_14("Pegasus"))
    assert f"'{expression}'" in _dag_arguments(directory)["ID0000094"]


def test_a_trace_of_another_system_still_reads_arguments_as_a_command_line(tmp_path: Path) -> None:
    """Elsewhere (WfBench's, Nextflow's traces) the arguments stay a shell's command-line text, whose
    redirections are the job's streams."""
    doc = _pegasus_14("WfBench")
    doc["workflow"]["tasks"][0]["command"]["arguments"] = ["--percent-cpu 0.6", '"in file.txt"', "2>", "log"]
    workflow = _read(tmp_path, doc)
    assert workflow.jobs["ID0000094"].stderr == "log"
    planned = plan(workflow, tc=None, sc=None, rc=None, properties=Properties({}))
    assert planned.jobs[0].tasks[0].argv == ("--percent-cpu", "0.6", "in file.txt")


# schema 1.4 as Makeflow's blast runs have it: each rule's whole /bin/sh command split at blanks, its
# command word first, with redirections and a file pattern
MAKEFLOW_14 = {"name": "blast", "schemaVersion": "1.4", "wms": {"name": "Makeflow", "version": "7.1.12."},
               "workflow": {"makespanInSeconds": 9, "executedAt": "20210308T000000+0000", "machines": [],
                            "tasks": [
    {"name": "split_fasta_ID000001", "id": "ID000001", "type": "compute", "runtimeInSeconds": 1,
     "parents": [], "children": ["blastall_ID000002"], "command": {"program": "split_fasta",
                                                     "arguments": ["./split_fasta", "2", "q.fasta"]},
     "files": [{"link": "input", "name": "q.fasta", "sizeInBytes": 9},
               {"link": "output", "name": "q.fasta.0", "sizeInBytes": 4}]},
    {"name": "blastall_ID000002", "id": "ID000002", "type": "compute", "runtimeInSeconds": 5,
     "parents": ["split_fasta_ID000001"], "children": ["cat_ID000003"],
     "command": {"program": "blastall", "arguments": ["./blastall", "-p", "blastn", "-i", "q.fasta.0",
                                                      ">", "q.fasta.0.out", "2>", "q.fasta.0.err"]},
     "files": [{"link": "input", "name": "q.fasta.0", "sizeInBytes": 4},
               {"link": "output", "name": "q.fasta.0.out", "sizeInBytes": 7},
               {"link": "output", "name": "q.fasta.0.err", "sizeInBytes": 0}]},
    {"name": "cat_ID000003", "id": "ID000003", "type": "compute", "runtimeInSeconds": 1,
     "parents": ["blastall_ID000002"], "command": {"program": "cat", "arguments": ["cat", "q.fasta.*.err"]},
     "files": [{"link": "input", "name": "q.fasta.0.err", "sizeInBytes": 0}]}]}}


def test_a_makeflow_trace_runs_its_rules_commands_without_a_shell(tmp_path: Path) -> None:
    """A Makeflow trace's arguments are the rule's shell command split at blanks: the command word is
    not passed to the program again, ``>`` and ``2>`` become the job's stdout and stderr, and a file
    pattern no shell will expand is warned about by name."""
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(MAKEFLOW_14))
    code, _, err = _sheaf("validate", str(trace))
    assert code == 0, err
    assert "1 Makeflow task(s) use shell syntax in their command ('q.fasta.*.err')" in err
    directory = _planned(tmp_path, MAKEFLOW_14)
    arguments = _dag_arguments(directory)
    assert arguments["ID000001"] == '\\"2 q.fasta\\"'
    assert arguments["ID000003"] == '\\"q.fasta.*.err\\"'  # the pattern as it is
    submit = (directory / "jobs" / "000" / "blastall_ID000002.sub").read_text().splitlines()
    assert 'arguments = "-p blastn -i q.fasta.0"' in submit
    assert any(line.startswith("output = ") and line.endswith("/q.fasta.0.out") for line in submit)
    assert any(line.startswith("error = ") and line.endswith("/q.fasta.0.err") for line in submit)
    code, out, err = _sheaf("predict", str(directory), "--slots", "1", "--json", "--no-history")
    assert code == 0, err
    assert json.loads(out)["work_s"] == pytest.approx(7.0)


def _typed(kind: str) -> dict[str, Any]:
    doc = _pegasus_14("Pegasus")
    doc["workflow"]["tasks"].insert(0, {"name": "stage_in_local_ID1", "id": "ID1", "type": kind,
                                        "runtimeInSeconds": 2, "parents": [], "files": []})
    doc["workflow"]["tasks"][1]["parents"] = ["stage_in_local_ID1"]
    return doc


def test_a_pegasus_runs_own_staging_task_is_read_as_a_job_with_a_warning(tmp_path: Path) -> None:
    """Schema 1.0-1.4 type a task ``transfer`` or ``auxiliary`` when the traced Pegasus run made it (its
    stage-in, create-dir, cleanup jobs): read as a job, and said."""
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(_typed("transfer")))
    code, out, err = _sheaf("validate", str(trace))
    assert code == 0, err
    assert "jobs: 2 (2 compute, 0 sub-workflow)" in out and "edges: 1" in out
    assert "1 task(s) of type transfer or auxiliary" in err and "'ID1'" in err


def test_a_task_type_the_schema_does_not_list_is_refused_by_name(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(_typed("staging"), indent=1))
    code, _, err = _sheaf("validate", str(trace))
    assert code == 2
    assert "tasks[].type is one of compute, transfer, auxiliary" in err and "staging" in err
    assert str(trace) in err and "Traceback" not in err


def test_a_fractional_core_count_asks_for_whole_cpus(tmp_path: Path) -> None:
    """Schema 1.2 made ``cores`` a number: a task of 1.5 cores validates and plans, asking for 2 CPUs."""
    doc = _pegasus_14("Pegasus")
    doc["workflow"]["tasks"][0]["cores"] = 1.5
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(doc))
    code, _, err = _sheaf("validate", str(trace))
    assert code == 0, err
    directory = _planned(tmp_path, doc)
    plan_doc = json.loads((directory / "plan.json").read_text())
    assert plan_doc["jobs"][0]["profiles"]["pegasus"]["cores"] == "2"
    assert "request_cpus = 2\n" in next(directory.glob("*.dag")).read_text()


def test_a_job_list_that_is_no_list_is_refused_naming_both_schema_names(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"name": "w", "schemaVersion": "1.0", "workflow": {"jobs": {"a": 1}}}))
    code, _, err = _sheaf("validate", str(trace))
    assert code == 2
    assert "a workflow.tasks list (1.0-1.2: workflow.jobs)" in err and "Traceback" not in err


def test_an_argument_that_looks_like_a_redirection_is_written_back_as_an_argument() -> None:
    """A job whose program takes ``>`` as an argument keeps it through the WfCommons writer and reader,
    as it does with its streams."""
    from sheaf.formats._wfcommons import dumps_wfcommons, loads_wfcommons
    wf = Workflow("w")
    wf.jobs["t"] = Job("t", "p", arguments=(">", "x", "2>"), stdout="out.txt", stderr="err.txt")
    back = loads_wfcommons(dumps_wfcommons(wf)).jobs["t"]
    assert job_argv("t", back.arguments) == (">", "x", "2>")
    assert (back.stdout, back.stderr, back.stdin) == ("out.txt", "err.txt", None)
