"""Pegasus properties and profiles of its configuration reference, planned through ``sheaf plan`` as
a Pegasus user writes them (``Pegasus.api`` files, ``-D`` on the command line) and run for real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from Pegasus.api import (
    Job,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import SHEAF, run

#: a program that prints its first argument and exits 0
SAYS = f"""#!{sys.executable}
import sys
print(sys.argv[1])
"""


def _plan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([SHEAF, "plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", *args],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False)


def _saying(tmp: Path, words: str, **dagman: str) -> None:
    """One job on condorpool that prints ``words`` and exits 0, with ``dagman`` profiles."""
    says = tmp / "says"
    says.write_text(SAYS)
    says.chmod(0o755)
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp / "sites.yml"))
    tr = Transformation("says", site="condorpool", pfn=str(says))
    TransformationCatalog().add_transformations(tr).write(str(tmp / "transformations.yml"))
    job = Job(tr, _id="talk").add_args(words)
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
