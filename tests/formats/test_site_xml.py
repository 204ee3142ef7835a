"""Site catalog XML: the Pegasus manual's examples, schema 4 documents, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import FormatError
from sheaf.formats._site_xml import loads_site_xml, read_site_xml
from sheaf.model import Directory, FileServer, Grid

SEED_LOCAL_SITE = """
<site handle="local" arch="x86_64" os="LINUX">
     <directory type="shared-scratch" path="/shared-scratch/local">
        <file-server operation="all" url="file:///shared-scratch/local"/>
     </directory>
     <directory type="local-storage" path="/storage/local">
        <file-server operation="all" url="file:///storage/local"/>
     </directory>

     <!-- keys to make jobs scheduled to local site run on local site in vanilla universe -->
     <profile namespace="condor" key="universe">vanilla</profile>
     <profile namespace="condor" key="requirements">(Machine=="submit.example.com")</profile>
  </site>
"""

SEED_SITE_X = """
<site handle="siteX" gridlaunch = "/shared/PEGASUS/bin/kickstart">
    <profile namespace="env" key="GLOBUS_LOCATION" >/home/shared/globus</profile>
    <profile namespace="env" key="LD_LIBRARY_PATH">/home/shared/globus/lib</profile>
    <profile namespace="pegasus" key="job.aggregator" >seqexec</profile>
    <lrc url="rls://siteX.edu" />
    <gridftp  url="gsiftp://siteX.edu/" storage="/home/shared/work" major="2" minor="4" patch="0" />
    <jobmanager universe="transfer" url="siteX.edu/jobmanager-fork" major="2" minor="4" patch="0" />
    <jobmanager universe="vanilla" url="siteX.edu/jobmanager-condor" major="2" minor="4" patch="0" />
    <workdirectory >/home/shared/storage</workdirectory>
  </site>
"""

SEED_RETRY_MEMORY = """<sitecatalog xmlns="http://pegasus.isi.edu/schema/sitecatalog" version="4.0">
  <site handle="condorpool" arch="x86_64" os="LINUX">
    <grid type="batch" contact="localhost" scheduler="slurm" jobtype="compute"/>
    <profile namespace="condor" key="request_memory"> ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096) </profile>
    <metadata key="owner">lab</metadata>
  </site>
  <site handle="local"><directory type="local-scratch" path="/tmp/x"/></site>
</sitecatalog>"""  # noqa: E501  (the chapter's request_memory profile, verbatim: spaces around its text and all)


def test_the_chapters_local_site_for_vanilla_universe() -> None:
    site = loads_site_xml(SEED_LOCAL_SITE).sites["local"]
    assert (site.arch, site.os_type) == ("x86_64", "linux")
    assert site.directory("sharedScratch") == Directory(
        "sharedScratch", "/shared-scratch/local", True, (FileServer("file:///shared-scratch/local", "all"),))
    assert site.directory("localStorage") is not None
    assert site.profiles == {
        "condor": {"universe": "vanilla", "requirements": '(Machine=="submit.example.com")'}}


def test_the_4x_site_x_example_with_old_elements_and_warnings() -> None:
    warnings: list[str] = []
    site = loads_site_xml(SEED_SITE_X, source="sites.xml", warnings=warnings).sites["siteX"]
    assert site.profiles["pegasus"] == {"job.aggregator": "seqexec"}
    assert site.profiles["env"]["GLOBUS_LOCATION"] == "/home/shared/globus"
    assert Grid("gt2", "siteX.edu/jobmanager-condor", "unknown", "compute") in site.grids
    assert Grid("gt2", "siteX.edu/jobmanager-fork", "unknown", "auxillary") in site.grids
    scratch = site.directory("sharedScratch")
    assert scratch is not None and scratch.path == "/home/shared/storage"
    storage = site.directory("sharedStorage")
    assert storage is not None and storage.file_servers[0].url == "gsiftp://siteX.edu/home/shared/work"
    assert any("gridlaunch" in w for w in warnings)
    assert any("<lrc>" in w and w.startswith("sites.xml:6:") for w in warnings)


def test_schema_4_catalog_with_namespace_grids_metadata_and_the_retry_expression() -> None:
    catalog = loads_site_xml(SEED_RETRY_MEMORY)
    pool = catalog.sites["condorpool"]
    assert pool.grids == (Grid("batch", "localhost", "slurm", "compute"),)
    assert pool.profiles["condor"]["request_memory"] == \
        "ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)"
    assert pool.metadata == {"owner": "lab"}
    assert catalog.sites["local"].directory("localScratch") == Directory("localScratch", "/tmp/x")


@pytest.mark.parametrize(("text", "rule", "line"), [
    ("<sitecatalog>\n<site handle='a'>\n</sitecatalog>", "a site catalog is well-formed XML", 3),
    ("<sitecatalog>\n<site arch='x86'/>\n</sitecatalog>", "<site> requires the 'handle' attribute", 2),
    ("<sitecatalog><site handle='a'/>\n<site handle='a'/></sitecatalog>", "site handles are unique", 2),
    ("<site handle='a'>\n<directory type='scratch' path='/x'/></site>",
     "type is shared-scratch, shared-storage, local-scratch or local-storage", 2),
    (("<site handle='a'><directory type='local-scratch' path='/x'>\n<file-server operation='copy' url='u'/>"
      "</directory></site>"), "operation is all, get or put", 2),
    ("<adag/>", "the root element is <sitecatalog> or <site>", 1),
    ("<site handle='a'><profile key='k'>v</profile></site>",
     "<profile> requires the 'namespace' attribute", 1),
])
def test_malformed_catalogs(tmp_path: Path, text: str, rule: str, line: int) -> None:
    path = tmp_path / "sites.xml"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_site_xml(path)
    assert info.value.rule == rule and info.value.line == line and info.value.path == str(path)


def test_external_entities_are_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("TOP-SECRET")
    doc = (f'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x SYSTEM "file://{secret}">]>'
           '<site handle="a"><profile namespace="env" key="K">&x;</profile></site>')
    try:
        site = loads_site_xml(doc).sites["a"]
    except FormatError:
        return
    assert "TOP-SECRET" not in site.profiles.get("env", {}).get("K", "")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="<>/=\"' sitecatalog handle directory type path profile namespace key\n",
               max_size=100))
def test_fuzz_only_format_errors(text: str) -> None:
    try:
        loads_site_xml(text, source="fuzz")
    except FormatError as error:
        assert error.path == "fuzz"
