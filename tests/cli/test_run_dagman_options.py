"""condor_submit_dag's options that DAGMan's own tests use, as ``sheaf run`` takes them: real runs.

* ``--always-run-post``/``--dont-always-run-post`` (``-AlwaysRunPost``/``-DontAlwaysRunPost``) win over
  the CONFIG file's ``DAGMAN_ALWAYS_RUN_POST``, as the command line's throttles win over theirs;
* ``--batch-name`` (``-batch-name``) is every node job's ``JobBatchName``, a SUBDAG's node jobs' too
  (DAGMan's test ``job_dagman_batch_name``); without it DAGMan's default,
  ``<primary DAG file>+<DAGManJobId>``; a node's own ``batch_name`` wins;
* the options sheaf cannot act on are refused, not taken silently.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

_ECHO_BATCH = """universe = vanilla
executable = /bin/echo
arguments = batch-name: $$([JobBatchName])
output = out-$(nodename).txt
# a macro, not the batch_name command: it does not change the job's JobBatchName
JobBatchName = dummy_batch_name
queue
"""


def _sheaf_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SHEAF_EVENTS": "0", "SHEAF_HOME": str(directory / ".home")}
    boot = "import sys; from sheaf.cli import main; sys.argv[0] = 'sheaf'; main()"
    return subprocess.run([sys.executable, "-c", boot, "run", str(directory), *args],
                          check=False, capture_output=True, text=True, env=env, timeout=120)


def _pre_fails_dag(tmp_path: Path, config: str | None) -> Path:
    """Node A: its PRE script fails; its POST script leaves a mark and succeeds."""
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "post.sh").write_text("#!/bin/sh\necho \"$1\" > post-ran\n")
    (tmp_path / "post.sh").chmod(0o755)
    lines = ["JOB A a.sub", "SCRIPT PRE A /bin/false", "SCRIPT POST A post.sh $RETURN"]
    if config is not None:
        (tmp_path / "dagman.config").write_text(f"DAGMAN_ALWAYS_RUN_POST = {config}\n")
        lines.append("CONFIG dagman.config")
    (tmp_path / "w.dag").write_text("\n".join(lines) + "\n")
    return tmp_path / "post-ran"


@pytest.mark.parametrize(("config", "option", "runs"), [
    (None, "--always-run-post", True),
    ("false", "--always-run-post", True),
    ("true", "--dont-always-run-post", False),
    ("true", None, True),
    (None, None, False),
])
def test_always_run_post_overrides_the_config_knob(tmp_path: Path, config: str | None, option: str | None,
                                                   runs: bool) -> None:
    mark = _pre_fails_dag(tmp_path, config)
    done = _sheaf_run(tmp_path, *([option] if option else []))
    assert "Traceback" not in done.stderr
    if runs:  # the POST script sees the PRE script's failure as $RETURN -1004 and decides: success
        assert done.returncode == 0, done.stdout + done.stderr
        assert mark.read_text().strip() == "-1004"
    else:
        assert done.returncode == 1, done.stdout + done.stderr
        assert not mark.exists()


def _batch_dags(tmp_path: Path) -> None:
    (tmp_path / "node.sub").write_text(_ECHO_BATCH)
    (tmp_path / "upper.dag").write_text('JOB UA node.sub\nVARS UA nodename="$(JOB)"\n'
                                        "SUBDAG EXTERNAL UC lower.dag\n")
    (tmp_path / "lower.dag").write_text('JOB LA node.sub\nVARS LA nodename="$(JOB)"\n')


def _seen(tmp_path: Path) -> dict[str, str]:
    return {node: (tmp_path / f"out-{node}.txt").read_text().strip() for node in ("UA", "LA")}


def test_batch_name_reaches_every_node_job_and_the_subdags(tmp_path: Path) -> None:
    _batch_dags(tmp_path)
    done = _sheaf_run(tmp_path, "--dag", "upper.dag", "--batch-name", "job_dagman_batch_name")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _seen(tmp_path) == {"UA": "batch-name: job_dagman_batch_name",
                               "LA": "batch-name: job_dagman_batch_name"}


def test_default_batch_name_is_the_primary_dag_and_the_dagman_job_id(tmp_path: Path) -> None:
    """DAGMan's default: the top-level DAG file's base name, ``+``, DAGMan's cluster id (sheaf's
    ``$(DAGManJobId)``); the SUBDAG's node jobs get the top-level run's."""
    _batch_dags(tmp_path)
    (tmp_path / "id.sub").write_text("executable = /bin/echo\narguments = $(DAGManJobId)\n"
                                     "output = id.txt\nqueue\n")
    with (tmp_path / "upper.dag").open("a") as dag:
        dag.write("JOB ID id.sub\n")
    done = _sheaf_run(tmp_path, "--dag", str(tmp_path / "upper.dag"))
    assert done.returncode == 0, done.stdout + done.stderr
    dagman_id = (tmp_path / "id.txt").read_text().strip()
    assert re.fullmatch(r"\d+", dagman_id)
    assert _seen(tmp_path) == {"UA": f"batch-name: upper.dag+{dagman_id}",
                               "LA": f"batch-name: upper.dag+{dagman_id}"}


@pytest.mark.parametrize("option", [(), ("--batch-name", "from_the_command_line")])
def test_a_nodes_own_batch_name_wins(tmp_path: Path, option: tuple[str, ...]) -> None:
    (tmp_path / "own.sub").write_text(_ECHO_BATCH.replace("output =", 'batch_name = "mine"\noutput ='))
    (tmp_path / "w.dag").write_text('JOB A own.sub\nVARS A nodename="$(JOB)"\n')
    done = _sheaf_run(tmp_path, *option)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out-A.txt").read_text().strip() == "batch-name: mine"


@pytest.mark.parametrize("option", ["--notification", "--append",
                                    "--insert-sub-file", "--do-recurse", "--no-recurse", "--update-submit",
                                    "--import-env", "--include-env"])
def test_options_sheaf_cannot_act_on_are_refused(tmp_path: Path, option: str) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text("JOB A a.sub\n")
    done = _sheaf_run(tmp_path, option)
    assert done.returncode == 2 and "No such option" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / ".sheaf").exists()  # nothing ran


@pytest.mark.parametrize(("option", "value"), [("-maxjobs", "-1"), ("--maxidle", "2147483648"),
                                               ("-MaxPre", "99999999999999999999"), ("--maxpost", "-7"),
                                               ("-priority", "2147483648"), ("--priority", "-2147483649")])
def test_a_throttle_or_priority_out_of_a_c_ints_range_is_refused_before_the_run(
        tmp_path: Path, option: str, value: str) -> None:
    """condor_submit_dag keeps them in C ints, throttles non-negative: refused naming the option, and
    nothing runs or is written."""
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text("JOB A a.sub\n")
    done = _sheaf_run(tmp_path, option, value)
    name = option.lstrip("-").lower()
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--{name} must be" in done.stderr and value in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / ".sheaf").exists() and not (tmp_path / "w.dag.dagman.out").exists()


def test_the_python_options_record_refuses_a_throttle_past_a_c_int() -> None:
    from sheaf.engine import DagmanOptions
    from sheaf.errors import UsageError

    with pytest.raises(UsageError, match="--maxjobs must be 0 to 2147483647"):
        DagmanOptions(maxjobs=2**70)
    assert DagmanOptions(maxjobs=2**31 - 1, priority=-2**31).maxjobs == 2**31 - 1


@pytest.mark.parametrize("option", [("-MaxHold", "2"), ("-Lockfile", "w.lock"), ("-SubmitMethod", "1"),
                                    ("-valgrind",), ("-version",)])
def test_condor_submit_dags_options_sheaf_lacks_are_refused_by_name(tmp_path: Path,
                                                                     option: tuple[str, ...]) -> None:
    """Every option of condor_submit_dag's manual page that sheaf run lacks is refused naming it, not
    taken for a cluster of one-letter options ("No such option '-M'")."""
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text("JOB A a.sub\n")
    done = _sheaf_run(tmp_path, *option)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"condor_submit_dag option {option[0]} is not supported by sheaf run" in done.stderr, done.stderr
    assert not (tmp_path / ".sheaf").exists()  # nothing ran


def test_dash_help_is_the_help(tmp_path: Path) -> None:
    done = _sheaf_run(tmp_path, "-help")
    assert done.returncode == 0 and "Usage: sheaf run" in done.stdout, done.stdout + done.stderr
