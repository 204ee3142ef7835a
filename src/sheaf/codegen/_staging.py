"""What codegen writes of the data jobs: a ``condorio`` job's file-transfer lines, and the pairs text.

The data jobs (create_dir, stage_in, stage_out, register, cleanup) are the planner's
(``sheaf.planner.plan_data``), which has run before ``write_plan``: codegen only writes them.
``transfer_lines`` are a ``condorio`` job's HTCondor file-transfer commands.
"""

from __future__ import annotations

from collections.abc import Iterable

from sheaf._shellwords import join_words
from sheaf.errors import PlanningError
from sheaf.planner import ExecJob


def transfer_lines(job: ExecJob, inputs: tuple[str, ...], outputs: tuple[str, ...],
                   workdir: str | None = None) -> tuple[tuple[str, str], ...]:
    """The submit lines of a ``condorio`` job: HTCondor transfers its inputs (absolute paths on the
    staging site) into its sandbox and its outputs (names) back to its ``initialdir`` (``workdir``).
    HTCondor's lists are separated by commas, so a file name with a comma cannot be written (a
    ``PlanningError``).  Deep LFNs (``deep/f.a``) keep their directories, as Pegasus keeps them:
    the inputs under ``workdir`` are written relative to it with ``preserve_relative_paths``,
    which places them -- and brings the outputs back -- at those paths."""
    for name in (*inputs, *outputs):
        if "," in name:
            raise PlanningError(f"job '{job.id}' transfers a file whose name holds a comma",
                                rule="HTCondor's transfer_input_files/transfer_output_files lists are "
                                     "comma-separated", value=name)
    lines = [("should_transfer_files", "YES"), ("when_to_transfer_output", "ON_EXIT")]
    deep = tuple(_deep(path, workdir) for path in inputs)
    if deep != inputs or any("/" in name for name in outputs):
        lines.append(("preserve_relative_paths", "True"))
    if inputs:
        lines.append(("transfer_input_files", ",".join(deep)))
    lines.append(("transfer_output_files", ",".join(outputs)))
    return tuple(lines)


def _deep(path: str, workdir: str | None) -> str:
    """An input's entry: its path relative to ``workdir`` when that is a deep LFN there, else as given."""
    if workdir is None or not path.startswith(workdir.rstrip("/") + "/"):
        return path
    relative = path[len(workdir.rstrip("/")) + 1:]
    return relative if "/" in relative else path


# The older "pairs" format sheaf-transfer reads beside the JSON lists the data pass writes: kept for
# lists written by hand and by the tools' own tests.
def pairs_text(pairs: Iterable[tuple[str, ...]]) -> str:
    """``sheaf-transfer``'s pairs file: per line two words quoted as POSIX shell words (and ``x`` for
    a file to make executable).  A path that
    one line cannot carry (LF, NUL) or that is not text (an undecodable byte) is a ``PlanningError``."""
    lines = []
    for pair in pairs:
        for path in pair:
            if "\n" in path or "\0" in path or (not path.isprintable() and not _encodable(path)):
                raise PlanningError("a path to stage in cannot be written to the pairs file",
                                    rule="staged paths hold no newline, NUL or undecodable byte", value=path)
        lines.append(join_words(pair) + "\n")
    return "".join(lines)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
