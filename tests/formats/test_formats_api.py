"""The public surface of ``sheaf.formats`` (others call these names)."""

from __future__ import annotations

import inspect

from sheaf import formats


def test_all_is_pinned() -> None:
    assert sorted(formats.__all__) == [
        "FAILURE_MODES", "Inputs", "PmcDag", "PmcTask", "SeqexecTask", "SiteConfig", "SiteSpec", "Variables",
        "directory_settings", "dumps", "format_properties", "load_inputs", "looks_like_workflow",
        "parse_pmc_dag", "parse_rescue", "parse_seqexec_input", "rc_to_data", "read_properties",
        "read_replica_catalog", "read_site_catalog",
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
        "workflow", "properties", "tc", "sc", "rc", "warnings", "paths", "input_dirs", "storage_map"]
