"""sheaf.jobtools: the programs a clustered job runs, the POST script that judges a job, and the
tools that move a workflow's files.

- ``sheaf-cluster`` (``seqexec.py``): pegasus-cluster's semantics -- the tasks of a ``.in`` file in
  order (``-n`` at once), ``[cluster-task ...]``/``[cluster-summary ...]`` records, exit 5 on failure;
  ``_cluster*.c`` is the same program compiled (``sheaf-cluster-c``, built by setup.py), which hands
  what it does not do itself to the Python one.
- ``sheaf-mpi-cluster`` (``pmc.py``): pegasus-mpi-cluster's -- a master/worker runner of a PMC DAG
  over MPI ranks or local worker processes, with resources, priorities, retries, a rescue log and
  recovery from lost workers.
- ``sheaf-exitcode`` (``exitcode.py``): pegasus-exitcode's -- a job succeeded if its exit code, its
  success/failure messages and its cluster summary say so.
- ``sheaf-transfer`` (``transfer.py``): pegasus-transfer's role -- what stage-in, stage-out and
  inter-site jobs run: a transfer list (``_transfer_list``; ``load_transfer_list`` is what the planner's
  tests read it back with) moved by one runner (``_transfer_run``) through a module per protocol
  (``_transfer_http``, ``_transfer_ssh``, ``_transfer_s3``; ``_transfer_schemes`` names them and
  the schemes sheaf cannot move), with sha256 integrity records (``_integrity``).
- ``sheaf-lite`` (``lite.py``): PegasusLite's role -- the nonsharedfs job wrapper: a fresh job
  directory, inputs pulled in and verified, the job run there, outputs recorded and pushed.
- ``python -m sheaf.jobtools.container`` (``container.py``): what a containerized task runs around
  podman -- it fetches an ``http(s)://`` image and removes podman's run root after the last container.
- ``python -m sheaf.jobtools.launch`` (``launch.py``): what kickstart does around a task that sheaf
  needs -- a clustered task's own stdin/stdout/stderr files, checkpoint SIGTERM/SIGKILL timeouts.

They are separate processes with a command-line contract, so the package exports no Python names
(``sheaf.jobtools.transfer`` has its own ``__all__`` for the planner's tests).
They read their inputs with ``sheaf.formats._seqexec_in`` and ``sheaf.formats._pmcdag`` (the same
code codegen writes them with) and import nothing of the engine or the backends.
"""

from __future__ import annotations

__all__: list[str] = []
