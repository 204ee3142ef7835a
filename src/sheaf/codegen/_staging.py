"""What codegen does with the data pass: run it when ``plan()`` could not, and the condorio lines.

The data jobs (create_dir, stage_in, stage_out, register, cleanup) are the planner's
(``sheaf.planner._data``); ``plan()`` adds them when it knows the submit directory.  A plan whose submit
directory is a numbered ``runNNNN`` learns it only when ``write_plan`` reserves it, so ``data_for``
runs the planner's pass then, on a copy: the caller's ``ExecutableWorkflow`` is left as it was, and
writing it twice gives two independent plans.

``transfer_lines`` are a ``condorio`` job's HTCondor file-transfer commands.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sheaf._shellwords import join_words
from sheaf.errors import PlanningError
from sheaf.planner import ExecJob, ExecutableWorkflow, plan_data


def data_for(exec_wf: ExecutableWorkflow, submit_dir: str, exec_dir: str | None = None,
             keep: frozenset[str] = frozenset()) -> ExecutableWorkflow:
    """``exec_wf`` with its data jobs: itself when the pass has run, else a planned copy (``exec_dir``:
    pegasus-plan's relative execution directory, under each site's shared scratch)."""
    if exec_wf.data_planned:
        return exec_wf
    copy = replace(exec_wf, jobs=list(exec_wf.jobs), edges=list(exec_wf.edges),
                   warnings=list(exec_wf.warnings), workdirs={}, job_inputs={}, file_transfers={},
                   lite={}, bypass={})
    plan_data(copy, submit_dir, exec_dir, keep)
    return copy


def transfer_lines(job: ExecJob, inputs: tuple[str, ...], outputs: tuple[str, ...],
                   workdir: str | None = None) -> tuple[tuple[str, str], ...]:
    """The submit lines of a ``condorio`` job: HTCondor transfers its inputs (absolute paths on the
    staging site) into its sandbox and its outputs (names) back to its ``initialdir`` (``workdir``).
    HTCondor's lists are separated by commas, so a file name with a comma cannot be written (a
    ``PlanningError``).  Deep LFNs (``deep/f.a``) keep their directories, as Pegasus keeps them
    (PM-1875): the inputs under ``workdir`` are written relative to it with ``preserve_relative_paths``,
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
