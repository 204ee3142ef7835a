"""A fuzz test per reader: only sheaf's own error escapes, every input finishes within a
bound, and the command line answers the worst inputs with one message and exit code 2.

Inputs are structure-aware mutations of a valid file of the reader's format (a subtree of the
loaded YAML/JSON replaced by a value of another type, a huge number, a NUL, a long or path-like
name; XML attributes and entity declarations) and byte-level ones (insertions of the format's
syntax, deletions, a slice repeated up to thousands of times, raw bytes).  A read that succeeds
goes on as ``sheaf validate``/``sheaf plan`` would: validation, and a regex replica lookup.
Bounded for CI on two cores: about 100 examples per reader, a few seconds each.
"""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml_rs
from fuzz_strategies import byte_mutations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import examples
from sheaf import formats
from sheaf.errors import SheafError
from sheaf.model import ReplicaCatalog, validate

CORPUS = Path(__file__).parent / "data" / "fuzz"
SHEAF = str(Path(sys.executable).with_name("sheaf"))
#: seconds any one input may take (super-linear readers once took 8 to 35 s)
BOUND = 3.0

_PALETTE: list[Any] = [None, True, 0, -1, 3.5, 2**70, 10**400, "", "x" * 300, "a\x00b", "a\nb", "../../etc/x",
                       "(", "[a", "a b", "\u00e9", [], {}, [1, 2], {"a": 1}, ["input"], "input", "output",
                       "pegasusWorkflow", "9" * 500, "f.a", "local", "\U0001f600"]


def _read_workflow(path: Path) -> None:
    workflow = formats.read_workflow(path, warnings=[])
    validate(workflow, workflow.transformation_catalog, workflow.site_catalog)


def _read_rc(path: Path) -> None:
    catalog: ReplicaCatalog = formats.read_replica_catalog(path, warnings=[])
    catalog.lookup("f.1")


def _discovered(name: str) -> Callable[[Path], object]:
    """The catalog read as ``sheaf validate`` finds it: as ``name`` in the directory it runs in
    (``load_inputs``, which first checks whether the file holds anything)."""
    def read(path: Path) -> None:
        (path.parent / "wf.yml").write_bytes((CORPUS / "inline.yml").read_bytes())
        path.rename(path.parent / name)
        formats.load_inputs(path.parent / "wf.yml", cwd=path.parent)

    return read


READERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "yaml workflow": ("inline.yml", _read_workflow),
    "yaml tc": ("tc.yml", lambda p: formats.read_transformation_catalog(p, warnings=[])),
    "yaml sc": ("sites.yml", lambda p: formats.read_site_catalog(p, warnings=[])),
    "yaml rc": ("rc.yml", _read_rc),
    "dax": ("diamond.dax", _read_workflow),
    "wfcommons 1.5": ("wf15.json", _read_workflow),
    "wfcommons 1.4": ("wf14.json", _read_workflow),
    "text tc": ("tc.txt", lambda p: formats.read_transformation_catalog(p, warnings=[])),
    "one-line tc": ("tc1.txt", lambda p: formats.read_transformation_catalog(p, warnings=[])),
    "text rc": ("rc.txt", _read_rc),
    "site xml": ("sites.xml", lambda p: formats.read_site_catalog(p, warnings=[])),
    "properties": ("pegasus.properties", formats.read_properties),
    "discovered text rc": ("rc.txt", _discovered("rc.txt")),
    "discovered text tc": ("tc.txt", _discovered("tc.txt")),
    "discovered sites xml": ("sites.xml", _discovered("sites.xml")),
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found += _paths(inner, (*prefix, key))
    return found


@st.composite
def tree_mutations(draw: st.DrawFn, seed: bytes, kind: str) -> bytes:
    data = yaml_rs.loads(seed.decode()) if kind == "yaml" else json.loads(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()):
            parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(_PALETTE)))
        else:
            del parent[path[-1]]
    if kind == "yaml" and draw(st.booleans()):
        try:
            return yaml_rs.dumps(data).encode()
        except (ValueError, TypeError, OverflowError):
            pass
    return json.dumps(data).encode()


def _inputs(name: str) -> st.SearchStrategy[bytes]:
    seed_name, _ = READERS[name]
    seed = (CORPUS / seed_name).read_bytes()
    kind = "yaml" if seed_name.endswith(".yml") else "json" if seed_name.endswith(".json") else None
    strategies = [byte_mutations(seed), st.binary(max_size=300)]
    if kind is not None:
        strategies.append(tree_mutations(seed, kind))
    return st.one_of(strategies)


def _attack(name: str, data: bytes) -> None:
    _, read = READERS[name]
    with tempfile.TemporaryDirectory(prefix="sheaf-fuzz-") as tmp:
        path = Path(tmp) / "input"
        path.write_bytes(data)
        start = time.perf_counter()
        with contextlib.suppress(SheafError):  # anything else escapes and fails the test, with the input
            read(path)
        took = time.perf_counter() - start
    assert took < BOUND, f"{name}: {len(data)} bytes took {took:.1f} s"


def _fuzz(name: str) -> Callable[[], None]:
    @settings(max_examples=examples(100), deadline=None, derandomize=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=_inputs(name))
    def run(data: bytes) -> None:
        _attack(name, data)

    return run


@pytest.mark.parametrize("name", sorted(READERS))
def test_fuzz_reader(name: str) -> None:
    _fuzz(name)()


# --- the worst inputs through the command line: exit 2, one message, no traceback ----------------

WORST: dict[str, tuple[str, bytes]] = {
    "deep yaml": ("wf.yml", b"- " * 50_000 + b"x\n"),
    "deep flow": ("wf.yml", b"[" * 50_000 + b"]" * 50_000),
    "1 MB value": ("wf.yml", b"pegasus: '5.0'\nname: w\njobs:\n- {type: job, id: a, name: t}\n"
                   b"jobDependencies:\n- {id: a, children: [" + b"-" * 1_000_000 + b"]}\n"),
    "not utf-8 wfcommons": ("wf.json", b'{"schemaVersion": "1.5", "name": "\xff", "workflow": {}}'),
    "nul lfn": ("wf.yml", (b'pegasus: "5.0"\nname: w\njobs:\n'
                           b'- {type: job, id: a, name: t, uses: [{lfn: "\\0", type: input}]}\n')),
    "long id": ("wf.yml", b"pegasus: '5.0'\nname: w\njobs:\n- {type: job, id: " + b"j" * 300
                + b", name: t}\n"),
    "external entity": ("wf.dax",
                        b'<!DOCTYPE adag [<!ENTITY d SYSTEM "file:///etc/passwd">]><adag name="&d;"/>'),
    "type list": ("wf.yml", b"pegasus: '5.0'\nname: w\njobs:\n- {type: [job], id: a, name: t}\n"),
}


@pytest.mark.parametrize("name", sorted(WORST))
def test_worst_inputs_on_the_command_line(tmp_path: Path, name: str) -> None:
    file_name, data = WORST[name]
    (tmp_path / file_name).write_bytes(data)
    result = subprocess.run([SHEAF, "validate", file_name], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith("sheaf: error: ") and "Traceback" not in result.stderr
    assert result.stderr.count("sheaf: error: ") == 1

