"""The public surface of ``sheaf.formats`` (others call these names)."""

from __future__ import annotations

import inspect

from sheaf import formats


def test_all_is_pinned() -> None:
    assert sorted(formats.__all__) == [
        "FAILURE_MODES", "Inputs", "PmcDag", "PmcTask", "SeqexecTask", "SiteConfig", "SiteSpec", "Variables",
        "dumps", "format_properties", "gc_paused", "load_inputs", "parse_pmc_dag", "parse_rescue",
        "parse_seqexec_input", "rc_to_data", "read_properties", "read_replica_catalog", "read_site_catalog",
        "read_site_config", "read_transformation_catalog", "read_workflow", "transformations_dir",
        "validate_inputs", "write_multiprog", "write_pmc_dag", "write_properties", "write_replica_catalog",
        "write_seqexec_input", "write_site_catalog", "write_transformation_catalog", "write_workflow",
    ]
    for name in formats.__all__:
        assert hasattr(formats, name)


def test_signatures() -> None:
    params = inspect.signature(formats.load_inputs).parameters
    assert list(params) == ["workflow_path", "conf", "defines", "tc", "sc", "rc", "cwd", "env_defaults"]
    for reader in (formats.read_workflow, formats.read_transformation_catalog, formats.read_site_catalog,
                   formats.read_replica_catalog):
        assert list(inspect.signature(reader).parameters) == ["path", "warnings", "variables"]
    assert [f.name for f in formats.Inputs.__dataclass_fields__.values()] == [
        "workflow", "properties", "tc", "sc", "rc", "warnings", "paths"]


def test_gc_paused_leaves_the_collector_on_with_what_was_built_unscanned() -> None:
    """What the pause built is promoted to the oldest generation as it ends (no collection of it on
    the next allocation); the collector is on again, and objects another caller froze stay frozen."""
    import gc

    assert gc.isenabled()
    with formats.gc_paused():
        assert not gc.isenabled()
        built = [{"n": [i]} for i in range(50_000)]
    assert gc.isenabled() and gc.get_count()[0] < 50 and gc.is_tracked(built)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with formats.gc_paused():
            more = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() == frozen and gc.isenabled() and more
    finally:
        gc.unfreeze()
