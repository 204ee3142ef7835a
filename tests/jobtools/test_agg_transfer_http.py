"""``sheaf-transfer`` over file:// and HTTP against a real server on 127.0.0.1: resume, retries, replica
fall-through, checksums, PUT, links, roots, parallel transfers, and the exit codes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from transfer_servers import FaultyHTTP, entry, run_transfer, tool

DATA = bytes(range(256)) * 4096  # 1 MiB


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_get_resumes_a_dropped_connection_with_a_range(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.files["/f.a"] = DATA
    http_server.faults.drop_after["/f.a"] = 300_000
    dest = tmp_path / "scratch" / "f.a"
    done = run_transfer(tmp_path, [entry("f.a", [f"{http_server.url}/f.a"], f"file://{dest}")],
                        "--root", str(tmp_path / "scratch"))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == DATA
    assert [r for _, _, r in http_server.faults.log] == [None, "bytes=300000-"]
    assert "attempt 1/3" in done.stderr and "300000 of 1048576 bytes" in done.stderr
    assert os.listdir(dest.parent) == ["f.a"]  # no part file left


def test_a_file_changed_between_attempts_is_read_whole(tmp_path: Path, http_server: FaultyHTTP) -> None:
    """Without If-Range the resume spliced the old file's first 300000 bytes onto the new one's rest."""
    new = DATA[::-1]
    http_server.files["/f.a"] = DATA
    http_server.faults.drop_after["/f.a"] = 300_000
    http_server.faults.replace_after_drop["/f.a"] = new
    dest = tmp_path / "f.a"
    done = run_transfer(tmp_path, [entry("f.a", [f"{http_server.url}/f.a"], f"file://{dest}")],
                        "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == new


def test_a_trickling_server_is_a_failed_attempt(tmp_path: Path, http_server: FaultyHTTP) -> None:
    """Each byte came within the per-read timeout, so a 20 bytes/s server held the job for ever."""
    http_server.files["/slow"] = DATA[:2000]
    http_server.faults.trickle.add("/slow")
    done = run_transfer(tmp_path, [entry("f", [f"{http_server.url}/slow"], f"file://{tmp_path}/f")],
                        "--root", str(tmp_path), "--timeout", "0.5", "--attempts", "1")
    assert done.returncode == 1
    assert "attempt 1/1: slower than 1024 bytes/s for 0.5 s" in done.stderr


def test_a_password_in_a_url_is_basic_auth_and_never_shown(tmp_path: Path, http_server: FaultyHTTP) -> None:
    """``user:pass@`` went to the resolver as part of the host name, and the password into every message."""
    http_server.files["/private"] = b"secret data"
    http_server.faults.auth["/private"] = "Basic " + base64.b64encode(b"me:p@ss w").decode()
    base = http_server.url.replace("http://", "http://me:p%40ss%20w@")
    dest = tmp_path / "root" / "f"
    done = run_transfer(tmp_path, [entry("f", [f"{base}/missing", f"{base}/private"], f"file://{dest}")],
                        "--root", str(tmp_path / "root"))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == b"secret data"
    assert "me:***@127.0.0.1" in done.stderr and "p%40ss" not in done.stderr


def test_a_server_ignoring_ranges_is_read_again_from_the_start(tmp_path: Path,
                                                               http_server: FaultyHTTP) -> None:
    http_server.files["/f.a"] = DATA
    http_server.faults.drop_after["/f.a"] = 1000
    http_server.faults.no_ranges.add("/f.a")
    dest = tmp_path / "f.a"
    done = run_transfer(tmp_path, [entry("f.a", [f"{http_server.url}/f.a"], f"file://{dest}")],
                        "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == DATA


def test_503s_are_retried_then_a_dead_replica_falls_through(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.files["/good"] = b"good"
    http_server.faults.fail_first["/good"] = 2
    dest = tmp_path / "f.a"
    done = run_transfer(tmp_path, [entry("f.a", [f"{http_server.url}/missing", f"{http_server.url}/good"],
                                         f"file://{dest}")], "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == b"good"
    paths = [p for _, p, _ in http_server.faults.log]
    assert paths == ["/missing", "/good", "/good", "/good"]  # a 404 is final, a 503 is retried
    assert f"{http_server.url}/missing attempt 1/3: HTTP 404" in done.stderr


def test_every_failure_is_named_with_url_attempt_and_cause(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.faults.fail_first["/x"] = 99
    dest = tmp_path / "f.a"
    dead = "http://127.0.0.1:9/nothing"  # the discard port: nothing listens
    done = run_transfer(tmp_path, [entry("f.a", [f"{http_server.url}/x", dead], f"file://{dest}")],
                        "--root", str(tmp_path), "--attempts", "2")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert f"{http_server.url}/x attempt 2/2: HTTP 503" in last and f"{dead} attempt 2/2:" in last
    assert "Connection refused" in last and "Traceback" not in done.stderr
    assert not dest.exists() and os.listdir(tmp_path) == ["transfers.json"]


def test_a_checksum_mismatch_falls_through_to_the_next_replica(tmp_path: Path,
                                                              http_server: FaultyHTTP) -> None:
    http_server.files["/bad"] = b"corrupted"
    good = tmp_path / "replica"
    good.write_bytes(b"payload")
    dest = tmp_path / "scratch" / "f.a"
    done = run_transfer(tmp_path, [entry("f.a", [f"{http_server.url}/bad", f"file://{good}"], f"file://{dest}",
                                         checksum={"sha256": _sha(b"payload")})],
                        "--root", str(tmp_path / "scratch"))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == b"payload"
    assert f"checksum mismatch for f.a: expected sha256 {_sha(b'payload')}, got {_sha(b'corrupted')}" \
        in done.stderr


def test_webdav_reads_and_writes_through_http(tmp_path: Path, http_server: FaultyHTTP) -> None:
    src = tmp_path / "out.dat"
    src.write_bytes(DATA)
    dav = http_server.url.replace("http://", "webdav://")
    done = run_transfer(tmp_path, [entry("out.dat", [f"file://{src}"], f"{dav}/store/out.dat",
                                         linkage="output")])
    assert done.returncode == 0, done.stderr
    assert http_server.files["/store/out.dat"] == DATA
    dest = tmp_path / "back" / "out.dat"
    done = run_transfer(tmp_path, [entry("out.dat", [f"{dav}/store/out.dat"], f"file://{dest}")],
                        "--root", str(tmp_path / "back"))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == DATA


def test_a_webdav_put_makes_missing_collections(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.collections = {"/dav"}
    src = tmp_path / "out.dat"
    src.write_bytes(b"result")
    dav = http_server.url.replace("http://", "webdav://")
    done = run_transfer(tmp_path, [entry("out.dat", [f"file://{src}"], f"{dav}/dav/run1/a/out.dat",
                                         linkage="output")])
    assert done.returncode == 0, done.stderr
    assert http_server.files["/dav/run1/a/out.dat"] == b"result"
    assert [(m, p) for m, p, _ in http_server.faults.log] == [
        ("PUT", "/dav/run1/a/out.dat"), ("MKCOL", "/dav/"), ("MKCOL", "/dav/run1/"),
        ("MKCOL", "/dav/run1/a/"), ("PUT", "/dav/run1/a/out.dat")]


def test_http_to_http_goes_through_a_temporary_file(tmp_path: Path, http_server: FaultyHTTP) -> None:
    http_server.files["/a"] = b"inter-site"
    done = run_transfer(tmp_path, [entry("a", [f"{http_server.url}/a"], f"{http_server.url}/b",
                                         linkage="inter")])
    assert done.returncode == 0, done.stderr
    assert http_server.files["/b"] == b"inter-site"
    assert os.listdir(tmp_path) == ["transfers.json"]


@pytest.mark.parametrize("threads", [1, 3])
def test_threads_bound_the_transfers_at_once(tmp_path: Path, http_server: FaultyHTTP, threads: int) -> None:
    entries = []
    for n in range(6):
        http_server.files[f"/f{n}"] = b"x"
        http_server.faults.delay[f"/f{n}"] = 0.3
        entries.append(entry(f"f{n}", [f"{http_server.url}/f{n}"], f"file://{tmp_path}/r/f{n}"))
    done = run_transfer(tmp_path, entries, "--root", str(tmp_path / "r"), "--threads", str(threads))
    assert done.returncode == 0, done.stderr
    assert http_server.faults.most_busy == threads


def test_link_executable_and_parallel_local_copies(tmp_path: Path) -> None:
    srcs = []
    for n in range(20):
        srcs.append(tmp_path / f"in{n}")
        srcs[-1].write_text(str(n))
    root = tmp_path / "root"
    entries = [entry(f"f{n}", [f"file://{s}"], f"file://{root}/d/f{n}") for n, s in enumerate(srcs)]
    entries.append(entry("tool", [f"file://{srcs[0]}"], f"file://{root}/bin/tool", executable=True))
    done = run_transfer(tmp_path, entries, "--root", str(root), "--link", "--threads", "4")
    assert done.returncode == 0, done.stderr
    assert all(os.readlink(root / "d" / f"f{n}") == str(s) for n, s in enumerate(srcs))
    tool = root / "bin" / "tool"
    assert not tool.is_symlink() and os.access(tool, os.X_OK) and tool.read_text() == "0"


def test_a_destination_outside_every_root_moves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_text("x")
    root = tmp_path / "root"
    entries = [entry("a", [f"file://{src}"], f"file://{root}/a"),
               entry("b", [f"file://{src}"], f"file://{root}/../escape")]
    done = run_transfer(tmp_path, entries, "--root", str(root))
    assert done.returncode == 2, done.stderr
    assert "outside every --root" in done.stderr and len(done.stderr.splitlines()) == 1
    assert not root.exists()


def test_unsupported_schemes_say_how_to_make_the_file_available(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_text("x")
    dest = tmp_path / "root" / "a"
    only = run_transfer(tmp_path, [entry("a", ["gsiftp://host/a"], f"file://{dest}")], "--root",
                        str(tmp_path / "root"))
    assert only.returncode == 2 and "gsiftp:// is not supported" in only.stderr
    assert "globus-url-copy" in only.stderr
    done = run_transfer(tmp_path, [entry("a", ["irods://zone/a", f"file://{src}"], f"file://{dest}")],
                        "--root", str(tmp_path / "root"))
    assert done.returncode == 0, done.stderr
    assert "irods:// is not supported" in done.stderr and dest.read_text() == "x"


def test_integrity_records_are_written_and_checked(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"v1")
    meta, root = tmp_path / "meta", tmp_path / "root"
    args = ("--root", str(root), "--integrity", "full", "--meta-dir", str(meta))
    done = run_transfer(tmp_path, [entry("f.a", [f"file://{src}"], f"file://{root}/f.a")], *args)
    assert done.returncode == 0, done.stderr
    (record,) = meta.iterdir()
    assert json.loads(record.read_text()) == {"lfn": "f.a", "sha256": _sha(b"v1"), "source": f"file://{src}"}
    src.write_bytes(b"v2")  # the file changed after it was recorded
    done = run_transfer(tmp_path, [entry("f.a", [f"file://{src}"], f"file://{root}/again")], *args)
    assert done.returncode == 1
    assert f"integrity check failed for f.a (read from file://{src}): " in done.stderr
    assert f"its sha256 is {_sha(b'v2')}, the record says {_sha(b'v1')} (delivered from file://{src})" \
        in done.stderr


def test_nosymlink_records_no_linked_file(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"v1")
    meta, root = tmp_path / "meta", tmp_path / "root"
    done = run_transfer(tmp_path, [entry("f.a", [f"file://{src}"], f"file://{root}/f.a")], "--root",
                        str(root), "--link", "--integrity", "nosymlink", "--meta-dir", str(meta))
    assert done.returncode == 0, done.stderr
    assert (root / "f.a").is_symlink() and not meta.exists()


def test_pairs_input_never_delivers_a_truncated_download(tmp_path: Path, http_server: FaultyHTTP) -> None:
    """The first slice's GET took a dropped connection for the end of the file: 300000 of 1048576 bytes
    delivered, exit 0.  The pairs input now runs through the same resuming GET."""
    http_server.files["/f.a"] = DATA
    http_server.faults.drop_after["/f.a"] = 300_000
    pairs = tmp_path / "pairs.in"
    pairs.write_text(f"{http_server.url}/f.a {tmp_path}/root/f.a\n")
    argv = [tool("sheaf-transfer"), "--backoff", "0", "--root", str(tmp_path / "root"), str(pairs)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "root" / "f.a").read_bytes() == DATA
