"""The planner's settings, read once from the properties and the ``plan()`` arguments.

Everything the clustering passes consult lives in one frozen ``Options`` record, so a pass never
reads a property itself and bad settings fail before any work is done:

- ``techniques``: the ``--cluster`` list, comma lists flattened, names case-insensitive, each one
  of ``horizontal``, ``label``, ``whole`` (else ``PlanningError``);
- ``runtime``: ``pegasus.clusterer.preference`` is ``Runtime`` (``Horizontal`` or unset: false);
- ``label_key``: ``pegasus.clusterer.label.key`` (default ``label``);
- ``allow_single``: ``pegasus.clusterer.allow.single`` (default false): a cluster of one task is
  run as the plain job unless this is true;
- ``first_job_fail``: ``pegasus.clusterer.job.aggregator.seqexec.firstjobfail`` (default true);
- ``aggregator``: ``pegasus.clusterer.job.aggregator`` (default ``seqexec``);
- ``selector``/``seed``: ``pegasus.selector.site`` (default ``Random``) and the seed, from the
  ``seed`` argument, else ``sheaf.selector.seed``, else 0 -- a plan is reproducible by default;
- ``embedded_sites``: ``sheaf.embedded.sites`` (a comma list) or ``None`` for the default rule
  (see ``_aggregate``).

``pegasus.code.generator = PMC`` (Pegasus 4: the whole workflow as one PMC job) is read as what it
means in Pegasus 5 terms, ``--cluster whole`` with ``pegasus.clusterer.job.aggregator = mpiexec``,
with a warning naming them (``code_generator``); ``Condor`` (the default) needs nothing, any other
generator is a ``PlanningError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from sheaf.errors import PlanningError
from sheaf.model import Properties
from sheaf.predict import AutoModel

TECHNIQUES = ("horizontal", "label", "whole", "auto")
AGGREGATORS = ("seqexec", "mpiexec", "decaf")


@dataclass(frozen=True, slots=True)
class Options:
    techniques: tuple[str, ...] = ()
    runtime: bool = False
    label_key: str = "label"
    allow_single: bool = False
    first_job_fail: bool = True
    aggregator: str = "seqexec"
    selector: str = "Random"
    seed: int = 0
    embedded_sites: frozenset[str] | None = None
    submit_host_only: bool = False  # pegasus.code.generator = Shell: every job on site local
    # what --cluster auto and clusters.* = auto optimise: the model, or what builds it when a group
    # first needs it (``PassContext.auto_model``)
    auto: AutoModel | Callable[[], AutoModel] = field(default_factory=AutoModel)


def notifications_on(properties: Properties) -> bool:
    """Whether the plan's hooks run (``ExecutableWorkflow.notifications``); a negative
    ``notifications.max`` is unset, as for pegasus-monitord."""
    if not properties.get_bool("pegasus.monitord.notifications", True):
        return False
    return properties.get_int("pegasus.monitord.notifications.max") != 0


def read_options(properties: Properties, clustering: Sequence[str], seed: int | None) -> Options:
    """The planner's ``Options`` (module docstring); raises ``PlanningError`` on a bad setting."""
    return Options(
        techniques=parse_techniques(clustering),
        runtime=_preference(properties),
        label_key=properties.get_str("pegasus.clusterer.label.key") or "label",
        allow_single=properties.get_bool("pegasus.clusterer.allow.single", False),
        first_job_fail=properties.get_bool("pegasus.clusterer.job.aggregator.seqexec.firstjobfail", True),
        aggregator=check_aggregator(
            properties.get_str("pegasus.clusterer.job.aggregator") or "seqexec",
            "property 'pegasus.clusterer.job.aggregator'"),
        selector=properties.get_str("pegasus.selector.site") or "Random",
        seed=seed if seed is not None else (properties.get_int("sheaf.selector.seed") or 0),
        embedded_sites=_site_list(properties.get_str("sheaf.embedded.sites")),
    )


def code_generator(properties: Properties, options: Options, warnings: list[str]) -> Options:
    """``options`` as ``pegasus.code.generator`` makes them (module docstring)."""
    raw = properties.get_str("pegasus.code.generator")
    name = (raw or "condor").strip().lower()
    if name == "condor":
        return options
    if name == "shell":
        warnings.append("pegasus.code.generator = Shell: the workflow runs on the submit host, as Pegasus's "
                        "Shell generator runs it; planned as HTCondor DAGMan files with every job on site "
                        "local, which sheaf run runs on this machine")
        return replace(options, submit_host_only=True)
    if name != "pmc":
        raise PlanningError("unsupported code generator", value=raw,
                            rule="pegasus.code.generator is Condor, Shell (the workflow on the submit host) "
                                 "or PMC (the whole workflow as one PMC job)")
    warnings.append("pegasus.code.generator = PMC is deprecated: planned as --cluster whole with "
                    "pegasus.clusterer.job.aggregator = mpiexec")
    return replace(options, techniques=("whole",), aggregator="mpiexec")


def parse_techniques(clustering: Sequence[str]) -> tuple[str, ...]:
    found: list[str] = []
    for item in clustering:
        for part in item.split(","):
            name = part.strip().lower()
            if not name:
                continue
            if name not in TECHNIQUES:
                raise PlanningError("unknown clustering technique",
                                    rule="--cluster takes horizontal, label, whole or auto",
                                    value=part.strip())
            found.append(name)
    return tuple(found)


#: Pegasus's aggregators that sheaf runs as one of its own: AWSBatch runs a cluster's tasks one after
#: another as one job of the site's batch system, which is what a seqexec cluster on the site's backend is
MAPPED = {"awsbatch": "seqexec"}
_PEGASUS_NAMES = {"awsbatch": "AWSBatch"}


def mapped_aggregator_note(value: str, where: str) -> str | None:
    """The note that ``value`` (of ``where``) runs as sheaf's equivalent aggregator, else None."""
    name = value.strip().lower()
    if name not in MAPPED:
        return None
    return (f"{where} = {_PEGASUS_NAMES[name]}: each cluster runs as one {MAPPED[name]} job of the site's "
            "backend (Slurm, HTCondor, Dask or the local pool), its tasks one after another, as AWS Batch "
            "runs them")


def check_aggregator(value: str, where: str) -> str:
    name = value.strip().lower()
    name = MAPPED.get(name, name)
    if name not in AGGREGATORS:
        raise PlanningError(f"unknown job aggregator in {where}",
                            rule="job.aggregator is seqexec, mpiexec, decaf or AWSBatch", value=value)
    return name


def _preference(properties: Properties) -> bool:
    raw = properties.get_str("pegasus.clusterer.preference")
    if raw is None or raw == "" or raw.lower() == "horizontal":
        return False
    if raw.lower() == "runtime":
        return True
    raise PlanningError("unknown clusterer preference", value=raw,
                        rule="pegasus.clusterer.preference is Runtime or Horizontal")


def _site_list(raw: str | None) -> frozenset[str] | None:
    if raw is None:
        return None
    return frozenset(part.strip() for part in raw.split(",") if part.strip())
