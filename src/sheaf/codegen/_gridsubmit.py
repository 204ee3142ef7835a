"""Submit descriptions of group DAG jobs: sheaf's own, and the report's modified DAGMan file for a real pool.

Both carry the report's ad: ``+WANT_USCMS_MATCHMAKER = True``, ``Requirements = Is_USCMS_Site =?=
True``, ``Rank = -CurMatches/MaxMatches`` and ``environment = $$(SiteEnvironment);...`` -- the whole
``$$(SiteEnvironment)`` entry is replaced at match time by the ``name=value`` entries of the site's
``SiteEnvironment``, so the group DAG runs with the site's environment.

For a real pool the report's ``universe = globus`` / ``GlobusScheduler = $$(MatchmakerURL)`` is
brought to current HTCondor: the globus universe is gone, so the DAG job goes through the grid
universe to a schedd (``grid_resource = condor $$(MatchmakerSchedd) $$(MatchmakerPool)``), where it
runs as a scheduler-universe job (``+remote_JobUniverse = 7``) -- what the report's GlobusRSL
``(condor_submit=(universe scheduler))`` asked the Condor jobmanager for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sheaf.condor import quote_arguments

__all__ = ["REPORT_AD", "condor_group_submit", "group_submit", "monitor_script"]

REPORT_AD = ("+WANT_USCMS_MATCHMAKER = True\n"
             "Requirements = Is_USCMS_Site =?= True\n"
             "Rank = -CurMatches/MaxMatches\n")


def group_submit(argv: Sequence[str], label: str, jobs: int, per_job: bool) -> str:
    """sheaf's group DAG job: run by the grid backend once matched (``sheaf.backends.grid``)."""
    binding = '+SiteGatekeeper = "$$(GatekeeperURL)"\n' if per_job else ""
    return (f"# sheaf: group DAG job {label} ({jobs} jobs), matched to a grid site as a whole\n"
            "universe = local\n"
            f"executable = {argv[0]}\n"
            f"arguments = {quote_arguments(argv[1:])}\n"
            + REPORT_AD + binding +
            "getenv = true\n"
            "environment = $$(SiteEnvironment);PATH=$ENV(PATH)\n"
            f"output = grid/{label}.lib.out\n"
            f"error = grid/{label}.lib.out\n"
            f'+SheafGroup = "{label}"\n'
            f"+SheafGroupJobs = {jobs}\n"
            "notification = never\n"
            "queue\n")


def condor_group_submit(root: Path, gdag: str, label: str) -> str:
    """The report's modified DAGMan submit file for ``gdag``, in current HTCondor syntax."""
    return (f"# group DAG job {label} for an HTCondor pool: condor_submit grid/{label}.condor.sub\n"
            "universe = grid\n"
            "grid_resource = condor $$(MatchmakerSchedd) $$(MatchmakerPool)\n"
            "+remote_JobUniverse = 7\n"
            + REPORT_AD +
            f"environment = $$(SiteEnvironment);PATH=$ENV(PATH);USER=$ENV(USER);"
            f"_CONDOR_DAGMAN_LOG={root}/{gdag}.dagman.out;_CONDOR_MAX_DAGMAN_LOG=0\n"
            "executable = condor_dagman\n"
            "transfer_executable = false\n"
            f"arguments = -f -l . -Debug 3 -Lockfile {gdag}.lock -Dag {gdag} -AutoRescue 1\n"
            f"remote_initialdir = {root}\n"
            f"output = grid/{label}.dag.lib.out\n"
            f"error = grid/{label}.dag.lib.out\n"
            f"log = grid/{label}.dag.dagman.log\n"
            '+remote_remove_kill_sig = "SIGUSR1"\n'
            "notification = never\n"
            "queue\n")


def monitor_script(python: str) -> str:
    """The matchmaker monitor for a real pool: recount from ``condor_q -l``, then re-advertise."""
    return ("#!/bin/sh\n"
            "# The report's matchmaker monitor: run every couple of minutes (cron, or a loop) with the\n"
            "# directory of site ad files that `sheaf advertise --site-config ... --write DIR` wrote.\n"
            'set -e\ndir="${1:?usage: matchmaker-monitor.sh SITE_AD_DIR}"\n'
            f'condor_q -l | "{python}" -m sheaf.backends.grid._monitor "$dir"\n'
            'for ad in "$dir"/*.ad; do condor_advertise UPDATE_STARTD_AD "$ad"; done\n')
