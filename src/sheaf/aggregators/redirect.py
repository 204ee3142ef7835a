"""``python -m sheaf.aggregators.redirect``: a clustered task's stdin/stdout/stderr files.

Command line (written by ``sheaf.codegen._streams``; an argv list, never a shell)::

    redirect.py [-i FILE] [-o FILE] [-e FILE] -- EXECUTABLE ARGS...

Pegasus runs each task of a cluster under pegasus-kickstart, whose ``-i``/``-o``/``-e`` give the task
the stdin, stdout and stderr files its job names; the cluster's own streams are then only the
aggregator's.  This does the same for sheaf's clusters, whichever aggregator runs them (seqexec or
PMC, sheaf's or Pegasus's): it opens the files -- stdin for reading, stdout and stderr created or
truncated, as kickstart does -- puts them on descriptors 0, 1 and 2, and replaces itself with the
task (``execvp``), so the task's exit status and signals are the aggregator's to see, unchanged.
A file that cannot be opened, or a program that cannot be run, is a failed task (exit 1 or 127,
the reason on the cluster's stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

_FLAGS = {"stdin": os.O_RDONLY, "stdout": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
          "stderr": os.O_WRONLY | os.O_CREAT | os.O_TRUNC}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sheaf redirect")
    parser.add_argument("-i", dest="stdin")
    parser.add_argument("-o", dest="stdout")
    parser.add_argument("-e", dest="stderr")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("sheaf redirect: no program after --", file=sys.stderr)
        return 2
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        path = getattr(args, name)
        if path is None:
            continue
        try:
            opened = os.open(path, _FLAGS[name], 0o644)
        except OSError as exc:
            print(f"sheaf redirect: cannot open {path} as the task's {name}: {exc.strerror}", file=sys.stderr)
            return 1
        os.dup2(opened, fd)
        os.close(opened)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"sheaf redirect: cannot run {command[0]}: {exc.strerror}\n".encode())
    return 127


if __name__ == "__main__":
    sys.exit(main())
