"""``sheaf-exitcode``: decide a job's success from its exit code and its output (a DAGMan POST script).

sheaf's counterpart of pegasus-exitcode; it implements the pegasus profiles ``exitcode.successmsg``
and ``exitcode.failuremsg``.  The planner writes, per job with such profiles::

    SCRIPT POST <node> sheaf-exitcode -r $RETURN [-s MSG]... [-f MSG]... <job>.out

Usage::

    sheaf-exitcode [-r RETURN] [-S CODE]... [-s MSG]... [-f MSG]... [-R RETRY] [--rename]
                   [-n] [-N] [-I] [-U] [-l FILE] [-M FILE] JOB.out [MORE_FILES...]

    -r, --return RETURN      the job's exit code as DAGMan reports it ($RETURN; negative = signal)
    -S, --success-code CODE  also accept this exit code (repeatable)
    -s, --success-message, --success-msg MSG   must appear in the output (repeatable: all must)
    -f, --failure-message, --failure-msg MSG   must not appear in the output (repeatable: none may)
    -R, --retry N            the retry number ($RETRY); reported only
    --rename                 rotate JOB.out/JOB.err to JOB.out.NNN/JOB.err.NNN first (pegasus-exitcode's
                             default; sheaf's default leaves the files in place)
    -n, --no-rename          accepted for compatibility (the default)
    -N, --no-metadata, -I, --no-invocations   accepted for compatibility (sheaf writes no .meta file
                             and does not require kickstart records)
    -U, --update-submit-file, -l, --log FILE, -M, --metadata-log FILE   pegasus-exitcode's, accepted
                             for compatibility and without effect (sheaf evaluates no profile
                             expressions -- the planner warns about them -- and keeps no JSON logs)

Policy: the job succeeded only if (1) RETURN, when given, is 0 or a ``-S`` code; (2) no failure
message occurs in JOB.out, its companion JOB.err (same name with ``.out`` -> ``.err``) or any further
file named; (3) every success message occurs in one of them; (4) a ``[cluster-summary ...]`` record
in JOB.out, if present, says ``stat="ok"`` and ``failed=0`` (and a ``[cluster-task`` record without a
summary means the cluster job died).  Messages are encoded as pegasus-exitcode's: ``+`` stands for a
space and ``\\+`` for a plus sign (DAGMan splits SCRIPT arguments on spaces).
Exit status: 0 success, 1 the job failed (the reason on stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from typing import NoReturn

from sheaf.errors import UsageError
from sheaf.jobtools._cli import ToolExit, run_guarded

PROG = "sheaf-exitcode"
_SUMMARY = re.compile(r"\[(?:cluster|seqexec)-summary\b([^\]]*)\]")
_FIELD = re.compile(r'(\w+)=("[^"]*"|[^,\s]*)')


class JobFailed(Exception):
    """The job's outcome is a failure; the message says why."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (usage: {self.format_usage().strip().removeprefix('usage: ')})")


def decode_message(text: str) -> str:
    """pegasus-exitcode's message encoding: '+' is a space, '\\+' a plus; other text is literal."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "+":
            out.append(" ")
        elif text[i] == "\\" and text[i + 1:i + 2] == "+":
            out.append("+")
            i += 1
        else:
            out.append(text[i])
        i += 1
    return "".join(out)


def _parser() -> _Parser:
    p = _Parser(prog=PROG, add_help=True, allow_abbrev=False)
    p.add_argument("-r", "--return", dest="status", type=int, metavar="RETURN")
    p.add_argument("-S", "--success-code", dest="codes", type=int, action="append", default=[])
    p.add_argument("-s", "--success-message", "--success-msg", dest="success", action="append", default=[])
    p.add_argument("-f", "--failure-message", "--failure-msg", dest="failure", action="append", default=[])
    p.add_argument("-R", "--retry", type=int, default=0)
    p.add_argument("--rename", action="store_true")
    p.add_argument("-n", "--no-rename", action="store_true")
    p.add_argument("-N", "--no-metadata", action="store_true")
    p.add_argument("-I", "--no-invocations", action="store_true")
    # pegasus-exitcode's other options, which users pass through dagman.post.arguments (test/core 053
    # sets -U): accepted, without effect here
    p.add_argument("-U", "--update-submit-file", action="store_true")
    p.add_argument("-l", "--log", metavar="FILE")
    p.add_argument("-M", "--metadata-log", metavar="FILE")
    p.add_argument("files", nargs="+", metavar="JOB.out")
    return p


def errfile_of(outfile: str) -> str:
    """JOB.out -> JOB.err; JOB.out.003 -> JOB.err.003 (the last '.out' is replaced)."""
    i = outfile.rfind(".out")
    return outfile[:i] + ".err" + outfile[i + 4:] if i >= 0 else outfile + ".err"


def _rotate(outfile: str) -> str:
    for seq in range(1000):
        target = f"{outfile}.{seq:03d}"
        if not os.path.exists(target):
            break
    else:
        raise JobFailed(f"{outfile} has been renamed too many times")
    errfile = errfile_of(outfile)
    os.rename(outfile, target)
    if os.path.isfile(errfile):
        os.rename(errfile, f"{errfile}.{seq:03d}")
    return target


def _read(path: str) -> str:
    try:
        with open(path, "rb") as stream:
            return stream.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def _check_cluster(stdout: str) -> None:
    match = _SUMMARY.search(stdout)
    if match is None:
        if "[cluster-task" in stdout:
            raise JobFailed("cluster-summary is missing")
        return
    fields = {k: v.strip('"') for k, v in _FIELD.findall(match.group(1))}
    if fields.get("stat", "ok") != "ok":
        raise JobFailed(f"cluster-summary stat={fields['stat']}")
    if fields.get("failed", "0").isdigit() and int(fields.get("failed", "0")) > 0:
        raise JobFailed(f"cluster-summary failed={fields['failed']}")


def check(outfile: str, extra: Sequence[str], status: int | None, codes: Sequence[int],
          success: Sequence[str], failure: Sequence[str]) -> None:
    """Raise ``JobFailed`` unless the job succeeded by the rules in the module docstring."""
    if status is not None and status != 0 and status not in codes:
        raise JobFailed(f"job exit code {status}" + (" (killed by a signal)" if status < 0 else ""))
    if not os.path.isfile(outfile):
        raise JobFailed(f"{outfile} does not exist")
    texts = [_read(path) for path in (outfile, errfile_of(outfile), *extra)]
    for message in map(decode_message, failure):
        if any(message in text for text in texts):
            raise JobFailed(f"failure message found in output: {message!r}")
    for message in map(decode_message, success):
        if not any(message in text for text in texts):
            raise JobFailed(f"success message missing from output: {message!r}")
    _check_cluster(texts[0])


def _main(args: list[str]) -> int:
    opts = _parser().parse_args(args)
    outfile = opts.files[0]
    try:
        if opts.rename and os.path.isfile(outfile):
            outfile = _rotate(outfile)
        check(outfile, opts.files[1:], opts.status, opts.codes, opts.success, opts.failure)
    except JobFailed as exc:
        raise ToolExit(1, f"{opts.files[0]}: job failed: {exc}") from None
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console entry point of ``sheaf-exitcode``."""
    run_guarded(PROG, _main, argv)
