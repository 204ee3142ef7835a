"""What a plan is asked for (:class:`PlanRequest`: pegasus-plan's options as values) and the checks
that make a bad request one usage error before anything is read or written.

The options mean what pegasus-plan's mean (the command-line contract, ``docs/command-line.md``).
``staging_sites``, ``output_sites``, ``output_dir`` and ``cleanup`` drive the data-staging pass;
``caches``, ``inherited_rc`` and ``output_map`` are what a parent workflow passes the plan of a
sub-workflow; ``deferred`` replans a sub-workflow into its named directory when its job becomes ready.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from sheaf._fields import NAME_MAX, check_fields, long_component
from sheaf.errors import UsageError

CLEANUP = ("none", "inplace", "leaf", "constraint")


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """A plan's options: ``workflow`` (default ``./workflow.yml``; ``dax`` is pegasus-plan 4.x's name for
    it), ``base`` (``--dir``: the submit directory's base, default the current directory), the
    submit directory's name (``relative_dir``, ``relative_submit_dir``), the per-workflow files'
    ``basename``, the execution ``sites``, ``output_sites``/``output_dir``/``staging_sites``/``cleanup``
    (the data pass), ``randomdir`` (jobs' directory under a site's shared scratch; ``""``: a generated
    name), ``clustering`` techniques in order, properties (``conf``, ``defines`` as ``key=value``),
    the catalogs (``tc``, ``sc``, ``rc``), ``input_dirs``, ``force`` (no data reuse), ``reuse``
    (earlier submit directories whose registered outputs are reusable data), the sub-workflow
    inputs, ``group_size`` (cut into group DAGs matched to grid sites), ``transformations_dir`` (each
    file a stageable transformation on site ``local``), ``argv``: the command line recorded in the
    braindump (``planner_arguments``: only what is given, empty by default), and what automatic
    clustering (``clustering`` ``auto``) optimises under: the ``backend``'s overheads (``overhead``
    seconds flat, ``overheads_file``), ``slots`` per site (else the backend's platform's: the local
    pool's, configured by ``pool_config``, as ``sheaf predict``'s)."""

    workflow: str | None = None
    dax: str | None = None
    base: str | None = None
    relative_dir: str | None = None
    relative_submit_dir: str | None = None
    basename: str | None = None
    sites: tuple[str, ...] = ()
    output_sites: tuple[str, ...] = ()
    output_dir: str | None = None
    staging_sites: tuple[str, ...] = ()
    cleanup: str | None = None
    nocleanup: bool = False
    randomdir: str | None = None
    clustering: tuple[str, ...] = ()
    conf: str | None = None
    defines: tuple[str, ...] = ()
    tc: str | None = None
    sc: str | None = None
    rc: str | None = None
    input_dirs: tuple[str, ...] = ()
    force: bool = False
    force_replan: bool = False
    reuse: tuple[str, ...] = ()
    deferred: bool = False
    caches: tuple[str, ...] = ()
    inherited_rc: tuple[str, ...] = ()
    output_map: str | None = None
    group_size: int | None = None
    jvm_options: tuple[str, ...] = ()
    transformations_dir: str | None = None
    argv: tuple[str, ...] = ()
    backend: str = "local"
    slots: int | None = None
    pool_config: str | None = None
    overhead: float | None = None
    overheads_file: str | None = None

    def __post_init__(self) -> None:
        """Each field's type (``check_fields``), and the checks ``sheaf plan`` makes of ``--group-size``,
        ``--slots`` and ``--backend``."""
        from sheaf.predict import BACKENDS

        check_fields(self)
        for name, value in (("group_size", self.group_size), ("slots", self.slots)):
            if value is not None and value < 1:
                raise UsageError(f"{name} {value!r} is not in the range x>=1 (sheaf plan "
                                 f"--{name.replace('_', '-')})")
        if self.backend not in BACKENDS:
            raise UsageError(f"unknown backend {self.backend!r}: one of {', '.join(BACKENDS)}")
        _check_exec_dirs(self.randomdir, self.relative_dir)
        _check_name_lengths(self)


def split_commas(values: Sequence[str]) -> tuple[str, ...]:
    """Repeated options and comma lists, flattened (``-s a,b -s c`` -> a, b, c)."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class StagingOptions:
    """What the data-staging pass acts on, recorded in plan.json."""

    staging_sites: dict[str, str] = field(default_factory=dict)
    output_sites: tuple[str, ...] = ()
    output_dir: str | None = None
    cleanup: str | None = None  # None: not given (Pegasus's default, inplace, is what gets recorded)
    random_dir: str | None = None

    def record(self) -> dict[str, object]:
        return {"staging_sites": dict(self.staging_sites), "output_dir": self.output_dir,
                "cleanup": self.cleanup or "inplace", "random_dir": self.random_dir}


def _check_exec_dirs(randomdir: str | None, relative_dir: str | None) -> None:
    """``--randomdir`` and ``--relative-dir`` name the execution directory under each site's working
    directory, where its jobs run and its cleanup removes files: a ``..`` part in either, or an absolute
    ``--randomdir``, would reach outside it.  (An absolute ``--relative-dir`` is joined under it, as
    pegasus-plan's Java ``File(parent, child)`` joins it.)"""
    for option, value in (("--randomdir", randomdir), ("--relative-dir", relative_dir)):
        if value and ".." in value.replace(os.sep, "/").split("/"):
            raise UsageError(f"{option} {value!r}: a '..' part would put the jobs' working directory, and "
                             "what cleanup removes, outside the site's working directory (rule: "
                             f"{option} names a directory under it)")
    if randomdir and os.path.isabs(randomdir):
        raise UsageError(f"--randomdir {randomdir!r}: an absolute path would put the jobs' working "
                         "directory, and what cleanup removes, outside the site's working directory "
                         "(rule: --randomdir names a relative directory under it)")


def _check_name_lengths(request: PlanRequest) -> None:
    """A directory option with a component longer than a file name may be (``ENAMETOOLONG``), and a
    ``--basename`` longer than a workflow name may be (the per-workflow files add their suffixes to it),
    are usage errors: otherwise the plan fails writing its directory, as if the disk were full."""
    from sheaf.model import MAX_NAME_BYTES

    for option, value in (("--dir", request.base), ("--relative-dir", request.relative_dir),
                          ("--relative-submit-dir", request.relative_submit_dir),
                          ("--randomdir", request.randomdir)):
        if value and long_component(value):
            raise UsageError(f"{option} {value!r}: a component is longer than {NAME_MAX} bytes (rule: each "
                             f"component of a directory name is at most {NAME_MAX} bytes)")
    if request.basename and len(request.basename.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise UsageError(f"--basename {request.basename!r}: longer than {MAX_NAME_BYTES} bytes (rule: the "
                         f"per-workflow files' base name is at most {MAX_NAME_BYTES} bytes, as a workflow "
                         "name)")


def staging_sites(values: Sequence[str]) -> dict[str, str]:
    """``--staging-site s1=ss1,s2=ss2`` (or a bare ``ss``: the staging site of every execution site,
    recorded under ``*``); an execution site named twice is a usage error."""
    out: dict[str, str] = {}
    for item in split_commas(values):
        site, eq, staging = item.partition("=")
        if not eq:
            site, staging = "*", site
        site, staging = site.strip(), staging.strip()
        if not site or not staging:
            raise UsageError(f"--staging-site {item!r}: expected SITE=STAGING_SITE or STAGING_SITE")
        if site in out and out[site] != staging:
            raise UsageError(f"--staging-site names two staging sites for {site}: {out[site]} and {staging}")
        out[site] = staging
    return out


def cleanup_mode(cleanup: str | None, nocleanup: bool) -> str | None:
    """``--cleanup`` checked (``--nocleanup`` is ``none``); None when neither is given."""
    if nocleanup and cleanup not in (None, "none"):
        raise UsageError(f"--nocleanup contradicts --cleanup {cleanup}")
    if not nocleanup and cleanup is None:
        return None
    mode = "none" if nocleanup else (cleanup or "").lower()
    if mode not in CLEANUP:
        raise UsageError(f"--cleanup {cleanup}: the cleanup strategy is one of {', '.join(CLEANUP)}")
    return mode


def check_reuse(dirs: Sequence[str]) -> tuple[str, ...]:
    """``--reuse``: the directories, each checked to be the submit directory of an earlier plan."""
    found = []
    for directory in split_commas(dirs):
        if not os.path.isfile(os.path.join(directory, "plan.json")):
            raise UsageError(f"--reuse {directory}: not a submit directory of an earlier plan (no plan.json)")
        found.append(os.path.abspath(directory))
    return tuple(found)


def input_dirs(values: Sequence[str]) -> tuple[str, ...]:
    dirs = tuple(os.path.abspath(d) for d in split_commas(values))
    for directory in dirs:
        if not os.path.isdir(directory):
            raise UsageError(f"--input-dir {directory}: no such directory")
        if os.pathsep in directory:
            raise UsageError(f"--input-dir {directory}: a directory name cannot hold {os.pathsep!r}")
    return dirs


def workflow_file(workflow: str | None, dax: str | None, directory: str | None,
                  warnings: list[str]) -> tuple[str, str | None]:
    """The workflow file and the --dir base (module docstring: pegasus-plan's ``-d``)."""
    if workflow and dax:  # even one file twice, as pegasus-plan refuses it
        raise UsageError(f"two workflows named: {workflow} and --dax {dax} (name the workflow once: the "
                         "last argument, or --dax)")
    chosen = workflow or dax
    if chosen is None and directory is not None and os.path.isfile(directory):
        warnings.append(f"-d {directory} names a file: read as pegasus-plan's -d (--dax); sheaf's -d is "
                        "--dir, the submit directory's base (here the current directory)")
        return directory, None
    if chosen is None:
        if not os.path.isfile("workflow.yml"):
            raise UsageError("no workflow: name one (WORKFLOW or --dax FILE), or run where workflow.yml is")
        chosen = "workflow.yml"
    return chosen, directory
