"""The events database: loaded beside a real run, caught up after kill -9, rebuilt when it cannot be
trusted, and the same whichever way the journal was cut into increments."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from Pegasus.api import Job, Site, SiteCatalog, Transformation, TransformationCatalog, Workflow
from tests.monitor.conftest import BIN, rescued_run, sheaf, slow_workflow

from sheaf.jobtools._records import pmc_task, seqexec_task
from sheaf.monitor import list_runs, open_events
from sheaf.monitor._loader import Loader
from sheaf.monitor._meta import JobMeta, read_meta
from sheaf.monitor._tasks import parse_task_records

TABLES = ("workflow", "workflowstate", "job", "job_edge", "job_instance", "jobstate", "task", "invocation",
          "host", "damage")


def _db(run_dir: Path) -> sqlite3.Connection:
    (path,) = run_dir.glob("*.events.db")
    return sqlite3.connect(path)


def _dump(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {t: sorted(map(tuple, conn.execute(f"SELECT * FROM {t}")), key=repr) for t in TABLES}


def test_a_run_loads_its_events_while_it_goes(blackdiamond: Path) -> None:
    conn = _db(blackdiamond)
    (uuid, label, total, ended, ok), = conn.execute(
        "SELECT wf_uuid, dax_label, total, ended, succeeded FROM workflow")
    # 8 jobs: the compute and cluster jobs, create_dir, and the inplace cleanup job of the data pass
    assert label == "blackdiamond" and total == 8 and ended is not None and ok == 1 and uuid
    states = dict(conn.execute("SELECT exec_job_id, state FROM job"))
    assert set(states.values()) == {"done"} and len(states) == 8
    # tasks inside clusters are first-class: each of the 10 abstract jobs ran once, with a start,
    # a duration, an exit code and a host
    rows = conn.execute("SELECT abs_task_id, transformation, start_time, remote_duration, exitcode, host_id "
                        "FROM invocation").fetchall()
    assert sorted(r[0] for r in rows) == [f"ID{i:07d}" for i in range(1, 11)]
    assert all(r[2] > 0 and r[3] >= 0 and r[4] == 0 and r[5] is not None for r in rows)
    assert {r[1] for r in rows} == {f"diamond::{t}:4.0" for t in ("preprocess", "findrange", "analyze")}
    kinds = [k for (k,) in conn.execute(
        "SELECT s.state FROM jobstate s JOIN job_instance USING (job_instance_id) JOIN job USING (job_id) "
        "WHERE exec_job_id = 'preprocess_ID0000001' ORDER BY s.timestamp, s.rowid")]
    assert kinds == ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS"]  # jobstate.log's vocabulary
    assert [r.submit_dir for r in list_runs()].count(str(blackdiamond)) == 1


def test_the_database_rebuilt_from_the_journal_is_the_one_loaded_live(blackdiamond: Path) -> None:
    live = _dump(_db(blackdiamond))
    (path,) = blackdiamond.glob("*.events.db")
    path.unlink()
    open_events(str(blackdiamond)).conn.close()
    assert _dump(_db(blackdiamond)) == live


def test_ids_follow_the_plan_and_each_attempt_row_holds_its_submission(blackdiamond: Path) -> None:
    """Jobs and tasks are numbered in plan.json's order (as one INSERT each would number them); an
    attempt's row carries its HTCondor id and submit time from the journal's ``submitted`` change."""
    conn = _db(blackdiamond)
    plan = json.loads((blackdiamond / "plan.json").read_text())["jobs"]
    jobs = conn.execute("SELECT job_id, exec_job_id FROM job ORDER BY job_id").fetchall()
    assert jobs == [(i + 1, job["id"]) for i, job in enumerate(plan)]
    tasks = [t for (t,) in conn.execute("SELECT abs_task_id FROM task ORDER BY task_id")]
    assert tasks == [t for job in plan for t in job["tasks"]]
    (journal,) = blackdiamond.glob(".sheaf/*.journal")
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    submitted = {(r[2], r[5]): (f"{r[6]['cluster']}.0", r[1]) for r in records
                 if r[0] == "C" and r[4] == "submitted"}
    rows = conn.execute("SELECT exec_job_id, job_submit_seq, sched_id, submitted FROM job_instance "
                        "JOIN job USING (job_id)").fetchall()
    assert rows and {(name, seq - 1): (sched, at) for name, seq, sched, at in rows} == submitted


def test_a_damaged_or_foreign_database_is_rebuilt(blackdiamond: Path) -> None:
    (path,) = blackdiamond.glob("*.events.db")
    before = _dump(_db(blackdiamond))
    path.write_bytes(b"not a database" * 100)
    done = sheaf("status", str(blackdiamond))
    assert done.returncode == 0 and "succeeded" in done.stdout, done.stderr
    assert _dump(_db(blackdiamond)) == before


def test_after_kill_9_status_catches_the_database_up(tmp_path: Path) -> None:
    run_dir = slow_workflow(tmp_path, 40)
    engine = subprocess.Popen([str(BIN / "sheaf"), "run", str(run_dir)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    journal = next(iter(run_dir.glob(".sheaf/*.journal")), None)
    deadline = time.monotonic() + 60
    while (journal is None or journal.read_bytes().count(b'"done"') < 4) and time.monotonic() < deadline:
        time.sleep(0.1)
        journal = next(iter(run_dir.glob(".sheaf/*.journal")), None)
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    assert journal is not None
    size = journal.stat().st_size
    status = sheaf("status", str(run_dir))
    assert status.returncode == 0 and "interrupted" in status.stdout, status.stdout + status.stderr
    conn = _db(run_dir)
    assert int(dict(conn.execute("SELECT key, value FROM progress"))["offset"]) == size
    loaded = _dump(conn)
    for path in run_dir.glob("*.events.db*"):
        path.unlink()
    open_events(str(run_dir)).conn.close()
    assert _dump(_db(run_dir)) == loaded  # caught up == rebuilt from scratch
    # and the run resumes, and the database follows it to the end
    ran = sheaf("run", str(run_dir))
    assert ran.returncode == 0, ran.stderr
    assert set(dict(_db(run_dir).execute("SELECT exec_job_id, state FROM job")).values()) == {"done"}


def test_a_journal_changed_in_place_is_reloaded_from_its_start(blackdiamond: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(blackdiamond), str(copy)], check=True)
    (journal,) = copy.glob(".sheaf/*.journal")
    lines = journal.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b"preprocess" in line and b'"exit":0' in line)
    lines[at] = lines[at].replace(b'"exit":0', b'"exit":7')  # same size, other content
    journal.write_bytes(b"".join(lines))
    open_events(str(copy)).conn.close()
    (code,) = _db(copy).execute("SELECT exitcode FROM invocation WHERE abs_task_id = 'ID0000001'").fetchone()
    assert code == 7  # loaded again, not kept from before


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.floats(0, 1), max_size=6))
def test_loading_in_increments_gives_the_database_of_one_load(blackdiamond: Path, tmp_path_factory,  # type: ignore[no-untyped-def]
                                                              cuts: list[float]) -> None:
    work = tmp_path_factory.mktemp("cuts")
    copy = work / "run"
    subprocess.run(["cp", "-a", str(blackdiamond), str(copy)], check=True)
    for path in copy.glob("*.events.db*"):
        path.unlink()
    (journal,) = copy.glob(".sheaf/*.journal")
    data = journal.read_bytes()
    journal.write_bytes(b"")
    (dag,) = copy.glob("*.dag")
    loader = Loader(str(dag))
    for at in sorted(int(c * len(data)) for c in cuts):  # torn lines included: cuts fall anywhere
        journal.write_bytes(data[:at])
        loader.catch_up(verify=False)
    journal.write_bytes(data)
    loader.catch_up(verify=False)
    loader.close()
    increments = _dump(_db(copy))
    for path in copy.glob("*.events.db*"):
        path.unlink()
    open_events(str(copy)).conn.close()
    assert _dump(_db(copy)) == increments


@settings(max_examples=60, deadline=None)
@given(start=st.floats(1e9, 2e9), duration=st.floats(0, 1e5), code=st.integers(0, 255),
       sig=st.sampled_from([0, 9, 15]), host=st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True))
def test_task_records_read_back_as_the_aggregators_print_them(start: float, duration: float, code: int,
                                                              sig: int, host: str) -> None:
    status = sig or code << 8
    text = (seqexec_task(3, start, duration, status, 5, 42, "/bin/app") + "noise [cluster-task\n"
            + pmc_task("ID01", "t_ID01", start, duration, status, "/bin/app", host, 1, 1, 0))
    seq, pmc = parse_task_records(text)
    expected = -sig if sig else code
    assert (seq.ident, seq.exitcode, seq.hostname) == ("3", expected, None)
    assert (pmc.ident, pmc.name, pmc.exitcode, pmc.hostname) == ("ID01", "t_ID01", expected, host)
    for rec in (seq, pmc):
        assert abs(rec.start - start) < 0.002 and abs(rec.duration - round(duration, 3)) < 1e-6


def test_no_loader_is_left_behind_when_the_engine_is_killed(tmp_path: Path) -> None:
    gate = tmp_path / "gate"  # the jobs wait for it: the run cannot end before it is killed
    run_dir = slow_workflow(tmp_path, 30, gate)
    engine = subprocess.Popen([str(BIN / "sheaf"), "run", str(run_dir)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    follower: list[str] = []
    deadline = time.monotonic() + 30  # a busy machine starts the loader late
    while not follower and engine.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        follower = subprocess.run(["pgrep", "-P", str(engine.pid), "-f", "sheaf.monitor._follow"],
                                  capture_output=True, text=True, check=False).stdout.split()
    time.sleep(0.5)  # the engine has journalled its first submissions
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    gate.touch()  # the killed engine's jobs end
    assert follower, "the loader process runs beside the engine"
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in follower) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(pid) for pid in follower)
    # the loader caught up once more before leaving
    assert int(dict(_db(run_dir).execute("SELECT key, value FROM progress"))["offset"]) > 0


def _running(pid: str) -> bool:
    """The process exists and is not a zombie: an orphan adopted by a subreaper (the Slurm fixture makes
    the test process one) stays a zombie until reaped, although it has ended."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_loader_process_imports_no_engine_machinery() -> None:
    """The loader beside every run reads records only: it does not pay for the backend interface, the
    ClassAd library or the loop (about 90 ms of CPU a run, on the engine's cores)."""
    code = ("import sys, sheaf.monitor._follow; "
            "print(sorted(m for m in ('sheaf.classad', 'sheaf.engine._backend', 'sheaf.engine._loop', "
            "'sheaf.engine._submit') if m in sys.modules))")
    done = subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_loader_opened_on_a_loaded_database_knows_each_jobs_tasks_in_order(blackdiamond: Path,
                                                                              tmp_path: Path) -> None:
    """What a view reads back (``_load_cache``: every job's tasks, a cluster's in their order) is what
    the loader that wrote the database knew; the clustered blackdiamond has jobs of several tasks."""
    copy = tmp_path / "run"
    subprocess.run(["cp", "-a", str(blackdiamond), str(copy)], check=True)
    for path in copy.glob("*.events.db*"):
        path.unlink()
    (dag,) = copy.glob("*.dag")
    writer = Loader(str(dag))
    writer.catch_up(verify=False)
    written = dict(writer._meta)
    writer.close()
    assert any(len(meta.tasks) > 1 for meta in written.values())
    reader = Loader(str(dag))
    try:
        assert _stored(reader._meta) == _stored(written)
    finally:
        reader.close()


def _stored(metas: dict[str, JobMeta]) -> dict[str, tuple[object, ...]]:
    """What the job table keeps of each job's facts."""
    return {n: (m.type_desc, m.transformation, m.site, m.tasks, m.aggregator) for n, m in metas.items()}


def test_a_plan_json_of_another_shape_loads_the_jobs_it_can(blackdiamond: Path, tmp_path: Path) -> None:
    """plan.json is decoded into the few fields the monitor reads; a file of another shape (a job that
    is not an object, keys of other types) falls back to reading what it can: the same jobs."""
    copy = tmp_path / "run"
    subprocess.run(["cp", "-a", str(blackdiamond), str(copy)], check=True)
    (dag,) = copy.glob("*.dag")
    typed = read_meta(str(dag), str(copy), lambda: None)
    plan = json.loads((copy / "plan.json").read_text())
    plan["jobs"].insert(1, 7)
    data_job = next(job for job in plan["jobs"] if isinstance(job, dict) and not job["tasks"])
    data_job["tasks"] = None
    (copy / "plan.json").write_text(json.dumps(plan))
    lenient = read_meta(str(dag), str(copy), lambda: None)
    assert typed is not None and lenient is not None and typed.jobs
    assert lenient.jobs == typed.jobs and lenient.edges == typed.edges


def test_failures_retries_and_holds_load_the_same_line_by_line_as_at_once(tmp_path: Path) -> None:
    """A catch-up folds each job's changes into one row (its last state; its reason as the last change
    that set or cleared it left it): at every line of a journal with failed attempts, retries and a
    hold, the database loaded one line at a time (nothing folds) is the one loaded at once (all folds)."""
    run_dir = _mixed_run(tmp_path)
    (journal,) = run_dir.glob(".sheaf/*.journal")
    data = journal.read_bytes()
    whole = tmp_path / "whole"
    subprocess.run(["cp", "-a", str(run_dir), str(whole)], check=True)
    for directory in (run_dir, whole):
        for path in directory.glob("*.events.db*"):
            path.unlink()
    (dag,) = run_dir.glob("*.dag")
    (whole_journal,) = whole.glob(".sheaf/*.journal")
    loader = Loader(str(dag))
    for end in [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]:
        journal.write_bytes(data[:end])
        loader.catch_up(verify=False)
        whole_journal.write_bytes(data[:end])
        for path in whole.glob("*.events.db*"):
            path.unlink(missing_ok=True)
        at_once = Loader(str(whole / dag.name))
        at_once.catch_up(verify=False)
        at_once.close()
        one_by_one, all_at_once = (_unplaced(_closed_dump(d), whole, run_dir) for d in (run_dir, whole))
        assert one_by_one == all_at_once, end
    loader.close()
    assert any(reason for (reason,) in _db(run_dir).execute("SELECT reason FROM job"))


def _mixed_run(tmp: Path) -> Path:
    """A run of a job that fails twice, one that fails once and is retried, and one held for good."""
    wf = Workflow("mixed")
    tc = TransformationCatalog().add_transformations(
        Transformation("ok", site="local", pfn="/bin/true", is_stageable=False),
        Transformation("sh", site="local", pfn="/bin/sh", is_stageable=False))
    wf.add_transformation_catalog(tc).add_site_catalog(SiteCatalog().add_sites(Site("local")))
    flag = tmp / "flag"
    first, bad = Job("ok"), Job("sh").add_args("-c", "'echo out; echo err >&2; exit 3'")
    flaky = Job("sh").add_args("-c", f"'test -e {flag} || {{ touch {flag}; exit 2; }}'")
    held = Job("ok").add_condor_profile(request_memory="900000000")
    wf.add_jobs(first, bad, flaky, held).add_dependency(first, children=[bad, flaky])
    wf.write(str(tmp / "mixed.yml"))
    planned = sheaf("plan", "mixed.yml", "--dir", ".", "--relative-dir", "run", "-s", "local", "-q",
                    "-D", "dagman.retry=1", cwd=tmp)
    assert planned.returncode == 0, planned.stderr
    assert sheaf("run", str(tmp / "run")).returncode == 1
    return tmp / "run"


def _closed_dump(run_dir: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = _db(run_dir)
    try:
        return _dump(conn)
    finally:
        conn.close()


def _unplaced(dump: dict[str, list[tuple[object, ...]]], *directories: Path) -> str:
    """A dump with the run directories' paths taken out (two copies of one run differ only there)."""
    text = repr(dump)
    for directory in directories:
        text = text.replace(str(directory), "DIR")
    return text


def test_each_attempt_of_every_engine_run_has_its_row(tmp_path: Path) -> None:
    """A rescue rerun numbers its attempts from 0 again: its attempts' rows follow the earlier run's
    (job_submit_seq goes on increasing, as stampede's across restarts), each with its own events and
    task runs; loaded by a new loader at every line (each reading what the last one stored), the
    database is the one loaded at once."""
    run_dir = rescued_run(tmp_path)
    rows = _db(run_dir).execute(
        "SELECT j.exec_job_id, i.job_submit_seq, i.exitcode, "
        "(SELECT group_concat(v.exitcode) FROM invocation v WHERE v.job_instance_id = i.job_instance_id), "
        "(SELECT group_concat(s.state, ' ') FROM jobstate s "
        " WHERE s.job_instance_id = i.job_instance_id AND s.state LIKE 'JOB_%') "
        "FROM job_instance i JOIN job j USING (job_id) WHERE j.exec_job_id IN ('sh_flaky', 'sh_bad') "
        "ORDER BY 1, 2").fetchall()
    assert rows == [("sh_bad", 1, 3, "3", "JOB_TERMINATED JOB_FAILURE"),
                    ("sh_bad", 2, 3, "3", "JOB_TERMINATED JOB_FAILURE"),
                    ("sh_flaky", 1, 5, "5", "JOB_TERMINATED JOB_FAILURE"),
                    ("sh_flaky", 2, 0, "0", "JOB_TERMINATED JOB_SUCCESS")]
    (journal,) = run_dir.glob(".sheaf/*.journal")
    data = journal.read_bytes()
    live = _unplaced(_closed_dump(run_dir), run_dir)
    for path in run_dir.glob("*.events.db*"):
        path.unlink()
    (dag,) = run_dir.glob("*.dag")
    for end in [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]:
        journal.write_bytes(data[:end])
        loader = Loader(str(dag))
        loader.catch_up(verify=False)
        loader.close()
    assert _unplaced(_closed_dump(run_dir), run_dir) == live


def _failed_run_then_a_broken_dag(tmp_path: Path) -> Path:
    """A run of one failing node, its events database deleted, and its DAG then broken (an unknown
    command): what a user has who edits the DAG after a run."""
    (tmp_path / "e3.sub").write_text("universe = vanilla\nexecutable = /bin/sh\narguments = \"-c 'exit 3'\"\n"
                                     "queue\n")
    dag = tmp_path / "t.dag"
    dag.write_text("JOB A e3.sub\n")
    assert sheaf("run", "t.dag", cwd=tmp_path).returncode == 1
    for path in tmp_path.glob("t.dag.events.db*"):
        path.unlink()
    dag.write_text("JOB A e3.sub\nFOO\n")
    return dag


def test_a_run_refused_for_its_dag_leaves_the_events_database_alone(tmp_path: Path) -> None:
    """The loader beside the refused run loads nothing: the journal of the earlier run did not grow."""
    _failed_run_then_a_broken_dag(tmp_path)
    done = sheaf("run", "t.dag", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()  # the refusal alone: no warning of the loader
    assert len(lines) == 1 and "'FOO' is not a valid DAG command" in lines[0]
    assert not list(tmp_path.glob("t.dag.events.db*"))


def test_a_view_of_a_run_whose_dag_no_longer_parses_reads_the_journal(tmp_path: Path) -> None:
    """The database is rebuilt from the journal alone, its nodes named by the records."""
    _failed_run_then_a_broken_dag(tmp_path)
    done = sheaf("status", "t.dag", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "failed: A: exit code 3" in done.stdout
