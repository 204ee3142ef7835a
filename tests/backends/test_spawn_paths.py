"""The local backend's two spawn paths: the C spawner threads (``_cspawn`` through ``CSpawner``, where
the extension was built) against the portable one, ``os.posix_spawn`` in the caller's thread
(``sheaf.backends._spawn.spawn``): what the child sees must be the same, and so must the errors."""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sheaf.backends import _spawn
from sheaf.backends.local import _spawner

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
_REFUSALS = ("null byte", "environment variable name")  # ValueErrors of the Python path


def _spawn_c(argv: Sequence[str], env: Mapping[str, str], cwd: str, stdout: str, stderr: str,
             cpus: frozenset[int] | None = None, stdin: str = os.devnull) -> _spawn.Spawned:
    """One spawn through the C spawner thread, raising as the Python path raises."""
    module = _spawner._compiled()
    assert module is not None
    spawner: _spawner.CSpawner[None] = _spawner.CSpawner(time.time, module)
    try:
        spawner.submit(_spawner.SpawnRequest(None, argv, env, cwd, stdout, stderr, cpus, stdin))
        select.select([spawner.wakeup], [], [], 30.0)
        (result,) = spawner.results()
    finally:
        assert spawner.close() == []
    if result.spawned is None:
        assert result.error is not None
        raise (ValueError if result.error.endswith(_REFUSALS) else _spawn.SpawnError)(result.error)
    return result.spawned


PATHS: dict[str, Spawn] = {"os": _spawn.spawn}
if _spawner._compiled() is not None:
    PATHS["c"] = _spawn_c


def _run(fn: Spawn, tmp: Path, name: str, argv: list[str], cwd: Path, *, same_file: bool = False,
         cpus: frozenset[int] | None = None) -> tuple[int, str, str]:
    out = f"{name}.out"  # relative: resolved in the job's directory
    err = out if same_file else f"{name}.err"
    path = f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"
    spawned = fn(argv, {"PATH": path, "X": "a b 'c' \"d\" é"}, str(cwd), out, err, cpus)
    _, status = os.waitpid(spawned.pid, 0)
    os.close(spawned.pidfd)
    return os.waitstatus_to_exitcode(status), (cwd / out).read_text(), (cwd / err).read_text()


def _each(tmp: Path, argv: list[str], **kw: object) -> dict[str, tuple[int, str, str]]:
    """What the child wrote through each path, its directory's name replaced by X."""
    results = {}
    for label, fn in PATHS.items():
        cwd = tmp / label / "work dir"
        cwd.mkdir(parents=True)
        (cwd / "job.out").write_text("old content that must be truncated " * 100)
        code, out, err = _run(fn, tmp, "job", argv, cwd, **kw)  # type: ignore[arg-type]
        results[label] = (code, out.replace(f"/{label}/", "/X/"), err.replace(f"/{label}/", "/X/"))
    return results


@pytest.mark.parametrize("same_file", [False, True])
def test_the_child_sees_the_same(tmp_path: Path, same_file: bool) -> None:
    argv = [sys.executable, "-S", "-c", PROBE, "one two", "", "'q'", '"dq"', "é"]
    seen = _each(tmp_path, argv, same_file=same_file)
    for label, result in seen.items():
        assert result == seen["os"], label
    assert seen["os"][0] == 0
    assert "True True" in seen["os"][1]
    assert "old content" not in seen["os"][1]


def test_path_search_and_cpu_pinning_are_the_same(tmp_path: Path) -> None:
    cpus = frozenset({min(os.sched_getaffinity(0))})
    seen = _each(tmp_path, [os.path.basename(sys.executable), "-S", "-c", PROBE], cpus=cpus)
    for label, result in seen.items():
        assert result[1] == seen["os"][1], label
    assert f"Cpus_allowed_list:\\t{min(cpus)}" in seen["os"][1]
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
    assert len(set(messages)) == 1, messages


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


def test_spawns_from_several_threads_start_each_in_its_own_directory(tmp_path: Path) -> None:
    """The Python path changes this process's directory around each spawn, and a Dask worker runs a
    local backend in each task's thread: spawns from several threads at once must not start in, or
    open their output files in, another's directory."""
    dirs = [tmp_path / f"d{i}" for i in range(4)]

    def spawn_in(where: Path) -> list[_spawn.Spawned]:
        where.mkdir()
        return [_spawn.spawn(["/bin/pwd"], {}, str(where), f"o{n}", f"o{n}", None) for n in range(25)]

    with ThreadPoolExecutor(len(dirs)) as pool:
        started = list(pool.map(spawn_in, dirs))
    for where, spawned in zip(dirs, started, strict=True):
        for child in spawned:
            os.waitpid(child.pid, 0)
            os.close(child.pidfd)
        seen = {(where / f"o{n}").read_text().strip() for n in range(len(spawned))}
        assert seen == {os.path.realpath(where)}


def test_the_c_spawner_is_used_where_built_unless_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    spawner = _spawner.make_spawner(time.time)
    if _spawner._compiled() is None:
        assert spawner is None  # the caller spawns in its own thread
    else:
        assert isinstance(spawner, _spawner.CSpawner)
        assert spawner.close() == []
    monkeypatch.setenv("SHEAF_PURE_PYTHON", "1")
    assert _spawner.make_spawner(time.time) is None


def test_the_c_spawner_hands_back_every_request_in_order(tmp_path: Path) -> None:
    """Many requests queued at once, refused ones among them: one result each, in submission order."""
    module = _spawner._compiled()
    if module is None:
        pytest.skip("the _cspawn extension was not built")
    spawner: _spawner.CSpawner[int] = _spawner.CSpawner(time.time, module)
    for i in range(40):
        argv = ["/bin/true"] if i % 7 else ["/bin/true", "bad\0arg"]
        spawner.submit(_spawner.SpawnRequest(i, argv, {"PATH": "/bin"}, str(tmp_path), "o", "o", None))
    results: list[_spawner.SpawnResult[int]] = []
    while len(results) < 40:
        select.select([spawner.wakeup], [], [], 30.0)
        results.extend(spawner.results())
    assert spawner.close() == []
    started = [r for r in results if r.spawned is not None]
    assert sorted(r.tag for r in results) == list(range(40))
    assert [r.tag for r in started] == [i for i in range(40) if i % 7]
    for result in started:
        assert result.spawned is not None
        _, status = os.waitpid(result.spawned.pid, 0)
        os.close(result.spawned.pidfd)
        assert status == 0


@pytest.mark.parametrize("fn", PATHS.values(), ids=PATHS.keys())
def test_strings_reach_the_child_as_their_file_system_bytes(tmp_path: Path, fn: Spawn) -> None:
    """The C spawner copies an ASCII string's text as it is and encodes any other (non-ASCII, or
    undecodable bytes kept as surrogate escapes): the child gets the bytes ``os.fsencode`` gives, as
    through the other paths; a NUL in any string is refused before anything runs."""
    probe = "import os, sys; sys.stdout.buffer.write(repr((sys.argv[1:], os.environb[b'V'])).encode())"
    texts = ["plain", "caf\u00e9", "raw\udcff\udcfe", ""]
    for text in texts:
        cwd = tmp_path / f"d{texts.index(text)}"
        cwd.mkdir()
        spawned = fn([sys.executable, "-S", "-c", probe, text], {"V": text}, str(cwd), "o", "o", None)
        os.waitpid(spawned.pid, 0)
        os.close(spawned.pidfd)
        assert (cwd / "o").read_bytes() == repr(([text], os.fsencode(text))).encode()
    for env, cwd_text in (({"V": "a\0b"}, str(tmp_path)), ({}, f"{tmp_path}\0x")):
        with pytest.raises(ValueError, match="null byte"):
            fn(["/bin/true"], env, cwd_text, "o", "o", None)


def test_a_job_gets_sigpipe_and_sigxfsz_with_their_default_action(tmp_path: Path) -> None:
    """The interpreter ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across execve:
    a job's pipeline ``yes | head`` then ended with "Broken pipe" on stderr, not quietly as in a
    shell (``subprocess`` resets the same two).  Through each path: the job's own ignored signals
    (``SigIgn`` in /proc) hold neither, and the pipeline ends quietly."""
    ignored = (1 << (13 - 1)) | (1 << (25 - 1))  # SIGPIPE, SIGXFSZ
    for label, fn in PATHS.items():
        cwd = tmp_path / label
        cwd.mkdir()
        script = "grep SigIgn /proc/self/status; yes | head -n 1"
        code, out, err = _run(fn, tmp_path, "job", ["/bin/sh", "-c", script], cwd)
        mask = int(out.split()[1], 16)
        assert (code, err, mask & ignored) == (0, "", 0), (label, out, err)
        assert out.split()[2] == "y", label
