"""DAG-file commands carried out as DAGMan carries them out, end to end: ``sheaf run`` on hand-written
DAGs with real processes (our own versions of DAGMan's test scenarios).

SCRIPT DEBUG (a script's chosen streams appended to the DEBUG file after DAGMan's banner line);
DOT with UPDATE, DONT-OVERWRITE (numbered files) and INCLUDE, in DAGMan's layout; SAVE_POINT_FILE;
SCRIPT HOLD with the local backend's periodic_hold/periodic_release/periodic_remove; WEAK edges;
TOLERANCE of multi-proc nodes; SERVICE and PROVISIONER nodes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).parent / "sheaf")


def sheaf_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, "run", str(directory), *args], capture_output=True, text=True, check=False,
                          timeout=120)


def _job(text: str = "true") -> str:
    return f'universe = local\nexecutable = /bin/sh\narguments = "-c \'{text}\'"\nqueue\n'


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path.name


def test_script_debug_captures_the_chosen_streams(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text(_job())
    _script(tmp_path / "both.sh", "echo out-$1\necho err-$1 >&2\nexit 0\n")
    (tmp_path / "wf.dag").write_text(
        "JOB A a.sub\nJOB B a.sub\nJOB C a.sub\nPARENT A CHILD B\nPARENT B CHILD C\n"
        "SCRIPT DEBUG all.log ALL PRE A both.sh $JOB\n"
        "SCRIPT DEBUG out.log STDOUT POST B both.sh $JOB\n"
        "SCRIPT DEBUG err.log STDERR PRE C both.sh $JOB\n"
        "SCRIPT DEBUG all.log ALL POST C both.sh $JOB\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    banner = r"\*\*\* Node={} Type={} ExitCode=0 Completion=\d+ Cmd='{}'\n"
    text = (tmp_path / "all.log").read_text()
    assert re.fullmatch(banner.format("A", "PRE", r"\S*both.sh A") + "out-A\nerr-A\n"
                        + banner.format("C", "POST", r"\S*both.sh C") + "out-C\nerr-C\n", text), text
    assert re.fullmatch(banner.format("B", "POST", r"\S*both.sh B") + "out-B\n",
                        (tmp_path / "out.log").read_text())
    assert re.fullmatch(banner.format("C", "PRE", r"\S*both.sh C") + "err-C\n",
                        (tmp_path / "err.log").read_text())
    assert not list((tmp_path / ".sheaf").glob(".debug-*"))


def test_a_node_or_script_named_debug_is_no_debug_keyword(tmp_path: Path) -> None:
    """DEBUG is a keyword only right after SCRIPT (or its DEFER status and time): a node named DEBUG,
    or a script called debug, runs its script with no DEBUG file, and no file is written to."""
    (tmp_path / "a.sub").write_text(_job())
    script = "#!/bin/sh\necho \"$*\" >> ran.txt\n"
    _script(tmp_path / "note.sh", script[len("#!/bin/sh\n"):])
    _script(tmp_path / "debug", script[len("#!/bin/sh\n"):])
    (tmp_path / "wf.dag").write_text(
        "JOB DEBUG a.sub\nJOB C a.sub\n"
        "SCRIPT PRE DEBUG note.sh pre $NODE\n"
        "SCRIPT DEFER 3 1 POST DEBUG note.sh post $NODE\n"
        "SCRIPT POST C debug note.sh ALL\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = sorted((tmp_path / "ran.txt").read_text().splitlines())
    assert ran == ["note.sh ALL", "post DEBUG", "pre DEBUG"]
    assert (tmp_path / "note.sh").read_text() == script
    assert (tmp_path / "debug").read_text() == script


def _dot_nodes(text: str) -> dict[str, str]:
    return dict(re.findall(r'^    "(\w+)" \[shape=\w+ label="\w+ \(([^)]*)\)"', text, re.MULTILINE))


def test_dot_update_dont_overwrite_and_include(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text(_job())
    (tmp_path / "bad.sub").write_text(_job("exit 3"))
    (tmp_path / "header.dot").write_text("    node [color=red];\n")
    (tmp_path / "old.dot.0").write_text("taken\n")  # numbering continues after the files there
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B bad.sub\nPARENT A CHILD B\n"
                                     "DOT old.dot UPDATE DONT-OVERWRITE INCLUDE header.dot\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stderr
    numbered = sorted(tmp_path.glob("old.dot.*"), key=lambda p: int(p.suffix[1:]))
    assert not (tmp_path / "old.dot").exists() and len(numbered) >= 3, numbered
    assert numbered[0].read_text() == "taken\n"
    first, last = numbered[1].read_text(), numbered[-1].read_text()
    assert first.startswith('digraph DAG {\n    label="DAGMan Job status at ')
    # named as the DAG names it, as DAGMan's comment does
    assert "// Beginning of commands included from header.dot.\n    node [color=red];\n" in first
    assert _dot_nodes(first) == {"A": "I", "B": "I"}
    assert _dot_nodes(last) == {"A": "Done", "B": "E"} and '    "A" -> "B";\n}\n' in last


def test_dot_default_is_written_once_and_overwritten(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text(_job())
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nDOT wf.dot\n")
    (tmp_path / "wf.dot").write_text("old\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert _dot_nodes((tmp_path / "wf.dot").read_text()) == {"A": "I"}  # DONT-UPDATE: the start only
    assert [p.name for p in tmp_path.glob("wf.dot*")] == ["wf.dot"]


def test_save_point_files_in_rescue_format_rolling_to_old(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text(_job())
    (tmp_path / "wf.dag").write_text(
        "JOB A a.sub\nJOB B a.sub\nJOB C a.sub\nJOB D a.sub\nPARENT A CHILD B\nPARENT B CHILD C\n"
        "PARENT C CHILD D\nRETRY B 2\n"
        "SAVE_POINT_FILE A\nSAVE_POINT_FILE B progress.save\nSAVE_POINT_FILE C progress.save\n"
        "SAVE_POINT_FILE D ./here.save\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    save = tmp_path / "save_files"
    first = (save / "A-wf.dag.save").read_text()
    assert first.startswith("# Save file written at Start Node A\n# Created ")
    assert "# Rescue DAG version: 2.1.0\n" in first and first.endswith("<ENDLIST>\n\n")
    assert "\nDONE A\nDONE B\n" in (save / "progress.save").read_text()  # written as C started
    assert "\nDONE A\n" in (save / "progress.save.old").read_text()  # B's, kept as .old
    assert (tmp_path / "here.save").read_text().endswith("DONE A\nDONE B\nDONE C\n")


def _pool_config(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "pool.conf").write_text("PERIODIC_EXPR_INTERVAL = 0.2\n")
    return {**os.environ, "SHEAF_CONFIG": str(tmp_path / "pool.conf")}


def test_periodic_hold_runs_the_hold_script_and_release_runs_the_job_again(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    # held while running its first time (killed), released at once, finishes the second time
    (tmp_path / "a.sub").write_text(
        f"universe = local\nexecutable = /bin/sh\narguments = \"-c 'echo run >> {out}; sleep 30'\"\n"
        "periodic_hold = NumJobStarts == 1 && JobStatus == 2\n"
        "periodic_hold_reason = \"first run\"\nperiodic_hold_subcode = 7\n"
        "periodic_release = JobStatus == 5 && HoldReasonSubCode == 7 && HoldReason == \"first run\"\n"
        # a shadow per start: NumShadowStarts (JobRunCount its old name) counts as NumJobStarts
        "periodic_remove = NumShadowStarts >= 2 && JobRunCount >= 2 && JobStatus == 2\nqueue\n")
    (tmp_path / "b.sub").write_text(_job())
    _script(tmp_path / "hold.sh", f"echo held-$1 >> {out}\nexit 3\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\n"
                                     "SCRIPT HOLD A hold.sh $JOB\nSCRIPT POST A post.sh $RETURN\n")
    _script(tmp_path / "post.sh", f"echo post-$1 >> {out}\nexit 0\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 0, done.stderr
    # the second run is removed (JOB_ABORTED: $RETURN -1002); the POST script rescues the node
    assert out.read_text().split() == ["run", "held-A", "run", "post--1002"]


def test_duration_limits_hold_a_job_when_they_fall_due(tmp_path: Path) -> None:
    """allowed_execute_duration and allowed_job_duration hold a running job with HTCondor's code and
    reason as soon as the limit passes, not at the next periodic evaluation (60 s by default here);
    DAGMAN_MAX_JOB_HOLDS = 1 then removes each and fails its node."""
    for name, command in (("a", "allowed_execute_duration = 1"), ("b", "allowed_job_duration = 2")):
        (tmp_path / f"{name}.sub").write_text(f"executable = /bin/sleep\narguments = 60\n{command}\nqueue\n")
    (tmp_path / "dag.config").write_text("DAGMAN_MAX_JOB_HOLDS = 1\n")
    (tmp_path / "wf.dag").write_text("CONFIG dag.config\nJOB A a.sub\nJOB B b.sub\n")
    started = time.monotonic()
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 1 and time.monotonic() - started < 30, done.stdout + done.stderr
    log = (tmp_path / "wf.dag.nodes.log").read_text()
    assert "Job was held.\n\tThe job exceeded allowed execute duration of 00:01\n\tCode 47 Subcode 0\n" in log
    assert "Job was held.\n\tThe job exceeded allowed job duration of 00:02\n\tCode 46 Subcode 0\n" in log
    assert "is not honoured" not in done.stderr


def test_a_hold_script_has_the_job_macros_of_a_post_script(tmp_path: Path) -> None:
    """DAGMan's HOLD script takes the job's macros as a POST script does ($JOBID, $CLUSTERID, ...); only
    a PRE script leaves them unexpanded."""
    out = tmp_path / "out.txt"
    (tmp_path / "a.sub").write_text(
        "universe = local\nexecutable = /bin/sleep\narguments = 30\n"
        "periodic_hold = JobStatus == 2\nperiodic_remove = JobStatus == 5\nqueue\n")
    _script(tmp_path / "hold.sh", f'echo "$@" >> {out}\n')
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nSCRIPT HOLD A hold.sh $JOB $JOBID $CLUSTERID $JOB_COUNT\n"
                                     "SCRIPT POST A hold.sh post $JOBID\n")
    run = [SHEAF, "run", str(tmp_path)]
    assert subprocess.run(run, env=_pool_config(tmp_path), timeout=120, check=False).returncode == 0
    held, post = out.read_text().splitlines()
    job_id = post.split()[1]
    assert held.split() == ["A", job_id, job_id.split(".")[0], "1"], held


def test_a_hold_script_with_an_unknown_macro_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text(_job())
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n\nSCRIPT HOLD A hold.sh $NOT_A_MACRO\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "wf.dag:3: unrecognized macro $NOT_A_MACRO in node A HOLD script arguments" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "wf.dag.dagman.out").exists()


def test_the_exit_policy_requeues_holds_and_removes_a_job_as_the_shadow_does(tmp_path: Path) -> None:
    """At exit the shadow evaluates periodic_hold/periodic_remove, then on_exit_hold, then on_exit_remove:
    max_retries (condor_submit's OnExitRemove) runs A again until it succeeds, in one DAGMan attempt
    (JOB_EVICTED "Job terminated and was requeued" between its runs); B's on_exit_hold holds it and its
    periodic_release runs it again; C's periodic_remove fires at its exit, however short its run."""
    counter = _script(tmp_path / "count.sh", 'n=$(cat "$1" 2>/dev/null || echo 0); n=$((n + 1))\n'
                                              'echo $n > "$1"; [ $n -ge "$2" ]\n')
    (tmp_path / "a.sub").write_text(f'executable = {counter}\narguments = "a.n 3"\nmax_retries = 5\nqueue\n')
    (tmp_path / "b.sub").write_text(f'executable = {counter}\narguments = "b.n 1"\n'
                                    "on_exit_hold = NumJobCompletions == 1\n"
                                    'on_exit_hold_reason = "look first"\non_exit_hold_subcode = 4\n'
                                    "periodic_release = JobStatus == 5\nqueue\n")
    (tmp_path / "c.sub").write_text("executable = /bin/true\nperiodic_remove = NumShadowStarts >= 1\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\nJOB A a.sub\nJOB B b.sub\nJOB C c.sub\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed: C" in done.stdout and "removed" in done.stdout, done.stdout
    assert (tmp_path / "a.n").read_text() == "3\n" and (tmp_path / "b.n").read_text() == "2\n"
    log = (tmp_path / "wf.dag.nodes.log").read_text()
    assert log.count("Job terminated and was requeued") == 2
    assert "\t(1) Normal termination (return value 1)\n\tThe job attribute OnExitRemove expression " in log
    assert "Job was held.\n\tlook first\n\tCode 3 Subcode 4" in log
    jobstate = (tmp_path / "jobstate.log").read_text()
    assert re.search(r" A JOB_SUCCESS 0 ", jobstate) and re.search(r" B JOB_SUCCESS 0 ", jobstate), jobstate


@pytest.mark.parametrize("subcode", ["1e400", 'real("nan")'])
def test_a_hold_subcode_no_int_holds_is_c_s_int_cast_of_it(tmp_path: Path, subcode: str) -> None:
    """A subcode that evaluates to an infinite or NaN real is the schedd's (int) cast of it (INT_MIN on
    x86): the job is held and released, not the run ended by a traceback."""
    (tmp_path / "a.sub").write_text("executable = /bin/true\non_exit_hold = NumJobCompletions == 1\n"
                                    f"on_exit_hold_subcode = {subcode}\nperiodic_release = JobStatus == 5\n"
                                    "queue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "Code 3 Subcode -2147483648\n" in (tmp_path / "wf.dag.nodes.log").read_text()


@pytest.mark.parametrize(("line", "said"), [
    ("max_retries = abc", "max_retries is not an integer (rule: max_retries is an integer): 'abc'"),
    ("on_exit_remove = (", "on_exit_remove is not a ClassAd expression"),
    ("retry_until = (", "retry_until is not a ClassAd expression"),
])
def test_a_malformed_exit_policy_is_a_submit_failure_naming_its_line(tmp_path: Path, line: str,
                                                                     said: str) -> None:
    """As condor_submit refuses it: the node fails its submission, the message names file and line."""
    (tmp_path / "a.sub").write_text(f"universe = local\nexecutable = /bin/true\n{line}\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1 and f"a.sub:3: {said}" in done.stdout + done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_procs_that_can_never_match_wait_idle_for_their_policy_to_remove_them(tmp_path: Path) -> None:
    """Procs 4-6 can never match: HTCondor keeps them idle, and their periodic_remove removes them; the
    matchable procs run.  Within the tolerance the node succeeds, its POST script seeing every proc."""
    _script(tmp_path / "exit.sh", "exit $1\n")
    (tmp_path / "codes").write_text("1\n1\n2\n3\n4\n5\n6\n")
    (tmp_path / "bad.sub").write_text(
        'executable = exit.sh\narguments = "$(code)"\nperiodic_remove = True && $(ProcId) >= 4\n'
        "requirements = !True || $(ProcId) < 4\nqueue code from codes\n")
    _script(tmp_path / "post.sh", 'echo "$@" > post.out\n')
    (tmp_path / "c.conf").write_text("DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 6\n")
    (tmp_path / "wf.dag").write_text("CONFIG c.conf\nJOB BAD bad.sub\n"
                                     "SCRIPT POST BAD post.sh $JOB_COUNT $EXIT_CODE_LIST $JOB_ABORT_COUNT\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "post.out").read_text() == "7 1,1,2,3,,, 3\n"


def test_weak_child_runs_after_a_failed_parent_and_the_rescue_marks_it_done(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "bad.sub").write_text(_job("exit 4"))
    (tmp_path / "ok.sub").write_text(_job(f"echo $(JOB) >> {out}"))
    (tmp_path / "wf.dag").write_text("JOB A bad.sub\nJOB B ok.sub\nJOB C ok.sub\nJOB D ok.sub\n"
                                     "WEAK PARENT A CHILD B\nPARENT B CHILD C\nPARENT A CHILD D\n"
                                     "JOB E bad.sub\nWEAK PARENT E CHILD C\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stderr
    assert sorted(out.read_text().split()) == ["B", "C"]  # D: a strong child of A, futile
    rescue = (tmp_path / "wf.dag.rescue001").read_text()
    assert "# Failed node with only weak child dependencies:\nDONE E\n" in rescue
    assert "DONE A" not in rescue and "DONE B\n" in rescue


def test_tolerance_of_a_multi_proc_node(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    # procs 0 and 1 fail, 2 and 3 succeed (after a pause, so that FAIL-FAST has something to remove)
    (tmp_path / "p.sub").write_text(
        "universe = local\nexecutable = /bin/sh\n"
        f"arguments = \"-c 'if [ $(Process) -lt 2 ]; then exit 7; fi; sleep 1; echo $(JOB) >> {out}'\"\n"
        "queue 4\n")
    (tmp_path / "wf.dag").write_text("JOB WITHIN p.sub\nTOLERANCE WITHIN 50%\n"
                                     "JOB WAITS p.sub\nTOLERANCE WAITS 1 WAIT\n"
                                     "JOB FAST p.sub\nTOLERANCE FAST 1\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stderr
    assert sorted(out.read_text().split()) == ["WAITS", "WAITS", "WITHIN", "WITHIN"]  # FAST's were removed
    rescue = (tmp_path / "wf.dag.rescue001").read_text()
    assert "DONE WITHIN\n" in rescue and "DONE WAITS" not in rescue and "DONE FAST" not in rescue
    # the DAG-wide default from the CONFIG file
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB ALL p.sub\n")
    (tmp_path / "wf.config").write_text("DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 2\n")
    for stale in tmp_path.glob("wf.dag.rescue*"):
        stale.unlink()
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr


def test_tolerance_holds_for_a_node_of_one_proc(tmp_path: Path) -> None:
    """The manual's TOLERANCE is the number of a node's jobs that may fail: with ``TOLERANCE A 1`` a node
    whose single job fails succeeds (its POST script sees the failure's $RETURN 3, as DAGMan sets the
    node's return value at a list's first failure), and so does the DAG-wide
    ``DAGMAN_NODE_JOB_FAILURE_TOLERANCE``; without one the failure stands."""
    out = tmp_path / "out.txt"
    (tmp_path / "bad.sub").write_text(_job("exit 3"))
    (tmp_path / "ok.sub").write_text(_job(f"echo $(JOB) >> {out}"))
    (tmp_path / "post.sh").write_text(f'echo post "$1" >> {out}\n')
    (tmp_path / "wf.dag").write_text("JOB A bad.sub\nTOLERANCE A 1\nJOB B ok.sub\nPARENT A CHILD B\n"
                                     f"SCRIPT POST A /bin/sh {tmp_path / 'post.sh'} $RETURN\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.read_text().split() == ["post", "3", "B"]
    strict = tmp_path / "strict"
    strict.mkdir()
    (strict / "bad.sub").write_text(_job("exit 3"))
    (strict / "wf.dag").write_text("JOB A bad.sub\n")
    assert sheaf_run(strict).returncode == 1
    (strict / "wf.dag").write_text("CONFIG wf.config\nJOB C bad.sub\n")
    (strict / "wf.config").write_text("DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 1\n")
    for stale in strict.glob("wf.dag.rescue*"):
        stale.unlink()
    assert sheaf_run(strict).returncode == 0


def test_service_nodes_run_beside_the_dag_and_are_removed_when_it_ends(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "svc.sub").write_text(_job(f"echo started >> {out}; sleep 60; echo survived >> {out}"))
    (tmp_path / "bad.sub").write_text(_job("exit 9"))
    (tmp_path / "a.sub").write_text(_job(f"sleep 1; echo $(JOB) >> {out}"))
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nSERVICE S svc.sub\nSERVICE FAILS bad.sub\n"
                                     "SERVICE MISSING nowhere.sub\n")
    started = time.monotonic()
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr  # the failing and unsubmittable services do not count
    assert time.monotonic() - started < 30  # S, still running, was removed
    assert out.read_text().split() == ["started", "A"]
    log = (tmp_path / ".sheaf" / "wf.dag.scripts.log").read_text()
    assert "SERVICE node MISSING could not be submitted" in log
    # the services' jobs are in the node log under ids of their own, as DAGMan's are: submitted first,
    # S removed by DAGMan as the DAG ends, FAILS terminated on its own
    by_job: dict[str, list[str]] = {}
    for number, cluster in re.findall(r"^(\d{3}) \((\d{3})\.000\.000\) ",
                                      (tmp_path / "wf.dag.nodes.log").read_text(), re.MULTILINE):
        by_job.setdefault(cluster, []).append(number)
    assert by_job == {"001": ["000", "001", "009"], "002": ["000", "001", "005"],
                      "003": ["000", "001", "005"]}
    assert "Job was aborted.\n\tRemoved by DAGMan\n" in (tmp_path / "wf.dag.nodes.log").read_text()
    # the metrics count them apart, as DAGMan does: FAILS and MISSING failed, S (removed as the DAG
    # ended) neither; their jobs are among the jobs submitted
    metrics = json.loads((tmp_path / "wf.dag.metrics").read_text())
    assert (metrics["nodes"], metrics["service_nodes"], metrics["service_nodes_failed"],
            metrics["service_nodes_succeeded"]) == (1, 3, 2, 0)
    assert (metrics["total_nodes"], metrics["total_nodes_run"]) == (4, 3)
    assert (metrics["jobs_submitted"], metrics["jobs_succeeded"], metrics["provisioner_nodes"]) == (3, 1, 0)


def test_provisioner_starts_first_and_the_dag_waits_for_it(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    # the provisioner marks its start, lives 2 s; A must start after it and the run end after it
    (tmp_path / "p.sub").write_text(_job(f"echo provisioned >> {out}; sleep 2; echo deprovisioned >> {out}"))
    (tmp_path / "a.sub").write_text(_job(f"echo $(JOB) >> {out}"))
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\nPROVISIONER P p.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().split()
    assert lines[-1] == "deprovisioned" and lines.index("A") < lines.index("B")
    assert sorted(lines) == ["A", "B", "deprovisioned", "provisioned"]
    metrics = json.loads((tmp_path / "wf.dag.metrics").read_text())
    assert (metrics["provisioner_nodes"], metrics["nodes"], metrics["service_nodes"]) == (1, 3, 0)


def test_a_provisioner_of_several_jobs_stops_the_dag_with_no_rescue_dag_and_no_final(tmp_path: Path) -> None:
    """The manual: a PROVISIONER node runs one job; with more, DAGMan exits without writing a rescue
    DAG or running the FINAL node."""
    out = tmp_path / "out.txt"
    (tmp_path / "p.sub").write_text(_job(f"echo $(JOB) >> {out}").replace("queue\n", "queue 2\n"))
    (tmp_path / "a.sub").write_text(_job(f"echo $(JOB) >> {out}"))
    (tmp_path / "wf.dag").write_text("PROVISIONER P p.sub\nJOB A a.sub\nFINAL F a.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "PROVISIONER node P submitted more than one job (2)" in done.stderr, done.stderr
    assert not out.exists() and not list(tmp_path.glob("wf.dag.rescue*"))


def test_held_and_released_jobs_are_in_jobstate_log_the_nodes_log_and_the_status_file(tmp_path: Path) -> None:
    """As DAGMan and HTCondor write them: ``JOB_HELD``/``JOB_RELEASED`` lines in jobstate.log,
    events 012/013 in ``<dag>.nodes.log`` (read back by ``htcondor2.JobEventLog``) with the schedd's
    hold code 3 (JobPolicy), the job's subcode and the release's reason, an EXECUTE event for each
    start (the second after the release), and the node status file's ``JobProcsHeld`` while held."""
    # held while running its first time, released 2-3 s later (whole seconds), succeeds the second time
    (tmp_path / "a.sub").write_text(
        "universe = local\nexecutable = /bin/sh\n"
        "arguments = \"-c 'if [ -e ran ]; then exit 0; fi; touch ran; sleep 30'\"\n"
        "periodic_hold = NumJobStarts == 1 && JobStatus == 2\nperiodic_hold_reason = \"first run\"\n"
        "periodic_hold_subcode = 7\n"
        "periodic_release = JobStatus == 5 && time() - EnteredCurrentStatus >= 3\nqueue\n")
    # the status file as the HOLD script sees it (written in the turn the hold was journaled)
    _script(tmp_path / "hold.sh", "sleep 0.5\ncp wf.status held.status\n")
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                     "JOB A a.sub\nSCRIPT HOLD A hold.sh\nNODE_STATUS_FILE wf.status 0\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = [line.split()[1:4] for line in (tmp_path / "jobstate.log").read_text().splitlines()]
    ours = [kind for node, kind, _ in lines if node == "A"]
    assert ours == ["SUBMIT", "EXECUTE", "JOB_HELD", "JOB_RELEASED", "EXECUTE", "JOB_TERMINATED",
                    "JOB_SUCCESS"]
    assert ["A", "JOB_HELD", "1.0"] in lines and ["A", "JOB_RELEASED", "1.0"] in lines
    os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
    htcondor2 = pytest.importorskip("htcondor2")
    kinds = htcondor2.JobEventType
    events = list(htcondor2.JobEventLog(str(tmp_path / "wf.dag.nodes.log")).events(0))
    names = [kinds(int(e.type)).name for e in events]
    assert names == ["SUBMIT", "EXECUTE", "JOB_HELD", "JOB_RELEASED", "EXECUTE", "JOB_TERMINATED"]
    held, released = events[2], events[3]
    assert held["HoldReason"] == "first run" and (held.cluster, held.proc) == (1, 0)
    assert (held["HoldReasonCode"], held["HoldReasonSubCode"]) == (3, 7)  # CONDOR_HOLD_CODE::JobPolicy
    assert released["Reason"] == ("The job attribute PeriodicRelease expression "
                                  "'JobStatus == 5 && time() - EnteredCurrentStatus >= 3' evaluated to TRUE")
    held = (tmp_path / "held.status").read_text()
    assert "JobProcsHeld = 1;" in held and re.search(r'Node = "A";(.|\n)*JobProcsHeld = 1;', held)
    assert "JobProcsHeld = 0;" in (tmp_path / "wf.status").read_text()


def test_max_job_holds_removes_a_node_job_held_that_many_times(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "a.sub").write_text(
        "universe = local\nexecutable = /bin/sh\narguments = \"-c 'sleep 30'\"\n"
        "periodic_hold = JobStatus == 2\nperiodic_release = JobStatus == 5\nqueue\n")
    _script(tmp_path / "post.sh", f"echo post-$1 >> {out}\nexit 0\n")
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                     "CONFIG wf.config\nJOB A a.sub\nSCRIPT POST A post.sh $RETURN\n")
    (tmp_path / "wf.config").write_text("DAGMAN_MAX_JOB_HOLDS = 2\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 0, done.stderr  # the POST script rescues the removed job
    assert out.read_text().split() == ["post--1002"]
    assert "DAGMAN_MAX_JOB_HOLDS" not in done.stderr  # a knob sheaf honours: no warning
    kinds = [line.split()[2] for line in (tmp_path / "jobstate.log").read_text().splitlines()
             if line.split()[1] == "A"]
    assert kinds.count("JOB_HELD") == 2 and kinds.count("JOB_RELEASED") == 1
    assert kinds[kinds.index("JOB_HELD", kinds.index("JOB_RELEASED")) + 1] == "JOB_ABORTED"


def test_periodic_remove_of_one_proc_fails_the_node_unless_tolerated(tmp_path: Path) -> None:
    """``ProcessAbortEvent``: a removed proc is a failed proc; within the node's TOLERANCE the others
    run on and the node succeeds; past it the node's value is -1002 (the removal came first)."""
    out = tmp_path / "out.txt"
    (tmp_path / "p.sub").write_text(
        "universe = local\nexecutable = /bin/sh\n"
        f"arguments = \"-c 'if [ $(Process) -eq 0 ]; then sleep 30; fi; sleep 1; echo $(JOB) >> {out}'\"\n"
        "periodic_remove = ProcId == 0 && JobStatus == 2\nqueue 3\n")
    _script(tmp_path / "post.sh", f"echo post-$1 >> {out}\nexit $(( $1 == 0 ? 0 : 1 ))\n")
    (tmp_path / "wf.dag").write_text("JOB OK p.sub\nTOLERANCE OK 1\nSCRIPT POST OK post.sh $RETURN\n"
                                     "JOB BAD p.sub\nSCRIPT POST BAD post.sh $RETURN\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 1, done.stderr
    words = out.read_text().split()
    assert sorted(words) == ["OK", "OK", "post--1002", "post-0"]  # BAD's other procs were removed
    rescue = (tmp_path / "wf.dag.rescue001").read_text()
    assert "DONE OK\n" in rescue and "DONE BAD" not in rescue


def test_post_script_macros_of_a_job_list(tmp_path: Path) -> None:
    """A POST script of a node of three procs, one of which fails within the node's TOLERANCE and ends
    last: DAGMan's macros about the job list (the manual's POST script macros; $RETURN is the failure's,
    set after the last success, while the node's job succeeded)."""
    out = tmp_path / "out.txt"
    (tmp_path / "p.sub").write_text(
        "universe = local\nexecutable = /bin/sh\n"
        "arguments = \"-c 'if [ $(Process) -eq 1 ]; then sleep 2; exit 3; fi'\"\nqueue 3\n")
    _script(tmp_path / "post.sh", f'echo "$@" >> {out}\n')
    (tmp_path / "wf.dag").write_text(
        "JOB A p.sub\nTOLERANCE A 1\nSCRIPT POST A post.sh $RETURN $SUCCESS $JOB_COUNT $JOBID $CLUSTERID "
        "$EXIT_CODES $EXIT_CODE_COUNTS $EXIT_CODE_LIST $JOB_ABORT_COUNT\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    ret, success, count, jobid, cluster, codes, counts, listed, aborted = out.read_text().split()
    assert (ret, success, count, jobid, codes, counts, listed, aborted) == (
        "3", "True", "3", f"{cluster}.2", "0,3", "0:2,3:1", "0,3,0", "0")


def test_execute_event_is_written_when_the_job_starts_running(tmp_path: Path) -> None:
    """HTCondor writes a job's EXECUTE event (001) as it starts running, not when it ends: the job
    finds its own EXECUTE in ``<dag>.nodes.log`` and ``jobstate.log`` while it runs, and each log
    holds it once, between SUBMIT and JOB_TERMINATED."""
    (tmp_path / "a.sub").write_text(
        _job("sleep 1.5; cp wf.dag.nodes.log seen.log; cp jobstate.log seen.jobstate"))
    (tmp_path / "b.sub").write_text(_job())
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                     "JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    seen = (tmp_path / "seen.log").read_text()
    assert re.search(r"^001 \(001\.000\.000\) .* Job executing on host: ", seen, re.MULTILINE), seen
    assert " A EXECUTE 1.0 " in (tmp_path / "seen.jobstate").read_text()
    os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
    htcondor2 = pytest.importorskip("htcondor2")
    events = list(htcondor2.JobEventLog(str(tmp_path / "wf.dag.nodes.log")).events(0))
    names = [(e.cluster, htcondor2.JobEventType(int(e.type)).name) for e in events]
    assert names == [(c, kind) for c in (1, 2) for kind in ("SUBMIT", "EXECUTE", "JOB_TERMINATED")]


def test_periodic_remove_is_aborted_with_the_schedds_reason(tmp_path: Path) -> None:
    """The JOB_ABORTED event (009) of a job removed by its ``periodic_remove`` carries the schedd's
    reason (``UserPolicy::FiringReason``), after the job's EXECUTE."""
    (tmp_path / "a.sub").write_text(
        "universe = local\nexecutable = /bin/sh\narguments = \"-c 'sleep 30'\"\n"
        "periodic_remove = JobStatus == 2\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n")
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=_pool_config(tmp_path))
    assert done.returncode == 1, done.stderr
    os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
    htcondor2 = pytest.importorskip("htcondor2")
    events = list(htcondor2.JobEventLog(str(tmp_path / "wf.dag.nodes.log")).events(0))
    assert [htcondor2.JobEventType(int(e.type)).name for e in events] == ["SUBMIT", "EXECUTE", "JOB_ABORTED"]
    expected = "The job attribute PeriodicRemove expression 'JobStatus == 2' evaluated to TRUE"
    assert events[2]["Reason"] == expected
