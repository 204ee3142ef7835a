"""The DAGMan input file and its CONFIG file.

Per job, from its dagman profiles (the properties ``dagman.retry`` ... are their lowest layer)::

    JOB <id> jobs/NNN/<id>.sub
    RETRY <id> <retry>                      dagman ``retry``
    VARS <id> +DAGNodeRetry="$(RETRY)"      always: the Pegasus manual's retry-memory expressions read it
    CATEGORY <id> <category>                dagman ``category``; auxiliary jobs default to the
                                            the Pegasus manual's table (stage-in, stage-out, stage-inter,
                                            cleanup,
                                            registration)
    PRIORITY <id> <n>                       dagman ``priority``
    SCRIPT PRE <id> <pre> <pre.arguments>   dagman ``pre`` (or pegasus ``dagman.pre``)
    SCRIPT POST <id> ...                    dagman ``post`` (or pegasus ``dagman.post``), see below
    ABORT-DAG-ON <id> <value>               dagman ``abort-dag-on``

POST scripts: a job with pegasus ``exitcode.successmsg``/``exitcode.failuremsg``, with dagman
``post.arguments`` (Pegasus's default POST script is pegasus-exitcode, which they are given to), or
whose post script is named ``pegasus-exitcode``/``sheaf-exitcode``, gets ``sheaf-exitcode -r $RETURN
[-s MSG]... [-f MSG]... [post.arguments] <job>.out`` (messages encoded as pegasus-exitcode's: ``+``
for a space, ``\\+`` for a plus, because DAGMan splits script arguments on white space); ``none``
means no script.  Any other value names the user's script as Pegasus's profile table says: an
identifier ``T`` whose path is the dagman profile ``post.path.T``, run as ``<path> [post.arguments]
<job>.out`` (an identifier without its ``post.path`` is a ``PlanningError``, as Pegasus refuses it); a
value holding a ``/`` is the script's path itself, run with ``post.arguments``.

Then ``PARENT p CHILD c...`` (one line per parent, children in plan order), ``MAXJOBS <category> <n>``
for every category in use (``dagman.<category>.maxjobs``, else the Pegasus manual's default: stage-in 10,
stage-out 10, cleanup 4, registration 1), ``CONFIG`` and ``JOBSTATE_LOG jobstate.log``.

The CONFIG file holds the workflow throttles, dagman ``maxjobs``/``maxidle``/``maxpre``/``maxpost``
(workflow-level profiles over the properties ``dagman.maxjobs`` ...) as DAGMan's knobs
``DAGMAN_MAX_JOBS_SUBMITTED``, ``DAGMAN_MAX_JOBS_IDLE``, ``DAGMAN_MAX_PRE_SCRIPTS``,
``DAGMAN_MAX_POST_SCRIPTS``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sheaf.condor import Unwritable, check_line
from sheaf.errors import PlanningError
from sheaf.model import Properties, profile_int

#: The Pegasus manual's default categories of auxiliary jobs and their default MAXJOBS (None: no default).
DEFAULT_CATEGORY = {"stage_in": "stage-in", "stage_out": "stage-out", "inter_site": "stage-inter",
                    "cleanup": "cleanup", "register": "registration", "subworkflow": "subwf"}
DEFAULT_MAXJOBS = {"stage-in": 10, "stage-out": 10, "cleanup": 4, "registration": 1}
THROTTLES = {"maxjobs": "DAGMAN_MAX_JOBS_SUBMITTED", "maxidle": "DAGMAN_MAX_JOBS_IDLE",
             "maxpre": "DAGMAN_MAX_PRE_SCRIPTS", "maxpost": "DAGMAN_MAX_POST_SCRIPTS"}
_EXITCODE_NAMES = {"pegasus-exitcode", "sheaf-exitcode"}


def encode_message(text: str) -> str:
    """pegasus-exitcode's encoding of a message on a command line.  It has a code for the space only:
    other white space (a tab) would split the word in the DAG file, and an empty message vanish."""
    if not text or any(c.isspace() and c != " " for c in text):
        raise Unwritable(f"an exit-code message must be non-empty, with no white space but spaces: {text!r}")
    return text.replace("+", "\\+").replace(" ", "+")


#: the retries of a job whose profiles (properties included) name none: Pegasus's Dagman namespace
#: gives every job ``dagman.retry`` 1
DEFAULT_RETRY = 1


@dataclass(frozen=True, slots=True)
class NodeSettings:
    """A job's DAG settings from its profiles; computed once per distinct profile set and job type."""

    retry: int | None
    category: str | None
    priority: int | None
    pre: str | None
    post: str | None  # with ``{out}`` where the job's stdout file goes
    abort: str | None


def node_settings(job_type: str, profiles: Mapping[str, Mapping[str, str]], exitcode_tool: str,
                  subject: str) -> NodeSettings:
    try:
        dagman = profiles.get("dagman") or {}
        category = dagman.get("category") or DEFAULT_CATEGORY.get(job_type)
        abort = dagman.get("abort-dag-on")
        return NodeSettings(
            profile_int(profiles, "dagman", "retry", subject=subject) if "retry" in dagman else DEFAULT_RETRY,
            _word(category, "category") if category else None,
            profile_int(profiles, "dagman", "priority", subject=subject),
            _script(profiles, "pre"),
            _post_script(profiles, exitcode_tool, subject),
            check_line(abort, "abort-dag-on") if abort else None)
    except Unwritable as exc:
        raise PlanningError(f"job '{subject}' cannot be written to the DAG: {exc}",
                            rule="DAG values fit on one line", value=subject) from None


def node_lines(node: str, submit: str, settings: NodeSettings, out_file: str, *,
               subdag: bool = False, more_vars: str = "") -> list[str]:
    """The DAG lines that declare one job (not its edges); ``subdag``: ``submit`` is a DAG file run
    as ``SUBDAG EXTERNAL`` (no VARS: there is no submit description to pass them to); ``more_vars``:
    ``key="value"`` entries for the VARS line (a shared description's, ``_submit.shared_vars``)."""
    lines = [f"SUBDAG EXTERNAL {node} {submit}" if subdag else f"JOB {node} {submit}"]
    if settings.retry:
        lines.append(f"RETRY {node} {settings.retry}")
    if not subdag:
        lines.append(f'VARS {node} +DAGNodeRetry="$(RETRY)" {more_vars}' if more_vars
                     else f'VARS {node} +DAGNodeRetry="$(RETRY)"')
    if settings.category:
        lines.append(f"CATEGORY {node} {settings.category}")
    if settings.priority is not None:
        lines.append(f"PRIORITY {node} {settings.priority}")
    if settings.pre:
        lines.append(f"SCRIPT PRE {node} {settings.pre}")
    if settings.post:
        if "{out}" in settings.post and _has_space(out_file):
            raise PlanningError("the plan directory's path holds white space, which splits the POST "
                                "script's arguments in the DAG file", value=out_file,
                                rule="SCRIPT arguments are words: no white space in the plan directory")
        lines.append(f"SCRIPT POST {node} {settings.post.replace('{out}', out_file)}")
    if settings.abort:
        lines.append(f"ABORT-DAG-ON {node} {settings.abort}")
    return lines


def _has_space(text: str) -> bool:
    return any(c.isspace() for c in text)


def _word(text: str, what: str) -> str:
    if not text or any(c.isspace() for c in text):
        raise Unwritable(f"{what} must be one word: {text!r}")
    return text


def _setting(profiles: Mapping[str, Mapping[str, str]], key: str) -> str | None:
    """dagman ``key`` or pegasus ``dagman.key`` (the spelling the Pegasus manual's Decaf entry uses)."""
    value = (profiles.get("dagman") or {}).get(key) or (profiles.get("pegasus") or {}).get("dagman." + key)
    return value.strip() if value else None


def _script(profiles: Mapping[str, Mapping[str, str]], kind: str) -> str | None:
    path = _setting(profiles, kind)
    if not path or path.lower() == "none":
        return None
    args = _setting(profiles, kind + ".arguments")
    return check_line(f"{path} {args}" if args else path, f"{kind} script")


def _post_script(profiles: Mapping[str, Mapping[str, str]], tool: str, subject: str) -> str | None:
    path = _setting(profiles, "post")
    pegasus = profiles.get("pegasus") or {}
    success, failure = pegasus.get("exitcode.successmsg"), pegasus.get("exitcode.failuremsg")
    if path and path.lower() == "none":
        return None
    if path and path not in _EXITCODE_NAMES and path.rpartition("/")[2] not in _EXITCODE_NAMES:
        return _user_post_script(profiles, path, subject)
    args = _setting(profiles, "post.arguments")
    if not path and not success and not failure and not args:
        return None
    if _has_space(tool):
        raise Unwritable(f"the exit-code tool's path holds white space: {tool!r}")
    words = [tool, "-r", "$RETURN"]
    if success:
        words += ["-s", encode_message(success)]
    if failure:
        words += ["-f", encode_message(failure)]
    if args:
        words.append(args)
    words.append("{out}")
    return check_line(" ".join(words), "post script")


#: a POST script type Pegasus reads as a user script's name (its profile table: ``[_A-Za-z][_A-Za-z0-9]*``)
_POST_TYPE = re.compile(r"[_A-Za-z][_A-Za-z0-9]*\Z")


def _user_post_script(profiles: Mapping[str, Mapping[str, str]], value: str, subject: str) -> str | None:
    """The user's POST script (module docstring): ``post.path.<value>`` with its arguments and the job's
    stdout file, or the path ``value`` itself."""
    if not _POST_TYPE.match(value):
        return _script(profiles, "post")
    found = _setting(profiles, f"post.path.{value.lower()}")
    if not found:
        raise PlanningError(f"job '{subject}': dagman post = {value} names a user POST script whose path "
                            f"is not given", value=value,
                            rule=f"a user POST script's path is the dagman profile post.path.{value}")
    args = _setting(profiles, "post.arguments")
    return check_line(" ".join([found, *([args] if args else []), "{out}"]), "post script")


def edge_lines(ids: Sequence[str], edges: Sequence[tuple[int, int]]) -> list[str]:
    """``PARENT p CHILD c1 c2 ...``: one line per parent, parents and children in plan order (``ids``:
    the jobs' ids by index)."""
    children: list[list[int] | None] = [None] * len(ids)  # by parent: no dict, no sort of the parents
    for parent, child in edges:
        kids = children[parent]
        if kids is None:
            children[parent] = [child]
        else:
            kids.append(child)
    lines = []
    for parent, kids in enumerate(children):
        if kids is not None:
            kids.sort()
            lines.append(f"PARENT {ids[parent]} CHILD {' '.join([ids[c] for c in kids])}")
    return lines


#: the spellings users write for the Pegasus manual's categories (``dagman.stagein.maxjobs``, Pegasus 4's)
CATEGORY_ALIASES = {"stagein": "stage-in", "stageout": "stage-out", "stageinter": "stage-inter",
                    "stage-inter-site": "stage-inter", "register": "registration", "clean-up": "cleanup"}


def maxjobs_lines(categories: Sequence[str], properties: Properties) -> list[str]:
    """``MAXJOBS`` for each category in use: ``dagman.<category>.maxjobs`` (either spelling of the
    Pegasus manual's categories; the canonical one wins when both are set), else the manual's default."""
    raw = properties.category_maxjobs()
    configured = {CATEGORY_ALIASES.get(name, name): limit for name, limit in raw.items()
                  if name in CATEGORY_ALIASES}
    configured.update({name: limit for name, limit in raw.items() if name not in CATEGORY_ALIASES})
    lines = []
    for category in categories:
        limit = configured.get(category, DEFAULT_MAXJOBS.get(category))
        if limit is not None:
            lines.append(f"MAXJOBS {category} {limit}")
    return lines


def config_text(workflow_profiles: Mapping[str, Mapping[str, str]], properties: Properties) -> str:
    """The DAGMan configuration file (workflow throttles)."""
    layer = properties.profiles().get("dagman", {})
    own = {key.lower(): value for key, value in (workflow_profiles.get("dagman") or {}).items()}
    lines = ["# DAGMan configuration written by sheaf plan: workflow throttles"]
    for key, knob in THROTTLES.items():
        # a sub-workflow job's throttles, passed by the parent plan (``_subworkflow``), come first
        raw = properties.get_str(f"sheaf.subdag.{key}") or own.get(key, layer.get(key))
        if raw is None or raw.strip() == "":
            continue
        value = profile_int({"dagman": {key: raw}}, "dagman", key, subject="the workflow")
        lines.append(f"{knob} = {value}")
    return "\n".join(lines) + "\n"
