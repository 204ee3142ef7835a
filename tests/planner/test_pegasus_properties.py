"""Pegasus properties and profiles of its configuration reference, planned through ``sheaf plan`` as
a Pegasus user writes them (``Pegasus.api`` files, ``-D`` on the command line) and run for real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from Pegasus.api import (
    EventType,
    File,
    Job,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import SHEAF, run

from sheaf.formats import read_replica_catalog

#: a program that prints its first argument and exits 0
SAYS = f"""#!{sys.executable}
import sys
print(sys.argv[1])
"""


def _plan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([SHEAF, "plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", *args],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False)


def _program(tmp: Path, name: str, text: str) -> Transformation:
    """``text`` as the program ``tmp/name``, catalogued as transformation ``name`` on condorpool."""
    program = tmp / name
    program.write_text(text)
    program.chmod(0o755)
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp / "sites.yml"))
    tr = Transformation(name, site="condorpool", pfn=str(program))
    TransformationCatalog().add_transformations(tr).write(str(tmp / "transformations.yml"))
    return tr


def _saying(tmp: Path, words: str, **dagman: str) -> None:
    """One job on condorpool that prints ``words`` and exits 0, with ``dagman`` profiles."""
    job = Job(_program(tmp, "says", SAYS), _id="talk").add_args(words)
    if dagman:
        job.add_dagman_profile(**dagman)
    Workflow("talk").add_jobs(job).write(str(tmp / "workflow.yml"))


def test_dagman_post_arguments_alone_go_to_the_exit_code_check(tmp_path: Path) -> None:
    """Pegasus gives every job pegasus-exitcode as its POST script and ``dagman.post.arguments`` to
    it: ``-f MSG`` there fails a job whose output holds MSG, with no exitcode profile besides."""
    _saying(tmp_path, "Traceback", post_arguments="-f Traceback")
    planned = _plan(tmp_path)
    assert planned.returncode == 0, planned.stderr
    dag = (tmp_path / "runs" / "p" / "talk.dag").read_text()
    assert "SCRIPT POST says_talk" in dag and "-f Traceback" in dag
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 1, done.stdout + done.stderr


def test_dagman_post_arguments_from_the_properties_reach_every_job(tmp_path: Path) -> None:
    _saying(tmp_path, "all is well")
    planned = _plan(tmp_path, "-D", "dagman.post.arguments=-f Traceback")
    assert planned.returncode == 0, planned.stderr
    assert "-f Traceback" in (tmp_path / "runs" / "p" / "talk.dag").read_text()
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr


#: a program that writes its second argument's text into the file its first argument names
WRITES = f"""#!{sys.executable}
import os, sys
os.makedirs(os.path.dirname(sys.argv[1]) or ".", exist_ok=True)
open(sys.argv[1], "w").write(sys.argv[2])
"""


def _deep_output(tmp: Path) -> None:
    """One job writing ``rupture/0001.rx``, staged out and registered (Pegasus's own example)."""
    out = File("rupture/0001.rx")
    job = Job(_program(tmp, "writes", WRITES), _id="make").add_args(out, "rx")
    Workflow("deep").add_jobs(job.add_outputs(out, stage_out=True, register_replica=True)).write(
        str(tmp / "workflow.yml"))


@pytest.mark.parametrize(("deep", "registered"), [("true", "rupture/0001.rx"), ("false", "0001.rx")])
def test_register_deep_false_registers_the_lfns_last_part(tmp_path: Path, deep: str, registered: str) -> None:
    _deep_output(tmp_path)
    planned = _plan(tmp_path, "--output-site", "local", "-D", f"pegasus.register.deep={deep}")
    assert planned.returncode == 0, planned.stderr
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    catalog = read_replica_catalog(str(tmp_path / "runs" / "p" / "deep.replicas.yml"))
    assert [replica.lfn for replica in catalog] == [registered]


def _hooked(tmp: Path) -> None:
    """A workflow and its one job, each with a shell hook at their end that writes a file here."""
    job = Job(_program(tmp, "says", SAYS), _id="talk").add_args("hello")
    job.add_shell_hook(EventType.END, f"/bin/touch {tmp / 'job-hook-ran'}")
    wf = Workflow("talk").add_jobs(job).add_shell_hook(EventType.END, f"/bin/touch {tmp / 'wf-hook-ran'}")
    wf.write(str(tmp / "workflow.yml"))


@pytest.mark.parametrize(("setting", "ran"), [
    ([], True),
    (["-D", "pegasus.monitord.notifications=false"], False),
    (["-D", "pegasus.monitord.notifications.max=0"], False),
])
def test_notifications_off_in_the_properties_run_no_hooks(tmp_path: Path, setting: list[str],
                                                          ran: bool) -> None:
    """pegasus-monitord runs no notification when ``pegasus.monitord.notifications`` is false or
    ``pegasus.monitord.notifications.max`` is 0."""
    _hooked(tmp_path)
    planned = _plan(tmp_path, *setting)
    assert planned.returncode == 0, planned.stderr
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "wf-hook-ran").exists() is ran
    assert (tmp_path / "job-hook-ran").exists() is ran


def test_a_notifications_setting_that_is_no_boolean_is_refused_with_nothing_written(tmp_path: Path) -> None:
    _hooked(tmp_path)
    planned = _plan(tmp_path, "-D", "pegasus.monitord.notifications=maybe")
    assert planned.returncode == 2
    assert "pegasus.monitord.notifications" in planned.stderr and "Traceback" not in planned.stderr
    assert not (tmp_path / "runs" / "p").exists()
