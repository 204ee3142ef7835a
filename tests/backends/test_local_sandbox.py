"""HTCondor file transfer in the local backend: a sandbox per attempt, inputs in, outputs back, removed."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from sheaf.backends import MachineLimits, Pool
from sheaf.backends.local import LocalBackend
from sheaf.engine import Held
from sheaf.engine._backend import FileTransfer

from .contract import collect, exited, make_launch

#: reads in.txt from its working directory, writes out.txt and extra.txt there, records where it ran
JOB = ("import json, os; text = open('in.txt').read(); open('out.txt', 'w').write(text.upper()); "
       "open('extra.txt', 'w').write('x'); json.dump(os.getcwd(), open(os.environ['WHERE'], 'w'))")


def _backend(tmp_path: Path) -> LocalBackend:
    pool = Pool(f"EXECUTE = {tmp_path / 'execute'}\n")
    (tmp_path / "execute").mkdir(exist_ok=True)
    return LocalBackend(pool, limits=MachineLimits(pool.config, path=tmp_path / "limits.sqlite"))


def _launch(tmp_path: Path, name: str, transfer: FileTransfer, code: str = JOB):  # type: ignore[no-untyped-def]
    iwd = tmp_path / "iwd"
    iwd.mkdir(exist_ok=True)
    launch = make_launch(tmp_path, name, [sys.executable, "-c", code],
                         env={**os.environ, "WHERE": str(tmp_path / f"{name}.where")})
    return dataclasses.replace(launch, cwd=str(iwd), transfer=transfer)


def test_inputs_in_named_outputs_back_sandbox_removed(tmp_path: Path) -> None:
    source = tmp_path / "data" / "in.txt"
    source.parent.mkdir()
    source.write_text("hello")
    with _backend(tmp_path) as backend:
        backend.submit(_launch(tmp_path, "a", FileTransfer((str(source),), ("out.txt",))))
        assert exited(collect(backend, 1)["a#0"]).exit_code == 0
    ran_in = json.loads((tmp_path / "a.where").read_text())
    assert ran_in.startswith(str(tmp_path / "execute")) and not os.path.exists(ran_in)  # sandbox gone
    assert sorted(os.listdir(tmp_path / "iwd")) == ["out.txt"]  # only what is named comes back
    assert (tmp_path / "iwd" / "out.txt").read_text() == "HELLO"
    assert os.listdir(tmp_path / "execute") == []


def test_without_an_output_list_every_new_file_comes_back(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("x")
    with _backend(tmp_path) as backend:
        backend.submit(_launch(tmp_path, "b", FileTransfer((str(source),), None)))
        assert exited(collect(backend, 1)["b#0"]).exit_code == 0
    assert sorted(os.listdir(tmp_path / "iwd")) == ["extra.txt", "out.txt"]  # not the unchanged input


def test_a_missing_input_holds_the_job_before_it_runs(tmp_path: Path) -> None:
    with _backend(tmp_path) as backend:
        backend.submit(_launch(tmp_path, "c", FileTransfer((str(tmp_path / "nowhere"),), ())))
        event = collect(backend, 1)["c#0"]
    assert isinstance(event, Held) and "transfer input files failure" in event.reason
    assert "nowhere" in event.reason and not (tmp_path / "c.where").exists()
    assert os.listdir(tmp_path / "execute") == []


def test_a_missing_output_after_success_holds_the_job(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("x")
    with _backend(tmp_path) as backend:
        backend.submit(_launch(tmp_path, "d", FileTransfer((str(source),), ("out.txt", "never.txt"))))
        event = collect(backend, 1)["d#0"]
    assert isinstance(event, Held) and "never.txt" in event.reason
    assert (tmp_path / "iwd" / "out.txt").read_text() == "X"  # what was there came back
    failing = "import sys; sys.exit(3)"
    with _backend(tmp_path) as backend:
        backend.submit(_launch(tmp_path, "e", FileTransfer((), ("out.txt",)), code=failing))
        assert exited(collect(backend, 1)["e#0"]).exit_code == 3  # the job's own failure is kept


#: reads deep/in.txt and writes deep/out/out.txt (Pegasus's deep LFNs)
DEEP = ("import os; text = open('deep/in.txt').read(); os.makedirs('deep/out', exist_ok=True); "
        "open('deep/out/out.txt', 'w').write(text.upper())")


def test_preserve_relative_paths_keeps_the_directories_of_relative_entries(tmp_path: Path) -> None:
    """HTCondor's ``preserve_relative_paths``: ``deep/in.txt`` is placed at that path in the sandbox
    and ``deep/out/out.txt`` comes back to that path under initialdir (its directories made)."""
    (tmp_path / "iwd" / "deep").mkdir(parents=True)
    (tmp_path / "iwd" / "deep" / "in.txt").write_text("deep")
    transfer = FileTransfer((str(tmp_path / "iwd" / "deep" / "in.txt"),), ("deep/out/out.txt",),
                            preserve_relative_paths=True, names=("deep/in.txt",))
    with _backend(tmp_path) as backend:
        backend.submit(_launch(tmp_path, "f", transfer, code=DEEP))
        assert exited(collect(backend, 1)["f#0"]).exit_code == 0
    assert (tmp_path / "iwd" / "deep" / "out" / "out.txt").read_text() == "DEEP"
    without = dataclasses.replace(transfer, preserve_relative_paths=False)
    with _backend(tmp_path) as backend:  # HTCondor's default: by base name, so the job cannot find it
        backend.submit(_launch(tmp_path, "g", without, code=DEEP))
        assert exited(collect(backend, 1)["g#0"]).exit_code == 1
