"""sheaf-cleanup and sheaf-register as real processes: what they remove and refuse, and registrations of
parallel jobs into one catalog that all land (lock + atomic rename)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sheaf.formats import read_replica_catalog


def _tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"sheaf.jobtools.{module}", *args], capture_output=True,
                          text=True, check=False, timeout=60)


def test_cleanup_removes_listed_files_tolerates_gone_ones_and_refuses_directories(tmp_path: Path) -> None:
    work = tmp_path / "scratch"
    work.mkdir()
    for name in ("a", "b", "c"):
        (work / name).write_text(name)
    (work / "link").symlink_to(tmp_path / "elsewhere")
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([str(work / "c"), str(work / "never")]))
    done = _tool("cleanup", "--list", str(listed), "--", str(work / "a"), str(work / "link"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["b"]
    assert _tool("cleanup", "--", str(work / "b")).returncode == 0
    assert _tool("cleanup", "--rmdir", str(work)).returncode == 0 and not work.exists()
    (tmp_path / "d").mkdir()
    refused = _tool("cleanup", "--", str(tmp_path / "d"))
    assert refused.returncode == 1 and "directory" in refused.stderr and (tmp_path / "d").exists()
    relative = _tool("cleanup", "--", "relative/path")
    assert relative.returncode == 2 and "Traceback" not in relative.stderr
    listed.write_text("{not json")
    bad = _tool("cleanup", "--list", str(listed))
    assert bad.returncode == 2 and "list.json" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("name", ["out.yml", "out.rc"])
def test_parallel_registrations_all_land(tmp_path: Path, name: str) -> None:
    catalog = tmp_path / name
    lists = []
    for k in range(6):
        path = tmp_path / f"r{k}.json"
        path.write_text(json.dumps([{"lfn": f"f{k}.{i}", "pfn": f"file:///o/f{k}.{i}", "site": "local"}
                                    for i in range(20)]))
        lists.append(path)
    kind = "yaml" if name.endswith(".yml") else "file"
    procs = [subprocess.Popen([sys.executable, "-m", "sheaf.jobtools.register", "--format", kind,
                               str(catalog), str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for path in lists]
    assert [p.wait(60) for p in procs] == [0] * 6
    rc = read_replica_catalog(catalog)
    assert sorted(r.lfn for r in rc) == sorted(f"f{k}.{i}" for k in range(6) for i in range(20))
    again = _tool("register", "--format", kind, str(catalog), str(lists[0]))  # a retried job: no duplicate
    assert again.returncode == 0 and len(list(read_replica_catalog(catalog))) == 120
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


@pytest.mark.parametrize("name", ["out.yml", "out.rc"])
def test_a_files_metadata_is_registered_with_it(tmp_path: Path, name: str) -> None:
    """As Pegasus registers an output with its metadata: in the YAML catalog's metadata, in the text
    format's key="value" attributes -- both read back the same."""
    catalog = tmp_path / name
    listed = tmp_path / "r.json"
    listed.write_text(json.dumps([{"lfn": "f.b", "pfn": "file:///o/f.b", "site": "local",
                                   "metadata": {"color": "red", "note": "a b=c"}},
                                  {"lfn": "f.c", "pfn": "file:///o/f.c", "site": "local"}]))
    kind = "yaml" if name.endswith(".yml") else "file"
    done = _tool("register", "--format", kind, str(catalog), str(listed))
    assert done.returncode == 0, done.stderr
    replicas = {r.lfn: r for r in read_replica_catalog(catalog)}
    assert dict(replicas["f.b"].metadata) == {"color": "red", "note": "a b=c"}
    assert not replicas["f.c"].metadata
    listed.write_text(json.dumps([{"lfn": "x", "pfn": "file:///x", "site": "local", "metadata": {"n": 1}}]))
    done = _tool("register", str(catalog), str(listed))
    assert done.returncode == 2 and "metadata is a JSON object of strings" in done.stderr


def test_register_bad_input_is_one_message(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps([{"lfn": "x"}]))
    done = _tool("register", str(tmp_path / "c.yml"), str(path))
    assert done.returncode == 2 and "lfn, pfn, site" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "c.yml").exists()
