"""The data pass's speed work (full staging within 1.5x a bare plan): each shortcut is
checked against the plain computation it replaces, and the pass runs with the cyclic collector off
however it is reached (``plan()`` or ``plan_data``)."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest
from data_inputs import catalogs, diamond
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.formats import load_inputs
from sheaf.planner import DataOptions, plan
from sheaf.planner import _data as data_pass
from sheaf.planner import _transfer_lists as transfer_lists
from sheaf.planner._cleanup import add_cleanup
from sheaf.planner._replicas import Source, path_url, url_in
from sheaf.planner._stageout import _File, output_entries

_NAMES = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(directory=st.one_of(st.just(""), st.just("/"), _NAMES.map(lambda s: "/" + s)),
       name=st.one_of(_NAMES, st.from_regex(r"[A-Za-z0-9_.~/-]{0,12}", fullmatch=True)))
def test_url_in_is_the_joined_paths_url(directory: str, name: str) -> None:
    assert url_in(directory, name) == path_url(os.path.join(directory, name))


@settings(max_examples=200, deadline=None)
@given(entry=st.fixed_dictionaries({"lfn": _NAMES, "url": _NAMES, "n": st.integers(), "x": st.booleans()}))
def test_json_text_is_json_dumps(entry: dict[str, object]) -> None:
    assert transfer_lists.json_text(entry) == json.dumps(entry, ensure_ascii=False)


def test_the_pass_run_by_plan_data_pauses_the_collector(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller that plans without the submit directory runs the pass itself (``plan_data``): there
    too no generation-2 collection walks the workflow in the middle of it."""
    catalogs(tmp_path)
    diamond(tmp_path)
    inputs = load_inputs("workflow.yml", cwd=tmp_path)
    options = DataOptions(output_dir=str(tmp_path / "out"), cwd=str(tmp_path))
    exec_wf = plan(inputs.workflow, tc=inputs.tc, sc=inputs.sc, rc=inputs.rc, properties=inputs.properties,
                   sites=["condorpool"], data=options)
    seen: list[bool] = []
    real = add_cleanup

    def spy(*args: object) -> None:
        seen.append(gc.isenabled())
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(data_pass, "add_cleanup", spy)
    assert gc.isenabled()
    data_pass.plan_data(exec_wf, str(tmp_path / "submit"))
    assert seen == [False]
    assert gc.isenabled()  # and on again after it
    assert any(job.type == "cleanup" for job in exec_wf.jobs)


_SOURCES = st.lists(st.tuples(_NAMES, _NAMES), min_size=1, max_size=3)


@settings(max_examples=200, deadline=None)
@given(number=st.integers(0, 10**6), linkage=_NAMES, lfn=_NAMES, sources=_SOURCES,
       dest=st.tuples(_NAMES, _NAMES),
       executable=st.booleans(), checksum=st.one_of(st.none(), st.just(""), _NAMES))
def test_transfer_entry_is_the_json_of_its_dict(number: int, linkage: str, lfn: str,
                                                sources: list[tuple[str, str]], dest: tuple[str, str],
                                                executable: bool, checksum: str | None) -> None:
    """The entry is formatted by hand; it must be what ``json.dumps`` makes of the documented dict."""
    entry: dict[str, object] = {
        "type": "transfer", "id": number, "linkage": linkage, "lfn": lfn, "executable": executable,
        "src_urls": [{"site_label": site, "url": url} for site, url in sources],
        "dest_urls": [{"site_label": dest[0], "url": dest[1]}]}
    if checksum:
        entry["checksum"] = {"sha256": checksum}
    made = transfer_lists.transfer_entry(number, linkage, lfn, [Source(url, site) for site, url in sources],
                                    dest[0], dest[1], executable, checksum)
    assert made == json.dumps(entry, ensure_ascii=False)
    assert json.loads(transfer_lists.transfer_text([made, made])) == [entry, entry]


@settings(max_examples=200, deadline=None)
@given(workdir=st.one_of(st.just(""), _NAMES.map(lambda s: "/w" + s)), out=_NAMES.map(lambda s: "/o" + s),
       lfns=st.lists(st.one_of(_NAMES, st.from_regex(r"[A-Za-z0-9_.~/-]{0,12}", fullmatch=True)), max_size=4),
       reused=st.booleans(), site=_NAMES, label=_NAMES)
def test_output_entries_are_transfer_entries(workdir: str, out: str, lfns: list[str], reused: bool, site: str,
                                             label: str) -> None:
    """A stage-out job's entries, formatted with each directory's URL made once, are the entries
    ``transfer_entry`` makes of a file's source (its copy in the working directory, or a reused
    output's replica) and the URL it is delivered to."""
    replica = Source("file:///data/x", "local") if reused else None
    files = [_File(site, lfn, source=replica) for lfn in lfns]
    entries, delivered = output_entries(workdir, site, label, out, files)
    assert delivered == [url_in(out, lfn) for lfn in lfns]
    sources = [replica or Source(url_in(workdir, lfn), site) for lfn in lfns]
    assert entries == [transfer_lists.transfer_entry(i, "output", lfn, [source], label, url_in(out, lfn))
                       for i, (lfn, source) in enumerate(zip(lfns, sources, strict=True), 1)]
