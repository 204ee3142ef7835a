"""The records a DAG file is parsed into: a :class:`Dag` of :class:`NodeSpec` nodes.

Invariants of a parsed :class:`Dag`: node names are unique; every PARENT/CHILD name is a node (a splice
name stands for the splice's sink nodes as a parent and its source nodes as a child); spliced nodes are
named ``splice+node``; SERVICE nodes are kept apart (:attr:`Dag.services`: no edges, not in
:attr:`Dag.nodes`, their names unique among all nodes); every path is absolute (resolved against the
DAG file's directory and the node's ``DIR``). A cycle is not an error here: DAGMan runs what it can and
reports the cycle at the end (``DAG_STATUS_CYCLE``); :attr:`Dag.cycle` holds one, as a path, for the
messages. A VARS line's ``PREPEND``/``APPEND`` is kept per macro (``NodeSpec.var_modes``; "" when the
line names neither, for ``DAGMAN_DEFAULT_APPEND_VARS`` to decide at submission).
"""

from __future__ import annotations

__all__ = ["ALL_NODES", "Dag", "DotOptions", "InlineDescription", "NodeSpec", "Rescue", "Script",
           "ScriptKind"]

from dataclasses import dataclass, field
from typing import Literal

from sheaf.condor._config import condor_boolean
from sheaf.errors import FormatError

ScriptKind = Literal["PRE", "POST", "HOLD"]
ALL_NODES = "ALL_NODES"


@dataclass(frozen=True, slots=True)
class Script:
    kind: ScriptKind
    argv: tuple[str, ...]  # executable first; $JOB, $RETRY, $RETURN ... substituted when run
    cwd: str
    defer_status: int | None = None
    defer_time: float = 0.0
    debug: tuple[str, str] | None = None  # SCRIPT DEBUG: (absolute file, STDOUT | STDERR | ALL)
    path: str = ""  # the DAG file of the SCRIPT command ("": not from a file)
    line: int = 0  # its line there


@dataclass(frozen=True, slots=True)
class InlineDescription:
    """A submit description written in the DAG file (``SUBMIT-DESCRIPTION name {...}``, ``JOB n {...}``):
    its logical lines, numbered as lines of the DAG file ``path``."""

    name: str
    path: str
    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class DotOptions:
    update: bool = False  # DAGMan's default is DONT-UPDATE
    overwrite: bool = True
    include: str | None = None  # a header file copied into the graph
    include_name: str | None = None  # that file as the DAG names it (the graph's comments name it so)


@dataclass(slots=True)
class NodeSpec:
    name: str
    submit: str  # absolute path of the submit description (the sub-DAG file for SUBDAG EXTERNAL)
    directory: str  # absolute: where the node's files are resolved and scripts run
    line: int
    path: str
    subdag: bool = False
    final: bool = False
    noop: bool = False
    done: bool = False
    retries: int = 0
    unless_exit: int | None = None
    vars: dict[str, str] = field(default_factory=dict)
    pre: Script | None = None
    post: Script | None = None
    pre_skip: int | None = None
    priority: int = 0
    category: str | None = None
    abort_on: tuple[int, int | None] | None = None  # (node exit value, DAG return value)
    var_modes: dict[str, str] = field(default_factory=dict)  # VARS key -> "PREPEND" | "APPEND" | ""
    explicit: dict[str, int] = field(default_factory=dict)  # property -> order of the command that set it
    var_order: dict[str, int] = field(default_factory=dict)  # VARS key -> order of the command that set it
    description: str | None = None  # the name of an InlineDescription that ``submit`` names
    hold: Script | None = None
    save_point: str | None = None  # SAVE_POINT_FILE (absolute)
    tolerance: tuple[int, bool, str] | None = None  # TOLERANCE: (value, a percentage?, "" | FAIL-FAST | WAIT)


@dataclass(slots=True)
class Dag:
    path: str
    nodes: dict[str, NodeSpec]
    children: dict[str, list[str]]
    parents: dict[str, list[str]]
    maxjobs: dict[str, int]  # per CATEGORY
    config: dict[str, str]  # DAGMan configuration (CONFIG file), upper-case keys, macros expanded
    config_path: str | None = None
    final: str | None = None
    dot: str | None = None
    node_status_file: tuple[str, float] | None = None
    node_status_always: bool = False  # NODE_STATUS_FILE ... ALWAYS-UPDATE
    jobstate_log: str | None = None
    cycle: tuple[str, ...] = ()  # a cycle of PARENT/CHILD edges (its first node repeated last), if any
    files: tuple[str, ...] = ()  # every DAG file of the run (``condor_submit_dag a.dag b.dag``), first first
    descriptions: dict[str, InlineDescription] = field(default_factory=dict)
    description_scopes: dict[str, str] = field(default_factory=dict)  # name -> splice prefix defining it
    dot_options: DotOptions = field(default_factory=DotOptions)
    env: dict[str, str] = field(default_factory=dict)  # ENV SET: DAGMan's own environment
    env_get: tuple[str, ...] = ()  # ENV GET: names DAGMan takes from the submitter's environment
    job_attrs: dict[str, str] = field(default_factory=dict)  # SET_JOB_ATTR: DAGMan's own job ad
    warnings: list[str] = field(default_factory=list)  # "file:line: message" for what sheaf does not do
    # the warnings DAGMAN_USE_STRICT makes fatal: (the least level that does, file, line, message)
    strict_warnings: list[tuple[int, str, int, str]] = field(default_factory=list)
    weak: set[tuple[str, str]] = field(default_factory=set)  # WEAK (parent, child) edges (never also strong)
    services: dict[str, NodeSpec] = field(default_factory=dict)  # SERVICE nodes: beside the DAG, not in it
    provisioner: str | None = None  # the PROVISIONER node: every other node waits until its job runs
    vars_read: bool = True  # False: VARS lines were passed over (``parse_dag(..., read_vars=False)``)
    own_dirs: bool = False  # -usedagdir: every DAG file (splices and INCLUDEs too) in its own directory
    config_lines: dict[str, int] = field(default_factory=dict)  # key -> its line in the CONFIG file
    # where each category's MAXJOBS was last set: (file, line, the splice prefix of that file)
    maxjobs_lines: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    category_lines: dict[str, tuple[str, int]] = field(default_factory=dict)  # the first CATEGORY naming it

    def flag(self, key: str, default: bool) -> bool:
        """A boolean knob of the DAG's configuration, read as HTCondor reads one: ``true``, ``false``,
        ``1`` or ``0`` in any case; anything else is refused, naming the knob and where it was set
        (HTCondor would evaluate it as an expression, and stops when that gives no boolean)."""
        raw = self.config.get(key)
        if raw is None:
            return default
        value = condor_boolean(raw)
        if value is None:
            raise FormatError(f"{key}: not a boolean", rule="True or False (or 1 or 0)", value=raw,
                              path=self.config_path if key in self.config_lines else None,
                              line=self.config_lines.get(key))
        return value


@dataclass(frozen=True, slots=True)
class Rescue:
    path: str
    done: frozenset[str]
    retries: dict[str, int]
    unless_exit: dict[str, int] = field(default_factory=dict)  # RETRY ... UNLESS-EXIT v, where given
