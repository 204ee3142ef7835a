"""The ``$macros`` of PRE, POST and HOLD script arguments, as DAGMan's ``Script::BackgroundRun``
expands them.

A script's command line is split on blanks; a *whole word* that names a macro, compared without
regard to case (``$job``, ``$Return``), is replaced by its value.  A macro inside a word
(``out.$JOB``, ``$JOB.log``) is not expanded: DAGMan compares whole words only.

For every script: ``$NODE``/``$JOB`` (the node's name), ``$RETRY`` (retries done so far, 0 the first
time), ``$MAX_RETRIES``, ``$NODE_COUNT`` (every node, FINAL included), ``$QUEUED_COUNT`` (nodes whose
job is in the queue), ``$DONE_COUNT``, ``$FAILED_COUNT``, ``$FUTILE_COUNT`` (nodes that can never run
because a node they depend on failed), ``$DAGID`` (the DAG's DAGMan job id), ``$DAG_STATUS``.
For POST and HOLD scripts only (a PRE script runs before the job), about the node's job:
``$JOBID`` (``cluster.proc``, of the last proc of a job list; ``-1.-1`` when nothing was submitted;
a NOOP node's fake ``0.2147483647``), ``$CLUSTERID``,
``$JOB_COUNT`` (jobs submitted: the procs of a job list, else 1, or 0), ``$SUCCESS`` (``True`` when
the job, or the job list within its failure tolerance, succeeded), ``$RETURN`` (the job's exit code,
``-signal``, -1001 when it could not be submitted or never ran, -1004 after a failed PRE script; a
job list's return value, ``_procs``), ``$EXIT_CODES`` (the codes the procs exited with, ascending, each
once), ``$EXIT_CODE_COUNTS`` (``code:count``, ascending), ``$EXIT_CODE_LIST`` (each proc's code in
proc order, nothing for a removed proc), ``$JOB_ABORT_COUNT`` (procs removed),
``$PRE_SCRIPT_RETURN`` (-1 without a PRE script).

Any other word starting with ``$``, and a job macro (POST and HOLD only) in a PRE script, is *not*
expanded and draws DAGMan's "unrecognized macro" warning, which ``DAGMAN_USE_STRICT`` >= 1 (DAGMan's
default is 1) turns into a fatal error.  DAGMan finds it when the script is about to run and then
stops the whole DAG; sheaf checks every script before the run starts (:func:`check_scripts`), so the
same DAG is refused - one message naming the DAG file, the SCRIPT line, the node and the word, exit
2 - before anything runs,
and with ``DAGMAN_USE_STRICT = 0`` it is a warning and the word is passed unchanged.
"""

from __future__ import annotations

__all__ = ["check_scripts", "script_argv"]

from collections import Counter
from collections.abc import Callable
from typing import Protocol

from sheaf.condor import Dag, Script
from sheaf.engine._nodes import NOOP_PROC, RETURN_PRE_FAILED, RETURN_SUBMIT_FAILED, Node, futile_nodes
from sheaf.engine._runconfig import use_strict
from sheaf.errors import FormatError


class DagView(Protocol):
    """What the macros read from the state machine (``DagState``)."""

    dag: Dag
    nodes: dict[str, Node]
    counts: dict[str, int]
    failed_count: int
    dag_id: int

    def dag_status(self) -> int: ...

    def node_state(self, name: str) -> str: ...


Value = Callable[[DagView, Node], str]

_ALL: dict[str, Value] = {
    "$NODE": lambda m, n: n.name,
    "$JOB": lambda m, n: n.name,
    "$RETRY": lambda m, n: str(n.attempt),
    "$MAX_RETRIES": lambda m, n: str(n.max_retries),
    "$DAG_STATUS": lambda m, n: str(m.dag_status()),
    "$FAILED_COUNT": lambda m, n: str(m.failed_count),
    "$FUTILE_COUNT": lambda m, n: str(len(futile_nodes(m.dag, m.node_state))),
    "$DONE_COUNT": lambda m, n: str(m.counts["done"]),
    "$QUEUED_COUNT": lambda m, n: str(m.counts["submitted"]),
    "$NODE_COUNT": lambda m, n: str(len(m.nodes)),
    "$DAGID": lambda m, n: str(m.dag_id),
}


def _job_id(node: Node) -> tuple[int, int]:
    """(cluster, proc) of the node's job, as DAGMan has it: (-1, -1) when none was submitted."""
    if node.spec.noop:
        return (0, NOOP_PROC)
    if node.job_return == RETURN_PRE_FAILED or _never_submitted(node):
        return (-1, -1)
    return (node.cluster, max(len(node.procs) - 1, 0))


def _never_submitted(node: Node) -> bool:
    return node.job_return == RETURN_SUBMIT_FAILED and (node.reason or "").startswith("submit failed")


def _exit_codes(node: Node) -> list[int]:
    """The codes the node's procs exited with, in proc order (removed procs left out)."""
    if node.procs:
        return [code for code in node.procs if code is not None]
    value = node.job_return
    return [value] if value is not None and value >= 0 and not node.spec.noop else []


def _code_counts(node: Node) -> str:
    counts = Counter(_exit_codes(node))
    return ",".join(f"{code}:{counts[code]}" for code in sorted(counts))


def _aborted(node: Node) -> int:
    if node.procs:
        return node.procs.count(None)
    return int(node.job_return == RETURN_SUBMIT_FAILED and not _never_submitted(node))


def _job_count(node: Node) -> int:
    return len(node.procs) if node.procs else int(_job_id(node)[0] > 0)


_POST: dict[str, Value] = {
    "$JOBID": lambda m, n: "{}.{}".format(*_job_id(n)),
    "$CLUSTERID": lambda m, n: str(_job_id(n)[0]),
    "$JOB_COUNT": lambda m, n: str(_job_count(n)),
    "$SUCCESS": lambda m, n: "False" if n.job_failed or n.job_return is None else "True",
    "$RETURN": lambda m, n: str(n.job_return if n.job_return is not None else -1),
    "$EXIT_CODES": lambda m, n: ",".join(map(str, sorted(set(_exit_codes(n))))),
    "$EXIT_CODE_LIST": lambda m, n: ",".join("" if c is None else str(c) for c in n.procs) if n.procs
    else ",".join(map(str, _exit_codes(n))),
    "$EXIT_CODE_COUNTS": lambda m, n: _code_counts(n),
    "$PRE_SCRIPT_RETURN": lambda m, n: str(n.pre_return if n.pre_return is not None else -1),
    "$JOB_ABORT_COUNT": lambda m, n: str(_aborted(n)),
}


def _table(kind: str) -> dict[str, Value]:
    return _ALL if kind == "PRE" else {**_ALL, **_POST}


def script_argv(machine: DagView, node: Node, script: Script) -> tuple[str, ...]:
    """The script's argv with DAGMan's macros expanded (unknown ``$words`` pass unchanged)."""
    table = _table(script.kind)
    out = []
    for word in script.argv:
        value = table.get(word.upper()) if word.startswith("$") else None
        out.append(value(machine, node) if value is not None else word)
    return tuple(out)


def check_scripts(dag: Dag, warn: Callable[[str], None]) -> None:
    """Every ``$word`` of every script that DAGMan would not expand: a :class:`FormatError` under
    ``DAGMAN_USE_STRICT`` >= 1 (the default), else a warning each."""
    strict = use_strict(dag)
    for spec in dag.nodes.values():
        for script in (spec.pre, spec.post, spec.hold):
            if script is None:
                continue
            table = _table(script.kind)
            for word in script.argv:
                if not word.startswith("$") or word.upper() in table:
                    continue
                message = (f"unrecognized macro {word} in node {spec.name} {script.kind} script arguments"
                           + (" (a POST script macro)" if word.upper() in _POST else ""))
                if strict >= 1:
                    raise FormatError(message, rule="script arguments use DAGMan's script macros "
                                      "(DAGMAN_USE_STRICT >= 1 makes this warning fatal)", value=word,
                                      path=script.path or spec.path,
                                      line=script.line if script.path else spec.line)
                warn(f"{script.path or spec.path}: {message}; passed unchanged")

