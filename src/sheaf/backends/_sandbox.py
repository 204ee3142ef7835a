"""HTCondor file transfer on this machine: a sandbox per attempt, inputs copied in, outputs copied back.

What HTCondor's shadow and starter do for ``should_transfer_files = YES`` (the ``FileTransfer`` of a
launch), in the same order:

1. a fresh, empty scratch directory is made for the attempt (under the pool's ``EXECUTE`` directory,
   else the system's temporary directory) -- the job's working directory;
2. each ``transfer_input_files`` entry is copied into it by its base name (a directory with its
   contents; a name ending in ``/`` copies the directory's contents instead).  An input that is
   missing or cannot be read puts the job on hold with the reason, as HTCondor does -- the job never
   starts;
3. the job runs there (its executable where it is: on one machine HTCondor's copy of it is the same
   file; its stdout/stderr go straight to the submit side's files);
4. when it exits, each ``transfer_output_files`` name (relative to the sandbox) is copied back into
   ``initialdir`` under its base name -- or to its ``transfer_output_remaps`` path, directories made
   as needed -- by a temporary name and a rename, so a reader never sees half a file; without that
   list every file the job created or changed at the sandbox's top level goes back.  With
   ``when_to_transfer_output = ON_SUCCESS`` nothing comes back after a failed exit.  A listed output
   missing after a successful exit puts the job on hold ("transfer output files
   failure", as HTCondor); after a failed exit the failure is reported as the exit (HTCondor would
   hold it; sheaf keeps the job's own status, which is what DAGMan's retries act on);
5. the sandbox is removed, whatever happened (also when the job is removed or the backend closes).

With ``preserve_relative_paths = true`` (HTCondor 8.9.7's submit command) an entry written as a
relative path with a directory (``deep/f.a``) keeps that path: inputs are placed there in the sandbox
and outputs go back there under ``initialdir`` (its directories made); a path leaving the sandbox
(``../x``) is a transfer failure.  Absolute paths and plain names go by base name, as before.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from sheaf.engine import FileTransfer


class TransferFailure(Exception):
    """Why a transfer failed: the hold reason."""


def make_sandbox(transfer: FileTransfer, execute_dir: str | None) -> tuple[str, dict[str, float]]:
    """A new sandbox holding the inputs, and the modification times of its top level (for the
    "every new or changed file" rule); ``TransferFailure`` (nothing left behind) when an input fails."""
    base = execute_dir if execute_dir and os.path.isdir(execute_dir) else None
    sandbox = tempfile.mkdtemp(prefix="sheaf-sandbox-", dir=base)
    try:
        for index, source in enumerate(transfer.inputs):
            _copy_in(source, sandbox, _kept_path(transfer, transfer.names[index:index + 1]))
    except TransferFailure:
        remove_sandbox(sandbox)
        raise
    return sandbox, _mtimes(sandbox)


def _kept_path(transfer: FileTransfer, name: tuple[str, ...], direction: str = "input") -> str | None:
    """The relative path an entry keeps under ``preserve_relative_paths`` (module docstring), else None."""
    if not transfer.preserve_relative_paths or not name:
        return None
    path = os.path.normpath(name[0].rstrip("/"))
    if os.path.isabs(path) or os.sep not in path:
        return None
    if path.split(os.sep)[0] == "..":
        raise TransferFailure(f"transfer {direction} files failure: {name[0]}: a relative path may not "
                              "leave the sandbox")
    return path


def _copy_in(source: str, sandbox: str, kept: str | None = None) -> None:
    try:
        if source.endswith("/"):
            shutil.copytree(source, os.path.join(sandbox, kept) if kept else sandbox, dirs_exist_ok=True,
                            symlinks=False)
        elif kept:
            os.makedirs(os.path.dirname(os.path.join(sandbox, kept)), exist_ok=True)
            copy = shutil.copytree if os.path.isdir(source) else shutil.copy2
            copy(source, os.path.join(sandbox, kept))
        elif os.path.isdir(source):
            shutil.copytree(source, os.path.join(sandbox, os.path.basename(source)), symlinks=False)
        else:
            shutil.copy2(source, os.path.join(sandbox, os.path.basename(source)))
    except OSError as exc:
        raise TransferFailure(f"transfer input files failure: {source}: "
                              f"{exc.strerror or exc}") from None


def _mtimes(sandbox: str) -> dict[str, float]:
    with os.scandir(sandbox) as entries:
        return {entry.name: entry.stat(follow_symlinks=False).st_mtime for entry in entries}


def copy_back(transfer: FileTransfer, sandbox: str, before: dict[str, float], iwd: str,
              succeeded: bool) -> str | None:
    """Copy the outputs back into ``iwd``; the hold reason when a listed one is missing after a
    successful exit (module docstring), else None."""
    if transfer.on_success and not succeeded:
        return None
    if transfer.outputs is None:
        names = [name for name, mtime in _mtimes(sandbox).items()
                 if before.get(name) != mtime and os.path.isfile(os.path.join(sandbox, name))]
    else:
        names = list(transfer.outputs)
    remaps = dict(transfer.remaps)
    missing = []
    for name in names:
        path = os.path.join(sandbox, name)
        if not os.path.lexists(path):
            missing.append(name)
            continue
        target = remaps.get(name) or os.path.join(iwd, os.path.basename(name.rstrip("/")))
        try:
            kept = _kept_path(transfer, (name,), "output")
        except TransferFailure as exc:
            return str(exc)
        if name not in remaps and kept:
            target = os.path.join(iwd, kept)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            _deliver(path, target)
        except OSError as exc:
            return f"transfer output files failure: {name}: {exc.strerror or exc}"
    if missing and succeeded:
        return "transfer output files failure: not produced by the job: " + ", ".join(missing)
    return None


def _deliver(path: str, target: str) -> None:
    if os.path.isdir(path):
        shutil.copytree(path, target, dirs_exist_ok=True)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", dir=os.path.dirname(target))
    os.close(fd)
    try:
        shutil.copy2(path, tmp)
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def remove_sandbox(sandbox: str) -> None:
    shutil.rmtree(sandbox, ignore_errors=True)
