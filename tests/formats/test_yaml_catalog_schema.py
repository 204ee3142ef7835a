"""The YAML catalogs against Pegasus's 5.0 catalog schemas (tc-5.0.yml, sc-5.0.yml, rc-5.0.yml,
common.yml): what they refuse -- a key they lack, a required key missing, a value outside an enum, a
profile namespace they do not list -- is an error at its line; what they allow (``x-*`` keys) is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import formats
from sheaf.errors import InputError

_TC = """\
pegasus: '5.0'
transformations:
- name: keg
  sites:
  - name: condorpool
    pfn: /usr/bin/keg
    type: installed
- name: analyze
  sites:
  - name: condorpool
    pfn: /usr/bin/analyze
    {site_line}
"""

_SC = """\
pegasus: '5.0'
sites:
- name: local
  directories:
  - type: sharedScratch
    path: /tmp/local/scratch
    fileServers: [{{url: 'file:///tmp/local/scratch',
                    operation: all}}]
    sharedFileSystem: false
- name: condorpool
  {site_line}
  directories:
  - type: sharedStorage
    path: /tmp/pool/storage
    fileServers:
    - url: file:///tmp/pool/storage
      operation: all
  - {directory}
"""

_GOOD_DIR = "type: sharedScratch\n    path: /tmp/pool/scratch\n    fileServers: [{url: 'file:///tmp/pool/scratch'}]"

_RC = """\
pegasus: '5.0'
replicas:
- lfn: f.a
  pfns:
  - {{pfn: /data/f.a, site: local}}
- lfn: f.b
  {line}
"""


def _fails(path: Path, reader: object, line: int, *words: str) -> None:
    with pytest.raises(InputError) as info:
        reader(path)  # type: ignore[operator]
    text = str(info.value)
    assert f"{path}:{line}:" in text and all(w in text for w in words), text


@pytest.mark.parametrize(("site_line", "line", "words"), [
    ("tpye: stageable", 12, ("unknown key 'tpye'", "did you mean 'type'?")),
    ("x-note: mine", 11, ("missing the required key 'type'", "/usr/bin/analyze")),
    ("type: stagable", 12, ("installed or stageable", "stagable")),
    ("container: c1\n    glibcc: 2.17", 13, ("unknown key 'glibcc'",)),
])
def test_transformation_sites_are_read_against_the_schema(tmp_path: Path, site_line: str, line: int,
                                                         words: tuple[str, ...]) -> None:
    path = tmp_path / "tc.yml"
    path.write_text(_TC.format(site_line=site_line))
    _fails(path, formats.read_transformation_catalog, line, *words)


def test_unknown_keys_of_a_transformation_and_of_the_catalog_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "tc.yml"
    path.write_text(_TC.format(site_line="type: installed").replace("- name: analyze\n",
                                                                   "- name: analyze\n  requirse: [keg]\n"))
    _fails(path, formats.read_transformation_catalog, 9, "unknown key 'requirse'", "'requires'")
    path.write_text(_TC.format(site_line="type: installed") + "transformation: []\n")
    _fails(path, formats.read_transformation_catalog, 13, "unknown key 'transformation'")


def test_vendor_keys_are_allowed_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "tc.yml"
    path.write_text("x-top: 1\n" + _TC.format(site_line="type: stageable\n    x-mine: {a: 1}").replace(
        "- name: keg\n", "- name: keg\n  x-what: 2\n"))
    tc = formats.read_transformation_catalog(path)
    assert [s.type for t in tc for s in t.sites] == ["installed", "stageable"]


def test_a_misspelt_directory_type_is_an_error_at_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "sc.yml"
    path.write_text(_SC.format(site_line="arch: x86_64", directory=_GOOD_DIR.replace(
        "sharedScratch", "sharedScrach")))
    _fails(path, formats.read_site_catalog, 18, "sharedScrach", "sharedScratch")


def test_a_directory_without_file_servers_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sc.yml"
    path.write_text(_SC.format(site_line="arch: x86_64",
                               directory="type: sharedScratch\n    path: /tmp/pool/scratch"))
    _fails(path, formats.read_site_catalog, 18, "lists no file servers", "sharedScratch")


def test_a_directory_without_a_path_is_a_warning_naming_what_sheaf_does(tmp_path: Path) -> None:
    path = tmp_path / "sc.yml"
    path.write_text(_SC.format(site_line="arch: x86_64",
                               directory="type: sharedScratch\n    fileServers: [{url: 'file:///x'}]"))
    warnings: list[str] = []
    formats.read_site_catalog(path, warnings=warnings)
    assert any(w.startswith(f"{path}:18:") and "has no path" in w and "default directory" in w
               for w in warnings), warnings


@pytest.mark.parametrize(("site_line", "line", "word"), [
    ("arhc: x86_64", 11, "'arhc'"),
    ("arch: x86_64\n  metadta: {a: b}", 12, "'metadta'"),
])
def test_unknown_keys_of_a_site_are_refused(tmp_path: Path, site_line: str, line: int, word: str) -> None:
    path = tmp_path / "sc.yml"
    path.write_text(_SC.format(site_line=site_line, directory=_GOOD_DIR))
    _fails(path, formats.read_site_catalog, line, word)


def test_unknown_keys_of_a_directory_and_a_file_server_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "sc.yml"
    path.write_text(_SC.format(site_line="arch: x86_64", directory=_GOOD_DIR).replace(
        "    path: /tmp/pool/storage\n", "    path: /tmp/pool/storage\n    sharedFileSytem: true\n"))
    _fails(path, formats.read_site_catalog, 15, "unknown key 'sharedFileSytem'", "'sharedFileSystem'?")
    path.write_text(_SC.format(site_line="arch: x86_64", directory=_GOOD_DIR).replace(
        "  operation: all}]", "  opertion: all}]"))
    _fails(path, formats.read_site_catalog, 8, "unknown key 'opertion'")


@pytest.mark.parametrize(("line", "word"), [
    ("pnfs: [{pfn: /data/f.b, site: local}]", "'pnfs'"),
    ("pfns: [{pfn: /data/f.b, stie: local}]", "'stie'"),
])
def test_unknown_keys_of_a_replica_are_refused(tmp_path: Path, line: str, word: str) -> None:
    path = tmp_path / "rc.yml"
    path.write_text(_RC.format(line=line))
    _fails(path, formats.read_replica_catalog, 7, word)


@pytest.mark.parametrize("where", ["tc", "sc", "wf"])
def test_a_misspelt_profile_namespace_is_refused_at_its_line(tmp_path: Path, where: str) -> None:
    profiles = "profiles: {pegasis: {cores: '2'}}"
    if where == "tc":
        path = tmp_path / "tc.yml"
        path.write_text(_TC.format(site_line="type: installed\n    " + profiles))
        reader, line = formats.read_transformation_catalog, 13
    elif where == "sc":
        path = tmp_path / "sc.yml"
        path.write_text(_SC.format(site_line=profiles, directory=_GOOD_DIR))
        reader, line = formats.read_site_catalog, 11
    else:
        path = tmp_path / "wf.yml"
        path.write_text("pegasus: '5.0'\nname: w\njobs:\n- type: job\n  id: a\n  name: t\n  arguments: []\n"
                        f"  uses: []\n  {profiles}\n")
        reader, line = formats.read_workflow, 9
    _fails(path, reader, line, "unknown profile namespace 'pegasis'", "did you mean 'pegasus'?")


def test_vendor_profile_namespaces_are_allowed_and_hints_is_known(tmp_path: Path) -> None:
    path = tmp_path / "tc.yml"
    path.write_text(_TC.format(site_line="type: installed\n    profiles: {x-mine: {a: 1}, hints: {"
                                         "execution.site: condorpool}, env: {A: b}}"))
    tc = formats.read_transformation_catalog(path)
    site = next(t for t in tc if t.name == "analyze").sites[0]
    assert "x-mine" not in site.profiles and site.profiles["env"] == {"A": "b"}


def test_a_misspelt_profile_namespace_in_the_text_catalog_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "tc.txt"
    path.write_text('tr keg {\n  site condorpool {\n    pfn "/usr/bin/keg"\n    type "INSTALLED"\n'
                    '    profile pegasis "cores" "2"\n  }\n}\n')
    _fails(path, formats.read_transformation_catalog, 5, "unknown profile namespace 'pegasis'")
