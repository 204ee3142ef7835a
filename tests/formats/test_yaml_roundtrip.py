"""``read(write(x)) == x`` for random workflows and catalogs (hypothesis), and for the emitter's scalars."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
import yaml_rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from yaml_strategies import replica_catalogs, site_catalogs, text, transformation_catalogs, workflows

from sheaf import formats
from sheaf.formats._yaml_emit import dumps, scalar
from sheaf.model import ReplicaCatalog, SiteCatalog, TransformationCatalog, Workflow

# Few examples each: the strategies draw whole catalogs, and CI time is shared.
_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_CATALOG_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="sheaf-rt-"))


@_SETTINGS
@given(workflows())
def test_workflow_round_trip(wf: Workflow) -> None:
    path = _tmp() / "wf.yml"
    formats.write_workflow(wf, path)
    warnings: list[str] = []
    assert formats.read_workflow(path, warnings=warnings) == wf
    assert not [w for w in warnings if "profile" in w]  # canonical profiles read back silently


@_CATALOG_SETTINGS
@given(transformation_catalogs())
def test_transformation_catalog_round_trip(tc: TransformationCatalog) -> None:
    path = _tmp() / "tc.yml"
    formats.write_transformation_catalog(tc, path)
    assert formats.read_transformation_catalog(path) == tc


@_CATALOG_SETTINGS
@given(site_catalogs())
def test_site_catalog_round_trip(sc: SiteCatalog) -> None:
    path = _tmp() / "sc.yml"
    formats.write_site_catalog(sc, path)
    assert formats.read_site_catalog(path) == sc


@_CATALOG_SETTINGS
@given(replica_catalogs())
def test_replica_catalog_round_trip(rc: ReplicaCatalog) -> None:
    path = _tmp() / "rc.yml"
    formats.write_replica_catalog(rc, path)
    assert formats.read_replica_catalog(path) == rc


@settings(max_examples=300, deadline=None)
@given(st.one_of(text, st.text()), st.one_of(text, st.text()))
def test_scalars_read_back_the_same_in_yaml_1_1_and_1_2(key: str, value: str) -> None:
    """Plain or quoted, a string the emitter writes is that string for yaml_rs and for PyYAML."""
    document = dumps({key: value, "flow": {key: value}, "list": [value, key]})
    expected = {key: value, "flow": {key: value}, "list": [value, key]}
    if key in ("flow", "list"):
        return
    assert yaml_rs.loads(document) == expected
    assert yaml.safe_load(document) == expected


def test_plain_only_where_safe() -> None:
    assert scalar("f.a") == "f.a" and scalar("-a") == "-a" and scalar("/usr/bin/x") == "/usr/bin/x"
    for tricky in ("true", "No", "null", "007", "4.0", "-", "a: b", "", " x", "=", "y", ".inf"):
        assert scalar(tricky).startswith('"'), tricky
    assert scalar("_0") == "\"_0\"" and scalar("-_1") == "\"-_1\"" and scalar("_x") == "_x"
    assert scalar("\U0001f600") == '"\\U0001f600"'
