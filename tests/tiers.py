"""The test tiers (``conftest.py`` marks the tests of each module with them; ``make test`` runs them)."""

from __future__ import annotations

#: test module -> the tiers its tests belong to
TIERS: dict[str, tuple[str, ...]] = {
    "cli/test_run_stop.py": ("serial",),
    "cli/test_disk_full.py": ("serial", "root"),
    # kill -9 a running engine at moments timed against its jobs' starts and ends: run alone, where
    # a loaded machine cannot stretch those moments past the tests' deadlines
    "engine/test_orphans.py": ("serial",),
    "backends/test_slurm.py": ("daemon", "root"),
    "backends/test_slurm_contract.py": ("daemon", "root"),
    "backends/test_slurm_engine.py": ("daemon", "root"),
    "backends/test_slurm_run_contract.py": ("daemon", "root"),
    "grid/test_grid_slurm.py": ("daemon", "root"),
    "predict/test_platform_slurm.py": ("daemon", "root"),
    "backends/test_dask_contract.py": ("daemon",),
    "backends/test_dask_run.py": ("daemon",),
    "jobtools/test_agg_transfer_remote.py": ("daemon",),
    "jobtools/test_agg_transfer_http.py": ("daemon",),
    "planner/test_data_http.py": ("daemon",),
    "monitor/test_dashboard.py": ("daemon",),
    "jobtools/test_agg_lite.py": ("daemon",),
    "jobtools/test_agg_transfer_attack.py": ("daemon",),
    "jobtools/test_agg_transfer_runner.py": ("daemon",),
    "formats/test_pegasus_catalog_inputs.py": ("daemon",),
    "planner/test_pegasus_containers.py": ("serial", "daemon", "root"),
}

#: the modules whose tests take longest in all (``--durations``), started first: a worker given one
#: of them last would run on alone after the others have finished (longest first)
LONGEST: tuple[str, ...] = (
    "cli/test_hierarchy.py", "engine/test_e2e_dagman.py", "test_benchmarks_run.py",
    "planner/test_data_e2e.py", "backends/test_dask_run.py", "grid/test_grid_run.py", "monitor/test_views.py",
    "predict/test_predict_app.py",
    "engine/test_journal_values.py", "test_readme.py", "engine/test_e2e_commands.py",
    "backends/test_slurm_engine.py", "engine/test_e2e_local.py", "backends/test_slurm_contract.py",
    "cli/test_pegasus_shims.py", "engine/test_e2e_conform.py",
)
