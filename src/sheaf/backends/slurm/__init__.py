"""sheaf.backends.slurm: node attempts as Slurm batch jobs, one ``sbatch`` per attempt.

``SlurmBackend`` (``_backend``; its docstring has the design) writes each attempt's spec
(``_records``, in the state directory of ``sheaf.backends._records``), submits it with the resources
``_render`` derives from the job ad through ``_ctl`` (``sbatch``, ``squeue``, ``scancel``, rate-limited),
and learns of starts and exits from the records the job wrapper (``_job``) renames into the run's
inbox, woken by ``_dirwatch``.

Imported lazily: the job wrapper imports a module of this package at the start of every job.
"""

from __future__ import annotations

from sheaf._lazy import lazy_exports

TYPE_CHECKING = False  # not typing's: the job wrapper imports this package, and typing costs it
if TYPE_CHECKING:
    from sheaf.backends.slurm._backend import SlurmBackend, from_options
    from sheaf.backends.slurm._sinfo import cluster_cpus, sinfo_cpus

__all__: list[str] = ["SlurmBackend", "cluster_cpus", "from_options", "sinfo_cpus"]

__getattr__ = lazy_exports(__name__, {"SlurmBackend": "_backend", "from_options": "_backend",
                                      "cluster_cpus": "_sinfo", "sinfo_cpus": "_sinfo"})
