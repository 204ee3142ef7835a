"""``sheaf-transfer``: what stage-in, stage-out and inter-site transfer jobs run (Pegasus's pegasus-transfer).

Usage::

    sheaf-transfer [--threads N] [--link] [--root DIR ...] [--integrity none|full|nosymlink]
                   [--meta-dir DIR] [--attempts N] [--backoff S] [--timeout S]
                   [--slice OFFSET:LENGTH] FILE

``FILE`` is a transfer list (JSON, ``_transfer_list``: a file whose first non-blank character is ``[``)
or the older pairs text (``_transfer_pairs``); with ``--slice``, those bytes of ``FILE`` are a JSON
transfer list (the plan's ``<workflow>.lists``, ``_lists``).  Every transfer is checked before any moves
(``_transfer_run.check_transfers``): a ``file://`` destination outside every ``--root``, a scheme
sheaf cannot write, or a transfer none of whose sources sheaf can read is bad input.

Schemes: ``file://`` (copied, or linked with ``--link``), ``http(s)://`` and ``webdav(s)://`` (GET with
resume, PUT), ``scp://``/``sftp://`` (OpenSSH), ``s3://`` (boto3); ``gs``, ``gsiftp``, ``root``,
``irods``, ``stash`` and ``go`` are named with a way to make the file available instead
(``_transfer_schemes``).  Sources are tried in order, each up to ``--attempts`` times with a doubling
``--backoff``; every failure names the URL, the attempt and the cause; writes are atomic; up to
``--threads`` transfers run at once (``pegasus.transfer.threads``, default 2).

Exit status: 0 every transfer done; 1 a transfer failed (each one named on stderr); 2 usage or bad
input, with nothing moved.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from sheaf.errors import UsageError
from sheaf.jobtools._cli import run_guarded
from sheaf.jobtools._integrity import MODES
from sheaf.jobtools._lists import Span, parse_slice
from sheaf.jobtools._transfer_list import Endpoint, Transfer, load_transfer_list, parse_transfer_list
from sheaf.jobtools._transfer_run import (
    TransferOptions,
    TransferOutcome,
    check_transfers,
    inside,
    raise_failures,
    run_transfers,
)

__all__ = [
    "Endpoint",
    "Transfer",
    "TransferOptions",
    "TransferOutcome",
    "check_transfers",
    "inside",
    "load_transfer_list",
    "main",
    "parse_transfer_list",
    "read_input",
    "run_transfers",
]

PROG = "sheaf-transfer"
USAGE = (f"{PROG} [--threads N] [--link] [--root DIR ...] [--integrity none|full|nosymlink] "
         "[--meta-dir DIR] [--slice OFFSET:LENGTH] FILE")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (usage: {USAGE})")


def _positive(kind: Callable[[str], float], least: float) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value) or value < least:
            raise argparse.ArgumentTypeError(f"{text} is not a finite number of at least {least:g}")
        return value

    return convert


def _arguments() -> _Parser:
    parser = _Parser(prog=PROG, description="Move the files of a transfer list.")
    parser.add_argument("--root", action="append", default=[],
                        help="a directory file:// destinations may lie in")
    parser.add_argument("--link", action="store_true", help="make symbolic links to file:// sources")
    parser.add_argument("--threads", type=_positive(int, 1), default=2, help="transfers at once")
    parser.add_argument("--integrity", choices=MODES, default="none", help="pegasus.integrity.checking")
    parser.add_argument("--meta-dir", help="where integrity records are kept")
    parser.add_argument("--attempts", type=_positive(int, 1), default=3, help="tries of each source")
    parser.add_argument("--backoff", type=_positive(float, 0), default=1.0, help="first wait, doubling")
    parser.add_argument("--timeout", type=_positive(float, 0.001), default=60.0, help="per connect/read")
    parser.add_argument("--slice", type=parse_slice, help="OFFSET:LENGTH: the list is those bytes of FILE")
    parser.add_argument("file", help="the transfer list (JSON) or pairs file")
    return parser


def read_input(path: str, roots: Sequence[str], span: Span | None = None) -> list[Transfer]:
    """The transfers of ``path``: a JSON transfer list (``span``: in those bytes of it), or pairs text
    (checked against the first root)."""
    if span is not None:
        return load_transfer_list(path, span)
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"["):
        return load_transfer_list(path)
    if len(roots) != 1:
        raise UsageError(f"a pairs file needs exactly one --root (usage: {USAGE})")
    # Imported here: the pairs reader needs sheaf.formats (and with it sheaf.model), which a JSON list
    # does not.
    from sheaf.jobtools._transfer_pairs import pairs_to_transfers, read_pairs

    return pairs_to_transfers(read_pairs(path, roots[0]))


def _log(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def _main(argv: list[str]) -> int:
    args = _arguments().parse_args(argv)
    if args.integrity != "none" and not args.meta_dir:
        raise UsageError(f"--integrity {args.integrity} needs --meta-dir (usage: {USAGE})")
    try:
        transfers = read_input(args.file, args.root, args.slice)
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    options = TransferOptions(threads=args.threads, link=args.link, roots=tuple(args.root),
                              integrity=args.integrity, meta_dir=args.meta_dir, attempts=args.attempts,
                              backoff=args.backoff, timeout=args.timeout, log=_log)
    check_transfers(transfers, options, args.file)
    raise_failures(run_transfers(transfers, options))
    print(f"{PROG}: {len(transfers)} file(s) transferred")
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    run_guarded(PROG, _main, argv)


if __name__ == "__main__":
    main()
