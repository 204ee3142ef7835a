"""The data tools read their list as a slice of a shared file (``--slice OFFSET:LENGTH``), as the jobs of a
plan do: every list of the plan packed into one ``<workflow>.lists``; a bad slice is one message, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sheaf.formats import read_replica_catalog


def _tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"sheaf.jobtools.{module}", *args], capture_output=True,
                          text=True, check=False, timeout=60)


def _packed(path: Path, *lists: object) -> list[str]:
    """``lists`` as JSON one after another in ``path``; the ``OFFSET:LENGTH`` of each."""
    spans, data = [], b""
    for value in lists:
        text = (json.dumps(value, ensure_ascii=False, indent=1) + "\n").encode()
        spans.append(f"{len(data)}:{len(text)}")
        data += text
    path.write_bytes(data)
    return spans


def _entry(source: Path, dest: Path) -> dict[str, object]:
    return {"type": "transfer", "lfn": dest.name, "src_urls": [{"site_label": "local", "url": f"file://{source}"}],
            "dest_urls": [{"site_label": "local", "url": f"file://{dest}"}]}


def test_transfer_moves_only_the_files_of_its_slice(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    for name in ("a", "b", "é"):
        (src / name).write_text(name)
    lists = tmp_path / "wf.lists"
    first, second = _packed(lists, [_entry(src / "a", out / "a")], [_entry(src / "b", out / "b"),
                                                                     _entry(src / "é", out / "é")])
    done = _tool("transfer", "--root", str(out), "--slice", second, str(lists))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["b", "é"]
    assert _tool("transfer", "--root", str(out), "--slice", first, str(lists)).returncode == 0
    assert (out / "a").read_text() == "a"


def test_cleanup_and_register_read_their_slices(tmp_path: Path) -> None:
    work = tmp_path / "scratch"
    work.mkdir()
    for name in ("a", "b"):
        (work / name).write_text(name)
    lists = tmp_path / "wf.lists"
    registered = [{"lfn": "f.b", "pfn": "file:///o/f.b", "site": "local"}]
    removed, records = _packed(lists, [str(work / "a")], registered)
    done = _tool("cleanup", "--slice", removed, "--list", str(lists))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["b"]
    catalog = tmp_path / "out.yml"
    done = _tool("register", "--slice", records, str(catalog), str(lists))
    assert done.returncode == 0, done.stderr
    assert [(r.lfn, r.pfns[0].pfn) for r in read_replica_catalog(catalog)] == [("f.b", "file:///o/f.b")]


def test_a_bad_slice_is_one_message_and_exit_2(tmp_path: Path) -> None:
    lists = tmp_path / "wf.lists"
    (span,) = _packed(lists, [])
    size = lists.stat().st_size
    for module, args in (("transfer", ("--root", str(tmp_path))), ("cleanup", ()), ("register", ())):
        tail = ("--list", str(lists)) if module == "cleanup" else (
            (str(tmp_path / "rc.yml"), str(lists)) if module == "register" else (str(lists),))
        for bad in ("1-2", "x:1", f"{size}:1", "0:1"):  # not OFFSET:LENGTH; past the end; not a whole list
            done = _tool(module, *args, "--slice", bad, *tail)
            assert done.returncode == 2, (module, bad, done.stderr)
            assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert _tool(module, *args, "--slice", span, *tail).returncode == 0
    alone = _tool("cleanup", "--slice", span, "--", str(tmp_path / "x"))
    assert alone.returncode == 2 and "--list" in alone.stderr
