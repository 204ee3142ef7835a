"""sheaf.aggregators: the programs a clustered job runs, and the POST script that judges a job.

- ``sheaf-cluster`` (``seqexec.py``): pegasus-cluster's semantics -- the tasks of a ``.in`` file in
  order (``-n`` at once), ``[cluster-task ...]``/``[cluster-summary ...]`` records, exit 5 on failure.
- ``sheaf-mpi-cluster`` (``pmc.py``): pegasus-mpi-cluster's -- a master/worker runner of a PMC DAG
  over MPI ranks or local worker processes, with resources, priorities, retries, a rescue log and
  recovery from lost workers.
- ``sheaf-exitcode`` (``exitcode.py``): pegasus-exitcode's -- a job succeeded if its exit code, its
  success/failure messages and its cluster summary say so.
- ``sheaf-transfer`` (``transfer.py``): what a stage-in job runs (see its docstring).
- ``python -m sheaf.aggregators.container`` (``container.py``): what a containerized task runs around
  podman -- it fetches an ``http(s)://`` image and removes podman's run root after the last container.
- ``python -m sheaf.aggregators.launch`` (``launch.py``): what kickstart does around a task that sheaf
  needs -- a clustered task's own stdin/stdout/stderr files, checkpoint SIGTERM/SIGKILL timeouts.

They are separate processes with a command-line contract, so the package exports no Python names.
They read their inputs with ``sheaf.formats._seqexec_in`` and ``sheaf.formats._pmcdag`` (the same
code codegen writes them with) and import nothing of the engine or the backends.
"""

from __future__ import annotations

__all__: list[str] = []
