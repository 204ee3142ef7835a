"""The error boundary every aggregator's ``main()`` shares: one line on stderr, an exit code, no traceback.

``InputError``/``UsageError`` exit 2 (bad input or usage, the sheaf-wide rule); ``ToolExit`` carries
the code a Pegasus tool uses for that situation (pegasus-cluster exits 3 when its input file cannot
be opened, for example).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing and sheaf.errors are not imported at start-up (sheaf-cluster's cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn

BAD_INPUT = 2


class ToolExit(Exception):
    """Stop the tool with ``code``, after printing ``message`` (if any) on stderr."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _is_bad_input(exc: Exception) -> bool:
    """An ``InputError``/``UsageError``?  If ``sheaf.errors`` was never imported, it cannot be one."""
    errors = sys.modules.get("sheaf.errors")
    return errors is not None and isinstance(exc, (errors.InputError, errors.UsageError))


def run_guarded(prog: str, body: Callable[[list[str]], int], argv: Sequence[str] | None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = body(args)
    except ToolExit as exc:
        if exc.message:
            print(f"{prog}: {exc.message}", file=sys.stderr, flush=True)
        code = exc.code
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        if not _is_bad_input(exc):
            raise
        print(f"{prog}: error: {exc}", file=sys.stderr, flush=True)
        code = BAD_INPUT
    sys.stdout.flush()
    sys.exit(code)
