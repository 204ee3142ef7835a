"""``python -m sheaf.jobtools.container``: what a containerized task runs around its runtime.

Command line (written by ``sheaf.codegen._containers``; an argv list, never a shell)::

    container.py --run-root R --lock L [--fetch URL --image PATH [--bypass]] -- RUNTIME ARGS...

It runs ``RUNTIME ARGS...`` (``podman run ...``) as a child, forwarding SIGTERM, SIGINT and SIGHUP to
it, and exits with its status (a signal ``n`` as ``128 + n``, as a shell reports it).  Around it:

- **Image fetch** (``--fetch``): a catalogued image URL of any scheme ``sheaf-transfer`` moves
  (``http(s)``, ``scp``/``sftp``, ``s3``, ``webdav(s)``, ``file``) is fetched to ``PATH`` before the
  runtime starts, by the transfer tool's own runner (its attempts and back-off), as Pegasus stages a
  container image like any other input.  Without ``--bypass`` ``PATH`` is the plan's
  shared copy (``DIR/containers/images/``): the first task fetches it, under an exclusive lock on
  ``PATH.lock``, into a temporary sibling renamed into place, and every later task finds it there.
  With ``--bypass`` (Pegasus's ``bypass`` of image staging: the image goes straight to the node that
  runs the job) ``PATH`` is this task's own copy, removed when the task ends.  A fetch that fails is a
  task failure (exit 1) whose message names the URL; the runtime is not started.
- **Run root** (``--run-root``): podman's run-time directory (sockets, locks) is shared by every
  container of the plan, so no task may remove it while another uses it.  Each task holds a shared
  ``flock`` on ``L`` while its runtime runs; when the runtime has exited the task asks for the lock
  exclusively without waiting, and only the task that gets it -- the last one out -- removes the run
  root.  A task starting meanwhile waits for its shared lock until the removal is done, and its
  runtime makes the directory again.  When the engine stops it sends its jobs SIGTERM; the runtime
  ends its container and this program still removes the run root.  A SIGKILL (how the local pool
  stops a job) kills this program and the podman client, but not the container: conmon keeps it
  running, and its cleanup makes the run root again when it ends.  So when the engine stops, ``sheaf
  run`` calls :func:`remove_leftover_containers`: with no task holding the lock, every container
  left in the plan's private podman storage is removed (``podman rm --force --all``), and then the
  run root.  A container stopped while it was being created is removed from podman's records but
  leaves its ``conmon`` and ``runc init`` waiting for ever; those ``conmon`` processes name the run
  root on their command lines, and are killed with their children before the run root goes.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence

from sheaf._proc import command_line, pids, stat_fields
from sheaf.jobtools.launch import run_child

FETCH_TIMEOUT_S = 60.0
REMOVE_TIMEOUT_S = 120.0


class FetchError(Exception):
    """The image could not be fetched; the message names the URL."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("sheaf container: no runtime command after --", file=sys.stderr)
        return 2
    with _shared(args.lock):
        try:
            if args.fetch:
                fetch_image(args.fetch, args.image, shared=not args.bypass)
            status = run_child(command, prog="sheaf container")
        except FetchError as exc:
            print(f"sheaf container: {exc}", file=sys.stderr, flush=True)
            status = 1
        finally:
            if args.fetch and args.bypass:
                _remove(args.image)
    release_run_root(args.lock, args.run_root)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sheaf container")
    parser.add_argument("--run-root", required=True)
    parser.add_argument("--lock", required=True)
    parser.add_argument("--fetch", metavar="URL")
    parser.add_argument("--image", metavar="PATH")
    parser.add_argument("--bypass", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    return parser


@contextlib.contextmanager
def _shared(lock: str) -> Iterator[None]:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def release_run_root(lock: str, run_root: str) -> bool:
    """Remove ``run_root`` when no other task holds ``lock`` (module docstring); True if removed."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another task is running: the last one out removes it
        shutil.rmtree(run_root, ignore_errors=True)
        return True
    finally:
        os.close(fd)


def remove_leftover_containers(lock: str, run_root: str, env: dict[str, str]) -> bool:
    """Remove the containers a killed task left running and then ``run_root``, when no task holds
    ``lock`` (module docstring); ``env`` points podman at the plan's storage.  True if removed."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        podman = shutil.which("podman")
        if os.path.isdir(run_root) and podman is not None:  # no run root: no container is running
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run([podman, "rm", "--force", "--all", "--time", "0"], env={**os.environ, **env},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=REMOVE_TIMEOUT_S, check=False)
            _kill_monitors(run_root)
        shutil.rmtree(run_root, ignore_errors=True)
        return not os.path.exists(run_root)
    finally:
        os.close(fd)


def _kill_monitors(run_root: str) -> None:
    """SIGKILL the ``conmon`` processes whose command lines name ``run_root``, their children first
    (module docstring)."""
    named = run_root.encode()
    monitors = []
    for pid in pids():
        argv = command_line(pid)
        if argv and os.path.basename(argv[0]) == b"conmon" and any(named in arg for arg in argv):
            monitors.append(pid)
    if not monitors:
        return
    children = [pid for pid in pids() if (fields := stat_fields(pid)) and len(fields) > 1
                and int(fields[1]) in monitors]
    for pid in (*children, *monitors):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def fetch_image(url: str, path: str, *, shared: bool) -> None:
    """Download ``url`` to ``path`` (module docstring); a shared copy already there is kept."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if not shared:
        _download(url, path)
        return
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not os.path.exists(path):
            _download(url, path)
    finally:
        os.close(fd)


def _download(url: str, path: str) -> None:
    """``url`` to ``path`` through ``sheaf-transfer``'s runner (imported here: most tasks fetch nothing)."""
    from sheaf.errors import SheafError
    from sheaf.jobtools._transfer_list import Endpoint, Transfer
    from sheaf.jobtools._transfer_run import TransferOptions, check_transfers, run_transfers

    target = os.path.abspath(path)
    item = Transfer(os.path.basename(target), (Endpoint(url),), Endpoint(f"file://{target}"))
    options = TransferOptions(threads=1, roots=(os.path.dirname(target),), timeout=FETCH_TIMEOUT_S)
    try:
        check_transfers([item], options)
        (outcome,) = run_transfers([item], options)
    except SheafError as exc:
        raise FetchError(f"cannot fetch the container image {url}: {exc}") from None
    if outcome.source is None:
        raise FetchError(f"cannot fetch the container image {url}: " + "; ".join(outcome.failures))


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


if __name__ == "__main__":
    sys.exit(main())
