"""Hostile transfer lists and options found by trying them (each once a traceback, a wrong
attempt named, or a valid file that could not be delivered): now one message and exit 2 for bad
input, or a failed attempt with exit 1 -- never a traceback, never an option smuggled to ssh."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from transfer_servers import entry, run_transfer, tool


@pytest.mark.parametrize("dest", ["r/a%00b", "r/\ud800"])
def test_a_destination_no_file_can_have_is_bad_input(tmp_path: Path, dest: str) -> None:
    (tmp_path / "src").write_text("x")
    done = run_transfer(tmp_path, [entry("a", [f"file://{tmp_path}/src"], f"file://{tmp_path}/{dest}")],
                        "--root", str(tmp_path / "r"))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_an_lfn_with_a_lone_surrogate_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "src").write_text("x")
    done = run_transfer(tmp_path, [entry("\ud800", [f"file://{tmp_path}/src"], f"file://{tmp_path}/r/a")],
                        "--root", str(tmp_path / "r"), "--integrity", "full", "--meta-dir",
                        str(tmp_path / "m"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("option", [("--timeout", "nan"), ("--timeout", "inf"), ("--backoff", "nan")])
def test_non_finite_waits_are_usage_errors(tmp_path: Path, option: tuple[str, str]) -> None:
    done = run_transfer(tmp_path, [entry("a", ["http://127.0.0.1:9/x"], f"file://{tmp_path}/r/a")],
                        "--root", str(tmp_path / "r"), *option)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("url", ["http://[::1/x", "webdav://[zz]/x", "s3://bucket/key"])
def test_a_malformed_remote_url_is_a_failed_attempt(tmp_path: Path, url: str) -> None:
    env = {**os.environ, "S3_ENDPOINT": "http://[bad"}
    done = run_transfer(tmp_path, [entry("a", [url], f"file://{tmp_path}/r/a")], "--root",
                        str(tmp_path / "r"), env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{url} attempt 1/3" in done.stderr and "attempt 2/3" not in done.stderr


@pytest.mark.parametrize("scheme", ["scp", "sftp"])
def test_an_ssh_host_is_never_an_option(tmp_path: Path, scheme: str) -> None:
    marker = tmp_path / "ran"
    url = f"{scheme}://-oProxyCommand=touch%20{marker}/x"
    done = run_transfer(tmp_path, [entry("a", [url], f"file://{tmp_path}/r/a")], "--root",
                        str(tmp_path / "r"))
    assert done.returncode == 1 and "the host starts with '-'" in done.stderr, done.stderr
    assert "attempt 2/3" not in done.stderr
    assert not marker.exists()


def test_a_put_failure_names_the_destination(tmp_path: Path) -> None:
    (tmp_path / "src").write_text("x")
    done = run_transfer(tmp_path, [entry("a", [f"file://{tmp_path}/src"], "http://127.0.0.1:9/x")],
                        "--attempts", "1")
    assert done.returncode == 1
    assert "writing http://127.0.0.1:9/x: " in done.stderr, done.stderr


def test_a_long_valid_name_is_delivered(tmp_path: Path) -> None:
    """The part file's name was the destination's plus ~40 characters: past 255 bytes for a valid name."""
    (tmp_path / "src").write_text("x")
    name = "a" * 250
    done = run_transfer(tmp_path, [entry("a", [f"file://{tmp_path}/src"], f"file://{tmp_path}/r/{name}")],
                        "--root", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / name).read_text() == "x"


def test_a_bad_manifest_wait_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"workdir_parent": str(tmp_path), "timeout": -1}))
    done = subprocess.run([tool("sheaf-lite"), str(path), "--", "true"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
