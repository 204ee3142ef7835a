"""A Slurm site whose controller cannot be reached (``sbatch`` installed, no cluster answering): a
failed submission is retried as DAGMan retries one -- ``DAGMAN_MAX_SUBMIT_ATTEMPTS`` times (default 6)
with its back-off -- then the node fails with the scheduler's own message, not resubmitted forever."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).with_name("sheaf"))


@pytest.fixture
def nowhere(tmp_path: Path) -> Path:
    """A Slurm client configuration naming a controller on a port where nothing listens."""
    if shutil.which("sbatch") is None:
        pytest.skip("sbatch is not installed (scripts/system-deps.sh installs slurm-wlm as root)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free once closed: nothing listens there
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=nowhere\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={port}\n"
                    "AuthType=auth/none\nCredType=cred/none\nNodeName=localhost CPUs=1 State=UNKNOWN\n"
                    "PartitionName=debug Nodes=localhost Default=YES\nMessageTimeout=2\n")
    return conf


def test_submissions_stop_after_dagman_max_submit_attempts(tmp_path: Path, nowhere: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "a.sub").write_text("universe = vanilla\nexecutable = /bin/true\nqueue\n")
    (run / "wf.dag").write_text("CONFIG wf.config\nJOB A a.sub\n")
    (run / "wf.config").write_text("DAGMAN_MAX_SUBMIT_ATTEMPTS = 3\n")
    env = {**os.environ, "SLURM_CONF": str(nowhere), "SHEAF_EVENTS": "0"}
    done = subprocess.run([SHEAF, "run", str(run), "--backend", "slurm"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sbatch failed 3 time(s) (DAGMAN_MAX_SUBMIT_ATTEMPTS = 3)" in done.stdout
    assert "Unable to contact slurm controller" in done.stdout  # the scheduler's own words
    assert "DONE A" not in (run / "wf.dag.rescue001").read_text()
