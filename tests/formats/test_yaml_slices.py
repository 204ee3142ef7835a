"""Reading ``jobs`` in slices gives exactly what parsing the whole document gives, or falls back to it."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from Pegasus.api import File, Job, Workflow

from sheaf import formats
from sheaf.errors import FormatError, InputError
from sheaf.formats import _yaml_chunks
from sheaf.formats._common import TextSource
from sheaf.formats._yaml_workflow import workflow_from_data


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_yaml_chunks, "SLICE_CHARS", 300)


def _whole(path: Path) -> formats.Workflow:
    src = TextSource.open(path, None)
    return workflow_from_data(src.load_yaml(), src)


def _api_workflow(path: Path, n: int = 60) -> Path:
    wf = Workflow("chain")
    files = [File(f"f{i}") for i in range(n + 1)]
    for i in range(n):
        wf.add_jobs(Job("step", namespace="ns", version="1.0").add_args("-i", files[i], "-o", files[i + 1])
                    .add_inputs(files[i]).add_outputs(files[i + 1]).add_pegasus_profile(runtime=10))
    wf.write(str(path))
    return path


@pytest.mark.usefixtures("small_slices")
def test_api_file_in_slices_equals_whole(tmp_path: Path) -> None:
    path = _api_workflow(tmp_path / "wf.yml")
    plan = _yaml_chunks.plan_slices(path.read_bytes())
    assert plan is not None and len(plan[1]) > 5 and b"jobs: []" in plan[0] and b"jobDependencies" in plan[0]
    read = formats.read_workflow(path)
    assert read == _whole(path) and len(read.jobs) == 60 and len(read.dependencies) == 59


@pytest.mark.usefixtures("small_slices")
def test_sheaf_written_file_in_slices(tmp_path: Path) -> None:
    first = formats.read_workflow(_api_workflow(tmp_path / "wf.yml"))
    formats.write_workflow(first, tmp_path / "again.yml")
    assert _yaml_chunks.plan_slices((tmp_path / "again.yml").read_bytes()) is not None
    assert formats.read_workflow(tmp_path / "again.yml") == first


@pytest.mark.usefixtures("small_slices")
def test_anchor_in_another_slice_falls_back(tmp_path: Path) -> None:
    jobs = "".join(f"- {{type: job, id: j{i}, name: t, arguments: [a, b, c, d]}}\n" for i in range(40))
    text = ("pegasus: '5.0'\nname: w\njobs:\n"
            "- {type: job, id: first, name: t, profiles: &p {pegasus: {runtime: '5'}}}\n"
            + jobs + "- {type: job, id: last, name: t, profiles: *p}\n")
    path = tmp_path / "wf.yml"
    path.write_text(text)
    read = formats.read_workflow(path)
    assert read.jobs["last"].profiles == {"pegasus": {"runtime": "5"}} and read == _whole(path)


@pytest.mark.usefixtures("small_slices")
@pytest.mark.parametrize(("bad", "line"), [
    ("- {type: job, id: j3, name: t}\n", 44),  # duplicate id: at the second one
    ("- {type: job, id: [x\n", 45),            # unclosed '[': where the whole-document parse stops
])
def test_errors_late_in_the_file_keep_their_line(tmp_path: Path, bad: str, line: int) -> None:
    jobs = "".join(f"- {{type: job, id: j{i}, name: t, arguments: [a, b, c, d]}}\n" for i in range(40))
    path = tmp_path / "wf.yml"
    path.write_text("pegasus: '5.0'\nname: w\njobs:\n" + jobs + bad + "jobDependencies: []\n")
    with pytest.raises(FormatError) as info:
        formats.read_workflow(path)
    assert info.value.line == line


@pytest.mark.parametrize("text", [
    "pegasus: '5.0'\nname: w\njobs: [{type: job, id: a, name: t}]\n",
    "pegasus: '5.0'\nname: w\njobs:\n- {type: job, id: a, name: t}\njobs:\n- {type: job, id: b, name: t}\n",
    "---\npegasus: '5.0'\nname: w\njobs:\n- {type: job, id: a, name: t}\n---\nname: x\n",
])
def test_layouts_that_are_not_sliced(text: str) -> None:
    assert _yaml_chunks.plan_slices(text.encode(), slice_chars=1) is None


@functools.cache
def _base_text() -> str:
    return _api_workflow(Path(tempfile.mkdtemp()) / "wf.yml", n=25).read_text()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_files_read_the_same_sliced_or_whole(small_slices: None,
                                                     tmp_path_factory: pytest.TempPathFactory,
                                                     data: st.DataObject) -> None:
    text = _base_text()
    lines = text.split("\n")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["dup", "del", "indent", "dedent", "anchor", "alias", "junk"]))
        if op == "dup":
            lines.insert(i, lines[i])
        elif op == "del":
            del lines[i]
        elif op == "indent":
            lines[i] = "  " + lines[i]
        elif op == "dedent":
            lines[i] = lines[i][2:]
        elif op == "anchor":
            lines[i] = lines[i].replace(": ", ": &a ", 1)
        elif op == "alias":
            lines[i] = lines[i].split(": ")[0] + ": *a" if ": " in lines[i] else lines[i]
        else:
            lines[i] = data.draw(st.sampled_from(["jobs:", "name: x", "- 1", "x-y: 2", "---", "#", ""]))
    path = tmp_path_factory.mktemp("m") / "wf.yml"
    path.write_text("\n".join(lines))
    try:
        whole: object = _whole(path)
    except InputError as exc:
        whole = type(exc)
    try:
        sliced: object = formats.read_workflow(path)
    except InputError as exc:
        sliced = type(exc)
    assert sliced == whole
