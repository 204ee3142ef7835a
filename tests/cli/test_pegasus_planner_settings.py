"""What pegasus-plan provides that real Pegasus workflows count on, through ``sheaf validate`` and
``sheaf plan`` as users run them: the variables of ``pegasus-config --sh-dump`` (``PEGASUS_BIN_DIR`` ...)
in catalogs and workflows, defined when the environment lacks them; ``pegasus.code.generator = Shell``
(the workflow on the submit host); and
``pegasus.clusterer.job.aggregator = AWSBatch``, whose clusters run as seqexec jobs of the site's backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from Pegasus.api import (
    File,
    Job,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Workflow,
)

BIN = Path(sys.executable).parent
SHEAF = str(BIN / "sheaf")
PEGASUS_VARIABLES = ("PEGASUS_HOME", "PEGASUS_BIN_DIR", "PEGASUS_CONF_DIR", "PEGASUS_SHARE_DIR",
                     "PEGASUS_JAVA_DIR", "PEGASUS_SCHEMA_DIR", "PEGASUS_PYTHON_DIR",
                     "PEGASUS_PYTHON_EXTERNALS_DIR")

#: a step of a pipeline: copies its first argument's file to its second, adding its name
STEP = f"""#!{sys.executable}
import sys
text = open(sys.argv[1]).read() if len(sys.argv) > 2 else ""
with open(sys.argv[-1], "w") as out:
    out.write(text + sys.argv[0].rsplit("/", 1)[-1] + "\\n")
"""


def _sheaf(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in PEGASUS_VARIABLES}
    base["PATH"] = f"{BIN}:{base.get('PATH', '')}"
    return subprocess.run([SHEAF, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**base, **(env or {})}, check=False)


def _submit_text(directory: Path) -> str:
    """The DAG (its shared submit descriptions and VARS) and every submit file of a plan."""
    return "\n".join(p.read_text() for p in sorted([*directory.glob("*.dag"), *directory.rglob("*.sub")]))


def _executables(directory: Path) -> set[str]:
    return {line.split("=", 1)[1].strip() for line in _submit_text(directory).splitlines()
            if line.replace(" ", "").startswith("executable=")}


def _keg_workflow(here: Path, pfn: str) -> None:
    TransformationCatalog().add_transformations(Transformation("keg", site="local", pfn=pfn)) \
        .write(str(here / "transformations.yml"))
    SiteCatalog().add_sites(Site("condorpool")).write(str(here / "sites.yml"))
    Workflow("w").add_jobs(Job("keg", _id="ID1").add_args("-o", "x")).write(str(here / "workflow.yml"))


def test_pegasus_bin_dir_in_a_catalog_is_sheafs_tools_directory(tmp_path: Path) -> None:
    _keg_workflow(tmp_path, "${PEGASUS_BIN_DIR}/pegasus-keg")
    checked = _sheaf(tmp_path, "validate", "workflow.yml")
    assert checked.returncode == 0, checked.stderr
    done = _sheaf(tmp_path, "plan", "workflow.yml", "-s", "local", "-d", "out", "--relative-dir", "p")
    assert done.returncode == 0, done.stderr
    executables = _executables(tmp_path / "out" / "p")
    assert f"{BIN}/pegasus-keg" in executables
    assert (BIN / "sheaf-cluster").is_file()  # where sheaf's own tools are


def test_pegasus_config_variables_are_defined_and_the_environment_wins(tmp_path: Path) -> None:
    names = [f"${{{name}}}" for name in PEGASUS_VARIABLES]
    _keg_workflow(tmp_path, "/bin/echo")
    Workflow("w").add_jobs(Job("keg", _id="ID1").add_args(*names)).write(str(tmp_path / "workflow.yml"))
    done = _sheaf(tmp_path, "plan", "workflow.yml", "-s", "local", "-d", "out", "--relative-dir", "p",
                  env={"PEGASUS_SHARE_DIR": "/opt/pegasus/share"})
    assert done.returncode == 0, done.stderr
    arguments = _submit_text(tmp_path / "out" / "p")
    home = str(BIN.parent)
    assert f"{home} {BIN} {home}/etc /opt/pegasus/share {home}/share/pegasus/java" in arguments
    assert "${PEGASUS" not in arguments


def _pipeline(here: Path) -> None:
    """Two steps, catalogued on ``local`` and ``condorpool`` alike."""
    tc = TransformationCatalog()
    for name in ("first", "second"):
        program = here / "bin" / name
        program.parent.mkdir(exist_ok=True)
        program.write_text(STEP)
        program.chmod(0o755)
        t = Transformation(name)
        for site in ("local", "condorpool"):
            t.add_sites(TransformationSite(site, str(program), is_stageable=False))
        tc.add_transformations(t)
    tc.write(str(here / "transformations.yml"))
    SiteCatalog().add_sites(Site("condorpool")).write(str(here / "sites.yml"))
    a, b = File("f.a"), File("f.b")
    Workflow("pipe").add_jobs(Job("first", _id="ID1").add_args(a).add_outputs(a),
                              Job("second", _id="ID2").add_args(a, b).add_inputs(a).add_outputs(b)) \
        .write(str(here / "workflow.yml"))


@pytest.mark.parametrize("where", ["property", "profile"])
def test_awsbatch_aggregator_runs_clusters_as_seqexec_jobs(tmp_path: Path, where: str) -> None:
    _pipeline(tmp_path)
    wf = Workflow("fan")
    for n in range(3):
        out = File(f"o{n}")
        job = Job("first", _id=f"ID{n}").add_args(out).add_outputs(out).add_pegasus_profile(clusters_size=3)
        if where == "profile":
            job.add_pegasus_profile(job_aggregator="AWSBatch")
        wf.add_jobs(job)
    wf.write(str(tmp_path / "workflow.yml"))
    defines = ["-D", "pegasus.clusterer.job.aggregator=AWSBatch"] if where == "property" else []
    done = _sheaf(tmp_path, "plan", "workflow.yml", *defines, "-C", "horizontal", "-s", "condorpool",
                  "-d", "out", "--relative-dir", "p", "--output-dir", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    assert "AWSBatch" in done.stderr and "seqexec" in done.stderr
    doc = json.loads((tmp_path / "out" / "p" / "plan.json").read_text())
    (cluster,) = [j for j in doc["jobs"] if j["type"] == "cluster"]
    assert cluster["aggregator"] == "seqexec" and len(cluster["tasks"]) == 3
    ran = _sheaf(tmp_path, "run", str(tmp_path / "out" / "p"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["o0", "o1", "o2"]


def test_shell_code_generator_runs_the_workflow_on_the_submit_host(tmp_path: Path) -> None:
    _pipeline(tmp_path)
    done = _sheaf(tmp_path, "plan", "workflow.yml", "-D", "pegasus.code.generator=Shell", "-d", "out",
                  "--relative-dir", "p", "--output-dir", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    assert "pegasus.code.generator = Shell" in done.stderr and "local" in done.stderr
    doc = json.loads((tmp_path / "out" / "p" / "plan.json").read_text())
    assert {j["site"] for j in doc["jobs"] if j["type"] == "compute"} == {"local"}
    ran = _sheaf(tmp_path, "run", str(tmp_path / "out" / "p"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "results" / "f.b").read_text() == "first\nsecond\n"


def test_shell_code_generator_refuses_a_job_pinned_elsewhere(tmp_path: Path) -> None:
    _pipeline(tmp_path)
    wf = Workflow("pipe").add_jobs(Job("first", _id="ID1").add_args("x")
                                   .add_selector_profile(execution_site="condorpool"))
    wf.write(str(tmp_path / "workflow.yml"))
    done = _sheaf(tmp_path, "plan", "workflow.yml", "-D", "pegasus.code.generator=Shell", "-d", "out")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "ID1" in done.stderr and "condorpool" in done.stderr and "pegasus.code.generator" in done.stderr
    assert not (tmp_path / "out").exists()


def _reader(here: Path) -> None:
    """The pipeline's catalogs, and a workflow whose one job reads ``in.txt``, which no job makes."""
    _pipeline(here)
    Workflow("read").add_jobs(Job("second", _id="ID1").add_args(File("in.txt"), File("out.txt"))
                              .add_inputs(File("in.txt")).add_outputs(File("out.txt"))) \
        .write(str(here / "workflow.yml"))


def test_a_directory_replica_catalog_supplies_the_inputs(tmp_path: Path) -> None:
    """``pegasus.catalog.replica = Directory``: the files under its directory are the inputs' replicas,
    each named by its path there, as ``--input-dir`` gives them."""
    _reader(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("from the directory\n")
    (tmp_path / "pegasus.properties").write_text(
        "pegasus.catalog.replica = Directory\npegasus.catalog.replica.directory = data\n")
    done = _sheaf(tmp_path, "plan", "workflow.yml", "-d", "out", "--relative-dir", "p",
                  "--output-dir", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    assert "input file(s) found neither" not in done.stderr
    ran = _sheaf(tmp_path, "run", str(tmp_path / "out" / "p"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "results" / "out.txt").read_text() == "from the directory\nsecond\n"


@pytest.mark.parametrize(("defines", "code", "words"), [
    (["pegasus.catalog.replica=JDBCRC"], 2,
     "pegasus.catalog.replica = JDBCRC (a database catalog) is not implemented"),
    (["pegasus.catalog.replica=Directory"], 2, "pegasus.catalog.replica.directory"),
    (["pegasus.catalog.replica=Directory", "pegasus.catalog.replica.directory=nowhere"], 2, "nowhere"),
    (["pegasus.catalog.replica=Directory", "pegasus.catalog.replica.directory=data",
      "pegasus.catalog.replica.directory.flat.lfn=true"], 0,
     "pegasus.catalog.replica.directory.flat.lfn = true is not implemented"),
])
def test_a_replica_catalog_sheaf_cannot_read_is_named(tmp_path: Path, defines: list[str], code: int,
                                                       words: str) -> None:
    _reader(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("in\n")
    done = _sheaf(tmp_path, "plan", "workflow.yml", "-d", "out", *(x for d in defines for x in ("-D", d)))
    assert done.returncode == code and "Traceback" not in done.stderr, done.stderr
    assert words in done.stderr
    assert code == 0 or not (tmp_path / "out").exists()


def test_every_job_is_retried_once_unless_its_profiles_say_otherwise(tmp_path: Path) -> None:
    """Pegasus's Dagman namespace gives every job ``dagman.retry`` 1 where neither its profiles nor the
    properties name one; a job's own profile, or the property, wins (0: no RETRY line)."""
    TransformationCatalog().add_transformations(Transformation("keg", site="condorpool", pfn="/bin/true")) \
        .write(str(tmp_path / "transformations.yml"))
    SiteCatalog().add_sites(Site("condorpool")).write(str(tmp_path / "sites.yml"))
    Workflow("w").add_jobs(Job("keg", _id="ID1"), Job("keg", _id="ID2").add_dagman_profile(retry=3)) \
        .write(str(tmp_path / "workflow.yml"))

    def retries(*defines: str) -> dict[str, str]:
        done = _sheaf(tmp_path, "plan", "workflow.yml", "-s", "condorpool", "--cleanup", "none", "--force",
                      "--dir", str(tmp_path / "submit"), *defines)
        assert done.returncode == 0, done.stderr
        directory = Path(done.stdout.split("submit directory: ", 1)[1].split()[0])
        dag = next(directory.glob("*.dag")).read_text()
        return {w[1]: w[2] for w in (line.split() for line in dag.splitlines()) if w and w[0] == "RETRY"}

    default = retries()
    assert default["keg_ID1"] == "1" and default["keg_ID2"] == "3"
    assert default["create_dir_w_0_condorpool"] == "1"
    assert retries("-Ddagman.retry=0") == {"keg_ID2": "3"}


def test_site_profiles_set_in_the_properties_override_the_site_catalogs(tmp_path: Path) -> None:
    """``pegasus.catalog.site.sites.SITE.profiles.NS.KEY`` (Pegasus's catalogs reference, "Site Profiles
    Overriding in Properties"): over the site catalog's profile; a site the catalog lacks is named."""
    TransformationCatalog().add_transformations(Transformation("keg", site="condorpool", pfn="/bin/true")) \
        .write(str(tmp_path / "transformations.yml"))
    SiteCatalog().add_sites(Site("condorpool").add_env(FOO="site")).write(str(tmp_path / "sites.yml"))
    Workflow("w").add_jobs(Job("keg", _id="ID1")).write(str(tmp_path / "workflow.yml"))
    (tmp_path / "pegasus.properties").write_text(
        "pegasus.catalog.site.sites.condorpool.profiles.env.FOO = props\n"
        "pegasus.catalog.site.sites.condorpool.profiles.condor.request_memory = 321\n"
        "pegasus.catalog.site.sites.nosite.profiles.env.X = 1\n")
    done = _sheaf(tmp_path, "plan", "workflow.yml", "-s", "condorpool", "--dir", str(tmp_path / "submit"))
    assert done.returncode == 0, done.stderr
    assert "site 'nosite' is not in the site catalog" in done.stderr
    directory = Path(done.stdout.split("submit directory: ", 1)[1].split()[0])
    (job,) = [j for j in json.loads((directory / "plan.json").read_text())["jobs"] if j["id"] == "keg_ID1"]
    assert job["profiles"]["env"] == {"FOO": "props"}
    assert job["profiles"]["condor"] == {"request_memory": "321"}
