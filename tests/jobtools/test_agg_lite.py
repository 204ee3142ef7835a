"""``sheaf-lite``, the nonsharedfs job wrapper, with real processes: inputs pulled into a fresh job
directory (over HTTP and file://), the job run there, outputs recorded and pushed, the directory
removed; and each failure -- a corrupted input, a failing job, a missing output, a bad manifest."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from transfer_servers import FaultyHTTP, entry, tool

# The job: reads f.a, writes f.b (its upper-cased content) and prints where it ran.
JOB = [sys.executable, "-c", ("import os; d = open('f.a').read(); open('f.b', 'w').write(d.upper()); "
                             "print('cwd', os.getcwd())")]


def _lite(tmp: Path, manifest: dict[str, Any], argv: list[str]) -> subprocess.CompletedProcess[str]:
    path = tmp / "manifest.json"
    path.write_text(json.dumps({"workdir_parent": str(tmp / "local"), "backoff": 0.01, **manifest}))
    (tmp / "local").mkdir(exist_ok=True)
    return subprocess.run([tool("sheaf-lite"), str(path), "--", *argv], capture_output=True, text=True,
                          timeout=120, check=False)


def _manifest(server: FaultyHTTP, staging: Path, **extra: Any) -> dict[str, Any]:
    return {"inputs": [entry("f.a", [f"{server.url}/f.a"], "file:f.a")],
            "outputs": [entry("f.b", ["file:f.b"], f"file://{staging}/f.b", linkage="output")], **extra}


def test_a_job_runs_in_a_fresh_directory_between_its_transfers(tmp_path: Path,
                                                                http_server: FaultyHTTP) -> None:
    http_server.files["/f.a"] = b"hello"
    staging, meta = tmp_path / "staging", tmp_path / "meta"
    done = _lite(tmp_path, _manifest(http_server, staging, integrity="full", meta_dir=str(meta)), JOB)
    assert done.returncode == 0, done.stderr
    assert (staging / "f.b").read_text() == "HELLO"
    workdir = done.stdout.split("cwd ", 1)[1].strip()
    assert os.path.dirname(workdir) == str(tmp_path / "local") and not os.path.exists(workdir)
    records = {json.loads(p.read_text())["lfn"]: json.loads(p.read_text()) for p in meta.iterdir()}
    assert records["f.b"]["sha256"] == hashlib.sha256(b"HELLO").hexdigest()
    assert records["f.a"] == {"lfn": "f.a", "sha256": hashlib.sha256(b"hello").hexdigest(),
                              "source": f"{http_server.url}/f.a"}


def test_a_corrupted_input_is_caught_before_the_job_runs(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.files["/f.a"] = b"hellO"
    manifest = _manifest(http_server, tmp_path / "staging")
    manifest["inputs"][0]["checksum"] = {"sha256": hashlib.sha256(b"hello").hexdigest()}
    done = _lite(tmp_path, manifest, JOB)
    assert done.returncode == 1
    assert "checksum mismatch for f.a" in done.stderr and "cwd" not in done.stdout
    assert os.listdir(tmp_path / "local") == [] and not (tmp_path / "staging").exists()


def test_a_recorded_checksum_is_checked(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.files["/f.a"] = b"changed"
    meta = tmp_path / "meta"
    meta.mkdir()
    name = hashlib.sha256(b"f.a").hexdigest()
    (meta / f"{name}.json").write_text(json.dumps({"lfn": "f.a", "sha256": "0" * 64, "source": "stage-in"}))
    done = _lite(tmp_path, _manifest(http_server, tmp_path / "staging", integrity="nosymlink",
                                     meta_dir=str(meta)), JOB)
    assert done.returncode == 1
    assert f"the record says {'0' * 64} (delivered from stage-in)" in done.stderr


def test_the_jobs_status_is_the_wrappers_and_outputs_stay_put(tmp_path: Path,
                                                              http_server: FaultyHTTP) -> None:
    http_server.files["/f.a"] = b"x"
    done = _lite(tmp_path, _manifest(http_server, tmp_path / "staging"),
                 [sys.executable, "-c", "open('f.b', 'w').write('partial'); raise SystemExit(7)"])
    assert done.returncode == 7
    assert not (tmp_path / "staging").exists() and os.listdir(tmp_path / "local") == []


def test_a_missing_output_fails_naming_it(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.files["/f.a"] = b"x"
    done = _lite(tmp_path, _manifest(http_server, tmp_path / "staging"), [sys.executable, "-c", "pass"])
    assert done.returncode == 1
    assert "output transfer(s) failed" in done.stderr and "f.b: every source failed: file:f.b" in done.stderr


def test_an_input_cannot_land_outside_the_job_directory(tmp_path: Path, http_server: FaultyHTTP) -> None:
    manifest = _manifest(http_server, tmp_path / "staging")
    manifest["inputs"][0]["dest_urls"][0]["url"] = "file:../escape"
    done = _lite(tmp_path, manifest, JOB)
    assert done.returncode == 2 and "outside every --root" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and os.listdir(tmp_path / "local") == []


def test_bad_manifests_are_one_message_and_exit_2(tmp_path: Path) -> None:
    for manifest in ({"inputs": {}}, {"integrity": "some"}, {"threads": 0}, {"keep_workdir": "yes"},
                     {"streams": {"stdout": "../escape"}}, {"streams": {"stdout": "/abs"}},
                     {"streams": {"stdlog": "x"}}, {"streams": []}):
        done = _lite(tmp_path, manifest, ["true"])
        assert done.returncode == 2, (manifest, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    (tmp_path / "manifest.json").write_text("{")
    done = subprocess.run([tool("sheaf-lite"), str(tmp_path / "manifest.json"), "--", "true"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "manifest.json:1:2: not JSON" in done.stderr


def test_an_executable_that_cannot_start_is_127(tmp_path: Path) -> None:
    done = _lite(tmp_path, {}, [str(tmp_path / "no-such-program")])
    assert done.returncode == 127 and "cannot start" in done.stderr
    # a stream file in a directory the job directory lacks: the file is named, not the program
    done = _lite(tmp_path, {"streams": {"stdout": "out/o.txt"}}, ["/bin/true"])
    assert done.returncode == 127 and "cannot open the stdout file out/o.txt of /bin/true" in done.stderr


def test_sigterm_reaches_the_job_and_the_directory_goes(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    (tmp_path / "local").mkdir()
    path.write_text(json.dumps({"workdir_parent": str(tmp_path / "local")}))
    script = ("import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(9)); "
              "open('started', 'w').close(); time.sleep(60)")
    process = subprocess.Popen([tool("sheaf-lite"), str(path), "--", sys.executable, "-c", script])
    deadline = time.monotonic() + 30
    while not any((tmp_path / "local").glob("*/started")) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 9
    assert os.listdir(tmp_path / "local") == []


def test_a_staged_executable_runs_from_the_job_directory(tmp_path: Path) -> None:
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho ran > f.b\n")
    script.chmod(0o644)  # not executable where it is kept: staging makes it so
    staging = tmp_path / "staging"
    manifest = {"inputs": [entry("tool.sh", [f"file://{script}"], "file:bin/tool.sh", executable=True)],
                "outputs": [entry("f.b", ["file:f.b"], f"file://{staging}/f.b", linkage="output")]}
    done = _lite(tmp_path, manifest, ["./bin/tool.sh"])
    assert done.returncode == 0, done.stderr
    assert (staging / "f.b").read_text() == "ran\n"


@pytest.mark.parametrize(("condor_scratch", "tmpdir", "where"), [
    (True, True, "condor"), (False, True, "tmpdir"), (False, False, "/tmp")])
def test_a_local_scratch_missing_on_the_worker_falls_back_as_pegasuslite_does(
        tmp_path: Path, condor_scratch: bool, tmpdir: bool, where: str) -> None:
    """A site's localScratch that this worker lacks is skipped for ``$_CONDOR_SCRATCH_DIR``, then
    ``$TMPDIR``, then ``/tmp``; the job runs, and says where."""
    env = {k: v for k, v in os.environ.items() if k not in ("_CONDOR_SCRATCH_DIR", "TMPDIR")}
    for name, wanted, directory in (("_CONDOR_SCRATCH_DIR", condor_scratch, tmp_path / "condor"),
                                    ("TMPDIR", tmpdir, tmp_path / "tmpdir")):
        if wanted:
            directory.mkdir()
            env[name] = str(directory)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"workdir_parent": str(tmp_path / "no" / "such" / "scratch")}))
    script = "import os; print(os.path.dirname(os.getcwd()))"
    done = subprocess.run([tool("sheaf-lite"), str(manifest), "--", sys.executable, "-c", script],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    expected = {"condor": tmp_path / "condor", "tmpdir": tmp_path / "tmpdir", "/tmp": Path("/tmp")}[where]
    assert Path(done.stdout.strip()) == expected
    assert "is not a writable directory here" in done.stderr
