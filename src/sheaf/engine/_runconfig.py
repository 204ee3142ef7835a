"""DAGMan configuration and the validation a run makes before it writes anything.

The ``CONFIG`` file's knobs become :class:`Limits` (command-line overrides win); a knob ``sheaf run``
does not honour is warned about by name.  :func:`load_descriptions` reads every submit description
and expands it for its first node: a bad one is warned about before anything runs and fails its
node when submitted (as DAGMan's submission does); the other nodes sharing it are expanded at
submission; an expansion that cannot change by submission time is kept so a first attempt is not
expanded twice.
``ENV SET`` values are applied for the run's duration by :class:`DagEnvironment`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sheaf._fields import INT_MAX, INT_MIN, check_fields
from sheaf.condor import Dag, NodeSpec, parse_dag
from sheaf.engine._events import Submit
from sheaf.engine._nodejob import render_node
from sheaf.engine._submit import JobSpec, SubmitDescription, node_description
from sheaf.engine._throttle import Limits
from sheaf.errors import FormatError, InputError, UsageError


def use_strict(dag: Dag) -> int:
    """``DAGMAN_USE_STRICT`` (default 1): warnings of this level or lower are errors, as in DAGMan."""
    raw = dag.config.get("DAGMAN_USE_STRICT", "1").strip()
    try:
        return int(raw)
    except ValueError:
        raise FormatError("not an integer", rule="DAGMAN_USE_STRICT is an integer 0..3", value=raw,
                          path=dag.config_path, line=dag.config_lines.get("DAGMAN_USE_STRICT")) from None


def check_strict_warnings(dag: Dag) -> None:
    """The DAG file's first warning that ``DAGMAN_USE_STRICT`` makes fatal (a second PRIORITY at level
    2; a VARS macro defined twice, a second CATEGORY, PRE_SKIP, NODE_STATUS_FILE or JOBSTATE_LOG at
    level 3), refused at its line before anything runs."""
    strict = use_strict(dag)
    for level, path, line, message in dag.strict_warnings:
        if strict >= level:
            raise FormatError(message, rule=f"DAGMAN_USE_STRICT = {strict} makes this warning fatal "
                              f"(it is fatal from {level})", value=f"DAGMAN_USE_STRICT = {strict}",
                              path=path, line=line)


#: the boolean knobs sheaf honours: each is checked as the DAG is loaded, though some are read only when
#: the run writes its rescue DAG or its metrics, so that a bad value stops nothing half-way
BOOLEAN_KNOBS = (
    "DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS", "DAGMAN_ALWAYS_RUN_POST", "DAGMAN_AUTO_RESCUE",
    "DAGMAN_DEFAULT_APPEND_VARS", "DAGMAN_MUNGE_NODE_NAMES", "DAGMAN_PROHIBIT_MULTI_JOBS",
    "DAGMAN_REMOVE_JOB_LIST_ON_FAILURE", "DAGMAN_REPORT_GRAPH_METRICS", "DAGMAN_RESET_RETRIES_UPON_RESCUE",
    "DAGMAN_RETRY_NODE_FIRST", "DAGMAN_STARTUP_CYCLE_DETECT", "DAGMAN_SUBMIT_DEPTH_FIRST",
    "DAGMAN_SUPPRESS_NOTIFICATION",
)


def check_flags(dag: Dag) -> None:
    """Refuse a boolean knob that is no boolean (``Dag.flag``) before anything runs."""
    for key in BOOLEAN_KNOBS:
        dag.flag(key, False)


def config_int(dag: Dag, key: str, default: int) -> int:
    raw = dag.config.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise FormatError("not an integer", rule=f"{key} is an integer", value=raw,
                          path=dag.config_path, line=dag.config_lines.get(key)) from None
    if value < 0:
        raise FormatError("negative throttle", rule=f"{key} >= 0", value=raw, path=dag.config_path,
                          line=dag.config_lines.get(key))
    return value


def config_signed(dag: Dag, key: str, default: int) -> int:
    raw = dag.config.get(key)
    try:
        return default if raw is None else int(raw)
    except ValueError:
        raise FormatError("not an integer", rule=f"{key} is an integer", value=raw,
                          path=dag.config_path, line=dag.config_lines.get(key)) from None


SUBMITS_PER_INTERVAL = (1, 1000)  # DAGMAN_MAX_SUBMITS_PER_INTERVAL's legal range (HTCondor's manual)
MAX_RESCUE_NUM = (0, 999)  # DAGMAN_MAX_RESCUE_NUM's legal range (HTCondor's manual)


def config_clamped(dag: Dag, key: str, default: int, bounds: tuple[int, int]) -> int:
    """An integer knob DAGMan clamps to its legal range (a smaller value is taken as the lower bound,
    a larger one as the upper) rather than refuses; only text that is no integer is an error."""
    return min(max(config_signed(dag, key, default), bounds[0]), bounds[1])


@dataclass(frozen=True, slots=True)
class DagmanOptions:
    """What ``condor_submit_dag``'s command line says of a run; ``None`` leaves the DAG's CONFIG knob
    (or DAGMan's default) in force.

    ``dag_files``: the DAG file(s) of the directory to run (none: the one ``*.dag`` there; several run
    as one DAG, the first naming the run); ``maxjobs``/``maxidle``/``maxpre``/``maxpost``: ``-maxjobs``
    ... (0: no limit); ``priority``: ``-priority``, added to every node's; ``always_run_post``:
    ``-[Dont]AlwaysRunPost``; ``batch_name``: ``-batch-name`` (default ``<primary DAG file>+<DAGManJobId>``);
    ``suppress_notification``: ``-[dont_]suppress_notification``; ``usedagdir``: ``-usedagdir``, each DAG
    file's relative paths from its own directory (else from the run's directory); ``system_knobs``: the
    ``DAGMAN_*`` knobs of the HTCondor configuration the run is given (the pool configuration file),
    under the ``_CONDOR_`` variables and the CONFIG file, as HTCondor orders its configuration;
    ``force``: ``-force``, the rescue DAGs renamed ``.old`` and the original DAG run; ``auto_rescue``:
    ``-AutoRescue 0|1`` (over ``DAGMAN_AUTO_RESCUE``, default true: a run starts from the newest
    rescue DAG); ``rescue_from``: ``-DoRescueFrom N``, from rescue DAG N, the later ones renamed;
    ``rescue_file``: ``-RescueFile FILE``, from that rescue DAG (a relative name from the run's
    directory), the numbered ones after its number (all, for a name without one) renamed;
    ``load_save``: ``-load_save FILE``, from a save point file (``SAVE_POINT_FILE``: a bare name in
    ``save_files/`` beside the DAG) -- two of these three may not be given together; ``recovery``:
    ``-DoRecovery``, the nodes the DAG's last run finished are done, as after a killed run, whether
    that run ended or not (not with ``load_save``);
    ``subdag_args``: ``sheaf run`` options a SUBDAG's run is given too (the backend its jobs go to)."""

    dag_files: tuple[str, ...] = ()
    maxjobs: int | None = None
    maxidle: int | None = None
    maxpre: int | None = None
    maxpost: int | None = None
    priority: int | None = None
    always_run_post: bool | None = None
    batch_name: str | None = None
    suppress_notification: bool | None = None
    usedagdir: bool = False
    system_knobs: tuple[tuple[str, str], ...] = ()
    force: bool = False
    auto_rescue: bool | None = None
    rescue_from: int | None = None
    rescue_file: str | None = None
    load_save: str | None = None
    recovery: bool = False
    #: what a SUBDAG's run is given besides DAGMan's inherited options: the backend its jobs go to
    subdag_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_fields(self)
        if self.rescue_from is not None and self.rescue_from < 1:  # the rescue DAGs count from 1
            raise UsageError(f"rescue_from {self.rescue_from!r} is not in the range x>=1 (-DoRescueFrom, "
                             "sheaf run --do-rescue-from)")
        given = [flag for flag, value in (("-DoRescueFrom", self.rescue_from),
                                          ("-RescueFile", self.rescue_file), ("-load_save", self.load_save))
                 if value is not None]
        if len(given) > 1:  # condor_submit_dag's words
            raise UsageError(f"{given[-1]} can not be used with the following flag: {given[0]}")
        if self.batch_name is not None and ("\n" in self.batch_name or "\r" in self.batch_name):
            raise UsageError(f"batch_name {self.batch_name!r} holds a line break (-batch-name, sheaf run "
                             "--batch-name: every node job's JobBatchName, one line)")
        if self.recovery and self.load_save is not None:
            raise UsageError("-load_save can not be used with the following flag: -DoRecovery")
        for key, value in self.throttles().items():  # DAGMan keeps them in C ints, as its knobs
            if value is not None and not 0 <= value <= INT_MAX:
                raise UsageError(f"--{key} must be 0 to {INT_MAX} (0 = unlimited), got {value}")
        if self.priority is not None and not INT_MIN <= self.priority <= INT_MAX:
            raise UsageError(f"--priority must be {INT_MIN} to {INT_MAX}, got {self.priority}")

    def throttles(self) -> dict[str, int | None]:
        return {"maxjobs": self.maxjobs, "maxidle": self.maxidle, "maxpre": self.maxpre,
                "maxpost": self.maxpost}


def auto_rescue(dag: Dag, options: DagmanOptions) -> bool:
    """Whether a run starts from the newest rescue DAG: ``-AutoRescue``, else ``DAGMAN_AUTO_RESCUE``."""
    return options.auto_rescue if options.auto_rescue is not None else dag.flag("DAGMAN_AUTO_RESCUE", True)


def subdag_options(dag: Dag, options: DagmanOptions, rescue_from: int | None = None) -> tuple[str, ...]:
    """The options of this run its SUBDAGs' runs are given, as DAGMan passes its "deep" options down to
    every sub-DAG's condor_submit_dag: ``-AutoRescue`` (this run's value, always), ``-DoRescueFrom`` and
    ``-UseDagDir`` when given (``-force`` goes with a node's first submission only: ``subdag_job``);
    and ``subdag_args``, the backend the run's jobs go to.  ``rescue_from``: the number of the rescue DAG
    this run started from where ``-RescueFile`` named it (0: a name without one, passed on as none)."""
    out: tuple[str, ...] = ("--auto-rescue", "1" if auto_rescue(dag, options) else "0")
    out += options.subdag_args
    number = options.rescue_from or rescue_from
    if number:
        out += ("--do-rescue-from", str(number))
    if options.usedagdir:
        out += ("--usedagdir",)
    return out


def run_limits(dag: Dag, options: DagmanOptions, batch_name: str = "") -> Limits:
    """The run's limits: the CONFIG file's knobs under the command line's values (``options``:
    condor_submit_dag's options win over the knobs they set); ``batch_name`` is the one the run uses."""
    values = {
        "maxjobs": config_int(dag, "DAGMAN_MAX_JOBS_SUBMITTED", 0),
        "maxidle": config_int(dag, "DAGMAN_MAX_JOBS_IDLE", 1000),
        "maxpre": config_int(dag, "DAGMAN_MAX_PRE_SCRIPTS", 20),
        "maxpost": config_int(dag, "DAGMAN_MAX_POST_SCRIPTS", 20),
    }
    values.update({key: value for key, value in options.throttles().items() if value is not None})
    always_run_post = options.always_run_post
    if always_run_post is None:
        always_run_post = dag.flag("DAGMAN_ALWAYS_RUN_POST", False)
    suppress_notification = options.suppress_notification
    if suppress_notification is None:
        suppress_notification = dag.flag("DAGMAN_SUPPRESS_NOTIFICATION", False)
    return Limits(**values, always_run_post=always_run_post, batch_name=batch_name,
                  suppress_notification=suppress_notification,
                  depth_first=dag.flag("DAGMAN_SUBMIT_DEPTH_FIRST", False),
                  retry_node_first=dag.flag("DAGMAN_RETRY_NODE_FIRST", False),
                  dag_priority=options.priority or config_signed(dag, "DAGMAN_DEFAULT_PRIORITY", 0),
                  job_failure_tolerance=config_int(dag, "DAGMAN_NODE_JOB_FAILURE_TOLERANCE", 0),
                  remove_job_list_on_failure=dag.flag("DAGMAN_REMOVE_JOB_LIST_ON_FAILURE", True),
                  max_job_holds=config_int(dag, "DAGMAN_MAX_JOB_HOLDS", 100),
                  max_submits_per_interval=config_clamped(dag, "DAGMAN_MAX_SUBMITS_PER_INTERVAL", 100,
                                                          SUBMITS_PER_INTERVAL))


#: The DAGMan configuration knobs ``sheaf run`` honours; a CONFIG file setting any other is warned
#: about, naming the knob (whoever teaches the engine a knob adds it here).
HONOURED_KNOBS = frozenset({
    "DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS", "DAGMAN_ALWAYS_RUN_POST", "DAGMAN_AUTO_RESCUE",
    "DAGMAN_DEFAULT_APPEND_VARS",
    "DAGMAN_DEFAULT_NODE_LOG", "DAGMAN_STARTUP_CYCLE_DETECT",
    "DAGMAN_DEFAULT_PRIORITY", "DAGMAN_MAX_JOBS_IDLE",
    "DAGMAN_MAX_JOB_HOLDS", "DAGMAN_MAX_JOBS_SUBMITTED", "DAGMAN_MAX_POST_SCRIPTS", "DAGMAN_MAX_PRE_SCRIPTS",
    "DAGMAN_MAX_RESCUE_NUM", "DAGMAN_MAX_SUBMITS_PER_INTERVAL", "DAGMAN_MAX_SUBMIT_ATTEMPTS",
    "DAGMAN_METRICS_FILE_VERSION",
    "DAGMAN_MUNGE_NODE_NAMES", "DAGMAN_NODE_JOB_FAILURE_TOLERANCE", "DAGMAN_REPORT_GRAPH_METRICS",
    "DAGMAN_USE_STRICT", "DAGMAN_PROHIBIT_MULTI_JOBS", "DAGMAN_REMOVE_JOB_LIST_ON_FAILURE",
    "DAGMAN_RESET_RETRIES_UPON_RESCUE", "DAGMAN_RETRY_NODE_FIRST", "DAGMAN_SUBMIT_DEPTH_FIRST",
    "DAGMAN_SUPPRESS_NOTIFICATION",
})


def system_knobs(dag: Dag, knobs: Sequence[tuple[str, str]], source: str) -> list[str]:
    """Put the HTCondor configuration's ``DAGMAN_*`` knobs (``knobs``, from ``source``) into ``dag.config``
    under what it holds (the CONFIG file's, the environment's); the warnings for those sheaf does not
    honour."""
    return _beneath(dag, ((source, name.upper(), value) for name, value in knobs))


def environment_knobs(dag: Dag, environ: Mapping[str, str]) -> list[str]:
    """Put DAGMan's knobs set as ``_CONDOR_DAGMAN_*`` environment variables -- inherited, or the DAG's
    ``ENV SET``, which makes DAGMan's own environment -- into ``dag.config`` under the CONFIG file's,
    as HTCondor's precedence has it (system configuration, then ``_CONDOR_`` variables, then the
    CONFIG file, then condor_submit_dag's options); the warnings for those sheaf does not honour."""
    return _beneath(dag, ((f"environment variable {name}", name[len("_CONDOR_"):].upper(), value)
                          for name, value in {**environ, **dag.env}.items()
                          if name.upper().startswith("_CONDOR_DAGMAN_")))


def _beneath(dag: Dag, knobs: Iterable[tuple[str, str, str]]) -> list[str]:
    """``(source, KEY, value)`` DAGMan knobs into ``dag.config`` where it does not set them yet."""
    out = []
    for source, key, value in knobs:
        if not key.startswith("DAGMAN_") or key in dag.config:
            continue
        if key in HONOURED_KNOBS:
            dag.config[key] = value
        else:
            out.append(f"{source}: configuration knob {key} is not honoured by sheaf run (it is ignored)")
    return out


#: DAGMAN_DEFAULT_NODE_LOG's special variables (HTCondor's configuration manual)
NODE_LOG_VARIABLES = ("DAG_DIR", "DAG_FILE", "CLUSTER", "OWNER", "NODE_NAME")


def node_log_pattern(dag: Dag) -> str | None:
    """``DAGMAN_DEFAULT_NODE_LOG`` when sheaf can expand it: its ``@()`` variables known and no
    ``$()`` configuration macro (sheaf reads no HTCondor configuration to expand one)."""
    pattern = dag.config.get("DAGMAN_DEFAULT_NODE_LOG", "").strip()
    names = re.findall(r"@\(([^)]*)\)", pattern)
    usable = "$(" not in pattern and all(name.upper() in NODE_LOG_VARIABLES for name in names)
    return pattern if pattern and usable else None


def config_warnings(dag: Dag) -> list[str]:
    """The CONFIG knobs ``sheaf run`` does not honour, and the SET_JOB_ATTR attributes of a DAG without
    a node status file (DAGMan's own job ad is written into its ``DagStatus`` ad; with none, the
    attribute is nowhere to be seen but in this warning, which ``<dag>.dagman.out`` records too)."""
    out = [f"{dag.config_path}:{dag.config_lines[key]}: configuration knob {key} is not honoured by sheaf "
           "run (it is ignored)" if key in dag.config_lines else
           f"{dag.config_path}: configuration knob {key} is not honoured by sheaf run (it is ignored)"
           for key in dag.config if key not in HONOURED_KNOBS]
    if dag.config.get("DAGMAN_DEFAULT_NODE_LOG", "").strip() and node_log_pattern(dag) is None:
        out.append(f"DAGMAN_DEFAULT_NODE_LOG = {dag.config['DAGMAN_DEFAULT_NODE_LOG'].strip()}: a $() macro "
                   "or an @() variable other than " + ", ".join(f"@({n})" for n in NODE_LOG_VARIABLES)
                   + " is not expanded by sheaf run; the node log is <dag>.nodes.log")
    if dag.job_attrs and not dag.node_status_file:
        out += [f"{dag.path}: SET_JOB_ATTR {name} = {value}: sheaf has no DAGMan job ad; it writes the "
                "attribute into the node status file's DagStatus ad, and this DAG names no NODE_STATUS_FILE"
                for name, value in dag.job_attrs.items()]
    return out


class DagEnvironment:
    """``ENV SET`` of the DAG file: DAGMan's own environment, which its scripts inherit and its jobs'
    ``getenv``/``$ENV()`` read; set for the run and restored after it (``run_workflow`` is the
    entry point that owns the process for the run's duration)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = dict(values)
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for key, value in self.values.items():
            self.saved[key] = os.environ.get(key)
            os.environ[key] = value

    def __exit__(self, *_exc: object) -> None:
        for key, old in self.saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


_RUN_TIME_MACROS = ("$(cluster", "$(dag_status", "$(failed_count")  # known only at submission


def _uses_run_time_values(texts: Iterable[str]) -> bool:
    return any(m in t.lower() for t in texts for m in _RUN_TIME_MACROS)


def _description_uses_run_time_values(desc: SubmitDescription) -> bool:
    return _uses_run_time_values([*(v for v, _ in desc.values.values()), *desc.attrs.values()])


def load_descriptions(dag: Dag, limits: Limits, warn: Callable[[str], None] | None = None,
                      ) -> tuple[dict[str, SubmitDescription], dict[str, JobSpec]]:
    """Parse every submit description once and expand it for its first node (attempt 0); read
    every SUBDAG's file.

    A description (or sub-DAG file) that cannot be read or expanded fails only its node, when the
    node is submitted, as DAGMan's submission of it fails (``SUBMIT_FAILURE``; the POST script still
    runs): it is warned about now, naming the file, line and rule.  The other nodes of a shared
    description are expanded when they are submitted (expanding every node of a large shared
    description would delay the first job); a node whose own VARS break its expansion then fails to
    submit alone, as ``condor_submit`` fails for that node under DAGMan.  The first node's expansion
    is kept (when it does not depend on ``$(Cluster)``, which is only known at submission) so that its
    first attempt is not expanded twice.
    """
    cache: dict[str, SubmitDescription] = {}
    first: dict[str, JobSpec] = {}
    run_time: dict[str, bool] = {}  # by description: whether its own text uses run-time values
    failing: set[str] = set()  # submit files already warned about
    warned: set[str] = set()  # submit files whose unhonoured commands were named
    for spec in dag.nodes.values():
        if spec.noop:
            continue  # never submitted: its submit file is not read, as DAGMan reads none
        if spec.description is None and not os.path.exists(spec.submit):
            continue  # read at submission: a PRE script or an earlier node may write it
        if spec.submit in failing or spec.submit in cache:
            continue  # warned about already, or expanded at submission
        try:
            job = _first_expansion(dag, limits, spec, cache, run_time)
        except InputError as exc:
            failing.add(spec.submit)
            if warn is not None:
                warn(f"{exc}; node {spec.name} fails when it is submitted, as DAGMan's submission would")
            continue
        if job is not None and spec.pre is None and not run_time[spec.submit] \
                and not _uses_run_time_values(spec.vars.values()):
            first[spec.name] = job
        desc = cache.get(spec.submit)
        if warn is not None and desc is not None and spec.submit not in warned:
            warned.add(spec.submit)
            for text in unhonoured_commands(desc):
                warn(text)
    return cache, first


#: submit commands that decide whether or when a job runs, or how its log is written, which sheaf's
#: backends do not honour: named in a warning (``hold`` and ``log_xml`` only when true; and
#: ``request_gpus`` other than 0: no backend of sheaf's schedules GPUs)
_UNHONOURED = ("hold", "log_xml", "deferral_time", "deferral_window", "deferral_prep_time", "cron_minute",
               "cron_hour", "cron_day_of_month", "cron_month", "cron_day_of_week", "cron_window",
               "cron_prep_time", "next_job_start_delay")


def unhonoured_commands(desc: SubmitDescription) -> list[str]:
    """A warning for each submit command of ``desc`` that ``sheaf run`` does not honour."""
    out = []
    for key in _UNHONOURED:
        found = desc.values.get(key)
        if found is None:
            continue
        value, line = found
        if key in ("hold", "log_xml") and value.strip().lower() in ("", "false", "f", "no", "0"):
            continue
        where = f"{desc.path}:{line}" if line else desc.path
        out.append(f"{where}: submit command {key} = {value.strip()} is not honoured by sheaf run (it is "
                   "ignored)")
    found = desc.values.get("request_gpus")
    if found is not None and found[0].strip() not in ("", "0"):
        value, line = found
        where = f"{desc.path}:{line}" if line else desc.path
        # HTCondor matches the job only to a slot with that many GPUs and leaves it idle until one has
        out.append(f"{where}: submit command request_gpus = {value.strip()} is not honoured by sheaf run "
                   "(it is ignored): its slots have no GPUs to match, and the job runs without one")
    return out


def _first_expansion(dag: Dag, limits: Limits, spec: NodeSpec, cache: dict[str, SubmitDescription],
                     run_time: dict[str, bool]) -> JobSpec | None:
    """The node's attempt-0 job (None for a SUBDAG or a node of several procs); raises InputError."""
    if spec.subdag:
        parse_dag(spec.submit)
        return None
    desc = cache.get(spec.submit)
    if desc is None:
        desc = node_description(spec, dag.descriptions)
        run_time[spec.submit] = _description_uses_run_time_values(desc)
        cache[spec.submit] = desc
    if not desc.queue.simple:
        return None  # expanded per proc at submission (a queue from-file may be written by then)
    sub = Submit(spec.name, 0, 0, spec.priority + limits.dag_priority)
    try:
        return render_node(desc, spec, sub, dag.flag("DAGMAN_DEFAULT_APPEND_VARS", False),
                           dag.parents[spec.name], batch_name=limits.batch_name,
                           suppress_notification=limits.suppress_notification)
    except InputError as exc:
        raise exc.located(desc.path) from None
