"""The ctypes ``posix_spawn`` (``_libcspawn``, GIL released, chdir as a file action) against the
``os.posix_spawn`` path it replaces: what the child sees must be the same, and so must the errors."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sheaf.backends import _spawn
from sheaf.backends._libcspawn import AVAILABLE

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="glibc >= 2.29 posix_spawn_file_actions_addchdir_np")

# what a job can observe about how it was started (pids replaced by relations between them)
PROBE = r"""
import os, sys
status = open("/proc/self/status").read().splitlines()
print(sys.argv[1:])
print(os.getcwd())
print(sorted(os.environ.items()))
print(repr(sys.stdin.read()))
print(os.getsid(0) == os.getsid(os.getppid()), os.getpgid(0) == os.getpid())  # own group, our session
print([line for line in status if line.startswith(("SigBlk", "SigIgn", "Cpus_allowed_list"))])
print(sorted(os.listdir("/proc/self/fd")))
print("to-stderr", file=sys.stderr)
"""
Spawn = Callable[..., _spawn.Spawned]
PATHS = {"os": _spawn._spawn_os, "libc": _spawn._spawn_libc}


def _run(fn: Spawn, tmp: Path, name: str, argv: list[str], cwd: Path, *, same_file: bool = False,
         cpus: frozenset[int] | None = None) -> tuple[int, str, str]:
    out = f"{name}.out"  # relative: resolved in the job's directory
    err = out if same_file else f"{name}.err"
    path = f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"
    spawned = fn(argv, {"PATH": path, "X": "a b 'c' \"d\" é"}, str(cwd), out, err, cpus)
    _, status = os.waitpid(spawned.pid, 0)
    os.close(spawned.pidfd)
    return os.waitstatus_to_exitcode(status), (cwd / out).read_text(), (cwd / err).read_text()


def _both(tmp: Path, argv: list[str], **kw: object) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    results = []
    for label, fn in PATHS.items():
        cwd = tmp / label / "work dir"
        cwd.mkdir(parents=True)
        (cwd / "job.out").write_text("old content that must be truncated " * 100)
        results.append(_run(fn, tmp, "job", argv, cwd, **kw))  # type: ignore[arg-type]
    first, second = results
    return first, second


@pytest.mark.parametrize("same_file", [False, True])
def test_the_child_sees_the_same(tmp_path: Path, same_file: bool) -> None:
    argv = [sys.executable, "-S", "-c", PROBE, "one two", "", "'q'", '"dq"', "é"]
    by_os, by_libc = _both(tmp_path, argv, same_file=same_file)
    assert by_os[0] == by_libc[0] == 0
    assert by_os[1].replace("/os/", "/X/") == by_libc[1].replace("/libc/", "/X/")
    assert by_os[2].replace("/os/", "/X/") == by_libc[2].replace("/libc/", "/X/")
    assert "True True" in by_libc[1]
    assert "old content" not in by_libc[1]


def test_path_search_and_cpu_pinning_are_the_same(tmp_path: Path) -> None:
    cpus = frozenset({min(os.sched_getaffinity(0))})
    by_os, by_libc = _both(tmp_path, [os.path.basename(sys.executable), "-S", "-c", PROBE], cpus=cpus)
    assert by_os[1].replace("/os/", "/X/") == by_libc[1].replace("/libc/", "/X/")
    assert f"Cpus_allowed_list:\\t{min(cpus)}" in by_libc[1]
    assert os.sched_getaffinity(0) != cpus or len(os.sched_getaffinity(0)) == 1  # the caller's mask is back


@pytest.mark.parametrize("case", ["no executable", "not executable", "no directory", "unwritable output"])
def test_failures_are_the_same_error(tmp_path: Path, case: str) -> None:
    messages = []
    for label, fn in PATHS.items():
        base = tmp_path / label
        base.mkdir()
        (base / "script").write_text("#!/bin/sh\n")
        argv, cwd, out = [str(base / "script")], base, "job.out"
        if case == "no executable":
            argv = [str(base / "missing")]
        elif case == "no directory":
            cwd = base / "missing"
        elif case == "unwritable output":
            (base / "script").chmod(0o755)
            out = str(base / "missing" / "job.out")
        with pytest.raises(_spawn.SpawnError) as caught:
            fn(argv, {}, str(cwd), out, out, None)
        messages.append(str(caught.value).replace(f"/{label}", "/X"))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("fn", PATHS.values(), ids=PATHS.keys())
def test_bad_strings_are_refused_alike(tmp_path: Path, fn: Spawn) -> None:
    with pytest.raises(ValueError, match="null byte"):
        fn(["/bin/true", "a\0b"], {}, str(tmp_path), "o", "o", None)
    with pytest.raises(ValueError, match="environment variable name"):
        fn(["/bin/true"], {"A=B": "c"}, str(tmp_path), "o", "o", None)


@pytest.mark.parametrize("fn", PATHS.values(), ids=PATHS.keys())
def test_stdin_is_the_input_file_else_dev_null(tmp_path: Path, fn: Spawn) -> None:
    (tmp_path / "in.txt").write_text("from the input file\n")
    argv = [sys.executable, "-S", "-c", "import sys; sys.stdout.write(repr(sys.stdin.read()))"]
    for stdin, seen in ((str(tmp_path / "in.txt"), "'from the input file\\n'"), (os.devnull, "''")):
        spawned = fn(argv, {}, str(tmp_path), "o.txt", "o.txt", None, stdin)
        _, status = os.waitpid(spawned.pid, 0)
        os.close(spawned.pidfd)
        assert os.waitstatus_to_exitcode(status) == 0
        assert (tmp_path / "o.txt").read_text() == seen
    with pytest.raises(_spawn.SpawnError):  # a missing input file: the job cannot start
        fn(argv, {}, str(tmp_path), "o.txt", "o.txt", None, str(tmp_path / "missing"))
