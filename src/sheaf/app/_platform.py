"""The slots a prediction (and ``--cluster auto``) plans on, and where that figure came from.

First found wins:

- ``--slots N``: N CPUs on every site, memory not limited.
- backend ``local``: the local pool ``sheaf run`` would lay out -- ``--pool-config FILE``, else
  ``$SHEAF_CONFIG``, else ``~/.config/sheaf/pool.conf``, else HTCondor's unconfigured machine: the
  CPUs and memory (MB) of all its slots (``sheaf.backends.Pool``).
- backend ``slurm``: the cluster's usable CPUs, allocated plus idle, as ``sinfo`` reports them per
  node (``sheaf.backends.slurm.cluster_cpus``); when sinfo does not answer, this machine's.
- any other backend: this machine's CPUs.

``Slots.source`` says which, in words a user reads (``slots_source`` of ``sheaf predict --json``).
"""

from __future__ import annotations

__all__ = ["Slots", "platform_slots"]

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Slots:
    cpus: int
    memory: float   # MB; 0: not limited
    source: str


def platform_slots(backend: str, slots: int | None = None, pool_config: str | None = None) -> Slots:
    """The platform's slots for ``backend`` (module docstring)."""
    if backend == "local" and slots is None:
        return _local_pool(pool_config)
    if slots is not None:
        found = Slots(slots, 0.0, "--slots")
    elif backend == "slurm":
        found = _slurm()
    else:
        found = _machine(f"this machine's CPUs: backend {backend} does not state its slots")
    if pool_config is not None:  # read by the local pool alone
        ignored = "--slots" if slots is not None else f"backend {backend}"
        found = Slots(found.cpus, found.memory, f"{found.source}; --pool-config ignored under {ignored}")
    return found


def _machine(source: str) -> Slots:
    return Slots(os.cpu_count() or 1, 0.0, source)


def _local_pool(pool_config: str | None) -> Slots:
    from sheaf.backends import Pool  # the pool's configuration readers are slow to import

    pool = Pool.from_config(pool_config)
    ads = pool.slot_ads()
    cpus = sum(int(ad["TotalSlotCpus"]) for ad in ads)
    memory = sum(int(ad["TotalSlotMemory"]) for ad in ads)
    where = pool.config.path
    source = f"local pool configuration {where}" if where else "local pool without a configuration file"
    return Slots(max(cpus, 1), float(max(memory, 0)), f"{source}, {len(ads)} slots")


def _slurm() -> Slots:
    from sheaf.backends.slurm import cluster_cpus

    found = cluster_cpus()
    if isinstance(found, str):
        return _machine(f"this machine's CPUs: {found}")
    usable, total = found
    if usable < 1:
        return _machine(f"this machine's CPUs: sinfo reports no usable CPUs, {total} in all")
    return Slots(usable, 0.0, f"sinfo: {usable} CPUs allocated or idle of {total}")
