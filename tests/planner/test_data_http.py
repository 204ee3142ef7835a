"""A 3-level, 50-job workflow whose inputs are served over HTTP by a real server on 127.0.0.1, planned
in each data configuration and run: outputs delivered and registered, scratch left empty, re-plan
reuses them.  The runs need the JSON-reading sheaf-transfer/sheaf-lite (they skip until it lands)."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_inputs import catalogs, job_types, plan_dir, sheaf
from Pegasus.api import File, Job, ReplicaCatalog, Workflow

from plan_lists import data_lists
from sheaf.formats import read_replica_catalog


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[assignment,method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def _workflow(work: Path, url: str, root: Path) -> None:
    """20 jobs read in_i (over HTTP) -> a_i; 20 jobs a_i -> b_i; 10 jobs b_2k, b_2k+1 -> c_k (kept)."""
    rc = ReplicaCatalog()
    wf = Workflow("fifty")
    for i in range(20):
        (root / f"in{i}").write_text(f"in{i}\n")
        rc.add_replica("web", f"in{i}", f"{url}/in{i}")
        for step, source in (("a", "in"), ("b", "a")):
            job = Job("tool", _id=f"{step}{i}").add_args("-i", f"{source}{i}", "-o", f"{step}{i}")
            wf.add_jobs(job.add_inputs(File(f"{source}{i}")).add_outputs(
                File(f"{step}{i}"), stage_out=False, register_replica=False))
    for k in range(10):
        wf.add_jobs(Job("tool", _id=f"c{k}").add_args("-i", f"b{2 * k}", f"b{2 * k + 1}", "-o", f"c{k}")
                    .add_inputs(File(f"b{2 * k}"), File(f"b{2 * k + 1}")).add_outputs(File(f"c{k}")))
    rc.write(str(work / "replicas.yml"))
    wf.write(str(work / "workflow.yml"))


@pytest.mark.parametrize("config", ["sharedfs", "condorio", "nonsharedfs"])
def test_fifty_jobs_with_http_inputs(tmp_path: Path, served: tuple[str, Path], config: str) -> None:
    url, root = served
    work = tmp_path / "work"
    work.mkdir()
    catalogs(work)
    _workflow(work, url, root)
    args = ("plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool", "--output-dir",
            str(work / "out"), "-D", f"pegasus.data.configuration={config}")
    directory = plan_dir(sheaf(work, *args))
    types = job_types(directory)
    assert types["compute"] == 50 and types["stage_in"] == 2 and types["stage_out"] == 1  # ceil(20/10)
    listed = "".join(data_lists(directory, "stage_in"))
    assert f'"url": "{url}/in0"' in listed
    from sheaf.jobtools import transfer

    if not hasattr(transfer, "load_transfer_list"):
        pytest.skip("needs sheaf-transfer JSON lists")
    done = sheaf(directory, "run", str(directory))
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(os.listdir(work / "out")) == sorted(f"c{k}" for k in range(10))
    assert (work / "out" / "c3").read_text() == "in6\na6\nb6\nin7\na7\nb7\nc3\n"
    scratch = directory / "scratch"
    assert [name for _, _, names in os.walk(scratch) for name in names] == []
    (registered,) = directory.glob("*.replicas.yml")  # the submit directory's output catalog
    assert {r.lfn for r in read_replica_catalog(registered)} >= {f"c{k}" for k in range(10)}
    again = sheaf(work, *args, "--rc", str(registered))
    assert "data reuse: 50 job(s) not planned" in again.stderr
