"""``sheaf.app``, the application layer: what the command line and a Python caller share.

A plan made by ``sheaf plan`` and one made by ``sheaf.app.plan`` hold the same files; a run by ``sheaf run``
and one by ``sheaf.app.run`` leave the same records (the events database, ``<dag>.dagman.out``); the
README's Python example runs as shown.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sheaf import app

ROOT = Path(__file__).resolve().parents[1]
SHEAF = str(Path(sys.executable).with_name("sheaf"))


def test_the_public_surface_is_pinned() -> None:
    assert sorted(app.__all__) == sorted([
        "DagmanOptions", "PlanRequest", "PlanResult", "PredictOptions", "PredictResult", "RUN_LOG",
        "RunOptions", "RunResult", "Statistics", "WorkflowStatus", "braindump_json", "calibrate",
        "condor_submit_dag_options", "draw_workflow",
        "hand_to_dagman", "overheads_path", "pegasus_status", "pegasus_variables", "plan", "predict", "run",
        "running", "statistics", "status", "stop", "submit",
    ])
    assert all(getattr(app, name) is not None for name in app.__all__)


def _tree(directory: Path) -> set[str]:
    return {path.relative_to(directory).as_posix() for path in directory.rglob("*")}


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    here = tmp_path / "blackdiamond"
    shutil.copytree(ROOT / "examples" / "blackdiamond", here)
    monkeypatch.chdir(here)
    return here


def test_the_command_line_and_python_make_the_same_directories(example: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([SHEAF, "plan", "workflow.yml", "--dir", "runs", "--relative-dir", "cli",
                           "--cluster", "horizontal", "-q"], cwd=example, env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.splitlines()[0] == f"submit directory: {example / 'runs' / 'cli'}"
    planned = app.plan(app.PlanRequest("workflow.yml", base="runs", relative_dir="py",
                                       clustering=("horizontal",)))
    assert planned.directory == str(example / "runs" / "py") and not planned.kept
    assert planned.executable is not None and planned.files is not None
    assert _tree(example / "runs" / "cli") == _tree(example / "runs" / "py")
    assert planned.braindump["submit_dir"] == planned.directory

    subprocess.run([SHEAF, "run", "runs/cli"], cwd=example, env=env, capture_output=True, check=True)
    result = app.run(planned.directory)
    assert result.succeeded
    assert _tree(example / "runs" / "cli") == _tree(example / "runs" / "py")
    assert app.status(planned.directory).state == "succeeded"
    assert app.statistics(planned.directory).summary
    out = (example / "runs" / "py" / "blackdiamond.dag.dagman.out").read_text()
    assert "EXITING WITH STATUS 0" in out


def test_a_numbered_plan_takes_the_next_number(example: Path) -> None:
    first = app.plan(app.PlanRequest("workflow.yml", base="runs"))
    second = app.plan(app.PlanRequest("workflow.yml", base="runs"))
    assert first.directory.endswith("run0001") and second.directory.endswith("run0002")


def test_a_numbered_plan_that_fails_leaves_nothing_and_its_number_free(example: Path) -> None:
    """The run directory is reserved before planning (the data pass plans beside it): a plan that then
    fails removes it again, and the parents it made."""
    from sheaf.errors import PlanningError

    with pytest.raises(PlanningError, match="unknown site"):
        app.plan(app.PlanRequest("workflow.yml", base="runs", sites=("nowhere",)))
    assert not (example / "runs").exists()
    assert app.plan(app.PlanRequest("workflow.yml", base="runs")).directory.endswith("run0001")


def test_a_bad_request_is_one_usage_error_and_writes_nothing(example: Path) -> None:
    from sheaf.errors import UsageError

    with pytest.raises(UsageError, match="cleanup strategy"):
        app.plan(app.PlanRequest("workflow.yml", base="runs", cleanup="sometimes"))
    assert not (example / "runs").exists()
    with pytest.raises(UsageError, match="unknown backend"):
        app.RunOptions(backend="nowhere")


def test_the_readmes_python_example_runs_as_shown(example: Path) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=example, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True ")


def test_a_python_plan_records_only_the_arguments_it_was_given(example: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """braindump.yml's planner_arguments are the request's ``argv``, never the host process's."""
    monkeypatch.setattr(sys, "argv", ["host.py", "--host-option"])
    bare = app.plan(app.PlanRequest("workflow.yml", base="runs", relative_dir="bare"))
    given = app.plan(app.PlanRequest("workflow.yml", base="runs", relative_dir="given", argv=("-v", "x")))
    assert bare.braindump["planner_arguments"] == "" and given.braindump["planner_arguments"] == "-v x"
    assert "host-option" not in (Path(bare.directory) / "braindump.yml").read_text()


@pytest.mark.parametrize(("make", "message"), [
    (lambda: app.PlanRequest("workflow.yml", group_size=0), "group_size 0 is not in the range x>=1"),
    (lambda: app.PlanRequest("workflow.yml", clustering=("auto",), slots=-1), "slots -1 is not in the range"),
    (lambda: app.PlanRequest("workflow.yml", backend="nosuch"), "unknown backend 'nosuch'"),
    (lambda: app.DagmanOptions(rescue_from=0), "rescue_from 0 is not in the range x>=1"),
    (lambda: app.PlanRequest("workflow.yml", relative_dir="a/" + "x" * 256), "component is longer than 255"),
    (lambda: app.PlanRequest("workflow.yml", base="x" * 256), "--dir 'xxx"),
    (lambda: app.PlanRequest("workflow.yml", relative_submit_dir="x" * 256), "--relative-submit-dir 'xxx"),
    (lambda: app.PlanRequest("workflow.yml", randomdir="x" * 256), "--randomdir 'xxx"),
    (lambda: app.PlanRequest("workflow.yml", basename="b" * 101), "longer than 100 bytes"),
    (lambda: app.RunOptions(negotiation_interval=0.0), "negotiation_interval 0.0 is not in the range"),
    (lambda: app.RunOptions(negotiation_interval=math.nan), "negotiation_interval nan is not in the range"),
    (lambda: app.RunOptions(negotiation_interval=math.inf), "negotiation_interval inf is not in the range"),
    (lambda: app.RunOptions(backout_idle=math.nan), "backout_idle nan is not in the range x>=0.1"),
    (lambda: app.RunOptions(backout_idle=-1), "backout_idle -1 is not in the range x>=0.1"),
    (lambda: app.DagmanOptions(batch_name="a\nb"), "holds a line break"),
    (lambda: app.DagmanOptions(batch_name="a\0b"), "DagmanOptions.batch_name: holds a NUL character"),
    (lambda: app.DagmanOptions(dag_files=("w.dag", "x\0.dag")), "DagmanOptions.dag_files: holds a NUL"),
    (lambda: app.PlanRequest("workflow.yml", defines=("a=\0",)), "PlanRequest.defines: holds a NUL"),
    (lambda: app.status("runs\0"), "directory: holds a NUL character"),
])
def test_option_records_refuse_what_the_command_line_refuses(example: Path, make: Callable[[], object],
                                                             message: str) -> None:
    from sheaf.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(message)):
        make()
    assert not (example / "runs").exists()


@pytest.mark.parametrize("option", ["--negotiation-interval", "--backout-idle"])
def test_sheaf_run_refuses_a_nan_interval_that_would_never_negotiate(tmp_path: Path, option: str) -> None:
    """click's float range lets NaN through (no comparison is true of it); the run refuses it before
    anything starts, rather than a grid run that never negotiates again."""
    from click.testing import CliRunner

    from sheaf.cli import main

    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n")
    done = CliRunner().invoke(main, ["run", str(tmp_path), option, "nan"])
    assert done.exit_code == 2 and "is not in the range" in done.output, done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sub", "wf.dag"]


@pytest.mark.parametrize(("define", "rule"), [
    ("dagman.retry=1e99", "'retry' must be an integer 0 to 2147483647"),
    ("dagman.retry=3000000000", "'retry' must be an integer 0 to 2147483647"),
    ("dagman.priority=-3000000000", "'priority' must be an integer -2147483648 to 2147483647"),
    ("dagman.stagein.maxjobs=3000000000", "must be <= 2147483647"),
])
def test_a_plan_refuses_a_number_the_dag_file_cannot_hold(example: Path, define: str, rule: str) -> None:
    """DAGMan reads RETRY, PRIORITY and MAXJOBS into a C int: the plan refuses a value ``sheaf run`` would."""
    from sheaf.errors import ValidationError

    with pytest.raises(ValidationError, match=re.escape(rule)) as caught:
        app.plan(app.PlanRequest("workflow.yml", base="runs", defines=(define,)))
    assert define.split("=")[1] in str(caught.value)
    assert not (example / "runs").exists()


@pytest.mark.parametrize(("given", "key"), [
    ("-D", "dagman.post"), ("-D", "pegasus.dir.exec"), ("-D", "pegasus.job.aggregator"),
    ("-D", "condor.arguments.quote"), ("environment", "pegasus.dir.exec"),
    ("environment", "pegasus.job.aggregator")])
def test_a_property_of_bytes_that_are_not_utf8_is_refused(example: Path, monkeypatch: pytest.MonkeyPatch,
                                                         given: str, key: str) -> None:
    """A -D option or _PEGASUS__* variable of non-UTF-8 bytes (held by Python as lone surrogates) is
    refused naming the property, before any file is written -- not a traceback while the DAG is written."""
    from sheaf.errors import InputError, UsageError

    value = b"a\xff".decode("utf-8", "surrogateescape")
    defines: tuple[str, ...] = ()
    if given == "-D":
        defines = (f"{key}={value}",)
    else:  # _PEGASUS__DIR__EXEC sets pegasus.dir.exec
        monkeypatch.setenv("_" + key.upper().replace(".", "__"), value)
    with pytest.raises(UsageError if given == "-D" else InputError, match="is not UTF-8 text") as caught:
        app.plan(app.PlanRequest("workflow.yml", base="runs", defines=defines))
    assert f"{key}=a\\udcff" in str(caught.value).replace("\\\\", "\\")
    assert not (example / "runs").exists()


@pytest.mark.parametrize("size", ["9" * 5000, "2147483648", "0"])
def test_a_group_size_property_out_of_range_is_refused(example: Path, size: str) -> None:
    """sheaf.group.size is a Java int >= 1: more digits than Python converts, or one past the range, is
    refused naming the property, as a non-number is."""
    from sheaf.errors import UsageError

    with pytest.raises(UsageError, match=re.escape("sheaf.group.size must be a positive integer")):
        app.plan(app.PlanRequest("workflow.yml", base="runs", defines=(f"sheaf.group.size={size}",)))
    assert not (example / "runs").exists()


def test_a_plan_directory_too_long_for_its_temporary_sibling_is_bad_input(example: Path) -> None:
    """A last part of 255 bytes is a file name, but not with the ~30 bytes of the temporary directory the
    plan is written into beside it: a PlanningError (exit 2) naming the directory, not a storage failure."""
    from sheaf.errors import PlanningError

    with pytest.raises(PlanningError, match="too long for the file system"):
        app.plan(app.PlanRequest("workflow.yml", base="runs", relative_dir="c" * 255))
    assert not any((example / "runs").iterdir())


def test_the_largest_retry_and_priority_the_dag_file_holds_plan_and_run(example: Path) -> None:
    planned = app.plan(app.PlanRequest("workflow.yml", base="runs", defines=(
        "dagman.retry=2147483647", "dagman.priority=-2147483648", "dagman.stagein.maxjobs=2147483647")))
    assert app.run(planned.directory).succeeded


@pytest.mark.parametrize(("make", "message"), [
    (lambda: app.PlanRequest("workflow.yml", group_size="3"),  # type: ignore[arg-type]
     "PlanRequest.group_size: expected int or None, got '3'"),
    (lambda: app.PlanRequest(123),  # type: ignore[arg-type]
     "PlanRequest.workflow: expected str or None, got 123"),
    (lambda: app.PlanRequest("workflow.yml", clustering="horizontal"),  # type: ignore[arg-type]
     "PlanRequest.clustering: expected a tuple of str, got 'horizontal' (write ('horizontal',) for one)"),
    (lambda: app.PlanRequest("workflow.yml", overhead="5"),  # type: ignore[arg-type]
     "PlanRequest.overhead: expected float or None, got '5'"),
    (lambda: app.DagmanOptions(maxjobs=2.5),  # type: ignore[arg-type]
     "DagmanOptions.maxjobs: expected int or None, got 2.5"),
    (lambda: app.DagmanOptions(dag_files="my.dag"),  # type: ignore[arg-type]
     "DagmanOptions.dag_files: expected a tuple of str, got 'my.dag'"),
    (lambda: app.DagmanOptions(usedagdir=1),  # type: ignore[arg-type]
     "DagmanOptions.usedagdir: expected bool, got 1"),
    (lambda: app.RunOptions(dagman={"maxjobs": 2}),  # type: ignore[arg-type]
     "RunOptions.dagman: expected DagmanOptions, got {'maxjobs': 2}"),
    (lambda: app.PredictOptions(slots="4"),  # type: ignore[arg-type]
     "PredictOptions.slots: expected int or None, got '4'"),
    (lambda: app.PredictOptions(calibrate="runs/r"),  # type: ignore[arg-type]
     "PredictOptions.calibrate: expected a tuple of str, got 'runs/r'"),
    (lambda: app.status(None), "directory: expected a path (str or os.PathLike), got None"),  # type: ignore[arg-type]
    (lambda: app.statistics(3), "directory: expected a path (str or os.PathLike), got 3"),  # type: ignore[arg-type]
    (lambda: app.predict(None), "directory: expected a path"),  # type: ignore[arg-type]
    (lambda: app.run(None), "directory: expected a path"),  # type: ignore[arg-type]
    (lambda: app.running(5), "directory: expected a path"),  # type: ignore[arg-type]
    (lambda: app.stop(5), "directory: expected a path"),  # type: ignore[arg-type]
])
def test_a_value_of_the_wrong_type_is_one_usage_error_naming_the_field(
        example: Path, make: Callable[[], object], message: str) -> None:
    from sheaf.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(message)):
        make()
    assert not (example / "runs").exists()


def test_values_of_the_annotated_types_are_taken() -> None:
    assert app.PredictOptions(overhead=5, default_runtime=30).overhead == 5  # an int is a float
    assert app.RunOptions(dagman=app.DagmanOptions(dag_files=("a.dag",), system_knobs=(("K", "v"),)))
    # a pathlib.Path where a file name is expected is taken as its text, alone or in a tuple
    request = app.PlanRequest(Path("w.yml"), base=Path("runs"), input_dirs=(Path("in"), "more"))
    assert (request.workflow, request.base, request.input_dirs) == ("w.yml", "runs", ("in", "more"))


@pytest.mark.parametrize(("make", "message"), [
    (lambda: app.PredictOptions(default_runtime=-1.0),
     "PredictOptions.default_runtime -1.0 is not in the range x>=0"),
    (lambda: app.PredictOptions(default_runtime=float("nan")),
     "PredictOptions.default_runtime nan is not in the range"),
    (lambda: app.PredictOptions(replicates=-1), "PredictOptions.replicates -1 is not in the range x>=0"),
    (lambda: app.PredictOptions(overhead=-0.5), "PredictOptions.overhead -0.5 is not in the range x>=0"),
    (lambda: app.calibrate([], "local"), "calibrate needs a sequence of one or more run directories"),
    (lambda: app.calibrate("runs/r", "local"), "calibrate needs a sequence of one or more run directories"),
])
def test_predict_options_and_calibrate_refuse_what_the_command_line_refuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[], object], message: str) -> None:
    from sheaf.errors import UsageError

    monkeypatch.setenv("SHEAF_OVERHEADS", str(tmp_path / "overheads.json"))
    with pytest.raises(UsageError, match=re.escape(message)):
        make()
    assert not (tmp_path / "overheads.json").exists()
