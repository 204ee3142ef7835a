"""Where each file of a plan lives inside DIR.

Layout (paths relative to DIR)::

    <name>.dag            the DAG DAGMan (or ``sheaf run``) runs; the only ``*.dag`` at the top
    <name>.dag.config     DAGMan configuration named by the DAG's CONFIG line (throttles)
    <name>.lists          the data jobs' lists, one after another (each job reads its ``--slice``)
    plan.json             the record for people and tools (docs/command-line.md)
    jobs/000/<id>.sub     a job's own submit description; ``<id>.in`` (seqexec), ``<id>.dag`` (PMC),
    jobs/000/<id>/        a Decaf cluster's JSON graph and run script
    jobs/000/<id>.out     the job's stdout/stderr (``.err``), written when it runs
    scratch/<site>/       the working directory of a site without a local shared-scratch directory

Jobs are spread over ``jobs/NNN/`` by their position in the plan, ``JOBS_PER_DIR`` to a directory,
so that 10^6 jobs (three files each once they have run) never put millions of entries in one
directory, as the Pegasus manual warn.  Positions are deterministic, so the layout is too.

Every path written *into* a file is absolute and names the final DIR (the plan is written in a
temporary sibling and renamed into place, so the temporary name never appears in a file).

The relative execution directory (pegasus-plan's ``--relative-dir``, ``--randomdir``; ``exec_dir``)
is where a site's jobs run under its catalogued shared scratch directory, as pegasus-plan lays out
the remote working directory: ``--relative-dir R`` gives ``R``; ``--randomdir=NAME`` ``NAME``;
``--randomdir`` ``<basename or workflow-0>-<workflow uuid>``; else the submit directory relative to
the base (``<user>/pegasus/<workflow>/runNNNN``, even under ``--relative-submit-dir``).

Where DIR is (pegasus-plan's rules, ``CPlanner.determineRelativeSubmitDirectory``): ``--dir`` is a
base; the submit directory is ``<base>/<user>/pegasus/<workflow>/runNNNN`` -- the next number after
the highest ``runNNNN`` already there, from ``run0001`` -- unless ``--relative-submit-dir`` (else
``--relative-dir``) names it, relative to the base.  Pegasus picks the number without a lock
("not thread safe", its source says); sheaf reserves it with ``mkdir``, which fails when another
planner took the number first, and then tries the next one, so two plans started at once never
share a directory (:func:`reserve_run_dir`).  With ``pegasus.dir.useTimestamp`` the last part is the
planning time instead of ``runNNNN``, as pegasus-plan writes it (ISO 8601 in local time, basic
``20261123T234555+0000``, or extended ``2026-11-23T23:45:55+00:00`` with
``pegasus.dir.timestamp.extended``; :func:`timestamp_name`); where Pegasus would reuse the directory
of a plan made in the same second, sheaf takes ``<stamp>-2``, ``<stamp>-3``, ...
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass

JOBS_PER_DIR = 10_000
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]")
_RUN_DIR = re.compile(r"^run(\d+)$")
VO_GROUP = "pegasus"  # pegasus-plan's default VO group, the middle part of the default submit path


def safe_name(text: str) -> str:
    """``text`` with every character outside ``A-Z a-z 0-9 _ . -`` made ``_`` (a file-name part)."""
    return _UNSAFE_NAME.sub("_", text)


def dag_basename(workflow_name: str) -> str:
    """The workflow's name made safe as a file name (``blackdiamond``)."""
    name = _UNSAFE_NAME.sub("_", workflow_name).lstrip(".")
    return name or "workflow"


def user_name() -> str:
    """The user named in the default submit path (pegasus-plan: the ``user.name`` of the JVM)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (a bare container)
        return str(os.getuid())


def runs_parent(base: str, workflow_name: str) -> str:
    """``<base>/<user>/pegasus/<workflow>``: where the numbered submit directories of a workflow go."""
    return os.path.join(base, user_name(), VO_GROUP, dag_basename(workflow_name))


def named_submit_dir(base: str, relative: str) -> str:
    """``--relative-(submit-)dir``: relative to the base even when written absolute (as Java's
    ``new File(base, relative)`` joins them)."""
    return os.path.join(base, relative.lstrip(os.sep))


def next_run_number(parent: str) -> int:
    """One more than the highest ``runNNNN`` in ``parent``; 1 when there is none."""
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return 1
    numbers = [int(match.group(1)) for name in names if (match := _RUN_DIR.match(name))]
    return max(numbers, default=0) + 1


def timestamp_name(when: float, *, extended: bool = False) -> str:
    """pegasus-plan's timestamped submit directory name for the time ``when`` (module docstring)."""
    local = time.localtime(when)
    if not extended:
        return time.strftime("%Y%m%dT%H%M%S%z", local)
    zone = time.strftime("%z", local)
    return time.strftime("%Y-%m-%dT%H:%M:%S", local) + f"{zone[:3]}:{zone[3:]}"


def reserve_run_dir(parent: str, name: str | None = None) -> str:
    """Create the next free ``parent/runNNNN`` -- or ``parent/name``, else ``name-2``, ... -- (empty)
    and return it (module docstring)."""
    os.makedirs(parent, exist_ok=True)
    number = next_run_number(parent) if name is None else 1
    while True:
        leaf = f"run{number:04d}" if name is None else (name if number == 1 else f"{name}-{number}")
        path = os.path.join(parent, leaf)
        try:
            os.mkdir(path)
        except FileExistsError:
            number += 1
            continue
        return path


def job_subdir(index: int) -> str:
    return f"jobs/{index // JOBS_PER_DIR:03d}"


@dataclass(slots=True)
class JobPaths:
    """Paths of one job: ``rel_*`` relative to DIR (for the DAG), ``abs_*`` under the final DIR.

    Read-only by convention, not ``frozen``: a frozen dataclass costs several times as much to build,
    and a plan builds one per job."""

    rel_dir: str
    abs_dir: str
    node: str

    @property
    def rel_submit(self) -> str:
        return f"{self.rel_dir}/{self.node}.sub"

    def rel(self, suffix: str) -> str:
        return f"{self.rel_dir}/{self.node}{suffix}"

    def abs(self, suffix: str) -> str:
        return f"{self.abs_dir}/{self.node}{suffix}"


class Layout:
    """Paths of a plan whose final directory is ``final_dir`` (absolute)."""

    def __init__(self, final_dir: str, workflow_name: str, basename: str | None = None,
                 exec_dir: str | None = None) -> None:
        self.final_dir = os.path.abspath(final_dir)
        self.name = dag_basename(basename or workflow_name)  # --basename names the per-workflow files
        self.exec_dir = exec_dir  # pegasus-plan's relative execution directory (under shared scratch)

    @property
    def dag(self) -> str:
        return f"{self.name}.dag"

    @property
    def config(self) -> str:
        return f"{self.name}.dag.config"

    @property
    def lists(self) -> str:
        return f"{self.name}.lists"

    @property
    def log(self) -> str:
        return os.path.join(self.final_dir, f"{self.name}.log")

    def job(self, index: int, node: str) -> JobPaths:
        rel = job_subdir(index)
        return JobPaths(rel, f"{self.final_dir}/{rel}", node)

    def scratch(self, site: str) -> str:
        return os.path.join(self.final_dir, "scratch", _UNSAFE_NAME.sub("_", site))


def tool_path(name: str) -> str:
    """An executable named without a path (sheaf's console scripts): beside the running
    interpreter (the venv), else on PATH, else the name as given."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(beside):
        return beside
    return shutil.which(name) or name
