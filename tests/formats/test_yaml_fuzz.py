"""Fuzzing the readers: random bytes and mutated valid files give a model or an ``InputError``,
nothing else."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fuzz_strategies import byte_mutations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sheaf import formats
from sheaf.errors import InputError

CHAPTER = Path(__file__).parent / "data" / "chapter"
_VALID_WORKFLOW = """x-pegasus: {apiLang: python, createdBy: me, createdOn: '10-29-20T16:42:51Z'}
pegasus: 5.0.4
name: fuzz
profiles: {pegasus: {clusters.size: 3}}
replicaCatalog:
  replicas:
  - lfn: f.a
    pfns: [{site: local, pfn: /data/f.a}]
transformationCatalog:
  transformations:
  - {namespace: d, name: t, version: '4.0', sites: [{name: local, pfn: /bin/t, type: installed}]}
jobs:
- type: job
  namespace: d
  name: t
  version: '4.0'
  id: ID0000001
  arguments: [-a, x, -T, '60', -i, f.a]
  uses:
  - {lfn: f.a, type: input}
  - {lfn: f.b, type: output, stageOut: true, registerReplica: false, size: 12, metadata: {k: v}}
  profiles:
    pegasus: {runtime: 100}
    env: {PATH: /bin}
  metadata: {owner: me}
  hooks:
    shell:
    - {_on: end, cmd: echo}
- {type: pegasusWorkflow, file: sub.yml, id: ID0000002, arguments: [], uses: [{lfn: f.b, type: input}]}
jobDependencies:
- id: ID0000001
  children: [ID0000002]
"""
_VALID_RC = "# replicas\nf.a file:///d/f.a site=\"local\"\n\"f b\" /d/f_b pool=x regex=\"false\"\n"
_VALID_PROPS = ("# props\npegasus.catalog.site.file = sites.yml\ndagman.retry: 3\n"
                "key\\ with\\ space value \\\n  continued\n")

READERS: dict[str, Callable[..., Any]] = {
    "workflow": formats.read_workflow,
    "tc": formats.read_transformation_catalog,
    "sc": formats.read_site_catalog,
    "rc": formats.read_replica_catalog,
    "properties": formats.read_properties,
}
_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(kind: str, data: bytes) -> None:
    path = Path(tempfile.mkdtemp(prefix="sheaf-fuzz-")) / "input"
    path.write_bytes(data)
    try:
        READERS[kind](path) if kind == "properties" else READERS[kind](path, warnings=[])
    except InputError as exc:
        assert exc.path == str(path)
        rendered = str(exc)
        assert rendered.startswith(str(path))


@_SETTINGS
@given(byte_mutations(_VALID_WORKFLOW.encode()))
def test_mutated_workflows(data: bytes) -> None:
    _read("workflow", data)


@_SETTINGS
@given(st.sampled_from(sorted(p.name for p in CHAPTER.glob("tc_*.yml"))).flatmap(
    lambda name: byte_mutations((CHAPTER / name).read_bytes())))
def test_mutated_transformation_catalogs(data: bytes) -> None:
    _read("tc", data)


@_SETTINGS
@given(byte_mutations(_VALID_RC.encode()))
def test_mutated_text_replica_catalogs(data: bytes) -> None:
    _read("rc", data)


@_SETTINGS
@given(byte_mutations(_VALID_PROPS.encode()))
def test_mutated_properties(data: bytes) -> None:
    _read("properties", data)


@pytest.mark.parametrize("kind", sorted(READERS))
@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_bytes(kind: str, data: bytes) -> None:
    _read(kind, data)


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.floats(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["jobs", "name", "pegasus", "id", "type", "uses", "lfn", "arguments",
                                         "profiles", "jobDependencies", "children", "transformations",
                                         "sites", "replicas", "pfns", "pegasus", "file"]), inner, max_size=4),
                    max_leaves=20))
def test_random_structures(value: Any) -> None:
    """Well-formed YAML of the wrong shape: every reader says what is wrong."""
    import json

    document = json.dumps(value).encode()  # JSON is YAML 1.2
    for kind in ("workflow", "tc", "sc", "rc"):
        _read(kind, document)
