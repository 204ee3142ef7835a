"""DAGMan's macros: script arguments (``script.cpp``), the values DAGMan passes to node submit
descriptions (``dagman_submit.cpp``), ``$$()`` against the matched slot, and a SUBDAG's own files;
real ``sheaf run`` processes where the behaviour is end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine_helpers import FakeBackend, executable, write_dag
from sheaf.engine import DagmanOptions, run_workflow
from sheaf.errors import FormatError

SHEAF = str(Path(sys.executable).parent / "sheaf")
ALL = ("$node $Retry $MAX_RETRIES $NODE_COUNT $DONE_COUNT $FAILED_COUNT $FUTILE_COUNT $QUEUED_COUNT "
       "$DAG_STATUS $JOBID $CLUSTERID $JOB_COUNT $SUCCESS $RETURN $EXIT_CODES $EXIT_CODE_COUNTS "
       "$JOB_ABORT_COUNT $PRE_SCRIPT_RETURN out.$JOB")


def run(directory: Path, backend: FakeBackend, **kw: object) -> object:
    return run_workflow(str(directory), backend=backend, handle_signals=False, **kw)  # type: ignore[arg-type]


def sheaf_run(directory: Path, *args: str,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, "run", str(directory), *args], capture_output=True, text=True, check=False,
                          timeout=120, env=env)


def test_post_script_macros_have_dagmans_values(tmp_path: Path) -> None:
    log = tmp_path / "args.txt"
    executable(tmp_path / "post.sh", f'#!/bin/sh\necho "$@" >> {log}\nexit 0\n')
    write_dag(tmp_path, f"JOB A A.sub\nJOB B B.sub\nJOB C C.sub\nPARENT A CHILD C\nRETRY A 2\n"
                        f"SCRIPT POST A post.sh {ALL}\n")
    fake = FakeBackend()
    fake.script("A", [3])
    run(tmp_path, fake)
    words = log.read_text().split()
    assert words[:9] == ["A", "0", "2", "3", "1", "0", "0", "0", "0"]  # B done; nothing failed yet
    assert words[9:] == ["1.0", "1", "1", "False", "3", "3", "3:1", "0", "-1", "out.$JOB"]


def test_script_macros_count_futile_and_failed_nodes(tmp_path: Path) -> None:
    log = tmp_path / "args.txt"
    executable(tmp_path / "pre.sh", f'#!/bin/sh\necho "$@" >> {log}\n')
    write_dag(tmp_path, "JOB A A.sub\nJOB B B.sub\nJOB C C.sub\nJOB Z Z.sub\n"
                        "PARENT A CHILD B\nPARENT B CHILD C\n"
                        "PARENT A CHILD Z\nSCRIPT PRE Z pre.sh $JOB\nFINAL F F.sub\n"
                        "SCRIPT PRE F pre.sh $FAILED_COUNT $FUTILE_COUNT $DAG_STATUS "
                        "$DONE_COUNT $NODE_COUNT\n")
    fake = FakeBackend()
    fake.script("B", [1])
    run(tmp_path, fake)
    assert log.read_text().split("\n")[:2] == ["Z", "1 1 2 2 5"]  # C futile; A and Z done; FINAL counted


def test_unknown_script_macro_is_fatal_under_strict_and_a_warning_otherwise(tmp_path: Path) -> None:
    executable(tmp_path / "post.sh", "#!/bin/sh\necho \"$@\" > seen\n")
    write_dag(tmp_path, "JOB A A.sub\nSCRIPT POST A post.sh $BOGUS\n")
    with pytest.raises(FormatError, match=r"unrecognized macro \$BOGUS in node A POST script"):
        run(tmp_path, FakeBackend())
    assert not (tmp_path / "jobstate.log").exists()  # refused before anything ran
    (tmp_path / "wf.config").write_text("DAGMAN_USE_STRICT = 0\n")
    write_dag(tmp_path, "CONFIG wf.config\nJOB A A.sub\nSCRIPT POST A post.sh $BOGUS\n")
    result = run(tmp_path, FakeBackend())
    assert result.succeeded and any("$BOGUS" in w for w in result.warnings)  # type: ignore[attr-defined]
    assert (tmp_path / "seen").read_text() == "$BOGUS\n"


def test_post_only_macro_in_a_pre_script_is_refused(tmp_path: Path) -> None:
    executable(tmp_path / "pre.sh", "#!/bin/sh\n")
    write_dag(tmp_path, "JOB A A.sub\nSCRIPT PRE A pre.sh $return\n")
    with pytest.raises(FormatError, match=r"\$return in node A PRE script arguments \(a POST script macro\)"):
        run(tmp_path, FakeBackend())


def test_submit_description_gets_dagmans_values(tmp_path: Path) -> None:
    write_dag(tmp_path, "JOB A A.sub\nJOB B B.sub\nJOB C C.sub\nPARENT A B CHILD C\n")
    (tmp_path / "C.sub").write_text(
        'executable = /bin/echo\narguments = "$(JOB) $(RETRY) $(DAG_STATUS) $(FAILED_COUNT) $(DAGManJobId) '
        '$(DAG_PARENT_NAMES)"\nqueue\n')
    fake = FakeBackend()
    run(tmp_path, fake)
    launch = fake.launches[-1]
    assert launch.argv[1:] == ("C", "0", "0", "0", str(os.getpid()), "A,B")
    assert launch.job_ad.eval("DAGParentNodeNames") == "A,B"
    assert launch.job_ad.eval("DAGManJobId") == os.getpid()
    assert fake.launches[0].job_ad.eval("DAGParentNodeNames") == ""  # no parents: the macro is unset


def test_children_of_one_line_run_and_parents_are_named_in_declaration_order(tmp_path: Path) -> None:
    """DAGMan's ProcessDependencies sorts one PARENT line's nodes by node id (declaration order):
    the children become ready in that order (one job at a time: that is the order they run), and
    ``$(DAG_PARENT_NAMES)`` names the parents so."""
    write_dag(tmp_path, "JOB A A.sub\nJOB C1 C1.sub\nJOB C2 C2.sub\nJOB C3 C3.sub\nPARENT A CHILD C3 C2 C1\n"
                        "JOB P2 P2.sub\nJOB P1 P1.sub\nJOB C C.sub\nPARENT P1 P2 CHILD C\n"
                        "PARENT C3 C2 C1 CHILD P1 P2\n")
    (tmp_path / "C.sub").write_text('executable = /bin/echo\narguments = "$(DAG_PARENT_NAMES)"\nqueue\n')
    fake = FakeBackend()
    run(tmp_path, fake, options=DagmanOptions(maxjobs=1))
    assert fake.nodes() == ["A", "C1", "C2", "C3", "P2", "P1", "C"]
    assert fake.launches[-1].argv[1:] == ("P2,P1",)


def test_dollar_dollar_expands_against_the_matched_slot(tmp_path: Path) -> None:
    """``$$(attr)`` and ``$$([expr])`` as condor_schedd expands them, with a real process."""
    (tmp_path / "pool.conf").write_text("NUM_CPUS = 2\nMEMORY = 2048\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B b.sub\n")
    (tmp_path / "a.sub").write_text("executable = /bin/echo\narguments = \"$$(Cpus) '$$([Memory * 2])' "
                                    '$$(Nope:dflt)"\noutput = a.out\nqueue\n')
    (tmp_path / "b.sub").write_text('executable = /bin/echo\narguments = "$$(NoSuchAttr)"\n'
                                    'output = b.out\nqueue\n')
    done = sheaf_run(tmp_path, "--pool-config", str(tmp_path / "pool.conf"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert (tmp_path / "a.out").read_text() == "1 2048 dflt\n"  # slot 1 of 2: one CPU, 1024 MB
    assert "Cannot expand $$ expression (NoSuchAttr)." in done.stdout
    assert not (tmp_path / "b.out").exists()


def test_a_subdag_writes_its_own_jobstate_log_and_metrics(tmp_path: Path) -> None:
    (tmp_path / "t.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "inner.dag").write_text("JOB I t.sub\nJOBSTATE_LOG inner.jobstate.log\n")
    (tmp_path / "outer.dag").write_text("JOB A t.sub\nSUBDAG EXTERNAL S inner.dag\nPARENT A CHILD S\n"
                                        "JOBSTATE_LOG jobstate.log\n")
    done = sheaf_run(tmp_path, "--dag", "outer.dag")
    assert done.returncode == 0, done.stdout + done.stderr
    outer = (tmp_path / "jobstate.log").read_text()
    inner = (tmp_path / "inner.jobstate.log").read_text()
    assert " I SUBMIT " not in outer and " S SUBMIT " in outer and " I SUBMIT " in inner
    parent = json.loads((tmp_path / "outer.dag.metrics").read_text())["dagman_id"]
    assert json.loads((tmp_path / "inner.dag.metrics").read_text())["parent_dagman_id"] == parent
    assert (tmp_path / "inner.dag.nodes.log").exists() and (tmp_path / "outer.dag.nodes.log").exists()


def test_no_jobstate_log_without_the_command(tmp_path: Path) -> None:
    """DAGMan's manual: the jobstate log is produced when the JOBSTATE_LOG command is declared; a DAG
    and its SUBDAG that declare none write none, beside the DAG or anywhere else."""
    (tmp_path / "t.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "inner.dag").write_text("JOB I t.sub\n")
    (tmp_path / "outer.dag").write_text("JOB A t.sub\nSUBDAG EXTERNAL S inner.dag\nPARENT A CHILD S\n")
    done = sheaf_run(tmp_path, "--dag", "outer.dag")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "inner.dag.metrics").exists()  # the SUBDAG ran
    assert not [p.name for p in tmp_path.rglob("*jobstate*")]


def test_several_dag_files_munge_the_names_of_their_splices_nodes_too(tmp_path: Path) -> None:
    """DAGMan munges each name as it parses it, in a splice too: file 0's splice S1 node A is
    ``0.S1+0.A`` (its ``$(JOB)`` as well)."""
    out = tmp_path / "out.txt"
    (tmp_path / "t.sub").write_text(f"universe = local\nexecutable = /bin/sh\n"
                                    f"arguments = \"-c 'echo $(JOB) >> {out}'\"\nqueue\n")
    (tmp_path / "s.dag").write_text("JOB A t.sub\n")
    (tmp_path / "a.dag").write_text("JOB A t.sub\nSPLICE S1 s.dag\nPARENT A CHILD S1\n")
    (tmp_path / "b.dag").write_text("JOB A t.sub\n")
    done = sheaf_run(tmp_path, "--dag", "a.dag", "--dag", "b.dag")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(out.read_text().split()) == ["0.A", "0.S1+0.A", "1.A"]


def test_several_dag_files_run_as_one_named_after_the_first(tmp_path: Path) -> None:
    """``sheaf run DIR --dag a.dag --dag b.dag`` as ``condor_submit_dag a.dag b.dag``: one DAG, node
    names prefixed with the file's number, DAGMan's files named after the first DAG."""
    (tmp_path / "t.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "f.sub").write_text("universe = local\nexecutable = /bin/false\nqueue\n")
    (tmp_path / "a.dag").write_text("JOBSTATE_LOG jobstate.log\nJOB A t.sub\nJOB B t.sub\nPARENT A CHILD B\n")
    (tmp_path / "b.dag").write_text("JOB A t.sub\nJOB X f.sub\nPARENT A CHILD X\n")
    done = sheaf_run(tmp_path, "--dag", "a.dag", "--dag", "b.dag")
    assert done.returncode == 1, done.stdout + done.stderr
    rescue = (tmp_path / "a.dag_multi.rescue001").read_text()
    assert [ln for ln in rescue.splitlines() if ln.startswith("DONE")] == ["DONE 0.A", "DONE 0.B", "DONE 1.A"]
    assert "#   the a.dag DAG file" in rescue  # the primary DAG, as Dag::Rescue names it
    assert (tmp_path / "a.dag.nodes.log").exists() and (tmp_path / "a.dag.metrics").exists()
    assert not (tmp_path / "b.dag.metrics").exists()
    (tmp_path / "b.dag").write_text("JOB A t.sub\nJOB X t.sub\nPARENT A CHILD X\n")
    again = sheaf_run(tmp_path, "--dag", "a.dag", "--dag", "b.dag")
    assert again.returncode == 0, again.stdout + again.stderr
    ran = [ln.split()[1] for ln in (tmp_path / "jobstate.log").read_text().splitlines() if " SUBMIT " in ln]
    # 0.B and 1.X become ready in the turn their parents' exits land in, in either order
    assert ran[:2] == ["0.A", "1.A"] and sorted(ran[2:4]) == ["0.B", "1.X"]
    assert ran[4:] == ["1.X"]  # the second run: only 1.X, from the rescue DAG


def test_a_shared_description_is_expanded_up_front_for_its_first_node_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other nodes of a description are expanded at submission: 10^4 nodes of one description
    cost ~0.7 s before the first job started when each was expanded up front."""
    import sheaf.engine._runconfig as runconfig

    calls: list[str] = []
    real = runconfig.render_node
    monkeypatch.setattr(runconfig, "render_node", lambda *a, **k: calls.append(a[1].name) or real(*a, **k))
    (tmp_path / "n.sub").write_text("executable = /bin/true\narguments = $(x)\nqueue\n")
    write_dag(tmp_path, "".join(f'JOB n{i} n.sub\nVARS n{i} x="{i}"\n' for i in range(30)))
    fake = FakeBackend()
    result = run(tmp_path, fake)
    assert result.succeeded and calls == ["n0"]  # type: ignore[attr-defined]
    assert sorted(launch.argv[1] for launch in fake.launches) == sorted(str(i) for i in range(30))


def test_vars_that_break_a_shared_description_fail_that_node_at_submission(tmp_path: Path) -> None:
    """As condor_submit fails for that node under DAGMan: a submit failure (its POST script may rescue
    it), the other nodes run."""
    (tmp_path / "n.sub").write_text("executable = /bin/true\n+Tag = $(tag)\nqueue\n")
    write_dag(tmp_path, 'JOB A n.sub\nVARS A tag="1"\nJOB B n.sub\nVARS B tag="1 +"\nJOB C n.sub\n'
                        'VARS C tag="3"\n')
    fake = FakeBackend()
    result = run(tmp_path, fake)
    assert not result.succeeded  # type: ignore[attr-defined]
    assert [n for n, _ in result.failed_nodes] == ["B"]  # type: ignore[attr-defined]
    assert sorted(launch.node for launch in fake.launches) == ["A", "C"]
