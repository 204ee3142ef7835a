"""What Pegasus users' catalogs contain: ``${VAR}`` expansion, the default catalog names, absent or
empty catalogs, ``~/.pegasusrc`` and a site catalog fetched from a repository over HTTP."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from Pegasus.api import (
    Directory,
    FileServer,
    Job,
    Namespace,
    Operation,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)

from http_serving import serving
from sheaf import formats
from sheaf.errors import FormatError, InputError


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.pegasusrc of the machine
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("SHEAF_TEST_ROOT", str(tmp_path))
    monkeypatch.delenv("SHEAF_TEST_UNSET", raising=False)
    monkeypatch.setenv("PROJECT", "from-env")
    job = Job("keg", _id="ID1").add_profiles(Namespace.ENV, key="PROJECT", value="${Project}")
    Workflow("w").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    return tmp_path


def _sites(path: Path, scratch: str) -> None:
    """A site catalog as the Pegasus API writes it (by hand when a path holds a variable: the API
    refuses a path that does not start with '/', as the manual's ``${PWD}/LOCAL`` example does)."""
    if scratch.startswith("/"):
        directory = Directory(Directory.SHARED_SCRATCH, scratch).add_file_servers(
            FileServer(f"file://{scratch}", Operation.ALL))
        SiteCatalog().add_sites(Site("condorpool").add_directories(directory)).write(str(path))
        return
    path.write_text(f"pegasus: '5.0'\nsites:\n- name: condorpool\n"
                    f"  directories:\n  - type: sharedScratch\n    path: {scratch}\n"
                    f"    fileServers:\n    - {{url: 'file://{scratch}', operation: all}}\n")


def test_variables_in_every_catalog_are_expanded(here: Path) -> None:
    _sites(here / "sites.yml", "${SHEAF_TEST_ROOT}/scratch")
    keg = Transformation("keg", site="condorpool", pfn="file://${SHEAF_TEST_ROOT}/bin/keg")
    TransformationCatalog().add_transformations(keg).write(str(here / "transformations.yml"))
    (here / "rc.txt").write_text('f.a file://${SHEAF_TEST_ROOT}/f.a site="local"\n'
                                 "# $SHEAF_TEST_ROOT and \\${SHEAF_TEST_ROOT} stay as written\n")
    inputs = formats.load_inputs("workflow.yml", cwd=here)
    assert inputs.sc is not None and inputs.tc is not None and inputs.rc is not None
    scratch = inputs.sc.sites["condorpool"].directories[0]
    assert scratch.path == f"{here}/scratch" and scratch.file_servers[0].url == f"file://{here}/scratch"
    assert next(iter(inputs.tc)).sites[0].pfn == f"file://{here}/bin/keg"
    assert inputs.rc.lookup("f.a")[0].pfn == f"file://{here}/f.a"
    # ${Project}: looked up ignoring case, as Pegasus does
    assert inputs.workflow.jobs["ID1"].profiles["env"]["PROJECT"] == "from-env"


def test_env_profiles_of_the_properties_are_variables(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROJECT", raising=False)
    (here / "pegasus.properties").write_text("env.PROJECT = from-properties\n")
    inputs = formats.load_inputs("workflow.yml", cwd=here)
    assert inputs.workflow.jobs["ID1"].profiles["env"]["PROJECT"] == "from-properties"


def test_escaped_and_dollar_only_references_stay(here: Path) -> None:
    (here / "wf.yml").write_text("pegasus: '5.0'\nname: w\njobs:\n- type: job\n  id: a\n  name: keg\n"
                                 "  arguments: ['\\${SHEAF_TEST_UNSET}', $SHEAF_TEST_ROOT,"
                                 " '${SHEAF_TEST_ROOT']\n")
    wf = formats.load_inputs("wf.yml", cwd=here).workflow
    assert wf.jobs["a"].arguments == ("${SHEAF_TEST_UNSET}", "$SHEAF_TEST_ROOT", "${SHEAF_TEST_ROOT")


def test_an_unset_variable_is_an_error_with_its_line(here: Path) -> None:
    _sites(here / "sites.yml", "${SHEAF_TEST_UNSET}/scratch")
    with pytest.raises(FormatError) as caught:
        formats.load_inputs("workflow.yml", cwd=here)
    error = caught.value
    assert error.path == str(here / "sites.yml") and error.line is not None
    assert error.value == "SHEAF_TEST_UNSET"
    assert "${SHEAF_TEST_UNSET}" in str(error)


def test_dax_workflows_are_expanded_too(here: Path) -> None:
    (here / "wf.dax").write_text('<adag name="${SHEAF_TEST_NAME}"><job id="a" name="keg">'
                                 "<argument>-o ${SHEAF_TEST_ROOT}/out</argument></job></adag>\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHEAF_TEST_NAME", "from-env")
        wf = formats.load_inputs("wf.dax", cwd=here).workflow
    assert wf.name == "from-env" and wf.jobs["a"].arguments == ("-o", f"{here}/out")


def test_default_names_yaml_first_then_the_older_formats(here: Path) -> None:
    (here / "tc.txt").write_text("tr keg {\n  site condorpool {\n    pfn \"/bin/true\"\n  }\n}\n")
    (here / "sites.xml").write_text('<sitecatalog version="4.0"><site handle="condorpool" arch="x86_64" '
                                    'os="LINUX"/></sitecatalog>\n')
    (here / "rc.txt").write_text('f.a /data/f.a site="local"\n')
    inputs = formats.load_inputs("workflow.yml", cwd=here)
    assert (inputs.paths["tc"], inputs.paths["sc"], inputs.paths["rc"]) == (
        str(here / "tc.txt"), str(here / "sites.xml"), str(here / "rc.txt"))
    _sites(here / "sites.yml", "/scratch")
    assert formats.load_inputs("workflow.yml", cwd=here).paths["sc"] == str(here / "sites.yml")


def test_an_empty_replica_catalog_is_a_warning_naming_it(here: Path) -> None:
    (here / "replicas.yml").write_text("# nothing yet\n\n")
    inputs = formats.load_inputs("workflow.yml", cwd=here)
    assert inputs.paths["rc"] is None
    assert f"{here / 'replicas.yml'}: the replica catalog is empty" in inputs.warnings


def test_pegasusrc_is_under_every_other_layer(here: Path) -> None:
    (here / "home" / ".pegasusrc").write_text("pegasus.mode = development\nsheaf.test = rc\n")
    (here / "pegasus.properties").write_text("sheaf.test = properties\n")
    props = formats.load_inputs("workflow.yml", cwd=here).properties
    assert props.get_str("pegasus.mode") == "development" and props.get_str("sheaf.test") == "properties"


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[str]:
    """A site catalog repository served over HTTP on 127.0.0.1 (``<root>/5.0/conf/<file>``)."""
    root = tmp_path / "repo"
    (root / "5.0" / "conf").mkdir(parents=True)
    _sites(root / "5.0" / "conf" / "cluster.yml", "/remote/scratch")
    with serving(root) as base:
        yield base


def test_site_catalog_fetched_from_a_repository(here: Path, repository: str) -> None:
    defines = [f"pegasus.catalog.site.repo={repository}", "pegasus.catalog.site.repo.file=cluster.yml"]
    inputs = formats.load_inputs("workflow.yml", cwd=here, defines=defines)
    assert inputs.sc is not None and inputs.sc.sites["condorpool"].directories[0].path == "/remote/scratch"
    assert (here / "cluster.yml").is_file()  # downloaded beside, as pegasus-plan does
    _sites(here / "sites.yml", "/local/scratch")  # a local entry wins over the downloaded one
    inputs = formats.load_inputs("workflow.yml", cwd=here, defines=defines)
    assert inputs.sc is not None and inputs.sc.sites["condorpool"].directories[0].path == "/local/scratch"


def test_a_site_catalog_that_cannot_be_downloaded_is_a_warning_naming_the_url(here: Path,
                                                                              repository: str) -> None:
    """pegasus-plan logs a failed download of the repository's site catalog and plans on with the local
    catalog: a 404, and a port where nothing listens."""
    _sites(here / "sites.yml", "/local/scratch")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for base in (repository, closed):
        defines = [f"pegasus.catalog.site.repo={base}", "pegasus.catalog.site.repo.file=absent.yml"]
        inputs = formats.load_inputs("workflow.yml", cwd=here, defines=defines)
        assert any(f"{base}/5.0/conf/absent.yml" in w and "planning goes on" in w for w in inputs.warnings)
        assert inputs.sc is not None and inputs.sc.sites["condorpool"].directories[0].path == "/local/scratch"
        assert not (here / "absent.yml").exists()


@pytest.mark.parametrize("name", ["my sites.yml", "a\x01.yml", "a\x00.yml", "x" * 300])
def test_a_repository_file_name_no_url_or_file_can_hold_is_a_warning(here: Path, name: str) -> None:
    """A blank or a control character is quoted into the URL, and a name longer than a file name may be
    fails its download: each a warning, planning going on as pegasus-plan does, not a traceback."""
    _sites(here / "sites.yml", "/local/scratch")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    defines = [f"pegasus.catalog.site.repo={closed}", f"pegasus.catalog.site.repo.file={name}"]
    inputs = formats.load_inputs("workflow.yml", cwd=here, defines=defines)
    assert any("planning goes on" in w for w in inputs.warnings), inputs.warnings
    assert inputs.sc is not None and inputs.sc.sites["condorpool"].directories[0].path == "/local/scratch"


@pytest.mark.parametrize("kind", ["replica", "site", "transformation"])
def test_a_catalog_name_too_long_for_a_file_is_named_not_a_traceback(here: Path, kind: str) -> None:
    """A catalog file name with a component longer than 255 bytes (ENAMETOOLONG): the property's is
    warned about as a missing file is, the command line's refused naming it."""
    long_name = "x" * 300 + ".yml"
    defines = [f"pegasus.catalog.{kind}.file={long_name}"]
    inputs = formats.load_inputs("workflow.yml", cwd=here, defines=defines)
    assert any(long_name in w and "cannot be looked up" in w for w in inputs.warnings), inputs.warnings
    with pytest.raises(InputError, match="cannot be looked up"):
        formats.load_inputs("workflow.yml", cwd=here, **{kind[0] + "c": long_name})  # type: ignore[arg-type]


def test_a_relative_directory_path_in_the_site_catalog_is_a_warning_with_its_line(here: Path) -> None:
    """sheaf uses a site's directories only by absolute path (Pegasus's API refuses any other): a
    relative one, or a number, would be passed over silently for the site's default."""
    (here / "sites.yml").write_text(
        'pegasus: "5.0"\nsites:\n- name: condorpool\n  directories:\n  - type: sharedScratch\n'
        '    path: scratch/here\n    fileServers:\n    - {url: "file:///x", operation: all}\n'
        '  - type: sharedStorage\n    path: /abs/out\n    fileServers: [{url: "file:///y"}]\n'
        '  - type: localStorage\n    path: 42\n    fileServers: [{url: "file:///z"}]\n')
    warnings: list[str] = []
    formats.read_site_catalog(here / "sites.yml", warnings=warnings)
    relative = [w for w in warnings if "relative path" in w]
    assert [w.split(":")[1] for w in relative] == ["6", "13"]
    assert "'scratch/here'" in relative[0] and "sharedScratch" in relative[0]
    assert "'42'" in relative[1] and "localStorage" in relative[1]
