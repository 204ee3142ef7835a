"""The runner behind ``sheaf-transfer`` and ``sheaf-lite``: checks a whole list, then moves the bytes.

Policy:

- **Check first.**  ``check_transfers`` refuses the list (``ValidationError``, exit 2) before anything
  moves when a local destination lies outside every root (after ``..`` and existing symbolic links are
  resolved), a destination's scheme cannot be written, or no source of a transfer can be read by sheaf
  (the message names the scheme and how to make it available).
- **Sources in order.**  Each source is tried up to ``attempts`` times; a retryable failure waits
  ``backoff * 2**(n-1)`` seconds (capped at ``MAX_WAIT``) through the injected ``sleep``; a final one
  (a 404, a missing file, a checksum mismatch, an unsupported scheme) falls through to the next source
  at once.  Every failed attempt is logged with the URL, the attempt and the cause; a transfer whose
  every source failed is reported with all of them.
- **Atomic writes.**  A local destination is written to ``.<name>.<pid>.<n>.part`` beside it and
  renamed; the part survives a failed HTTP attempt so the next one resumes it, and is removed when
  the runner moves on to another source or gives up.  Parent directories are created.
- **Links.**  With ``link`` (``pegasus.transfer.links``) a local source becomes a symbolic link, unless
  the destination must be made executable (its mode would change the source's); a ``symlink://``
  destination is always a link.
- **Integrity.**  A transfer's ``checksum`` is verified on the delivered bytes (a mismatch is that
  source's final failure).  With ``integrity`` ``full``/``nosymlink`` and a ``meta_dir``, a file whose
  record exists is checked against it, and every delivered file gets a record (``_integrity``).
- **Remote destinations** (stage-out to http/webdav PUT, scp/sftp, s3): a local source is sent as it
  is; a remote one is first fetched into a temporary file in ``base`` (or the system's temporary
  directory), verified, sent, and removed.
- **Parallel.**  Independent transfers run on up to ``threads`` threads; their order of completion
  does not matter because no two transfers share a destination.
"""

from __future__ import annotations

__all__ = ["TransferOptions", "TransferOutcome", "check_transfers", "inside", "raise_failures",
           "run_transfers"]

import itertools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

from sheaf.errors import ValidationError
from sheaf.jobtools import _integrity
from sheaf.jobtools._cli import ToolExit
from sheaf.jobtools._transfer_list import Endpoint, Transfer
from sheaf.jobtools._transfer_schemes import AttemptFailed, local_path, scheme_of, shown_url, unsupported

MAX_WAIT = 60.0
_PARTS = itertools.count()  # part names unique within the process (threads share the pid)
Mover = Callable[[str, str, float], None]
# scheme -> the module that moves it (``<name>_get``/``<name>_put``), imported on first use: a job that
# copies local files does not pay for http.client, email and ssl at start-up.
_MODULES = {"http": "http", "https": "http", "webdav": "http", "webdavs": "http", "scp": "ssh",
            "sftp": "ssh", "s3": "s3", "s3s": "s3"}


def _mover(url: str, direction: str) -> Mover:
    import importlib

    name = _MODULES[scheme_of(url)]
    module = importlib.import_module(f"sheaf.jobtools._transfer_{name}")
    mover: Mover = getattr(module, f"{name}_{direction}")
    return mover


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class TransferOptions:
    threads: int = 2
    link: bool = False
    roots: tuple[str, ...] = ()
    integrity: str = "none"
    meta_dir: str | None = None
    base: str | None = None  # the job directory relative ``file:`` URLs name files of
    attempts: int = 3
    backoff: float = 1.0
    timeout: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    log: Callable[[str], None] = _stderr

    def __post_init__(self) -> None:  # the tools check their input first; this guards library callers
        if self.threads < 1 or self.attempts < 1 or self.integrity not in _integrity.MODES:
            raise ValueError(f"threads and attempts are at least 1, integrity one of {_integrity.MODES}")


@dataclass(slots=True)
class TransferOutcome:
    transfer: Transfer
    source: str | None = None  # the URL delivered from; None: every source failed
    failures: list[str] = field(default_factory=list)
    sha256: str | None = None
    linked: bool = False

    def report(self) -> str:
        return f"{self.transfer.lfn}: every source failed: " + "; ".join(self.failures)


def inside(root: str, dst: str) -> bool:
    """Whether ``dst`` stays inside ``root`` once ``..`` and existing symbolic links are resolved."""
    return _inside_real(os.path.realpath(root), os.path.realpath(dst))


def _inside_real(real_root: str, real_dst: str) -> bool:
    return os.path.commonpath([real_root, real_dst]) == real_root and real_dst != real_root


def check_transfers(transfers: list[Transfer], options: TransferOptions, path: str | None = None) -> None:
    """Refuse the list before anything moves (module docstring, "Check first")."""
    real_roots = [os.path.realpath(root) for root in options.roots]  # once, not once per transfer
    for number, item in enumerate(transfers, start=1):
        problem = _destination_problem(item.dest.url, options, real_roots) or _sources_problem(item)
        if problem:
            what, value, rule = problem
            raise ValidationError(f"transfer {number} ({item.lfn}): {what}", rule=rule,
                                  value=shown_url(value), path=path)


def _destination_problem(dest: str, options: TransferOptions,
                         real_roots: list[str]) -> tuple[str, str, str] | None:
    problem = unsupported(dest)
    if problem:
        return f"cannot write the destination: {problem.cause}", dest, "a destination sheaf can write"
    if scheme_of(dest) not in ("file", "symlink"):
        return None
    target = local_path(dest, options.base)
    if target is None or not os.path.isabs(target):
        return ("the destination is not a local path", dest,
                "file:///absolute or, in a job directory, file:name")
    real = os.path.realpath(target)
    if not any(_inside_real(root, real) for root in real_roots):
        return ("the destination lies outside every --root", dest,
                "destinations lie inside --root " + " ".join(options.roots or ("(none given)",)))
    return None


def _sources_problem(item: Transfer) -> tuple[str, str, str] | None:
    if any(unsupported(s.url) is None and scheme_of(s.url) != "symlink" for s in item.sources):
        return None
    causes = {problem.cause for s in item.sources if (problem := unsupported(s.url))}
    return ("no source can be read: " + ("; ".join(sorted(causes)) or "symlink:// is a destination only"),
            item.sources[0].url, "at least one source sheaf can read")


def run_transfers(transfers: list[Transfer], options: TransferOptions) -> list[TransferOutcome]:
    """Deliver every transfer (in parallel up to ``options.threads``); the outcomes in list order."""
    if options.threads <= 1 or len(transfers) <= 1:
        return [_deliver(item, options) for item in transfers]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=options.threads) as pool:
        return list(pool.map(lambda item: _deliver(item, options), transfers))


def raise_failures(outcomes: list[TransferOutcome], what: str = "") -> None:
    """Stop the tool with exit 1 when a transfer failed, every failed one named with its attempts."""
    failed = [outcome.report() for outcome in outcomes if outcome.source is None]
    if failed:
        raise ToolExit(1, f"{len(failed)} {what}transfer(s) failed:\n" + "\n".join(failed))


def _deliver(item: Transfer, options: TransferOptions) -> TransferOutcome:
    outcome = TransferOutcome(item)
    for source in item.sources:
        if _try_source(item, source, options, outcome):
            outcome.source = source.url
            return outcome
    return outcome


def _try_source(item: Transfer, source: Endpoint, options: TransferOptions, outcome: TransferOutcome) -> bool:
    problem, attempt = unsupported(source.url), 1
    if problem is None:
        try:
            staging = _Staging(item, options)
        except OSError as exc:  # no temporary directory for a remote destination
            problem = AttemptFailed(f"cannot make a temporary directory: {exc.strerror or exc}", retry=False)
        else:
            with staging:
                problem, attempt = _attempts(item, source.url, staging, options, outcome)
    if problem is None:
        return True
    _note(item, source.url, attempt, options, problem.cause, outcome)
    return False


def _attempts(item: Transfer, url: str, staging: _Staging, options: TransferOptions,
              outcome: TransferOutcome) -> tuple[AttemptFailed | None, int]:
    """Try ``url`` until it works, fails for good, or runs out of attempts: the last failure, if any."""
    for attempt in range(1, options.attempts + 1):
        try:
            _attempt(item, url, staging, options, outcome)
            return None, attempt
        except AttemptFailed as exc:
            problem = exc
        except OSError as exc:
            problem = AttemptFailed(f"{exc.strerror or exc} ({exc.filename or 'no file'})", retry=False)
        if not problem.retry or attempt == options.attempts:
            return problem, attempt
        _note(item, url, attempt, options, problem.cause, outcome)
        options.sleep(min(MAX_WAIT, options.backoff * 2 ** (attempt - 1)))
    raise AssertionError("unreachable: TransferOptions.attempts is at least 1")


def _note(item: Transfer, url: str, attempt: int, options: TransferOptions, cause: str,
          outcome: TransferOutcome) -> None:
    text = f"{shown_url(url)} attempt {attempt}/{options.attempts}: {cause}"
    outcome.failures.append(text)
    options.log(f"{item.lfn}: {text}")


class _Staging:
    """Where one source's bytes land before the rename: a part file, kept across attempts (resume)."""

    def __init__(self, item: Transfer, options: TransferOptions) -> None:
        dest = local_path(item.dest.url, options.base)
        self.dest = dest
        self._own_dir: str | None = None
        if dest is not None:
            parent, name = os.path.split(dest)
            # Cut so that the part's name stays within NAME_MAX (255) whenever the destination's does.
            self.part = os.path.join(parent, f".{name[:200]}.{os.getpid()}.{next(_PARTS)}.part")
        else:
            self._own_dir = tempfile.mkdtemp(prefix=".sheaf-transfer-", dir=options.base)
            self.part = os.path.join(self._own_dir, "part")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if os.path.lexists(self.part):
            os.unlink(self.part)
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)


def _attempt(item: Transfer, url: str, staging: _Staging, options: TransferOptions,
             outcome: TransferOutcome) -> None:
    src = local_path(url, options.base)
    if src is not None and not os.path.isfile(src):
        if os.path.isdir(src):  # an lfn naming a directory ("out/"), which a job made
            raise AttemptFailed("source is a directory: sheaf-transfer moves files, and a workflow's files "
                                "are files (archive the directory into one)", retry=False)
        raise AttemptFailed("source missing: no such file", retry=False)
    if staging.dest is not None:
        os.makedirs(os.path.dirname(staging.dest), exist_ok=True)
    linked = src is not None and staging.dest is not None and _wants_link(item, options)
    if linked and src is not None:
        if os.path.lexists(staging.part):
            os.unlink(staging.part)
        os.symlink(os.path.abspath(src), staging.part)
    elif src is not None and staging.dest is not None:
        shutil.copy2(src, staging.part)
    elif src is None:
        _mover(url, "get")(url, staging.part, options.timeout)
    local = staging.part if (staging.dest is not None or src is None) else src
    outcome.sha256 = _verify(item, url, local, linked, options)
    if staging.dest is None:
        try:
            _mover(item.dest.url, "put")(local, item.dest.url, options.timeout)
        except AttemptFailed as exc:  # the attempt is the source's; the message names what failed
            raise AttemptFailed(f"writing {shown_url(item.dest.url)}: {exc.cause}", retry=exc.retry) from None
        return
    if item.executable:
        mode = os.stat(staging.part).st_mode
        os.chmod(staging.part, mode | (mode & 0o444) >> 2 | 0o100)  # +x wherever +r, and for the owner
    os.replace(staging.part, staging.dest)
    outcome.linked = linked
    _record(item, url, outcome.sha256, linked, options)


def _wants_link(item: Transfer, options: TransferOptions) -> bool:
    if scheme_of(item.dest.url) == "symlink":
        return True
    return options.link and not item.executable  # an executable is copied: its mode is changed


def _checks_records(linked: bool, options: TransferOptions) -> bool:
    return options.meta_dir is not None and (options.integrity == "full" or
                                              (options.integrity == "nosymlink" and not linked))


def _verify(item: Transfer, url: str, local: str, linked: bool, options: TransferOptions) -> str | None:
    """The delivered file's sha256 when anything needs it; a mismatch is the source's final failure."""
    records = item.integrity and _checks_records(linked, options)
    if item.sha256 is None and not records:
        return None
    got = _integrity.file_sha256(local)
    if item.sha256 is not None and got != item.sha256:
        raise AttemptFailed(f"checksum mismatch for {item.lfn}: expected sha256 {item.sha256}, got {got}",
                            retry=False)
    if records and options.meta_dir is not None:
        problem = _integrity.check_record(options.meta_dir, item.lfn, local, got,
                                          shown=f"read from {shown_url(url)}")
        if problem:
            raise AttemptFailed(problem, retry=False)
    return got


def _record(item: Transfer, url: str, sha256: str | None, linked: bool, options: TransferOptions) -> None:
    if sha256 is not None and item.integrity and _checks_records(linked, options) \
            and options.meta_dir is not None:
        _integrity.write_record(options.meta_dir, item.lfn, sha256, shown_url(url))
