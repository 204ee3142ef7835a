"""``sheaf-lite``: the nonsharedfs job wrapper (what PegasusLite does for a Pegasus job).

Usage::

    sheaf-lite MANIFEST -- ARGV...

``MANIFEST`` is JSON::

    {"workdir_parent": "/tmp", "inputs": [transfer list], "outputs": [transfer list], "threads": 2,
     "integrity": "none|full|nosymlink", "meta_dir": "/staging/meta" | null, "keep_workdir": false,
     "checkpoint_inputs": [transfer list], "checkpoint_outputs": [transfer list]}

and optionally ``attempts``, ``backoff`` and ``timeout`` (``sheaf-transfer``'s options).

The steps, each one's failure named on stderr:

1. The manifest and both lists are read and checked before anything happens (bad: exit 2).
2. A fresh job directory is made under ``workdir_parent`` (the site's local scratch).  A local scratch
   that does not exist on this worker, or cannot be written, is skipped (with a note on stderr) for the
   next of PegasusLite's candidates: ``$_CONDOR_SCRATCH_DIR``, then ``$TMPDIR``, then ``/tmp``.
3. ``inputs`` are pulled into it (their destinations are relative ``file:name`` URLs, resolved inside
   the job directory and never outside it), each one's ``checksum`` and integrity record verified.
   Checkpoint files (``checkpoint_inputs``) are pulled next when the staging site has them; their
   transfers never fail the job (before the first attempt there is none).
4. ``ARGV`` runs there: an argv list, never a shell, with stdin, stdout and stderr inherited, except
   the streams the manifest's ``streams`` redirects to files of the job directory (``{"stdout":
   "date.txt"}``: the job's ``set_stdout``, pushed as its other outputs are); SIGTERM,
   SIGINT and SIGHUP reaching the wrapper are passed on to the job (a removed job stops its payload).
5. Checkpoint files (``checkpoint_outputs``) the job wrote are pushed back whatever its exit status,
   so a retry starts from them (as PegasusLite stages them: never failing the job).  Then,
   if the job exited 0, each output's sha256 is recorded (``integrity`` full/nosymlink with a
   ``meta_dir``), and ``outputs`` (sources: relative ``file:name`` URLs in the job directory) are pushed
   to the staging site.  An output the job did not make is a failure.
6. The job directory is removed (unless ``keep_workdir``), whatever happened.

Exit status: the job's own (``128 + N`` when signal N ended it; ``127`` when ARGV cannot be started),
or 1 when a transfer or an integrity check failed, or 2 for a bad manifest or usage.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, NoReturn

from sheaf.errors import FormatError, UsageError, ValidationError
from sheaf.jobtools._cli import ToolExit, run_guarded
from sheaf.jobtools._integrity import MODES, file_sha256, write_record
from sheaf.jobtools._transfer_list import Transfer, read_utf8, transfers_from
from sheaf.jobtools._transfer_run import TransferOptions, check_transfers, raise_failures, run_transfers
from sheaf.jobtools._transfer_schemes import local_path

PROG = "sheaf-lite"
USAGE = f"{PROG} MANIFEST -- ARGV..."
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_CANNOT_START = 127


@dataclass(frozen=True, slots=True)
class Manifest:
    workdir_parent: str
    inputs: list[Transfer]
    outputs: list[Transfer]
    options: TransferOptions
    keep_workdir: bool = False
    #: the job's checkpoint files: pulled when there, pushed back whatever the job's status
    checkpoint_inputs: list[Transfer] = dataclasses.field(default_factory=list)
    checkpoint_outputs: list[Transfer] = dataclasses.field(default_factory=list)
    #: the job's redirected streams ("stdin", "stdout", "stderr"): files of the job directory
    streams: dict[str, str] = dataclasses.field(default_factory=dict)


def _log(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def _field(data: dict[str, Any], key: str, kinds: tuple[type, ...], default: Any, path: str) -> Any:
    value = data.get(key, default)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ValidationError(f"the manifest's {key!r} has the wrong type", rule=f"{key} is "
                              + " or ".join(k.__name__ for k in kinds), value=value, path=path)
    return value


def load_manifest(path: str) -> Manifest:
    """The manifest at ``path``, every key and both transfer lists checked."""
    try:
        data = json.loads(read_utf8(path, "manifest"))
    except json.JSONDecodeError as exc:
        raise FormatError(f"not JSON ({exc.msg})", rule="a manifest is a JSON object", path=path,
                          line=exc.lineno, column=exc.colno) from None
    if not isinstance(data, dict):
        raise ValidationError("the manifest is not an object", rule="a manifest is a JSON object",
                              value=type(data).__name__, path=path)
    integrity = _field(data, "integrity", (str,), "none", path)
    if integrity not in MODES:
        raise ValidationError("unknown integrity mode", rule="integrity is none, full or nosymlink",
                              value=integrity, path=path)
    meta_dir = _field(data, "meta_dir", (str, type(None)), None, path)
    threads = _field(data, "threads", (int,), 2, path)
    attempts = _field(data, "attempts", (int,), 3, path)
    if threads < 1 or attempts < 1:
        raise ValidationError("threads and attempts are at least 1", rule="positive counts",
                              value=(threads, attempts), path=path)
    backoff = float(_field(data, "backoff", (int, float), 1.0, path))
    timeout = float(_field(data, "timeout", (int, float), 60.0, path))
    if not (math.isfinite(backoff) and math.isfinite(timeout)) or backoff < 0 or timeout <= 0:
        raise ValidationError("backoff and timeout are finite, timeout above 0", rule="finite waits",
                              value=(backoff, timeout), path=path)
    options = TransferOptions(threads=threads, integrity=integrity if meta_dir else "none",
                              meta_dir=meta_dir, attempts=attempts, backoff=backoff, timeout=timeout,
                              log=_log)
    return Manifest(workdir_parent=_field(data, "workdir_parent", (str,), tempfile.gettempdir(), path),
                    inputs=_list(data, "inputs", path), outputs=_list(data, "outputs", path),
                    options=options, keep_workdir=_field(data, "keep_workdir", (bool,), False, path),
                    checkpoint_inputs=_list(data, "checkpoint_inputs", path),
                    checkpoint_outputs=_list(data, "checkpoint_outputs", path),
                    streams=_streams(data, path))


def _streams(data: dict[str, Any], path: str) -> dict[str, str]:
    """The manifest's ``streams``: file names inside the job directory, by stream."""
    streams = _field(data, "streams", (dict,), {}, path)
    for name, lfn in streams.items():
        parts = lfn.split("/") if isinstance(lfn, str) else []
        if name not in ("stdin", "stdout", "stderr") or not lfn or os.path.isabs(lfn) or ".." in parts:
            raise ValidationError("a stream is stdin, stdout or stderr, a file inside the job directory",
                                  rule="streams name relative files without '..'", value={name: lfn},
                                  path=path)
    return dict(streams)


def _list(data: dict[str, Any], key: str, path: str) -> list[Transfer]:
    return transfers_from(data.get(key, []), path, key)


def work_parent(scratch: str, env: Mapping[str, str]) -> str:
    """Where the job directory goes: the site's local scratch when this worker has it (a directory it
    can write), else the first such of ``$_CONDOR_SCRATCH_DIR``, ``$TMPDIR`` and ``/tmp``, as
    PegasusLite falls back."""
    candidates = [scratch, env.get("_CONDOR_SCRATCH_DIR", ""), env.get("TMPDIR", ""), "/tmp"]
    for candidate in candidates:
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            if candidate != scratch:
                _log(f"local scratch {scratch} is not a writable directory here: working in {candidate}")
            return candidate
    return scratch  # none usable: making the job directory says why


def _split_argv(argv: list[str]) -> tuple[str, list[str]]:
    if len(argv) < 3 or argv[1] != "--":
        raise UsageError(f"expected a manifest, --, and the job's argv (usage: {USAGE})")
    return argv[0], argv[2:]


def _main(argv: list[str]) -> int:
    manifest_path, job = _split_argv(argv)
    manifest = load_manifest(manifest_path)
    parent = work_parent(manifest.workdir_parent, os.environ)
    try:
        workdir = tempfile.mkdtemp(prefix="sheaf-lite-", dir=parent)
    except OSError as exc:
        raise ToolExit(1, f"cannot make a job directory in {parent}: {exc.strerror or exc}") from None
    try:
        return _in_workdir(manifest, manifest_path, workdir, job)
    finally:
        if manifest.keep_workdir:
            _log(f"job directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _in_workdir(manifest: Manifest, path: str, workdir: str, job: list[str]) -> int:
    pull = dataclasses.replace(manifest.options, roots=(workdir,), base=workdir)
    push = dataclasses.replace(manifest.options, roots=(os.sep,), base=workdir)
    check_transfers(manifest.inputs + manifest.checkpoint_inputs, pull, path)
    check_transfers(manifest.outputs + manifest.checkpoint_outputs, push, path)
    raise_failures(run_transfers(manifest.inputs, pull), "input ")
    _move_checkpoints(manifest.checkpoint_inputs, pull, "in")
    status = _run_job(job, workdir, manifest.streams)
    _move_checkpoints(manifest.checkpoint_outputs, push, "out")
    if status != 0:
        return status
    raise_failures(run_transfers(_recorded(manifest.outputs, push), push), "output ")
    return 0


def _move_checkpoints(transfers: list[Transfer], options: TransferOptions, way: str) -> None:
    """Stage checkpoint files in or out, never failing the job (PegasusLite's rule): a checkpoint the
    previous attempt did not leave, or this one did not write, is a note on stderr.  A checkpoint
    changes from one attempt to the next, so no integrity record is kept for it (as in Pegasus)."""
    options = dataclasses.replace(options, integrity="none")
    present = []
    for item in transfers:
        source = local_path(item.sources[0].url, options.base)
        if source is not None and not os.path.exists(source):
            _log(f"checkpoint {item.lfn}: none to stage {way} yet")
        else:
            present.append(item)
    for outcome in run_transfers(present, options):
        if outcome.source is None:
            _log(f"checkpoint not staged {way} (the job goes on): {outcome.report()}")


def _recorded(outputs: list[Transfer], options: TransferOptions) -> list[Transfer]:
    """``outputs`` with each file's sha256 recorded and attached, so the push verifies what it sends."""
    if options.meta_dir is None or options.integrity == "none":
        return outputs
    done = []
    for item in outputs:
        source = local_path(item.sources[0].url, options.base)
        if source is None or not os.path.isfile(source):
            done.append(item)  # the push reports it missing, with its URL
            continue
        if options.integrity == "nosymlink" and os.path.islink(source):
            done.append(item)
            continue
        digest = file_sha256(source)
        write_record(options.meta_dir, item.lfn, digest, item.sources[0].url)
        done.append(dataclasses.replace(item, sha256=digest))
    return done


def _run_job(job: list[str], workdir: str, streams: Mapping[str, str]) -> int:
    try:
        with contextlib.ExitStack() as files:
            opened = {}
            for name, lfn in streams.items():
                try:
                    opened[name] = files.enter_context(open(os.path.join(workdir, lfn),
                                                            "rb" if name == "stdin" else "wb"))
                except OSError as exc:  # the stream's file, not the program, is what is missing
                    _log(f"cannot open the {name} file {lfn} of {job[0]}: {exc.strerror or exc}")
                    return _CANNOT_START
            process = subprocess.Popen(job, cwd=workdir, stdin=opened.get("stdin"),
                                       stdout=opened.get("stdout"), stderr=opened.get("stderr"))
    except OSError as exc:
        _log(f"cannot start {job[0]}: {exc.strerror or exc}")
        return _CANNOT_START

    def forward(signum: int, frame: FrameType | None) -> None:
        del frame
        process.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in _FORWARDED}
    try:
        status = process.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 - status if status < 0 else status


def main(argv: Sequence[str] | None = None) -> NoReturn:
    run_guarded(PROG, _main, argv)


if __name__ == "__main__":
    main()
