"""DAGMan's semantics end to end: ``sheaf run`` on hand-written DAGs, real processes, real files.

One scenario per DAGMan rule (written from DAGMan's documentation, in the spirit of its own
``job_dagman_*`` tests): NOOP + POST, submit failures, cycles, FINAL after SIGTERM, VARS
precedence, ABORT-DAG-ON RETURN as the exit status, ready order and priority.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine_helpers import FakeBackend, executable
from sheaf.engine import DagmanOptions, run_workflow

SHEAF = str(Path(sys.executable).parent / "sheaf")

SUB = """\
universe = local
executable = {exe}
arguments = "{args}"
output = {out}
error = {out}.err
queue
"""


def sub(directory: Path, name: str, exe: str = "/bin/true", args: str = "", out: str = "/dev/null",
        extra: str = "") -> None:
    (directory / name).write_text(extra + SUB.format(exe=exe, args=args, out=out))


def sheaf_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, "run", str(directory), *args], capture_output=True, text=True, check=False,
                          timeout=120)


def test_noop_node_with_post_script_finishes(tmp_path: Path) -> None:
    post = executable(tmp_path / "post.sh", '#!/bin/sh\necho "$1 $2" >> post.out\nexit 0\n')
    sub(tmp_path, "b.sub", "/bin/sh", f"-c 'echo B >> {tmp_path}/post.out'")
    (tmp_path / "wf.dag").write_text(f"JOB A a.sub NOOP\nSCRIPT POST A {post} $JOB $RETURN\nJOB B b.sub\n"
                                     "PARENT A CHILD B\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "post.out").read_text() == "A 0\nB\n"
    assert sheaf_run(tmp_path).returncode == 0  # a second run: complete, nothing to do


def test_missing_submit_files_fail_only_their_node_when_submitted(tmp_path: Path) -> None:
    # A's PRE script writes A's submit file; B's never appears and its POST script rescues it
    # ($RETURN -1001); C's never appears and C fails; D (independent) runs; FINAL runs.
    text = SUB.format(exe="/bin/true", args="", out="/dev/null").replace("\n", "\\n")
    pre = executable(tmp_path / "pre.sh", f'#!/bin/sh\nprintf "{text}" > a.sub\n')
    post = executable(tmp_path / "post.sh", '#!/bin/sh\necho "$1 $2" >> post.out\nexit 0\n')
    sub(tmp_path, "d.sub")
    sub(tmp_path, "f.sub")
    (tmp_path / "wf.dag").write_text(
        f"JOB A a.sub\nSCRIPT PRE A {pre}\nJOB B b.sub\nSCRIPT POST B {post} $JOB $RETURN\nJOB C c.sub\n"
        "RETRY C 2\nJOB D d.sub\nSUBDAG EXTERNAL S missing.dag\nFINAL F f.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr  # FINAL succeeded: it decides, as in DAGMan
    assert (tmp_path / "post.out").read_text() == "B -1001\n"
    assert "failed: C: submit failed" in done.stdout and "failed: S: submit failed" in done.stdout
    rescue = (tmp_path / "wf.dag.rescue001").read_text().split("\n")
    assert {"DONE A", "DONE B", "DONE D"} <= set(rescue) and "DONE C" not in rescue


def test_a_cycle_runs_the_rest_then_final(tmp_path: Path) -> None:
    final = executable(tmp_path / "final.sh", '#!/bin/sh\necho "$1 $2" > final.out\n')
    for name in ("a.sub", "b.sub", "c.sub", "f.sub"):
        sub(tmp_path, name)
    body = "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT B CHILD C\nPARENT C CHILD B\n"
    (tmp_path / "wf.dag").write_text(body)
    done = sheaf_run(tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "a cycle exists in the DAG: B -> C -> B" in done.stdout, done.stdout
    out = (tmp_path / "wf.dag.dagman.out").read_text()  # DAGMan's words, before its last counts
    assert out.index("... ERROR: a cycle exists in the dag, please check input") < out.index("DAG status: 5")
    assert "DONE A" in (tmp_path / "wf.dag.rescue001").read_text()
    (tmp_path / "g.dag").write_text(body + f"FINAL F f.sub\nSCRIPT PRE F {final} $DAG_STATUS $FAILED_COUNT\n")
    done = sheaf_run(tmp_path, "--dag", "g.dag")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "final.out").read_text() == "5 0\n"  # DAG_STATUS_CYCLE
    assert (tmp_path / "g.dag.rescue001").exists()  # written before FINAL, kept after its success


def test_a_dag_final_rescued_runs_again_from_its_rescue_dag(tmp_path: Path) -> None:
    """A FINAL node's success makes the DAG succeed, but the rescue DAG written before it stands: given
    the DAG again, DAGMan starts from that rescue DAG (the failed node runs again), not "complete"."""
    flag = tmp_path / "ok"
    sub(tmp_path, "a.sub")
    sub(tmp_path, "f.sub")
    sub(tmp_path, "b.sub", exe="/bin/sh", args=f"-c 'echo b >> b.out; test -e {flag}'")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nFINAL F f.sub\n")
    first = sheaf_run(tmp_path)
    assert first.returncode == 0 and (tmp_path / "wf.dag.rescue001").exists(), first.stdout + first.stderr
    flag.write_text("")
    again = sheaf_run(tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "started from: rescue:wf.dag.rescue001" in again.stdout, again.stdout
    assert (tmp_path / "b.out").read_text() == "b\nb\n"
    assert not (tmp_path / "wf.dag.rescue002").exists()
    assert "already complete" in sheaf_run(tmp_path).stdout  # this run wrote no rescue DAG


def test_use_strict_makes_dagmans_parse_warnings_fatal_by_level(tmp_path: Path) -> None:
    """DAGMAN_USE_STRICT: a second PRIORITY for a node is fatal from level 2; a VARS macro defined
    twice, a second CATEGORY or PRE_SKIP, NODE_STATUS_FILE or JOBSTATE_LOG from level 3; below, each
    is a warning in dagman.out and the later value (the first file) is taken."""
    sub(tmp_path, "a.sub")
    body = ("JOB A a.sub\nPRIORITY A 3\nPRIORITY A 4\nVARS A x=\"1\"\nVARS A x=\"2\"\n"
            "CATEGORY A one\nCATEGORY A two\nPRE_SKIP A 3\nPRE_SKIP A 4\n"
            "NODE_STATUS_FILE a.status\nNODE_STATUS_FILE b.status\nJOBSTATE_LOG a.log\nJOBSTATE_LOG b.log\n"
            "JOB B a.sub\nCATEGORY B one\nMAXJOBS one 1\nMAXJOBS two 1\n")  # no category left empty
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\n" + body)
    (tmp_path / "wf.config").write_text("DAGMAN_USE_STRICT = 1\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "wf.dag.dagman.out").read_text()
    for line, text in ((4, "new PRIORITY 4 for node A overrides old value 3"),
                       (6, "VARS macro x of node A is defined more than once"),
                       (8, "new CATEGORY two for node A overrides old value one"),
                       (10, "new PRE_SKIP 4 for node A overrides old value 3"),
                       (12, "NODE_STATUS_FILE"), (14, "JOBSTATE_LOG")):
        assert f"wf.dag:{line}: {text}" in log, text
    assert (tmp_path / "a.status").exists() and not (tmp_path / "b.status").exists()
    _refused_when_strict(tmp_path, 2, "wf.dag:4: new PRIORITY 4 for node A overrides old value 3")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\n" + body.replace("PRIORITY A 4\n", ""))
    assert sheaf_run(tmp_path).returncode == 0
    (tmp_path / "wf.config").write_text("DAGMAN_USE_STRICT = 3\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "wf.dag:5: VARS macro x of node A is defined more than once" in done.stderr


def test_use_strict_2_refuses_dagmans_category_warnings(tmp_path: Path) -> None:
    """DAGMan checks its categories once the DAG is read (Dag::CheckThrottleCats): a category without
    MAXJOBS, or a MAXJOBS category without nodes, is a warning in dagman.out, fatal from
    DAGMAN_USE_STRICT 2 -- refused before anything is written."""
    sub(tmp_path, "a.sub")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A a.sub\nCATEGORY A c\nMAXJOBS unused 2\n")
    (tmp_path / "wf.config").write_text("DAGMAN_USE_STRICT = 1\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "wf.dag.dagman.out").read_text()
    assert "wf.dag:3: category c has no MAXJOBS value set" in log
    assert "wf.dag:4: category unused has no assigned nodes, so the MAXJOBS value (2) will have no " in log
    _refused_when_strict(tmp_path, 2, "wf.dag:4: category unused has no assigned nodes")


def _refused_when_strict(directory: Path, level: int, message: str) -> None:
    """The last run's files gone, a run under ``DAGMAN_USE_STRICT = level`` is refused (exit 2, no
    traceback) naming ``message``, and writes nothing."""
    for stale in directory.glob("wf.dag.*"):
        stale.unlink()
    shutil.rmtree(directory / ".sheaf")
    before = sorted(p.name for p in directory.iterdir())
    (directory / "wf.config").write_text(f"DAGMAN_USE_STRICT = {level}\n")
    done = sheaf_run(directory)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert message in done.stderr, done.stderr
    assert sorted(p.name for p in directory.iterdir()) == before


def test_a_category_throttled_to_0_never_submits_and_the_dag_waits(tmp_path: Path) -> None:
    """MAXJOBS c 0 is no "no limit": DAGMan defers a node while its category runs as many jobs as the
    limit, so c's nodes are never submitted and the DAG waits for them until it is stopped or halted
    (here by A's job, which makes the halt file); sheaf warns at the start, naming the category."""
    halt = executable(tmp_path / "halt.sh", '#!/bin/sh\ntouch "$1"\n')
    sub(tmp_path, "halt.sub", str(halt), "wf.dag.halt")
    sub(tmp_path, "b.sub", "/bin/sh", f"-c 'echo B >> {tmp_path}/ran'")
    (tmp_path / "wf.dag").write_text("JOB A halt.sub\nJOB B b.sub\nJOB C b.sub\nPARENT B CHILD C\n"
                                     "CATEGORY B stuck\nMAXJOBS stuck 0\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert not (tmp_path / "ran").exists()
    assert "wf.dag:6: MAXJOBS stuck 0: DAGMan submits no node of category stuck (B)" in done.stderr
    rescue = (tmp_path / "wf.dag.rescue001").read_text()
    assert "DONE A\n" in rescue and "DONE B" not in rescue


def test_pre_skip_0_never_skips_a_node_whose_pre_script_succeeds(tmp_path: Path) -> None:
    """PRE_SKIP takes a non-zero exit code: DAGMan skips a node only when its PRE script fails with
    that code, so with PRE_SKIP 0 a PRE script exiting 0 succeeds and the job runs (warned about)."""
    log = tmp_path / "ran"
    sub(tmp_path, "a.sub", "/bin/sh", f"-c 'echo $(JOB) >> {log}'")
    pre = executable(tmp_path / "pre.sh", "#!/bin/sh\nexit 0\n")
    (tmp_path / "wf.dag").write_text(f"JOB A a.sub\nSCRIPT PRE A {pre}\nPRE_SKIP A 0\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert log.read_text() == "A\n"
    assert "wf.dag:3: PRE_SKIP 0 for node A never skips it" in (tmp_path / "wf.dag.dagman.out").read_text()


def test_owner_is_the_account_that_runs_the_dag_even_without_user_set(tmp_path: Path) -> None:
    """DAGMAN_DEFAULT_NODE_LOG's @(OWNER) is "the user name of the user who submitted the DAG", a
    job's Owner the submitting account: the uid's account name, whatever $USER says (or its absence)."""
    account = pwd.getpwuid(os.getuid()).pw_name
    sub(tmp_path, "a.sub", "/bin/sh", "-c 'echo $$([Owner]) > owner.txt'")
    (tmp_path / "wf.config").write_text("DAGMAN_DEFAULT_NODE_LOG = @(DAG_DIR)/@(DAG_FILE).@(OWNER).log\n")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A a.sub\n")
    env = {k: v for k, v in os.environ.items() if k not in ("USER", "LOGNAME")}
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / f"wf.dag.{account}.log").exists()
    assert (tmp_path / "owner.txt").read_text().strip() == account


def test_detect_cycle_refuses_a_dag_with_a_cycle_before_it_runs(tmp_path: Path) -> None:
    for name in ("a.sub", "b.sub"):
        sub(tmp_path, name)
    (tmp_path / "wf.config").write_text("DAGMAN_STARTUP_CYCLE_DETECT = True\n")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\n"
                                     "PARENT B CHILD A\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 2 and "a cycle exists in the DAG: A -> B -> A" in done.stderr, done.stderr
    assert "not honoured" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sub", "b.sub", "wf.config", "wf.dag"]


def test_condor_submit_dag_spellings_of_the_options_and_of_several_dag_files(tmp_path: Path) -> None:
    """``-MaxJobs 1`` as condor_submit_dag spells it (any case), ``a.dag b.dag`` as two DAG files run as
    one; a condor_submit_dag option sheaf run lacks is refused by name, nothing run."""
    sub(tmp_path, "a.sub")
    (tmp_path / "a.dag").write_text("JOB A1 a.sub\nJOB A2 a.sub\n")
    (tmp_path / "b.dag").write_text("JOB B1 a.sub\n")
    done = subprocess.run([SHEAF, "run", "a.dag", "b.dag", "-MaxJobs", "1", "-maxidle", "4", "-verbose"],
                          cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0 and "3 of 3 nodes done" in done.stdout, done.stdout + done.stderr
    again = subprocess.run([SHEAF, "run", ".", "--dag", "a.dag", "--dag", "b.dag", "--maxjobs", "1"],
                           cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
    assert again.returncode == 0 and "complete, nothing to run" in again.stdout, again.stdout + again.stderr
    refused = subprocess.run([SHEAF, "run", "a.dag", "-no_recurse"], cwd=tmp_path, capture_output=True,
                             text=True, check=False, timeout=120)
    assert refused.returncode == 2
    assert "condor_submit_dag option -no_recurse is not supported" in refused.stderr


def test_force_auto_rescue_and_do_rescue_from_choose_the_dag_a_run_starts_from(tmp_path: Path) -> None:
    """condor_submit_dag's -DoRescueFrom N (rescue N, the later ones renamed .old), -AutoRescue 0 (the
    original DAG, the rescue DAGs kept) and -force (every rescue DAG renamed .old, the original run)."""
    sub(tmp_path, "a.sub", "/bin/sh", f"-c 'echo A >> {tmp_path}/runs'")
    sub(tmp_path, "b.sub", "/bin/false")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\n")

    def runs_of_a(*args: str) -> int:
        done = subprocess.run([SHEAF, "run", "wf.dag", *args], cwd=tmp_path, capture_output=True, text=True,
                              check=False, timeout=120)
        assert done.returncode == 1, done.stdout + done.stderr  # B fails every time
        return len((tmp_path / "runs").read_text().splitlines())

    assert runs_of_a() == 1 and runs_of_a() == 1  # the second run starts from rescue001: A is done
    assert {p.name for p in tmp_path.glob("wf.dag.rescue*")} == {"wf.dag.rescue001", "wf.dag.rescue002"}
    assert runs_of_a("-DoRescueFrom", "1") == 1  # A done in rescue001; rescue002 retired, then rewritten
    assert (tmp_path / "wf.dag.rescue002.old").exists() and (tmp_path / "wf.dag.rescue002").exists()
    assert runs_of_a("-AutoRescue", "0") == 2  # the original DAG: A runs again; a rescue003 is written
    assert (tmp_path / "wf.dag.rescue003").exists() and (tmp_path / "wf.dag.rescue001").exists()
    assert runs_of_a("-force") == 3
    assert {p.name for p in tmp_path.glob("wf.dag.rescue*")} == {
        "wf.dag.rescue001", "wf.dag.rescue001.old", "wf.dag.rescue002.old", "wf.dag.rescue003.old"}
    refused = subprocess.run([SHEAF, "run", "wf.dag", "--do-rescue-from", "7"], cwd=tmp_path,
                             capture_output=True, text=True, check=False, timeout=120)
    assert refused.returncode == 2 and "no rescue DAG" in refused.stderr and "rescue007" in refused.stderr


def test_a_subdag_inherits_the_rescue_and_directory_options_of_its_parents_run(tmp_path: Path) -> None:
    """DAGMan passes -DoRescueFrom, -AutoRescue, -UseDagDir and (on a node's first submission) -force
    down to every SUBDAG's run: the sub-DAG starts from the rescue DAG they choose."""
    log = tmp_path / "ran"
    (tmp_path / "inner").mkdir()
    sub(tmp_path / "inner", "s.sub", "/bin/sh", f"-c 'echo $(JOB) >> {log}'")

    def fresh() -> None:
        (tmp_path / "top.dag").write_text("SUBDAG EXTERNAL D inner/sub.dag\n")
        (tmp_path / "inner" / "sub.dag").write_text("JOB X s.sub\nJOB Y s.sub\n")
        for path in [*tmp_path.glob("*.dag.*"), *(tmp_path / "inner").glob("sub.dag.*"), log]:
            path.unlink(missing_ok=True)
        for n in (1, 2):  # the sub-DAG's rescue 1 has X done, rescue 2 both; the top's nothing
            (tmp_path / "inner" / f"sub.dag.rescue00{n}").write_text("DONE X\n" + "DONE Y\n" * (n - 1))
            (tmp_path / f"top.dag.rescue00{n}").write_text("# nothing done\n")

    def ran(*args: str) -> list[str]:
        done = subprocess.run([SHEAF, "run", "top.dag", "--usedagdir", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return sorted(log.read_text().split()) if log.exists() else []

    fresh()
    assert ran() == []  # from the sub-DAG's newest rescue DAG: nothing left to run
    fresh()
    assert ran("--do-rescue-from", "1") == ["Y"]
    assert (tmp_path / "inner" / "sub.dag.rescue002.old").exists()
    fresh()
    assert ran("-AutoRescue", "0") == ["X", "Y"]
    assert (tmp_path / "inner" / "sub.dag.rescue002").exists()
    fresh()
    assert ran("-force") == ["X", "Y"]
    assert not list((tmp_path / "inner").glob("sub.dag.rescue00?"))
    fresh()  # -RescueFile of the top's rescue 1: the sub-DAG starts from its rescue 1 too
    assert ran("-RescueFile", "top.dag.rescue001") == ["Y"]
    assert (tmp_path / "inner" / "sub.dag.rescue002.old").exists()
    fresh()
    (tmp_path / "mine.rescue").write_text("# nothing done\n")
    assert ran("-RescueFile", "mine.rescue") == []  # no number to pass on: the sub-DAG's newest
    assert (tmp_path / "inner" / "sub.dag.rescue002").exists()


def test_a_named_rescue_dag_or_save_file_is_where_a_run_starts(tmp_path: Path) -> None:
    """condor_submit_dag -RescueFile FILE starts from that rescue DAG, the numbered ones after its number
    renamed .old (all of them for a name without one); -load_save FILE from a save point file, found in
    save_files/ beside the DAG, the rescue DAGs left as they are; two of -DoRescueFrom, -RescueFile and
    -load_save together are refused."""
    log = tmp_path / "ran"
    sub(tmp_path, "n.sub", "/bin/sh", f"-c 'echo $(JOB) >> {log}'")
    (tmp_path / "wf.dag").write_text("JOB A n.sub\nJOB B n.sub\nJOB C n.sub\n")

    def ran(*args: str) -> tuple[list[str], set[str], str, str]:
        for path in [*tmp_path.glob("wf.dag.*"), log]:
            path.unlink(missing_ok=True)
        shutil.rmtree(tmp_path / ".sheaf", ignore_errors=True)  # no earlier run to recover
        for n in (1, 2, 3):
            (tmp_path / f"wf.dag.rescue00{n}").write_text("DONE A\nDONE B\n")
        done = subprocess.run([SHEAF, "run", "wf.dag", *args], cwd=tmp_path, capture_output=True, text=True,
                              check=False, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        metrics = (tmp_path / "wf.dag.metrics").read_text()
        return (sorted(log.read_text().split()) if log.exists() else [],
                {p.name for p in tmp_path.glob("wf.dag.rescue*")}, metrics,
                (tmp_path / "wf.dag.dagman.out").read_text())

    names, rescues, metrics, out = ran("-RescueFile", "wf.dag.rescue002")
    assert names == ["C"] and '"rescue_dag_number":2' in metrics
    # dagman.out's start-up lines, as DAGMan's
    assert "Rescue DAG file specified; running wf.dag.rescue002 in combination with normal DAG file" in out
    assert "USING RESCUE DAG wf.dag.rescue002" in out and "Number of pre-completed nodes: 2" in out
    assert rescues == {"wf.dag.rescue001", "wf.dag.rescue002", "wf.dag.rescue003.old"}
    (tmp_path / "mine.rescue").write_text("DONE A\n")
    names, rescues, metrics, _ = ran("-RescueFile", "mine.rescue")
    assert names == ["B", "C"] and '"rescue_dag_number":0' in metrics
    assert rescues == {f"wf.dag.rescue00{n}.old" for n in (1, 2, 3)}
    (tmp_path / "save_files").mkdir()
    (tmp_path / "save_files" / "p.save").write_text("DONE A\nDONE C\n")
    names, rescues, _, out = ran("-load_save", "p.save")
    assert names == ["B"] and rescues == {f"wf.dag.rescue00{n}" for n in (1, 2, 3)}
    assert "Loading saved progress from p.save for DAG." in out and "Number of pre-completed nodes: 2" in out
    _, _, _, out = ran()  # the newest rescue DAG, found
    assert "Found rescue DAG number 3; running wf.dag.rescue003 in combination with normal DAG file" in out
    exclusive = "can not be used with the following flag"
    for args, said in ((("-load_save", "p.save", "-DoRescueFrom", "1"), exclusive),
                       (("-RescueFile", "mine.rescue", "-DoRescueFrom", "1"), exclusive),
                       (("-load_save", "gone.save"), "no save file"),
                       (("-RescueFile", "gone"), "no rescue DAG")):
        refused = subprocess.run([SHEAF, "run", "wf.dag", *args], cwd=tmp_path, capture_output=True,
                                 text=True, check=False, timeout=120)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr


def test_a_rescue_dags_vars_line_reaches_the_resumed_runs_job(tmp_path: Path) -> None:
    """DAGMan parses the rescue DAG as one more DAG file after the DAG's own: a VARS line added to it
    by hand gives the node's job its value in the run that starts from it, a PRIORITY line its priority."""
    log = tmp_path / "ran"
    sub(tmp_path, "n.sub", "/bin/sh", f"-c 'echo $(JOB)=$(x) >> {log}'")
    (tmp_path / "wf.dag").write_text('JOB A n.sub\nJOB B n.sub\nVARS ALL_NODES x="dag"\nPARENT A CHILD B\n')
    (tmp_path / "wf.dag.rescue001").write_text('# edited by hand\nDONE A\nVARS B x="rescue"\nPRIORITY B 5\n')
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "started from: rescue:wf.dag.rescue001" in done.stdout, done.stdout
    assert log.read_text() == "B=rescue\n"


def test_a_bad_rescue_dag_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A rescue DAG line naming a node the DAG does not have stops DAGMan's start-up; sheaf refuses it
    with its file and line, exit 2, and leaves no state directory or lock behind."""
    sub(tmp_path, "n.sub")
    (tmp_path / "wf.dag").write_text("JOB A n.sub\n")
    (tmp_path / "wf.dag.rescue001").write_text('DONE A\nVARS nosuch x="1"\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = sheaf_run(tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "wf.dag.rescue001:2" in refused.stderr and "nosuch" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_do_recovery_starts_from_the_last_runs_state_even_when_it_ended(tmp_path: Path) -> None:
    """condor_submit_dag -DoRecovery: the state of the DAG's last run, as after a killed run -- its done
    nodes done, its failed node (no retry left) failed -- whatever the rescue DAGs hold; not with
    -load_save."""
    log = tmp_path / "ran"
    sub(tmp_path, "a.sub", "/bin/sh", f"-c 'echo A >> {log}'")
    sub(tmp_path, "b.sub", "/bin/sh", f"-c 'echo B >> {log}; exit 1'")
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                     "JOB A a.sub\nJOB B b.sub\nJOB C a.sub\nPARENT A CHILD B\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SHEAF, "run", "wf.dag", *args], cwd=tmp_path, capture_output=True, text=True,
                              check=False, timeout=120)

    assert run().returncode == 1 and log.read_text().split() == ["A", "A", "B"]  # A and C, then B fails
    (tmp_path / "wf.dag.rescue001").write_text("# nothing done\n")  # recovery does not read it
    again = run("-DoRecovery")
    assert again.returncode == 1, again.stdout + again.stderr
    assert log.read_text().split() == ["A", "A", "B"]  # nothing ran: A and C done, B failed
    out = (tmp_path / "wf.dag.dagman.out").read_text()
    assert "Running in RECOVERY mode" in out and "...done with RECOVERY mode <<<" in out
    # jobstate.log's meta-events, as the manual lists them: the recovery between the run's start lines
    internal = [line.split(None, 1)[1] for line in (tmp_path / "jobstate.log").read_text().splitlines()
                if " INTERNAL " in line]
    assert [re.sub(r"\d+\.0", "N", text) for text in internal] == [
        "INTERNAL *** DAGMAN_STARTED N ***", "INTERNAL *** DAGMAN_FINISHED 1 ***",
        "INTERNAL *** DAGMAN_STARTED N ***", "INTERNAL *** RECOVERY_STARTED ***",
        "INTERNAL *** RECOVERY_FINISHED ***", "INTERNAL *** DAGMAN_FINISHED 1 ***"]
    refused = run("-DoRecovery", "-load_save", "x.save")
    assert refused.returncode == 2 and "can not be used with the following flag" in refused.stderr


def test_a_missing_executable_is_a_submit_failure_as_condor_submit_refuses_it(tmp_path: Path) -> None:
    """condor_submit refuses a job whose executable path names no file: DAGMan's submit failure (POST
    $RETURN -1001, SUBMIT_FAILURE, no job event); with transfer_executable = false it is the execute
    machine's business, and the job is submitted."""
    post = executable(tmp_path / "post.sh", '#!/bin/sh\necho "$1 $2" >> post.out\n')
    sub(tmp_path, "gone.sub", "/no/such/program")
    (tmp_path / "kept.sub").write_text("universe = local\nexecutable = /no/such/program\n"
                                       "transfer_executable = false\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                     f"JOB A gone.sub\nJOB B kept.sub\nSCRIPT POST A {post} $JOB $RETURN\n"
                                     f"SCRIPT POST B {post} $JOB $RETURN\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # the POST scripts succeed
    assert "A -1001" in (tmp_path / "post.out").read_text().splitlines()
    jobstate = (tmp_path / "jobstate.log").read_text()
    assert " A SUBMIT_FAILURE " in jobstate and " A SUBMIT " not in jobstate and " B SUBMIT " in jobstate
    assert "Executable file /no/such/program does not exist" in (tmp_path / "wf.dag.dagman.out").read_text()


def test_final_runs_when_the_run_is_stopped(tmp_path: Path) -> None:
    sub(tmp_path, "a.sub", "/bin/sleep", "60")
    sub(tmp_path, "b.sub")
    final = executable(tmp_path / "final.sh", '#!/bin/sh\necho "$1 $2" > final.out\n')
    sub(tmp_path, "f.sub", "/bin/sh", f"-c 'echo $(DAG_STATUS) $(FAILED_COUNT) > {tmp_path}/final.sub.out'")
    # JOBSTATE_LOG: its SUBMIT line tells the test A is running
    (tmp_path / "wf.dag").write_text(f"JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nFINAL F f.sub\n"
                                     f"SCRIPT POST F {final} $DAG_STATUS $FAILED_COUNT\n"
                                     "JOBSTATE_LOG jobstate.log\n")
    proc = subprocess.Popen([SHEAF, "run", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 30
    while b"SUBMIT" not in _read(tmp_path / "jobstate.log") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert b"SUBMIT" in _read(tmp_path / "jobstate.log"), "A was never submitted"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err  # FINAL succeeded: DAGMan exits 0
    assert (tmp_path / "final.out").read_text() == "4 1\n"  # DAG_STATUS_RM, A removed
    assert (tmp_path / "final.sub.out").read_text() == "4 1\n"  # $(DAG_STATUS) in its submit file
    assert (tmp_path / "wf.dag.rescue001").exists()
    # A's removal carries DAGMan's condor_rm reason
    assert "Job was aborted.\n\tDAG Removed: User removed scheduler job from queue.\n" in \
        (tmp_path / "wf.dag.nodes.log").read_text()


def test_vars_precedence_against_the_submit_files_own_values(tmp_path: Path) -> None:
    # DAGMAN_DEFAULT_APPEND_VARS is false: plain VARS are prepended and the file's own value wins;
    # APPEND overrides it; PREPEND lets the file win even with the knob set.
    own = 'x = file\n'
    sub(tmp_path, "n.sub", "/bin/sh", "-c 'echo $(x) >> $(JOB).out'", extra=own)
    dag = ('JOB A n.sub\nJOB B n.sub\nJOB C n.sub\nVARS A x="dag"\nVARS B APPEND x="dag"\n'
           'VARS C PREPEND x="dag"\nVARS ALL_NODES y="1"\n')
    (tmp_path / "wf.dag").write_text(dag)
    assert sheaf_run(tmp_path).returncode == 0
    assert [(tmp_path / f"{n}.out").read_text() for n in "ABC"] == ["file\n", "dag\n", "file\n"]
    for n in "ABC":
        (tmp_path / f"{n}.out").unlink()
    (tmp_path / "append.conf").write_text("DAGMAN_DEFAULT_APPEND_VARS = True\n")
    (tmp_path / "knob.dag").write_text("CONFIG append.conf\n" + dag)
    assert sheaf_run(tmp_path, "--dag", "knob.dag").returncode == 0
    assert [(tmp_path / f"{n}.out").read_text() for n in "ABC"] == ["dag\n", "dag\n", "file\n"]


def test_a_vars_macro_defined_again_keeps_its_first_place_and_takes_the_new_value(tmp_path: Path) -> None:
    """DAGMan's node replaces a macro's value and keeps the PREPEND/APPEND it was first given: A's x is
    prepended, so the submit file's own x wins; B's is appended, so the DAG's second value does."""
    sub(tmp_path, "n.sub", "/bin/sh", "-c 'echo $(x) >> $(JOB).out'", extra="x = file\n")
    (tmp_path / "wf.dag").write_text('JOB A n.sub\nJOB B n.sub\nVARS A PREPEND x="one"\n'
                                     'VARS A APPEND x="two"\nVARS B APPEND x="one"\nVARS B PREPEND x="two"\n')
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert [(tmp_path / f"{n}.out").read_text() for n in "AB"] == ["file\n", "two\n"]


def test_vars_values_unquoted_and_single_quoted_as_dagmans_lexer_reads_them(tmp_path: Path) -> None:
    # a value is a word: "double-quoted", 'single-quoted' or plain (escapes: test_dagman_grammar)
    sub(tmp_path, "n.sub", "/bin/sh", "-c 'echo $(x)/$(y)/$(z) > $(JOB).out'")
    (tmp_path / "wf.dag").write_text("JOB A n.sub\nVARS A x=plain y = 'two words' z=\"three\"\n"
                                     "JOB B n.sub\nVARS B x=a=b y='' z=$(JOB)\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "A.out").read_text() == "plain/two words/three\n"
    assert (tmp_path / "B.out").read_text() == "a=b//B\n"
    (tmp_path / "bad.dag").write_text("JOB A n.sub\nVARS A x='open\n")
    done = sheaf_run(tmp_path, "--dag", "bad.dag")
    assert done.returncode == 2 and "bad.dag:2:" in done.stderr, done.stderr


def test_a_queue_statement_is_read_with_its_macros_expanded(tmp_path: Path) -> None:
    # condor_submit expands the whole statement first: a VARS value, a macro of the file, a count
    (tmp_path / "items.txt").write_text("a\nb\n")
    for name in ("m1.dat", "m2.dat", "other.txt"):
        (tmp_path / name).write_text("")
    body = "universe = local\nexecutable = /bin/echo\n"
    (tmp_path / "from.sub").write_text(body + "arguments = $(code)\noutput = from.$(Process)\n"
                                       "queue code from $(filename)\n")
    (tmp_path / "count.sub").write_text(body + "arguments = n$(Process)\noutput = count.$(Process)\n"
                                        "N = 3\nqueue $(N)\n")
    (tmp_path / "in.sub").write_text(body + "arguments = $(x)\noutput = in.$(x)\nL = p q\n"
                                     "queue x in ($(L))\n")
    (tmp_path / "match.sub").write_text(body + "arguments = $(x)\noutput = match.$(x)\n"
                                        "queue x matching files $(pat)\n")
    (tmp_path / "one.sub").write_text(body + "arguments = one\noutput = one.out\nK = 1\nqueue $(K)\n")
    (tmp_path / "bad.sub").write_text(body + "N = many\nqueue $(N)\n")
    (tmp_path / "wf.dag").write_text(
        'JOB A from.sub\nVARS A filename="items.txt"\nJOB N count.sub\nJOB I in.sub\nJOB M match.sub\n'
        'VARS M pat="m*.dat"\nJOB O one.sub\n')
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    read = {p.name: p.read_text() for p in tmp_path.glob("*.*") if p.name.split(".")[0] in
            ("from", "count", "in", "match", "one") and not p.name.endswith(".sub")}
    assert read == {"from.0": "a\n", "from.1": "b\n", "count.0": "n0\n", "count.1": "n1\n", "count.2": "n2\n",
                    "in.p": "p\n", "in.q": "q\n", "match.m1.dat": "m1.dat\n", "match.m2.dat": "m2.dat\n",
                    "one.out": "one\n"}
    # a statement that is none once expanded fails its node's submission, naming the file, line and
    # rule (printed as text: its brackets are no markup)
    (tmp_path / "bad.dag").write_text("JOB B bad.sub\n")
    done = sheaf_run(tmp_path, "--dag", "bad.dag")
    assert done.returncode == 1
    assert (f"failed: B: submit failed: {tmp_path}/bad.sub:4: not a queue statement (rule: queue [N] "
            "[vars in|from|matching items]): 'queue many'") in done.stdout, done.stdout


def test_abort_dag_on_return_is_the_exit_status(tmp_path: Path) -> None:
    sub(tmp_path, "a.sub", "/bin/sh", "-c 'exit 3'")
    sub(tmp_path, "b.sub", "/bin/sleep", "30")
    for ret, status in (("RETURN 2", 2), ("RETURN 0", 0), ("RETURN 7", 7), ("", 3)):
        directory = tmp_path / f"r{status}"
        directory.mkdir()
        for name in ("a.sub", "b.sub"):
            (directory / name).write_text((tmp_path / name).read_text())
        (directory / "wf.dag").write_text(f"JOB A a.sub\nJOB B b.sub\nABORT-DAG-ON A 3 {ret}\n")
        done = sheaf_run(directory)
        assert done.returncode == status, (ret, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        # B, still running, is removed with DAGMan's reason for an abort
        removed = (directory / "wf.dag.nodes.log").read_text()
        assert "\tDAG Abort: DAG is exiting and writing rescue file.\n" in removed


def test_an_abort_on_a_success_leaves_the_node_done(tmp_path: Path) -> None:
    """ABORT-DAG-ON on value 0: DAGMan finishes the node before it checks for the abort, so the node is
    done in the rescue DAG and the next run goes on from it; a job's failure is a failed node."""
    log = tmp_path / "ran.log"
    sub(tmp_path, "t.sub", "/bin/sh", f"-c 'echo $(JOB) >> {log}'")
    (tmp_path / "wf.dag").write_text("JOB A t.sub\nABORT-DAG-ON A 0 RETURN 1\nJOB C t.sub\n"
                                     "PARENT A CHILD C\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1 and "aborted by ABORT-DAG-ON" in done.stdout, done.stdout + done.stderr
    assert "failed: A" not in done.stdout and log.read_text() == "A\n"
    rescue = (tmp_path / "wf.dag.rescue001").read_text().splitlines()
    assert "DONE A" in rescue and "DONE C" not in rescue
    again = sheaf_run(tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert log.read_text() == "A\nC\n"


def test_ready_nodes_run_breadth_first_or_depth_first(tmp_path: Path) -> None:
    for mode, expected in (("False", "A B C E\n"), ("True", "A C B E\n")):
        directory = tmp_path / mode
        directory.mkdir()
        log = directory / "order.log"
        sub(directory, "n.sub", "/bin/sh", f"-c 'echo $(JOB) >> {log}'")
        (directory / "order.conf").write_text(f"DAGMAN_SUBMIT_DEPTH_FIRST = {mode}\n"
                                              "DAGMAN_MAX_JOBS_SUBMITTED = 1\n")
        (directory / "wf.dag").write_text("CONFIG order.conf\n"
                                          "JOB A n.sub\nJOB B n.sub\nJOB E n.sub\nJOB C n.sub\n"
                                          "PARENT A CHILD B C\nPARENT B CHILD E\n")
        done = sheaf_run(directory)
        assert done.returncode == 0, done.stderr
        assert " ".join(log.read_text().split()) + "\n" == expected


def test_priority_is_the_jobs_jobprio_and_passes_into_subdags(tmp_path: Path) -> None:
    sub(tmp_path, "n.sub")
    sub(tmp_path, "own.sub", extra="priority = 3\n")
    (tmp_path / "inner.dag").write_text("JOB X n.sub\n")
    (tmp_path / "prio.conf").write_text("DAGMAN_DEFAULT_PRIORITY = 5\n")
    (tmp_path / "wf.dag").write_text("CONFIG prio.conf\nJOB A n.sub\nJOB B own.sub\n"
                                     "SUBDAG EXTERNAL S inner.dag\n"
                                     "PRIORITY A 10\nPRIORITY B 10\nPRIORITY S 100\n")
    fake = FakeBackend()
    result = run_workflow(str(tmp_path), backend=fake, options=DagmanOptions(("wf.dag",)),
                          handle_signals=False)
    assert result.succeeded
    launches = {x.node: x for x in fake.launches}
    assert (launches["A"].priority, launches["A"].job_ad["JobPrio"]) == (15, 15)
    assert (launches["B"].priority, launches["B"].job_ad["JobPrio"]) == (15, 3)  # the file's own wins
    argv = launches["S"].argv
    assert argv[argv.index("--priority") + 1] == "105"


def test_a_subdag_gets_its_nodes_priority(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    sub(inner, "x.sub", "/bin/sh", f"-c 'echo $(JOB) > {inner}/x.out'", extra="")
    (inner / "inner.dag").write_text("JOB X x.sub\nPRIORITY X 10\n")
    (tmp_path / "wf.dag").write_text("SUBDAG EXTERNAL S inner.dag DIR inner\nPRIORITY S 100\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    fake = FakeBackend()
    (inner / "again.dag").write_text("JOB X x.sub\nPRIORITY X 10\n")
    run_workflow(str(inner), backend=fake, options=DagmanOptions(("again.dag",), priority=100),
                 handle_signals=False)
    assert fake.launches[0].priority == 110 and fake.launches[0].job_ad["JobPrio"] == 110


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


assert os.sep == "/"  # the scripts above are POSIX shell


def test_a_submit_description_that_cannot_be_submitted_fails_only_its_node(tmp_path: Path) -> None:
    """DAGMan submits each node's description when the node is ready; one condor_submit refuses (no
    executable, two queue statements, a line that is no command) fails that node at submission -
    ``SUBMIT_FAILURE`` in jobstate.log, ``$RETURN`` -1001 for its POST script - while the rest of the
    DAG runs.  sheaf warns about it up front, naming the file, line and rule."""
    post = executable(tmp_path / "post.sh", '#!/bin/sh\necho "$1 $2" >> post.out\nexit 1\n')
    (tmp_path / "noexe.sub").write_text("# no executable\nqueue\n")
    (tmp_path / "two.sub").write_text("executable = /bin/true\nuniverse = local\nqueue\nqueue 2\n")
    sub(tmp_path, "ok.sub")
    (tmp_path / "wf.dag").write_text(
        "JOBSTATE_LOG jobstate.log\n"
        f"JOB A noexe.sub\nSCRIPT POST A {post} $JOB $RETURN\nJOB B two.sub\nJOB C ok.sub\nJOB D ok.sub\n"
        "PARENT C CHILD D\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stderr
    assert "two.sub:4" in done.stderr and "queue" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "post.out").read_text() == "A -1001\n"
    events = [line.split()[1:3] for line in (tmp_path / "jobstate.log").read_text().splitlines()]
    assert ["A", "SUBMIT_FAILURE"] in events and ["B", "SUBMIT_FAILURE"] in events
    assert ["D", "JOB_SUCCESS"] in events
    rescue = (tmp_path / "wf.dag.rescue001").read_text()
    assert "#   A,B,<ENDLIST>\n" in rescue and "DONE C\nDONE D\n" in rescue


def test_the_halt_file_halts_the_dag(tmp_path: Path) -> None:
    """DAGMan's halt file, ``<dag>.halt``: once it appears no new job is submitted, the jobs running
    finish, the rescue DAG is written and FINAL runs with ``$DAG_STATUS`` 6 (halted); a FINAL that
    succeeds makes the run succeed (``Dag::DoneSuccess``), without one the halted run fails."""
    final = executable(tmp_path / "final.sh", '#!/bin/sh\necho "$1" > final.out\n')
    halt = executable(tmp_path / "halt.sh", '#!/bin/sh\ntouch "$1"\nsleep 2\n')  # seen before it ends
    sub(tmp_path, "halt.sub", str(halt), "wf.dag.halt")
    sub(tmp_path, "slow.sub", "/bin/sleep", "3")
    sub(tmp_path, "ok.sub")
    (tmp_path / "wf.dag").write_text(
        "JOB A halt.sub\nJOB B ok.sub\nPARENT A CHILD B\nJOB C slow.sub\nJOB D ok.sub\nPARENT C CHILD D\n"
        f"FINAL F ok.sub\nSCRIPT PRE F {final} $DAG_STATUS\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "final.out").read_text() == "6\n"
    rescue = (tmp_path / "wf.dag.rescue001").read_text()
    assert "DONE A\n" in rescue and "DONE C\n" in rescue and "DONE B" not in rescue and "DONE D" not in rescue
    (tmp_path / "h.dag").write_text("JOB A halt.sub\nJOB B ok.sub\nPARENT A CHILD B\n")
    text = (tmp_path / "halt.sub").read_text()
    (tmp_path / "halt.sub").write_text(text.replace("wf.dag.halt", "h.dag.halt"))
    done = sheaf_run(tmp_path, "--dag", "h.dag")
    assert done.returncode == 1, done.stderr
    assert "DONE A\n" in (tmp_path / "h.dag.rescue001").read_text()


def _where(directory: Path, name: str, tag: str, log: Path) -> None:
    """A submit file whose job appends ``tag NODE its working directory`` to ``log``."""
    sub(directory, name, "/bin/sh", f"-c 'echo {tag} $(JOB) $PWD >> {log}'")


def test_working_directories_of_subdags_splices_and_dag_files(tmp_path: Path) -> None:
    """DAGMan's working directory is where condor_submit_dag runs: a DAG file's relative paths start
    there and its nodes run there -- a SUBDAG's too, unless its DIR names another; a SPLICE's nodes run
    in the splicing DAG's directory (or its DIR).  -usedagdir starts each DAG file's paths from its own
    directory.  The same submit file name in two directories tells which one was read."""
    log = tmp_path / "where.log"
    inner = tmp_path / "sub"
    inner.mkdir()
    _where(tmp_path, "s.sub", "top", log)
    _where(inner, "s.sub", "sub", log)
    (inner / "inner.dag").write_text("JOB X s.sub\n")
    (inner / "other.dag").write_text("JOB X s.sub\n")  # two runs of one DAG file would share its lock
    (tmp_path / "wf.dag").write_text("SUBDAG EXTERNAL S sub/inner.dag\nSUBDAG EXTERNAL T other.dag DIR sub\n"
                                     "SPLICE P sub/inner.dag\nSPLICE Q inner.dag DIR sub\n")
    done = subprocess.run([SHEAF, "run", "wf.dag"], cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=120)  # a DAG file: run from the current directory
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(log.read_text().splitlines()) == sorted([
        f"top X {tmp_path}", f"sub X {inner}", f"top P+X {tmp_path}", f"sub Q+X {inner}"])
    log.unlink()
    for name in ("alone.dag", "own.dag"):  # new DAG files: a run of inner.dag again would resume it
        (inner / name).write_text("JOB X s.sub\n")
    alone = sheaf_run(tmp_path, "--dag", "sub/alone.dag")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert log.read_text() == f"top X {tmp_path}\n"
    log.unlink()
    own = sheaf_run(tmp_path, "--dag", "sub/own.dag", "--usedagdir")
    assert own.returncode == 0, own.stdout + own.stderr
    assert log.read_text() == f"sub X {inner}\n"


def test_usedagdir_reads_each_splice_and_include_in_its_own_directory(tmp_path: Path) -> None:
    """Under -usedagdir DAGMan parses every DAG file -- a SPLICE's and an INCLUDE's too -- in its own
    directory: their submit files are found there and their nodes run there; a node's DIR is refused."""
    log = tmp_path / "where.log"
    for name in ("sp", "inc"):
        (tmp_path / name).mkdir()
        _where(tmp_path / name, "x.sub", name, log)
    (tmp_path / "sp" / "s.dag").write_text("JOB X x.sub\n")
    (tmp_path / "inc" / "i.dag").write_text("JOB Y x.sub\n")
    (tmp_path / "top.dag").write_text("SPLICE S sp/s.dag\nINCLUDE inc/i.dag\n")
    done = subprocess.run([SHEAF, "run", "top.dag", "--usedagdir"], cwd=tmp_path, capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(log.read_text().splitlines()) == [f"inc Y {tmp_path / 'inc'}", f"sp S+X {tmp_path / 'sp'}"]
    (tmp_path / "dir.dag").write_text("JOB Z x.sub DIR sp\n")
    refused = subprocess.run([SHEAF, "run", "dir.dag", "--usedagdir"], cwd=tmp_path, capture_output=True,
                             text=True, check=False, timeout=120)
    assert refused.returncode == 2 and "DIR cannot be used with -usedagdir" in refused.stderr


def test_a_quoted_directory_and_submit_file_with_blanks(tmp_path: Path) -> None:
    """``JOB A "my job.sub" DIR 'my dir'``: quoted names hold blanks, the job runs in that directory;
    ``//`` starts a comment line."""
    log = tmp_path / "where.log"
    spaced = tmp_path / "my dir"
    spaced.mkdir()
    _where(spaced, "my job.sub", "spaced", log)
    (tmp_path / "wf.dag").write_text("// comment\nJOB A \"my job.sub\" DIR 'my dir'\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert log.read_text() == f"spaced A {spaced}\n"


def test_retries_left_in_a_rescue_dag_restart_the_retry_count(tmp_path: Path) -> None:
    """Under ``DAGMAN_RESET_RETRIES_UPON_RESCUE = False`` a rescue DAG's ``RETRY A n`` is the node's
    retries left: DAGMan reads it as the node's RETRY count, so ``$(RETRY)`` starts at 0 again and
    ``$MAX_RETRIES`` is n."""
    log = tmp_path / "retry.log"
    sub(tmp_path, "a.sub", "/bin/sh", f"-c 'echo job $(RETRY) >> {log}; exit 1'")
    post = executable(tmp_path / "post.sh", f'#!/bin/sh\necho post "$1" "$2" >> {log}\nexit 1\n')
    (tmp_path / "wf.dag").write_text(f"CONFIG wf.config\nJOB A a.sub\nRETRY A 3\n"
                                     f"SCRIPT POST A {post} $RETRY $MAX_RETRIES\n")
    (tmp_path / "wf.config").write_text("DAGMAN_RESET_RETRIES_UPON_RESCUE = False\n")
    (tmp_path / "wf.dag.rescue001").write_text("# 2 of 3 retries already performed; 1 remaining\nRETRY A 1\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert log.read_text().splitlines() == ["job 0", "post 0 1", "job 1", "post 1 1"]
    assert "RETRY A 0" in (tmp_path / "wf.dag.rescue002").read_text()


def test_a_rescue_dags_retry_line_is_applied_whatever_the_reset_knob(tmp_path: Path) -> None:
    """DAGMan parses a rescue DAG as a DAG file: its ``RETRY node n [UNLESS-EXIT v]`` sets the node's
    retries and abort value (ProcessRetry), whatever ``DAGMAN_RESET_RETRIES_UPON_RESCUE`` (which only
    decides whether a rescue DAG is written with RETRY lines)."""
    log = tmp_path / "retry.log"
    sub(tmp_path, "a.sub", "/bin/sh", f"-c 'echo A $(RETRY) >> {log}; exit 1'")
    sub(tmp_path, "b.sub", "/bin/sh", f"-c 'echo B $(RETRY) >> {log}; exit 3'")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B b.sub\nRETRY B 5\n")
    (tmp_path / "wf.dag.rescue001").write_text("RETRY A 2\nRETRY B 5 UNLESS-EXIT 3\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert sorted(log.read_text().splitlines()) == ["A 0", "A 1", "A 2", "B 0"]


def test_a_dag_refused_at_its_line_leaves_the_directory_as_it_was(tmp_path: Path) -> None:
    """Bad input: one message with the file and line, exit 2, and nothing written (no events
    database, no dagman.out, no journal)."""
    sub(tmp_path, "a.sub")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nPARENT A CHILD Z\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    done = sheaf_run(tmp_path)
    assert done.returncode == 2 and "wf.dag:2" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_job_with_no_priority_anywhere_has_jobprio_0(tmp_path: Path) -> None:
    """condor_submit gives every job a JobPrio (0 unless set), so $$([JobPrio]) always expands."""
    log = tmp_path / "prio.log"
    sub(tmp_path, "n.sub", "/bin/sh", f"-c 'echo $(JOB) $$([JobPrio]) >> {log}'")
    (tmp_path / "wf.dag").write_text("JOB A n.sub\nJOB B n.sub\nPRIORITY B 7\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(log.read_text().splitlines()) == ["A 0", "B 7"]


def test_dagman_max_rescue_num_caps_the_rescue_dags(tmp_path: Path) -> None:
    """DAGMAN_MAX_RESCUE_NUM: the highest rescue DAG number; a later failure overwrites it, and 0
    writes none."""
    sub(tmp_path, "f.sub", "/bin/false")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A f.sub\n")
    (tmp_path / "wf.config").write_text("DAGMAN_MAX_RESCUE_NUM = 2\n")
    for _ in range(3):
        assert sheaf_run(tmp_path).returncode == 1
    assert sorted(p.name for p in tmp_path.glob("wf.dag.rescue*")) == ["wf.dag.rescue001", "wf.dag.rescue002"]
    none = tmp_path / "none"
    none.mkdir()
    sub(none, "f.sub", "/bin/false")
    (none / "wf.dag").write_text("CONFIG wf.config\nJOB A f.sub\n")
    (none / "wf.config").write_text("DAGMAN_MAX_RESCUE_NUM = 0\n")
    done = sheaf_run(none)
    assert done.returncode == 1 and "rescue DAG" not in done.stdout and "not honoured" not in done.stderr
    assert not list(none.glob("wf.dag.rescue*"))


def test_a_script_that_cannot_start_returns_1(tmp_path: Path) -> None:
    """DAGMan's ScriptQ reaps a script it could not spawn (no such file, not executable, its node's
    DIR missing) with status 1: that is $PRE_SCRIPT_RETURN and $RETURN, what PRE_SKIP, ABORT-DAG-ON
    and UNLESS-EXIT compare; dagman.out says why."""
    seen = tmp_path / "seen"
    post = tmp_path / "post.sh"
    executable(post, f'#!/bin/sh\necho "$@" >> {seen}\nexit 0\n')
    (tmp_path / "plain.sh").write_text("#!/bin/sh\nexit 0\n")  # not executable
    for name in ("a.sub", "b.sub", "c.sub", "e.sub"):
        sub(tmp_path, name)
    (tmp_path / "wf.config").write_text("DAGMAN_ALWAYS_RUN_POST = True\n")
    (tmp_path / "wf.dag").write_text(
        f"CONFIG wf.config\nJOB A a.sub\nSCRIPT PRE A no-such-script\nPRE_SKIP A 1\n"
        f"JOB B b.sub\nSCRIPT PRE B plain.sh\nSCRIPT POST B {post} $JOB $PRE_SCRIPT_RETURN $RETURN\n"
        f"JOB C c.sub DIR no-such-dir\nSCRIPT PRE C {post}\nRETRY C 3 UNLESS-EXIT 1\n"
        f"JOB E e.sub\nSCRIPT POST E no-such-post\nPARENT A B CHILD E\nABORT-DAG-ON E 1 RETURN 7\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 7, done.stdout + done.stderr  # E's POST returned 1: the abort
    assert seen.read_text().split() == ["B", "1", "-1004"]  # B's PRE failed: $RETURN is DAGMan's -1004
    out = (tmp_path / "wf.dag.dagman.out").read_text()
    assert "PRE_SKIP return value 1 indicates we are done (successfully) with node A" in out
    assert "Retrying node C" not in out  # UNLESS-EXIT 1
    assert "PRE Script of Node C failed with status 1" in out
    assert re.search(r"Error: Failed to execute PRE for Node B: .*plain\.sh", out), out
    assert re.search(r"Error: Failed to execute PRE for Node C: .*no-such-dir", out), out
    assert "POST Script of node E failed with status 1" in out
