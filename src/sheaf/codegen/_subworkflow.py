"""Sub-workflow jobs (``pegasusWorkflow``, ``condorWorkflow``): how the parent DAG runs them.

Both become a ``SUBDAG EXTERNAL`` node, which DAGMan (and sheaf's engine, with a nested ``sheaf
run``) runs as one node of the parent; the sub-DAG file needs to exist only when the node is
submitted, so a PRE script or an earlier job may write it.

- ``condorWorkflow`` (the file is a DAG): ``SUBDAG EXTERNAL <id> <dag> DIR <d>``, ``DIR`` from the job's
  dagman ``dir`` profile (it must exist when the node runs, as the chapter says; a missing one fails that
  node), else the DAG file's directory: DAGMan runs a sub-DAG in its ``DIR``, else in the parent's directory,
  where the DAG's relative paths would mean something else. With throttle profiles the node runs a small
  wrapper DAG, ``<id>.subdag.dag``, whose ``CONFIG`` holds them and which splices the user's DAG with ``DIR``
  (the profile's, else the DAG file's directory, so its relative paths mean what they did). A DAG with a FINAL
  node cannot be spliced: it runs unwrapped and the throttles are warned about.
- ``pegasusWorkflow`` (the file is an abstract workflow): *deferred planning*, as Pegasus does it --
  ``SCRIPT DEBUG <submit dir>/<id>.pre.log ALL PRE <id> sheaf plan ... --deferred`` plans the child
  into ``jobs/NNN/<id>.plan`` when the node becomes ready (its inputs exist by then; ``dagman.maxpre``
  bounds how many plan at once), its log in ``<id>.pre.log``; then the node runs the child's DAG,
  ``<id>.plan/<basename>.dag`` (basename: the job's ``--basename``, else its id), with that plan
  directory as its ``DIR`` (written empty with the parent's plan: DAGMan runs the PRE script there).

What the child plan inherits (Pegasus's sub-workflow planning): the parent's properties (in
``subworkflows.properties``, one file for every child of the plan), its ``--sites``, the standalone
catalogs it read (named or found by default names), and its inline replica catalog one level down
(``--inherited-rc-files subworkflows.rc.yml``); an
edge from another sub-workflow job adds that sibling's cache file (``--cache``: where its outputs
were planned to be), and inputs written by compute jobs of the parent a cache file of their own
(``<id>.inputs.cache``); a compute job of the parent reading one of the child's outputs adds
``--output-map <id>.output.map`` (where the parent's job will look for it).  Then come the job's own
arguments, which win; relative paths in them are resolved against the directory the parent was
planned in, as Pegasus resolves them.  ``--dir``, ``--relative-dir`` and ``--relative-submit-dir`` in
them are dropped with a warning (sheaf names the child's directory).  The job's dagman throttle
profiles (``maxjobs``, ``maxidle``, ``maxpre``, ``maxpost``) become the child DAG's throttles
(``-D sheaf.subdag.<key>``, written into the child's CONFIG and never passed further down).

The file (the job's ``file`` lfn) is found when the parent is planned: an output of an earlier job
of the parent (at the path that job writes it to, read when the child is planned), an absolute path,
``--input-dir``, a ``file://`` replica (site ``local`` first), else a path relative to the directory
``sheaf plan`` ran in.  A file found nowhere is a ``PlanningError``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sheaf.codegen._dag import THROTTLES
from sheaf.errors import PlanningError
from sheaf.formats import format_properties
from sheaf.model import TransformationCatalog, all_uses, file_url_path
from sheaf.planner import ExecJob, ExecutableWorkflow, find_local

#: properties that carry one sub-workflow job's throttles to its child plan only
SUBDAG_PREFIX = "sheaf.subdag."
#: pegasus-plan options the chapter says not to pass: sheaf names the child's directory
_DIR_OPTIONS = ("--dir", "--relative-dir", "--relative-submit-dir")
#: pegasus-plan options whose values are paths (comma lists for the repeatable ones)
_PATH_OPTIONS = ("--input-dir", "--conf", "--tc", "--sc", "--rc", "--output-dir", "--dax", "--reuse",
                 "--cache", "--inherited-rc-files", "--output-map", "--transformations-dir")
_SHORT = {"-b": "--basename", "-C": "--cluster",
          "-S": "--submit", "-I": "--input-dir", "-c": "--cache", "-O": "--output-dir",
          "-R": "--reuse", "-d": "--dir", "-m": "--output-map", "-t": "--transformations-dir"}
#: every long option of pegasus-plan 5.x, for GNU-style unique prefixes
_LONG = ("--basename", "--cache", "--cleanup", "--cluster", "--conf", "--dax", "--deferred", "--dir",
         "--force", "--force-replan", "--forward", "--help", "--inherited-rc-files", "--input-dir",
         "--job-prefix", "--json", "--nocleanup", "--output-dir", "--output-map", "--output-sites",
         "--quiet", "--randomdir", "--rc", "--relative-dir", "--relative-submit-dir", "--rescue",
         "--reuse", "--sc", "--sites", "--staging-site", "--submit", "--tc", "--transformations-dir",
         "--verbose", "--version")


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What a plan's sub-workflow jobs inherit from the command line that made it, and what a child
    plan was told by its parent: the directory planned in, the standalone catalog files read
    (``tc``/``sc``/``rc`` -> absolute path), the ``--sites`` given, and ``--output-map``."""

    planned_in: str = field(default_factory=os.getcwd)
    catalog_files: Mapping[str, str] = field(default_factory=dict)
    sites: tuple[str, ...] = ()
    #: lfn -> every place the parent wants the file (a single path is read as one place)
    output_map: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    transformations: TransformationCatalog | None = None

    def __post_init__(self) -> None:
        places = {lfn: (where,) if isinstance(where, str) else tuple(where)
                  for lfn, where in self.output_map.items()}
        object.__setattr__(self, "output_map", places)


def condor_dagman(tc: TransformationCatalog | None, environ: Mapping[str, str]) -> str | None:
    """The ``condor_dagman`` that runs the sub-DAGs of the HTCondor output, by the chapter's rules:
    the transformation ``condor::dagman`` on site ``local``, else ``$CONDOR_HOME/bin/condor_dagman``,
    else ``$CONDOR_LOCATION/bin/condor_dagman``, else the one on ``PATH`` (None: none found)."""
    entry = tc.lookup("condor", "dagman", None) if tc is not None else None
    local = entry.site("local") if entry is not None else None
    if local is not None:
        return file_url_path(local.pfn) or local.pfn
    for variable in ("CONDOR_HOME", "CONDOR_LOCATION"):
        if environ.get(variable):
            return os.path.join(environ[variable], "bin", "condor_dagman")
    return shutil.which("condor_dagman", path=environ.get("PATH"))


def subworkflow_file(job: ExecJob, exec_wf: ExecutableWorkflow,
                     produced: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(abstract job type, absolute path of its workflow/DAG file)``; ``produced``: lfn -> where
    an earlier job of the parent writes it."""
    task = job.tasks[0]
    abstract = exec_wf.workflow.jobs.get(task.id)
    kind = abstract.type if abstract is not None else "pegasusWorkflow"
    lfn = (abstract.file if abstract is not None else None) or task.executable
    if produced and lfn in produced:
        return kind, produced[lfn]
    if os.path.isabs(lfn) and os.path.isfile(lfn):
        return kind, lfn
    found = find_local(lfn, "local", exec_wf.input_dir, exec_wf.replica_catalog)
    if found is None and os.path.isfile(lfn):
        found = os.path.abspath(lfn)
    if found is None and exec_wf.replica_catalog is not None and any(
            pfn.pfn.startswith("go://") for pfn in exec_wf.replica_catalog.lookup(lfn)):
        raise PlanningError(f"the file of sub-workflow job '{task.id}' is catalogued only at a Globus "
                            "Online (go://) URL, which the child's planner on the submit host cannot read",
                            rule="a sub-workflow's file is a file:// URL or path on the local site "
                                 "(see 'Hierarchical workflows and Globus' in the README)", value=lfn)
    if found is None:
        raise PlanningError(f"the file of sub-workflow job '{task.id}' is found nowhere",
                            rule="a sub-workflow's file is a local path, in --input-dir, a file:// replica "
                                 "or an output of an earlier job", value=lfn)
    return kind, found


def properties_text(properties: Mapping[str, str]) -> str:
    """The parent's properties in Java properties syntax, as the properties reader reads them back;
    one job's sub-DAG throttles stay with the child they were meant for."""
    passed = {key: value for key, value in properties.items() if not key.startswith(SUBDAG_PREFIX)}
    return "# the parent workflow's properties, passed to its sub-workflow by sheaf plan\n" + \
        format_properties(passed)


def throttles(own: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The job's own dagman throttle profiles (``maxjobs`` ...), keys lower-case."""
    dagman = {key.lower(): value.strip() for key, value in (own.get("dagman") or {}).items()}
    return {key: dagman[key] for key in THROTTLES if dagman.get(key)}


def _long_name(word: str) -> str | None:
    """The long option ``word`` (``--name`` or ``--name=value``, or a short alias) stands for."""
    if word in _SHORT:
        return _SHORT[word]
    if word[:2] in _SHORT and len(word) > 2 and not word.startswith("--"):
        return _SHORT[word[:2]]
    if not word.startswith("--"):
        return None
    name = word.split("=", 1)[0]
    if name in _LONG:
        return name
    matches = [option for option in _LONG if option.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def _absolute(value: str, base: str) -> str:
    return ",".join(os.path.join(base, part) if part and not os.path.isabs(part) and "://" not in part
                    else part for part in value.split(","))


def _value(words: Sequence[str], i: int) -> tuple[str, int]:
    """The value of the option at ``words[i]`` (``--name=v``, ``-Xv`` or the next word) and the index
    of the word after it."""
    word = words[i]
    if word.startswith("--") and "=" in word:
        return word.split("=", 1)[1], i + 1
    if not word.startswith("--") and len(word) > 2:
        return word[2:], i + 1
    return (words[i + 1] if i + 1 < len(words) else ""), i + 2


def resolve_arguments(argv: Sequence[str], base: str, warn: Callable[[str], None]) -> list[str]:
    """The job's pegasus-plan arguments with relative paths made absolute against ``base``, and the
    directory options and ``--submit`` dropped (with a warning each)."""
    out: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        name = _long_name(word)
        if name == "--submit":
            warn(f"{word}: a sub-workflow runs as its job in the parent; dropped")
            i += 1
            continue
        if name is None or (name not in _PATH_OPTIONS and name not in _DIR_OPTIONS):
            out.append(word)
            i += 1
            continue
        value, i = _value(words, i)
        if name in _DIR_OPTIONS:
            warn(f"{name} {value}: sheaf names a sub-workflow's directory itself; dropped")
            continue
        out += [name, _absolute(value, base)]
    return out


def option_given(argv: Sequence[str], name: str) -> str | None:
    """The value the job's arguments give the option ``name`` (long name), the last one winning."""
    found, i = None, 0
    while i < len(argv):
        if _long_name(argv[i]) == name:
            found, i = _value(argv, i)
        else:
            i += 1
    return found


def produced_files(exec_wf: ExecutableWorkflow, workdir: Callable[[ExecJob], str]) -> dict[str, str]:
    """lfn -> where the parent's job that writes it puts it (its working directory), for the
    outputs of compute jobs and clusters."""
    return {lfn: os.path.join(directory, lfn) for lfn, directory in produced_dirs(exec_wf, workdir).items()}


def produced_dirs(exec_wf: ExecutableWorkflow, workdir: Callable[[ExecJob], str]) -> dict[str, str]:
    """lfn -> the working directory of the job that writes it (one string per job, shared by its
    outputs: at 10^6 files the full paths are made one line at a time, as they are written)."""
    out: dict[str, str] = {}
    for job in exec_wf.jobs:
        if job.type not in ("compute", "cluster"):
            continue
        directory = None
        for task in job.tasks:
            abstract = exec_wf.workflow.jobs.get(task.id)
            if abstract is None:
                continue
            for use in all_uses(abstract):
                if use.type == "output":
                    if directory is None:
                        directory = workdir(job)
                    out[use.lfn] = directory
    return out


def output_lfns(exec_wf: ExecutableWorkflow, job: ExecJob) -> list[str]:
    abstract = exec_wf.workflow.jobs.get(job.tasks[0].id)
    return [] if abstract is None else [use.lfn for use in all_uses(abstract) if use.type == "output"]


def one_word(text: str, what: str) -> str:
    """DAG script arguments are split on white space: refuse a word that holds some."""
    if not text or any(c.isspace() for c in text):
        raise PlanningError(f"{what} cannot hold white space in a DAG file's SCRIPT line", value=text,
                            rule="SCRIPT arguments are words: no white space")
    return text


def output_map_jobs(exec_wf: ExecutableWorkflow, jobs: Sequence[ExecJob],
                    wanted: Mapping[str, Sequence[str]], workdir: Callable[[ExecJob], str], pairs_file: str,
                    transfer: str) -> tuple[ExecJob | None, list[int], list[tuple[str, str]]]:
    """``--output-map``: one local job copying each mapped output, once written, to where the parent
    wants it; ``(job, indexes of the jobs it follows, (source, destination) pairs)``."""
    pairs: list[tuple[str, str]] = []
    after: list[int] = []
    for index, job in enumerate(jobs):
        if job.type not in ("compute", "cluster"):
            continue
        for task in job.tasks:
            abstract = exec_wf.workflow.jobs.get(task.id)
            for use in (all_uses(abstract) if abstract is not None else ()):
                if use.type == "output" and use.lfn in wanted:
                    pairs += [(os.path.join(workdir(job), use.lfn), place) for place in wanted[use.lfn]]
                    after.append(index)
    if not pairs:
        return None, [], []
    root = os.path.commonpath([os.path.dirname(dst) for _, dst in pairs])
    job = ExecJob(id=f"stage_out_output_map_{exec_wf.name}"[:100], type="stage_out", site="local",
                  transformation=None, level=0, executable=transfer, arguments=("--root", root, pairs_file))
    return job, sorted(set(after)), pairs


def globus_warning(exec_wf: ExecutableWorkflow) -> str | None:
    """The chapter's Globus caveat, when it applies: a directory of the local site served only through a
    Globus Online endpoint (``go://``) without ``sharedFileSystem``, in a plan with sub-workflows."""
    site = exec_wf.site_catalog.get("local") if exec_wf.site_catalog is not None else None
    for directory in (site.directories if site is not None else ()):
        if directory.shared_file_system or not directory.file_servers:
            continue
        if all(server.url.startswith("go://") for server in directory.file_servers):
            return (f"the local site's {directory.type} directory {directory.path} is served only by a "
                    "Globus Online endpoint (go://): a sub-workflow's planner on the submit host reads "
                    "local files, and Globus cannot transfer between go:// and file:// URLs; set "
                    "sharedFileSystem: true on it (see 'Hierarchical workflows and Globus' in the README)")
    return None
