"""The loader: the engine's journal, read incrementally into the events database (pegasus-monitord's job).

Sources.  The journal (``.sheaf/<dag>.journal``) is the one durable record of a run: every node
change with its attempt, HTCondor id, start, end, exit code, signal, slot and reasons, each run's
begin and end.  ``jobstate.log`` and ``<dag>.nodes.log`` are rendered from the same changes by the
engine (``reports._runevents``), so the loader does not read them: it renders the same events itself
(``EventTranslator``) into the ``jobstate`` table.  What the journal does not hold is read from the
files it points at: the DAG, plan.json and braindump.yml once (``_meta``), and a cluster job's
stdout when its attempt ends (the seqexec/PMC task records, ``_tasks``).

Incremental.  ``catch_up`` reads the journal from the byte offset it loaded last, up to its last
complete line, applies the records and stores the new offset in the same SQLite transaction, so the
database is always "the journal up to offset X": a loader killed at any point (kill -9 of ``sheaf
run``) leaves a database that the next ``catch_up`` (``sheaf status``, any view) continues.  A
journal shorter than the offset, or of another run id, is a new journal: the database is rebuilt.

Validation follows ``Journal.replay``: an unusable line, or a change that does not start where the
node's previous change finished, is recorded in ``damage`` and skipped.
"""

from __future__ import annotations

__all__ = ["Loader"]

import os
import socket
import sqlite3
import zlib
from collections.abc import Iterable

from sheaf.engine import (
    BeginRecord,
    Change,
    ChangeRecord,
    Dag,
    Damage,
    EndRecord,
    EventTranslator,
    NodeEvent,
    parse_dag,
    scan_journal,
    state_paths,
)
from sheaf.errors import InputError
from sheaf.monitor._hooks import HookRunner, Hooks
from sheaf.monitor._jobfiles import JobFiles, job_files
from sheaf.monitor._meta import SUBWORKFLOW_TRANSFORMATION, JobMeta, read_hooks, read_meta, run_ids
from sheaf.monitor._schema import connect, events_db_path, remove
from sheaf.monitor._tasks import TaskRecord, read_task_records

_ACTIVE = frozenset({"pre", "submitted", "post", "pre_ready", "post_ready", "pre_deferred", "post_deferred",
                     "ready"})
_TORN = "a torn record (the prefix of one)"
#: the jobs that run one task of their own -> the transformation its run is recorded under (None: the
#: job's): a sub-workflow job's task is the abstract job it plans, run as a DAG (pegasus-statistics'
#: ``condor::dagman``)
_TASK_RUNNERS: dict[str, str | None] = {"compute": None, "subworkflow": SUBWORKFLOW_TRANSFORMATION,
                                        "subdag": SUBWORKFLOW_TRANSFORMATION}
_TAIL = 4096  # bytes of a failed attempt's stdout and stderr kept
_INSERT_INSTANCE = ("INSERT INTO job_instance (job_instance_id, job_id, job_submit_seq, sched_id, submitted) "
                    "VALUES (?, ?, ?, ?, ?)")
_INSERT_ENDED_INSTANCE = (
    "INSERT INTO job_instance (job_instance_id, job_id, job_submit_seq, sched_id, submitted, start, end, "
    "local_duration, exitcode, signal, held_reason, reason, slot, host_id) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


class Loader:
    """Loads one DAG's journal into ``<dag>.events.db``; not thread-safe (one loader per database)."""

    def __init__(self, dag_path: str, parent_submit_dir: str | None = None, hooks: bool = False) -> None:
        self.dag_path = os.path.abspath(dag_path)
        self.directory = os.path.dirname(self.dag_path)
        self.journal = state_paths(self.dag_path)["journal"]
        self.db_path = events_db_path(self.dag_path)
        self.parent = parent_submit_dir
        self.conn = connect(self.db_path)
        self._cur = self.conn.cursor()  # the per-attempt statements: Connection.execute makes a cursor each
        self._dag: Dag | None = None
        self._jobs: dict[str, int] = {}
        self._meta: dict[str, JobMeta] = {}
        self._states: dict[str, str] = {}
        self._instances: dict[tuple[str, int], int] = {}  # (node, job_submit_seq) -> job_instance_id
        # node -> its attempts in the engine runs before the latest fresh or rescue one, which numbers
        # its attempts from 0 again: an attempt's job_submit_seq is this + its attempt + 1
        self._earlier: dict[str, int] = {}
        # attempts made in this catch-up whose row is not written yet: id -> (job, seq, HTCondor id,
        # submit time); the row is written whole when the attempt ends in the same catch-up
        self._unwritten: dict[int, tuple[int, int, str | None, float | None]] = {}
        self._next_instance = 1
        self._hosts: dict[tuple[str | None, str], int] = {}
        self._translator = EventTranslator()
        self._here = socket.gethostname()
        self._offset = 0
        self._job_rows: dict[int, tuple[str, int, int, object]] = {}  # job_id -> (state, attempt, reason)
        self._jobstate_rows: list[tuple[object, ...]] = []
        self._invocation_rows: list[tuple[object, ...]] = []
        self._hooks: HookRunner | None = None
        self._job_hooks: dict[str, Hooks] = {}
        if hooks:
            self._start_hooks()
        self._load_cache()

    # ---- public ---------------------------------------------------------------------------------

    def catch_up(self, verify: bool = True) -> int:
        """Load what the journal gained since the last call; returns the records loaded.

        With ``verify`` the part loaded before is checked against its stored CRC-32 first (one read
        of the journal): a journal changed in place (a repair, a damaged disk) is reloaded from the
        start.  The loader thread beside the engine skips it: the engine only appends.

        Two loaders may share a database (``sheaf run``'s thread and a ``sheaf status``): each
        catch-up reads the offset inside its write transaction, and reloads its caches when another
        loader moved it."""
        try:
            with self._transaction():
                offset, lines, run_id, crc = self._progress()
                if offset != self._offset:
                    self._reset_cache()
                if not self._jobs:
                    self._init_jobs()
                data = self._read_from(offset, crc if verify else None)
                if data is None:  # the journal was replaced or changed in place
                    raise _NewJournal
                end = data.rfind(b"\n") + 1
                loaded = self._apply_chunk(data[:end], offset, lines, run_id, crc) if end else 0
        except _NewJournal:
            self.rebuild()
            return self.catch_up()
        except BaseException:
            self._reset_cache()  # the transaction was rolled back: forget what it had cached
            raise
        return loaded

    def rebuild(self) -> None:
        """Forget everything loaded: the next ``catch_up`` reads the journal from its start."""
        self.conn.close()
        remove(self.db_path)
        self.conn = connect(self.db_path)
        self._cur = self.conn.cursor()
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._jobs, self._meta, self._states, self._instances, self._hosts = {}, {}, {}, {}, {}
        self._earlier = {}
        self._unwritten = {}
        self._job_rows, self._jobstate_rows, self._invocation_rows = {}, [], []
        self._translator = EventTranslator()
        self._load_cache()

    def close(self) -> None:
        if self._hooks is not None:
            self._hooks.wait()
        self.conn.close()

    def _start_hooks(self) -> None:
        """Run hooks for the events loaded from now on (only a loader beside a live run does)."""
        workflow_hooks, self._job_hooks = read_hooks(self.directory)
        if workflow_hooks or self._job_hooks:
            uuid, wf_id = run_ids(self.directory, os.path.basename(self.dag_path).removesuffix(".dag"))
            self._hooks = HookRunner(self.directory, self.dag_path + ".hooks.log", uuid, wf_id,
                                     workflow_hooks)

    # ---- set-up ---------------------------------------------------------------------------------

    def _dag_of(self) -> Dag | None:
        if self._dag is None:
            try:
                self._dag = parse_dag(self.dag_path)
            except (InputError, OSError):
                return None
        return self._dag

    def _load_cache(self) -> None:
        # the tasks of every job in one ordered pass (a subquery per job scans the whole task table
        # each time: quadratic in the jobs)
        for name, job_id, state, type_desc, tr, site, agg, tasks, earlier in self.conn.execute(
                "SELECT exec_job_id, job_id, state, type_desc, transformation, site, aggregator, tasks, "
                "earlier_attempts "
                "FROM job LEFT JOIN (SELECT job_id, group_concat(abs_task_id, ' ') AS tasks FROM "
                "(SELECT job_id, abs_task_id FROM task ORDER BY job_id, task_id) GROUP BY job_id) "
                "USING (job_id)"):
            self._jobs[name] = job_id
            self._states[name] = state
            self._meta[name] = JobMeta(name, type_desc, tr, site, tuple((tasks or "").split()), agg)
            if earlier:
                self._earlier[name] = int(earlier)
        for name, seq, iid in self.conn.execute(
                "SELECT exec_job_id, job_submit_seq, job_instance_id FROM job_instance JOIN job "
                "USING (job_id)"):
            self._instances[(name, seq)] = iid
        # numbered as SQLite numbers an INTEGER PRIMARY KEY: no row is ever deleted
        self._next_instance = max(self._instances.values(), default=0) + 1
        for host_id, site, hostname in self.conn.execute("SELECT host_id, site, hostname FROM host"):
            self._hosts[(site, hostname)] = host_id
        self._offset = self._progress()[0]

    def _init_jobs(self) -> None:
        meta = read_meta(self.dag_path, self.directory, self._dag_of)
        self.conn.execute(
            "INSERT INTO workflow (wf_id, wf_uuid, dag_file_name, submit_dir, dax_label, dax_file, user, "
            "submit_hostname, planner_arguments, parent_submit_dir) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (wf_id) DO NOTHING",  # a plan's uuid, else the first run's id (``_begin``)
            (meta.wf_uuid, self.dag_path, self.directory, meta.label, meta.dax_file, meta.user, meta.hostname,
             meta.planner_arguments, self.parent))
        self._add_jobs(meta.jobs)
        self.conn.executemany("INSERT INTO job_edge VALUES (?, ?)", meta.edges)

    def _add_jobs(self, jobs: list[JobMeta]) -> int:
        """Insert ``jobs`` and their tasks in two statements; the job ids are given in order from the
        largest one in the table, as SQLite numbers an INTEGER PRIMARY KEY.  Returns the first id."""
        first = int(self.conn.execute("SELECT coalesce(max(job_id), 0) + 1 FROM job").fetchone()[0])
        self.conn.executemany(
            "INSERT INTO job (job_id, exec_job_id, type_desc, transformation, site, clustered, aggregator, "
            "task_count, max_retries, subwf_dir) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((first + i, job.name, job.type_desc, job.transformation, job.site,
              int(job.aggregator is not None), job.aggregator, len(job.tasks), job.retries, job.subwf_dir)
             for i, job in enumerate(jobs)))
        self.conn.executemany("INSERT OR IGNORE INTO task (abs_task_id, job_id, transformation) "
                              "VALUES (?, ?, ?)",
                              ((t, first + i, job.transformation)
                               for i, job in enumerate(jobs) for t in job.tasks))
        for i, job in enumerate(jobs):
            self._jobs[job.name], self._meta[job.name], self._states[job.name] = first + i, job, "waiting"
        return first

    # ---- reading --------------------------------------------------------------------------------

    def _progress(self) -> tuple[int, int, str, int]:
        got = dict(self.conn.execute("SELECT key, value FROM progress").fetchall())
        return (int(got.get("offset", 0)), int(got.get("lines", 0)), str(got.get("run", "")),
                int(got.get("crc", 0)))

    def _read_from(self, offset: int, crc: int | None) -> bytes | None:
        """The journal from ``offset`` on; None when it no longer starts with what was loaded."""
        try:
            with open(self.journal, "rb") as handle:
                if crc is not None and offset and zlib.crc32(handle.read(offset)) != crc:
                    return None
                size = os.fstat(handle.fileno()).st_size
                if size < offset:
                    return None
                handle.seek(offset)
                return handle.read()
        except FileNotFoundError:
            return None if offset else b""

    def _apply_chunk(self, data: bytes, offset: int, lines: int, run_id: str, crc: int) -> int:
        loaded = 0
        consumed = len(data)
        items = list(scan_journal(data))
        if items and isinstance(items[-1][2], Damage) and items[-1][2].why == _TORN:
            consumed = items[-1][0]  # a torn line may be followed by a fresh "B": decide next time
            items.pop()
        last: float | None = None
        change = self._change
        for rel, line, item in items:
            if type(item) is ChangeRecord:  # nearly every record: straight to its method
                why = change(item)
            elif isinstance(item, Damage):
                self._damage(offset + rel, lines + line, item.why)
                continue
            else:
                if isinstance(item, BeginRecord) and run_id and item.run and item.run != run_id:
                    raise _NewJournal
                run_id = run_id or (item.run if isinstance(item, BeginRecord) else "")
                why = self._apply(item)
            if why is not None:
                self._damage(offset + rel, lines + line, why)
            last = item.time
            loaded += 1
        self._flush()
        if last is not None:
            self.conn.execute("UPDATE workflow SET last_time = ? WHERE wf_id = 1", (last,))
        self._offset = offset + consumed
        self._set_progress(self._offset, lines + data[:consumed].count(b"\n"), run_id,
                           zlib.crc32(data[:consumed], crc))
        return loaded

    def _transaction(self) -> _Tx:
        return _Tx(self.conn)

    def _set_progress(self, offset: int, lines: int, run_id: str, crc: int) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO progress VALUES (?, ?)",
                              (("offset", str(offset)), ("lines", str(lines)), ("run", run_id),
                               ("crc", str(crc))))

    def _damage(self, offset: int, line: int, why: str) -> None:
        self.conn.execute("INSERT INTO damage VALUES (?, ?, ?)", (offset, line, why))

    # ---- records --------------------------------------------------------------------------------

    def _apply(self, record: object) -> str | None:
        if isinstance(record, ChangeRecord):
            return self._change(record)
        if isinstance(record, BeginRecord):
            self._begin(record)
        elif isinstance(record, EndRecord):
            self._end(record)
        return None

    def _flush(self) -> None:
        """Write the batched job states, jobstate and invocation rows (one executemany each: the
        loader's statements cost the engine's machine CPU, see ``_follow``).  A job's changes fold
        into one row: its last state and attempt, and its reason as the last change that set (1) or
        cleared it left it (a catch-up of a run of short jobs sees each job made ready, submitted and
        done: a third of the UPDATEs)."""
        if self._unwritten:  # attempts that did not end in this catch-up
            self.conn.executemany(_INSERT_INSTANCE, ((iid, *row) for iid, row in self._unwritten.items()))
            self._unwritten.clear()
        if self._job_rows:
            self.conn.executemany(
                "UPDATE job SET state = ?, attempt = ?, reason = CASE ? WHEN 1 THEN ? ELSE reason END "
                "WHERE job_id = ?", ((*row, job_id) for job_id, row in self._job_rows.items()))
            self._job_rows.clear()
        if self._jobstate_rows:
            self.conn.executemany("INSERT INTO jobstate VALUES (?, ?, ?, ?)", self._jobstate_rows)
            self._jobstate_rows.clear()
        if self._invocation_rows:
            self.conn.executemany(
                "INSERT INTO invocation (job_instance_id, task_submit_seq, abs_task_id, transformation, "
                "executable, start_time, remote_duration, exitcode, host_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                "?)", self._invocation_rows)
            self._invocation_rows.clear()

    def _set_job(self, job_id: int, state: str, attempt: int, reason: object) -> None:
        """A change of the job to ``state``, folded into the batched row: a reason replaces the
        job's, a change to done clears it, any other change keeps it."""
        if reason is not None or state == "done":
            self._job_rows[job_id] = (state, attempt, 1, reason)
        else:
            _, _, sets, kept = self._job_rows.get(job_id, ("", 0, 0, None))
            self._job_rows[job_id] = (state, attempt, sets, kept)

    def _begin(self, r: BeginRecord) -> None:
        self._flush()  # the job states below are written at once: after the batched ones
        self.conn.execute(
            "UPDATE workflow SET wf_uuid = CASE WHEN wf_uuid = '' THEN ? ELSE wf_uuid END, total = "
            "?, source = ?, "
            "epochs = ?, started = coalesce(started, ?), run_started = ?, last_time = ?, timestamp = "
            "coalesce(timestamp, ?), ended = NULL, succeeded = NULL, exit_code = NULL, rescue = NULL "
            "WHERE wf_id = 1", (r.run, r.total, r.source, r.epoch, r.time, r.time, r.time, r.time))
        self.conn.execute("INSERT INTO workflowstate VALUES ('WORKFLOW_STARTED', ?, ?, NULL, ?)",
                          (r.time, r.epoch - 1, r.source))
        if self._hooks is not None:
            self._hooks.workflow(True, r.time)
        self._translator = EventTranslator()
        if r.source == "recovery":
            moved = [n for n, s in self._states.items() if s in _ACTIVE]
        else:
            moved = [n for n, s in self._states.items() if s != "waiting"]
            self._number_after_earlier_runs()
        self._set_states((n, "waiting") for n in moved)
        self._set_states((n, "done") for n in r.done)

    def _number_after_earlier_runs(self) -> None:
        """A fresh or rescue run numbers each node's attempts from 0 again: its attempts' rows follow
        the node's rows of the earlier runs (``job_submit_seq`` goes on increasing, as in Pegasus's
        stampede database across a workflow's restarts).  A recovery continues its run's numbering."""
        earlier: dict[str, int] = {}
        for name, seq in self._instances:
            if seq > earlier.get(name, 0):
                earlier[name] = seq
        self.conn.executemany("UPDATE job SET earlier_attempts = ? WHERE job_id = ?",
                              [(seq, self._jobs[name]) for name, seq in earlier.items()
                               if self._earlier.get(name, 0) != seq])
        self._earlier = earlier

    def _set_states(self, pairs: Iterable[tuple[str, str]]) -> None:
        rows = []
        for name, state in pairs:
            self._job_id(name)
            self._states[name] = state
            rows.append((state, self._jobs[name]))
        self.conn.executemany("UPDATE job SET state = ? WHERE job_id = ?", rows)

    def _end(self, r: EndRecord) -> None:
        self.conn.execute("UPDATE workflow SET ended = ?, succeeded = ?, exit_code = ?, rescue = ? "
                          "WHERE wf_id = 1",
                          (r.time, int(r.succeeded), r.exit_code, r.rescue))
        if self._hooks is not None:
            self._hooks.workflow(False, r.time, r.exit_code)
        self.conn.execute("INSERT INTO workflowstate VALUES ('WORKFLOW_TERMINATED', ?, "
                          "(SELECT epochs - 1 FROM workflow WHERE wf_id = 1), ?, "
                          "NULL)", (r.time, r.exit_code))

    def _job_id(self, name: str) -> int:
        job_id = self._jobs.get(name)
        if job_id is None:  # a node the DAG did not show (read before the DAG, or a changed DAG)
            job_id = self._add_jobs([JobMeta(name, "compute")])
        return job_id

    def _change(self, r: ChangeRecord) -> str | None:
        node, start, finish = r.node, r.start, r.finish
        was = self._states.get(node, "waiting")
        if was != start:
            return f"node {node!r} changes {start} -> {finish} but was {was}"
        job_id = self._jobs.get(node)
        if job_id is None:
            job_id = self._job_id(node)
        info = r.info or {}
        self._states[node] = finish
        reason = None if finish == "done" else (info.get("why") or info.get("reason"))
        self._set_job(job_id, finish, r.attempt, reason)
        if not info and start == "waiting" and finish == "ready":
            return None  # no event in DAGMan's vocabulary, nor the translator's: a third of all changes
        retry = "retry" in info
        if retry:
            self.conn.execute("UPDATE workflow SET retries = retries + 1 WHERE wf_id = 1")
        change = Change(r.time, node, start, finish, r.attempt, info)  # type: ignore[arg-type]
        events = self._translator.events((change,))
        if not events and finish not in ("pre", "submitted"):
            return None
        # a change that retries the node carries the next attempt's number; what it reports (the
        # job's end, a script's) belongs to the attempt that just ended
        attempt = r.attempt - 1 if retry and r.attempt > 0 else r.attempt
        sched = (f"{info['cluster']}.0", r.time) if finish == "submitted" and "cluster" in info else None
        iid, created = self._instance(node, job_id, attempt, sched)
        ended = start == "submitted"
        host = None
        if sched is not None and not created:
            self._set_sched(iid, sched)
        if ended and "return" in info:
            host = self._update_ended(iid, r, info)
        elif info.get("why"):
            self._set_reason(iid, info["why"])
        self._jobstate_rows += [(iid, e.kind, e.time, e.value) for e in events]
        if ended and ("exit" in info or "signal" in info):
            self._invocations(node, iid, info, host)
        if self._hooks is not None and node in self._job_hooks:
            self._job_events(node, events, info)
        if ended and info.get("return", 0) != 0:
            self._failure_files(node, iid, info)
        return None

    def _job_events(self, node: str, events: list[NodeEvent], info: dict[str, object]) -> None:
        assert self._hooks is not None
        dag = self._dag_of()
        spec = dag.nodes.get(node) if dag is not None else None
        files = self._files(node, info)
        has_post = spec is not None and spec.post is not None
        out, err = (files.stdout, files.stderr) if files is not None else (None, None)
        for e in events:
            self._hooks.job(node, e.kind, self._job_hooks[node], e.time, e.value, has_post, out, err)

    def _files(self, node: str, info: dict[str, object]) -> JobFiles | None:
        dag = self._dag_of()
        cluster = info.get("cluster", 0)
        return job_files(dag, node, cluster if isinstance(cluster, int) else 0) if dag is not None else None

    def _failure_files(self, node: str, iid: int, info: dict[str, object]) -> None:
        """What pegasus-analyzer shows of a failed attempt, kept while the files are there (a retry
        overwrites them)."""
        files = self._files(node, info)
        if files is None:
            return
        self._write_instance(iid)
        self.conn.execute(
            "UPDATE job_instance SET stdout_file = ?, stderr_file = ?, stdout_text = ?, stderr_text = ?, "
            "submit_file = ?, submit_text = ?, command = ? WHERE job_instance_id = ?",
            (files.stdout, files.stderr, _tail(files.stdout), _tail(files.stderr), files.submit, files.text,
             files.command, iid))

    def _instance(self, node: str, job_id: int, attempt: int,
                  sched: tuple[str, float] | None) -> tuple[int, bool]:
        """The row of the node's attempt ``attempt`` in this engine run, and whether it was made now
        (then with ``sched``: its HTCondor id and submit time).  A new row is written when the attempt
        ends, in one INSERT with its end, if that is in this catch-up (else by ``_flush``): one
        statement a job, not two."""
        seq = self._earlier.get(node, 0) + attempt + 1
        iid = self._instances.get((node, seq))
        if iid is not None:
            return iid, False
        iid = self._instances[(node, seq)] = self._next_instance
        self._next_instance += 1
        self._unwritten[iid] = (job_id, seq, *(sched or (None, None)))
        return iid, True

    def _write_instance(self, iid: int) -> None:
        """Write attempt ``iid``'s row if it is not written yet (before a statement changes it)."""
        row = self._unwritten.pop(iid, None)
        if row is not None:
            self._cur.execute(_INSERT_INSTANCE, (iid, *row))

    def _set_sched(self, iid: int, sched: tuple[str, float]) -> None:
        """The attempt's HTCondor id and submit time (an attempt made before this change)."""
        self._write_instance(iid)
        self.conn.execute("UPDATE job_instance SET sched_id = ?, submitted = ? WHERE job_instance_id = ?",
                          (*sched, iid))

    def _set_reason(self, iid: int, why: object) -> None:
        self._write_instance(iid)
        self.conn.execute("UPDATE job_instance SET reason = ? WHERE job_instance_id = ?", (why, iid))

    def _update_ended(self, iid: int, r: ChangeRecord, info: dict[str, object]) -> int | None:
        """The attempt's job ended (``return`` in a change from submitted): its end, exit, slot and
        host; returns the host's id (the job's invocation ran there too)."""
        started, ended = info.get("started"), info.get("ended")
        held = info.get("reason") if "exit" not in info and "signal" not in info else None
        slot = info.get("slot")
        host = self._host(self._meta[r.node].site, str(slot)) if slot else None
        timed = isinstance(started, float) and isinstance(ended, float)
        duration = float(ended) - float(started) if timed else None  # type: ignore[arg-type]
        end = (started, ended if ended is not None else r.time, duration, info.get("return"),
               info.get("signal"), held, info.get("why"), slot, host)
        row = self._unwritten.pop(iid, None)
        if row is not None:  # made in this catch-up: its row, whole, in one statement
            self._cur.execute(_INSERT_ENDED_INSTANCE, (iid, *row, *end))
            return host
        self._cur.execute(
            "UPDATE job_instance SET start = ?, end = ?, local_duration = ?, exitcode = ?, signal = ?, "
            "held_reason = coalesce(?, held_reason), reason = ?, slot = ?, host_id = ? WHERE "
            "job_instance_id = ?", (*end, iid))
        return host

    def _host(self, site: str | None, slot: str) -> int:
        hostname = slot.rpartition("@")[2] if "@" in slot else self._here
        key = (site, hostname)
        host_id = self._hosts.get(key)
        if host_id is None:
            self.conn.execute("INSERT OR IGNORE INTO host (site, hostname) VALUES (?, ?)", key)
            row = self.conn.execute("SELECT host_id FROM host WHERE site IS ? AND hostname = "
                                    "?", key).fetchone()
            host_id = self._hosts[key] = int(row[0])
        return host_id

    # ---- tasks ----------------------------------------------------------------------------------

    def _invocations(self, node: str, iid: int, info: dict[str, object], host: int | None) -> None:
        """The tasks the attempt ran; ``host``: where its job ran (``_update_ended``'s)."""
        meta = self._meta[node]
        if meta.aggregator is not None:
            self._cluster_tasks(node, meta, iid, info)
        elif meta.type_desc in _TASK_RUNNERS and meta.tasks:
            started = info.get("started")
            ended = info.get("ended")
            if not isinstance(started, float) or not isinstance(ended, float):
                return
            code = info.get("exit") if "exit" in info else -int(info.get("signal", 0))  # type: ignore[call-overload]
            if host is None and info.get("slot"):
                host = self._host(meta.site, str(info["slot"]))
            transformation = _TASK_RUNNERS[meta.type_desc] or meta.transformation
            self._invocation_rows.append((iid, 1, meta.tasks[0], transformation, None, started,
                                          ended - started, code, host))

    def _cluster_tasks(self, node: str, meta: JobMeta, iid: int, info: dict[str, object]) -> None:
        files = self._files(node, info)
        stdout = files.stdout if files is not None else None
        self._write_instance(iid)
        self.conn.execute("UPDATE job_instance SET stdout_file = ?, stderr_file = ? WHERE "
                          "job_instance_id = ?",
                          (stdout, files.stderr if files is not None else None, iid))
        rows = self._invocation_rows
        job_host = self._host(meta.site, str(info["slot"])) if info.get("slot") else None
        for seq, rec in enumerate(read_task_records(stdout), start=1):
            task = self._task_of(meta, rec)  # PMC names the host; seqexec runs where its job ran
            host = self._host(meta.site, f"pmc@{rec.hostname}") if rec.hostname else job_host
            rows.append((iid, seq, task, meta.transformation, rec.app, rec.start, rec.duration, rec.exitcode,
                         host))

    @staticmethod
    def _task_of(meta: JobMeta, rec: TaskRecord) -> str | None:
        if rec.ident is not None and rec.ident.isdigit() and meta.aggregator == "seqexec":
            index = int(rec.ident) - 1
            return meta.tasks[index] if 0 <= index < len(meta.tasks) else None
        if rec.ident in meta.tasks:
            return rec.ident
        for task in meta.tasks:  # PMC without ids: the DAG task name ends with the task id
            if rec.name and rec.name.endswith(task):
                return task
        return rec.ident


def _tail(path: str | None, size: int = _TAIL) -> str | None:
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - size))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


class _NewJournal(Exception):
    """The journal holds another run id than the one loaded: rebuild."""


class _Tx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
