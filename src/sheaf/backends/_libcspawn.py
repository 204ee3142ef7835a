"""glibc's ``posix_spawn`` called through ``ctypes``: the same call as ``os.posix_spawn``, but it lets
other threads run while it waits, and it changes directory in the child, not in this process.

Why (``benchmarks/engine_throughput.py``): glibc's ``posix_spawn`` forks with ``CLONE_VFORK``, so the
caller is suspended until the child has opened its files and called ``execve``.  On a busy 2-CPU
machine that wait was 0.3-1.3 ms a spawn -- more than the engine's own work for a node -- and
``os.posix_spawn`` holds the GIL through it, so nothing else in the engine moved meanwhile.  A
``ctypes`` call releases the GIL: the local backend spawns from its own thread while the engine
loop goes on reaping exits, journaling and dispatching.

Same semantics as the ``os.posix_spawn`` path it replaces (``tests/backends/test_spawn_paths.py``
runs both and compares what the child sees): argv and the complete environment as given, stdin
/dev/null, stdout/stderr created and truncated (stderr a dup of stdout when the paths are equal),
a new process group (``POSIX_SPAWN_SETPGROUP``, the child's own pid), ``posix_spawnp``'s PATH
search when argv[0] has no slash, SIGPIPE and SIGXFSZ with their default action, the other
signal dispositions and the mask inherited as ``os.posix_spawn`` leaves them.  The working
directory is a file action (``posix_spawn_file_actions_addchdir_np``, glibc >= 2.29), run before
the opens, so relative output paths resolve in the job's directory as before.

:data:`AVAILABLE` is false where this cannot work (no glibc, or one without ``addchdir_np``); the
caller then uses ``os.posix_spawn``.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Iterator, Mapping, Sequence

__all__ = ["AVAILABLE", "libc_spawn"]

_SETPGROUP = 0x02  # POSIX_SPAWN_SETPGROUP in glibc's <spawn.h> (the group is 0: the child's own pid)
_SETSIGDEF = 0x04  # POSIX_SPAWN_SETSIGDEF: the signals of the attribute's set get their default action
_OUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
# the opaque structs are 80 and 336 bytes on x86-64 glibc; generous buffers for other ABIs
_ACTIONS_SIZE = 512
_ATTR_SIZE = 1024
_SIGSET_SIZE = 128  # glibc's sigset_t (1024 bits)


def _names() -> Iterator[str | None]:
    yield "libc.so.6"  # glibc's soname first: ctypes.util.find_library runs ldconfig (~15 ms a start)
    import ctypes.util  # only then: importing it costs ~5-10 ms more (tempfile, shutil, subprocess),
    #                     paid by every Slurm job's wrapper

    yield ctypes.util.find_library("c")


def _load() -> ctypes.CDLL | None:
    for name in _names():
        if name is None:
            continue
        try:
            libc = ctypes.CDLL(name, use_errno=True)
            libc.posix_spawn_file_actions_addchdir_np  # noqa: B018 - glibc >= 2.29
            break
        except (OSError, AttributeError):
            continue
    else:
        return None
    char_pp = ctypes.POINTER(ctypes.c_char_p)
    for fn in (libc.posix_spawn, libc.posix_spawnp):
        fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                       char_pp, char_pp]
        fn.restype = ctypes.c_int
    libc.posix_spawn_file_actions_addopen.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                                                      ctypes.c_int, ctypes.c_uint]
    libc.posix_spawn_file_actions_adddup2.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    libc.posix_spawn_file_actions_addchdir_np.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    libc.posix_spawnattr_setflags.argtypes = [ctypes.c_void_p, ctypes.c_short]
    libc.posix_spawnattr_setsigdefault.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    libc.sigaddset.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return libc


def _defaults(libc: ctypes.CDLL) -> ctypes.Array[ctypes.c_char]:
    """The sigset_t of the signals a job gets with their default action (``_spawn.DEFAULT_SIGNALS``)."""
    mask = ctypes.create_string_buffer(_SIGSET_SIZE)
    libc.sigemptyset(mask)
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        libc.sigaddset(mask, number)
    return mask


_LIBC = _load()
AVAILABLE = _LIBC is not None
_DEFAULTS = _defaults(_LIBC) if _LIBC is not None else None


def _strings(items: Sequence[bytes]) -> ctypes.Array[ctypes.c_char_p]:
    if any(b"\0" in item for item in items):
        raise ValueError("embedded null byte")  # as os.posix_spawn: C would cut the string there
    return (ctypes.c_char_p * (len(items) + 1))(*items, None)


def _environment(env: Mapping[str, str]) -> list[bytes]:
    out = []
    for key, value in env.items():
        name = os.fsencode(key)
        if not name or b"=" in name:
            raise ValueError("illegal environment variable name")  # as os.posix_spawn
        out.append(name + b"=" + os.fsencode(value))
    return out


def libc_spawn(argv: Sequence[str], env: Mapping[str, str], cwd: str, stdout: str, stderr: str,
               stdin: str = os.devnull) -> int:
    """Start ``argv`` (see the module docstring); returns its pid, raises ``OSError`` as
    ``os.posix_spawn`` does (``errno`` of the failed open, chdir or exec)."""
    libc = _LIBC
    assert libc is not None, "libc_spawn needs glibc >= 2.29 (check AVAILABLE)"
    encode = os.fsencode
    if "\0" in cwd or "\0" in stdout or "\0" in stderr or "\0" in stdin:
        raise ValueError("embedded null byte")
    actions = ctypes.create_string_buffer(_ACTIONS_SIZE)
    attr = ctypes.create_string_buffer(_ATTR_SIZE)
    libc.posix_spawn_file_actions_init(actions)
    libc.posix_spawnattr_init(attr)
    try:
        libc.posix_spawn_file_actions_addchdir_np(actions, encode(cwd))
        libc.posix_spawn_file_actions_addopen(actions, 0, encode(stdin), os.O_RDONLY, 0)
        libc.posix_spawn_file_actions_addopen(actions, 1, encode(stdout), _OUT_FLAGS, 0o644)
        if stderr == stdout:
            libc.posix_spawn_file_actions_adddup2(actions, 1, 2)
        else:
            libc.posix_spawn_file_actions_addopen(actions, 2, encode(stderr), _OUT_FLAGS, 0o644)
        libc.posix_spawnattr_setflags(attr, _SETPGROUP | _SETSIGDEF)  # setpgroup 0, as init left it
        libc.posix_spawnattr_setsigdefault(attr, _DEFAULTS)
        args = _strings([encode(a) for a in argv])
        envp = _strings(_environment(env))
        pid = ctypes.c_int(0)
        start = libc.posix_spawn if "/" in argv[0] else libc.posix_spawnp
        err = start(ctypes.byref(pid), encode(argv[0]), actions, attr, args, envp)  # GIL released
    finally:
        libc.posix_spawn_file_actions_destroy(actions)
        libc.posix_spawnattr_destroy(attr)
    if err:
        raise OSError(err, os.strerror(err))
    return pid.value
