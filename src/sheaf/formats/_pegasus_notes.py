"""Pegasus properties and features users' inputs hold that sheaf renames or does not do yet.

Policy: nothing a Pegasus user wrote is dropped in silence.

- **Deprecated property keys** are read under their new name, with a warning naming it
  (``DEPRECATED``): ``pegasus.job.aggregator`` is ``pegasus.clusterer.job.aggregator``.  The new key
  wins when both are set.  (``pegasus.code.generator = PMC``, the whole workflow as one PMC job, is
  handled by the planner: it is ``--cluster whole`` with the ``mpiexec`` aggregator.)
- **Features not implemented yet** are a warning naming the property or the feature and the issue
  that implements it (``NOT_YET``): ``pegasus.mode`` other than ``production``, and hooks
  (notifications) on transformations or of another type than ``shell`` (the workflow's and the jobs'
  shell hooks run: ``sheaf.monitor``).  (The data properties -- integrity checking, bypass -- are the
  planner's data pass's.)
"""

from __future__ import annotations

from collections.abc import Mapping

from sheaf.model import Properties, TransformationCatalog, Workflow

__all__ = ["deprecated_layer", "feature_warnings"]

#: old property key -> its Pegasus 5 name
DEPRECATED: Mapping[str, str] = {
    "pegasus.job.aggregator": "pegasus.clusterer.job.aggregator",
}

_LATER = "a later issue (not planned by issues 9 and 10)"

#: property -> (values that need nothing, what implements it)
NOT_YET: Mapping[str, tuple[tuple[str, ...], str]] = {
    "pegasus.mode": (("production",), _LATER),
}


def deprecated_layer(properties: Properties, warnings: list[str]) -> dict[str, str]:
    """The deprecated keys set in ``properties``, under their new names (a layer below the others)."""
    layer: dict[str, str] = {}
    for old, new in DEPRECATED.items():
        value = properties.get_str(old)
        if value is None:
            continue
        warnings.append(f"property {old} is deprecated: read as {new}")
        if properties.get_str(new) is None:
            layer[new] = value
    return layer


def feature_warnings(properties: Properties, workflow: Workflow,
                     tc: TransformationCatalog | None) -> list[str]:
    """A warning per property or feature in the inputs that sheaf does not implement yet."""
    found = []
    for key, (fine, owner) in NOT_YET.items():
        value = properties.get_str(key)
        if value is not None and value.strip().lower() not in fine:
            found.append(f"property {key} = {value} is not implemented yet (ignored): {owner}")
    # shell hooks of the workflow, its jobs and their transformations run (sheaf.monitor); other hook
    # types (Pegasus knows only shell hooks today) do not
    hooked = [t.fqn for t in (tc or ()) if set(t.hooks) - {"shell"}]
    hooked += [job.id for job in workflow.jobs.values() if set(job.hooks) - {"shell"}]
    if set(workflow.hooks) - {"shell"}:
        hooked.insert(0, "the workflow")
    if hooked:
        where = ", ".join(hooked[:3]) + (" ..." if len(hooked) > 3 else "")
        found.append(f"hooks (notifications) other than shell hooks are not "
                     f"implemented yet (ignored) on {where}: {_LATER}")
    return found
