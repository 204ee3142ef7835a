"""``sheaf-transfer`` over scp://, sftp:// and s3:// against real servers started on 127.0.0.1 (an sshd
with its own keys, moto's S3 server), and a clear error where the client is missing."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from transfer_servers import S3, Sshd, entry, run_transfer

DATA = os.urandom(300_000)


def _ssh_url(sshd: Sshd, scheme: str, path: Path) -> str:
    return f"{scheme}://{getpass.getuser()}@127.0.0.1:{sshd.port}{path}"


def test_scp_and_sftp_get(tmp_path: Path, sshd: Sshd) -> None:
    remote = tmp_path / "remote" / "data file"
    remote.parent.mkdir()
    remote.write_bytes(DATA)
    root = tmp_path / "root"
    entries = [entry(scheme, [_ssh_url(sshd, scheme, remote)], f"file://{root}/{scheme}")
               for scheme in ("scp", "sftp")]
    done = run_transfer(tmp_path, entries, "--root", str(root), env=sshd.env())
    assert done.returncode == 0, done.stderr
    assert (root / "scp").read_bytes() == DATA and (root / "sftp").read_bytes() == DATA


def test_scp_put_makes_parents_and_renames(tmp_path: Path, sshd: Sshd) -> None:
    src = tmp_path / "out"
    src.write_bytes(DATA)
    target = tmp_path / "far" / "deep" / "out 1"
    done = run_transfer(tmp_path, [entry("out", [f"file://{src}"], _ssh_url(sshd, "scp", target),
                                         linkage="output")], env=sshd.env())
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == DATA and os.listdir(target.parent) == ["out 1"]


def test_a_missing_remote_file_is_final_and_falls_through(tmp_path: Path, sshd: Sshd) -> None:
    good = tmp_path / "good"
    good.write_bytes(b"ok")
    dest = tmp_path / "root" / "f"
    done = run_transfer(tmp_path, [entry("f", [_ssh_url(sshd, "sftp", tmp_path / "nope"), f"file://{good}"],
                                         f"file://{dest}")], "--root", str(tmp_path / "root"), env=sshd.env())
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == b"ok"
    assert "attempt 1/3: sftp:" in done.stderr and "attempt 2/3" not in done.stderr


def test_an_unreachable_ssh_host_is_retried_and_named(tmp_path: Path, sshd: Sshd) -> None:
    url = f"scp://127.0.0.1:9{tmp_path}/x"  # nothing listens on port 9
    done = run_transfer(tmp_path, [entry("x", [url], f"file://{tmp_path}/root/x")], "--root",
                        str(tmp_path / "root"), "--attempts", "2", env=sshd.env())
    assert done.returncode == 1
    assert f"{url} attempt 2/2: scp:" in done.stderr and "Connection refused" in done.stderr


def test_s3_put_then_get(tmp_path: Path, s3: S3) -> None:
    env = {**os.environ, "S3CFG": s3.config}
    src = tmp_path / "out"
    src.write_bytes(DATA)
    url = "s3://user@moto/bucket-a/run 1/out"
    done = run_transfer(tmp_path, [entry("out", [f"file://{src}"], url, linkage="output")], env=env)
    assert done.returncode == 0, done.stderr
    assert s3.client().get_object(Bucket="bucket-a", Key="run 1/out")["Body"].read() == DATA
    dest = tmp_path / "root" / "back"
    done = run_transfer(tmp_path, [entry("out", ["s3://user@moto/bucket-a/missing", url], f"file://{dest}")],
                        "--root", str(tmp_path / "root"), env=env)
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == DATA
    assert "s3://user@moto/bucket-a/missing attempt 1/3: S3 404" in done.stderr


def test_s3_credentials_others_may_read_are_refused(tmp_path: Path, s3: S3) -> None:
    loose = tmp_path / "s3cfg"
    loose.write_text(Path(s3.config).read_text())
    loose.chmod(0o644)
    done = run_transfer(tmp_path, [entry("x", ["s3://user@moto/bucket-a/x"], f"file://{tmp_path}/r/x")],
                        "--root", str(tmp_path / "r"), env={**os.environ, "S3CFG": str(loose)})
    assert done.returncode == 1 and "may be read by others (chmod 600 it)" in done.stderr


def test_s3_without_boto3_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "boto3").mkdir()
    (tmp_path / "boto3" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    done = run_transfer(tmp_path, [entry("x", ["s3://u@s/b/x"], f"file://{tmp_path}/r/x")], "--root",
                        str(tmp_path / "r"), env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1
    assert "s3:// needs boto3 in the job's Python (pip install boto3)" in done.stderr
    assert "Traceback" not in done.stderr
