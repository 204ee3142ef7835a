"""Files written by the Pegasus Python API (``pegasus-wms.api``, ``pegasus: 5.0.4``) load in sheaf.

Each test builds one of the Pegasus manual's examples with the real API, writes it with the API to a tmp
file, reads it with sheaf, and checks what was read; then sheaf writes it and reads it back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from Pegasus.api import (
    OS,
    Arch,
    Container,
    Directory,
    EventType,
    File,
    FileServer,
    Grid,
    Job,
    Namespace,
    Operation,
    ReplicaCatalog,
    Scheduler,
    Site,
    SiteCatalog,
    SubWorkflow,
    SupportedJobs,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Workflow,
)

from sheaf import formats
from sheaf.model import validate


def _blackdiamond() -> Workflow:
    fa, fb1, fb2, fc1, fc2, fd = (File(n) for n in ("f.a", "f.b1", "f.b2", "f.c1", "f.c2", "f.d"))
    return Workflow("blackdiamond").add_jobs(
        Job("preprocess", namespace="diamond", version="4.0")
        .add_args("-a", "preprocess", "-T", "60", "-i", fa, "-o", fb1, fb2)
        .add_inputs(fa).add_outputs(fb1, fb2, register_replica=True),
        Job("findrange", namespace="diamond", version="4.0")
        .add_args("-a", "findrange", "-T", "60", "-i", fb1, "-o", fc1)
        .add_inputs(fb1).add_outputs(fc1, register_replica=True),
        Job("findrange", namespace="diamond", version="4.0")
        .add_args("-a", "findrange", "-T", "60", "-i", fb2, "-o", fc2)
        .add_inputs(fb2).add_outputs(fc2, register_replica=True),
        Job("analyze", namespace="diamond", version="4.0")
        .add_args("-a", "analyze", "-T", "60", "-i", fc1, fc2, "-o", fd)
        .add_inputs(fc1, fc2).add_outputs(fd, register_replica=False, stage_out=False),
    )


def _write(obj: object, path: Path) -> Path:
    obj.write(str(path))  # type: ignore[attr-defined]
    return path


def _round_trip_workflow(path: Path, tmp_path: Path) -> None:
    first = formats.read_workflow(path)
    out = tmp_path / "sheaf-written.yml"
    formats.write_workflow(first, out)
    assert formats.read_workflow(out) == first


def test_blackdiamond(tmp_path: Path) -> None:
    path = _write(_blackdiamond(), tmp_path / "blackdiamond.yml")
    warnings: list[str] = []
    wf = formats.read_workflow(path, warnings=warnings)
    assert warnings == []
    assert wf.name == "blackdiamond" and wf.format_version == "5.0.4"
    assert set(wf.header) == {"apiLang", "createdBy", "createdOn"}
    assert list(wf.jobs) == ["ID0000001", "ID0000002", "ID0000003", "ID0000004"]
    first = wf.jobs["ID0000001"]
    assert (first.namespace, first.name, first.version) == ("diamond", "preprocess", "4.0")
    assert first.arguments == ("-a", "preprocess", "-T", "60", "-i", "f.a", "-o", "f.b1", "f.b2")
    uses = {u.lfn: u for u in first.uses}
    assert uses["f.a"].type == "input" and not uses["f.a"].stage_out
    assert uses["f.b1"].type == "output" and uses["f.b1"].stage_out and uses["f.b1"].register_replica
    last = {u.lfn: u for u in wf.jobs["ID0000004"].uses}
    assert not last["f.d"].stage_out and not last["f.d"].register_replica
    _, levels, summary = validate(wf)
    assert (summary.jobs, summary.files, summary.edges, summary.levels) == (4, 6, 4, 3)
    assert levels == [1, 2, 2, 3]
    _round_trip_workflow(path, tmp_path)


def test_pegasus_workflow_job_with_args_outputs_and_dagman_profile(tmp_path: Path) -> None:
    wf = Workflow("local-hierarchy")
    sub = SubWorkflow("blackdiamond.yml", False).add_args(
        "--input-dir", "input", "--output-sites", "local", "-vvv", "--force"
    ).add_outputs(File("f.d")).add_dagman_profile(max_jobs="10")
    wf.add_jobs(sub)
    read = formats.read_workflow(_write(wf, tmp_path / "workflow.yml"))
    job = read.jobs["ID0000001"]
    assert job.type == "pegasusWorkflow" and job.is_subworkflow
    assert job.file == "blackdiamond.yml" and job.name == "blackdiamond.yml"
    assert job.arguments == ("--input-dir", "input", "--output-sites", "local", "-vvv", "--force")
    assert job.profiles == {"dagman": {"maxjobs": "10"}}
    assert {(u.lfn, u.type) for u in job.uses} == {("blackdiamond.yml", "input"), ("f.d", "output")}
    _round_trip_workflow(tmp_path / "workflow.yml", tmp_path)


def test_condor_workflow_job_with_dagman_dir(tmp_path: Path) -> None:
    wf = Workflow("local-hierarchy")
    sub = SubWorkflow("black.dag", True).add_dagman_profile(max_jobs="10").add_profiles(
        Namespace.DAGMAN, key="dir", value="/dag-dir/test")
    wf.add_jobs(sub)
    read = formats.read_workflow(_write(wf, tmp_path / "workflow.yml"))
    job = read.jobs["ID0000001"]
    assert job.type == "condorWorkflow" and job.file == "black.dag"
    assert job.profiles == {"dagman": {"maxjobs": "10", "dir": "/dag-dir/test"}}
    _round_trip_workflow(tmp_path / "workflow.yml", tmp_path)


def test_file_dependencies_across_subworkflows(tmp_path: Path) -> None:
    k1_out, k2_out = File("k1.txt"), File("k2.txt")
    root = Workflow("root")
    j1 = SubWorkflow("subwf1.yml", False, _id="subwf1").add_planner_args(verbose=3).add_outputs(k1_out)
    j2 = (SubWorkflow("subwf2.yml", False, _id="subwf2").add_planner_args(verbose=3)
          .add_inputs(k1_out).add_outputs(k2_out))
    root.add_jobs(j1, j2)
    read = formats.read_workflow(_write(root, tmp_path / "root.yml"))
    assert read.dependencies == {"subwf1": ["subwf2"]}  # the API infers the edge from k1.txt
    _, levels, summary = validate(read)
    assert levels == [1, 2] and summary.subworkflow_jobs == 2


def test_subworkflow_feeding_a_compute_job(tmp_path: Path) -> None:
    fd, fe = File("f.d"), File("f.e")
    wf = Workflow("local-hierarchy")
    sub = SubWorkflow("blackdiamond.yml", False).add_args("--input-dir", "input", "-vvv").add_outputs(fd)
    post = (Job("post-analyze", namespace="diamond", version="4.0")
            .add_args("-a", "post-analyze", "-T", "60", "-i", fd, "-o", fe)
            .add_inputs(fd).add_outputs(fe, register_replica=True, stage_out=True))
    wf.add_jobs(sub, post)
    wf.add_dependency(sub, children=[post])
    read = formats.read_workflow(_write(wf, tmp_path / "wf.yml"))
    assert read.dependencies == {"ID0000001": ["ID0000002"]}
    assert read.jobs["ID0000002"].transformation == "diamond::post-analyze:4.0"
    assert validate(read)[2].edges == 1
    _round_trip_workflow(tmp_path / "wf.yml", tmp_path)


def test_everything_a_job_can_carry(tmp_path: Path) -> None:
    """stdin/stdout/stderr, node label, metadata, hooks, checkpoints, file sizes, inline catalogs."""
    tc = TransformationCatalog().add_transformations(
        Transformation("keg", site="local", pfn="/usr/bin/keg", is_stageable=False))
    rc = ReplicaCatalog().add_replica("local", File("in.txt"), "/data/in.txt")
    sc = SiteCatalog().add_sites(Site("local").add_directories(
        Directory(Directory.SHARED_SCRATCH, "/scratch").add_file_servers(
            FileServer("file:///scratch", Operation.ALL))))
    job = (Job("keg", _id="j1", node_label="first")
           .add_args("-i", File("in.txt"), "-n", 5)
           .add_inputs(File("in.txt", size=1024).add_metadata(origin="lab"))
           .add_outputs(File("out.txt"), stage_out=False, register_replica=False)
           .add_checkpoint(File("state.chk"))
           .set_stdin("stdin.txt").set_stdout("log.out").set_stderr("log.err")
           .add_metadata(owner="me", attempt=2)
           .add_shell_hook(EventType.END, "echo done")
           .add_env(PATH="/bin").add_condor_profile(request_memory="2 GB"))
    wf = (Workflow("full").add_jobs(job).add_transformation_catalog(tc).add_replica_catalog(rc)
          .add_site_catalog(sc).add_metadata(project="sheaf"))
    read = formats.read_workflow(_write(wf, tmp_path / "full.yml"))
    got = read.jobs["j1"]
    assert got.node_label == "first"
    assert (got.stdin, got.stdout, got.stderr) == ("stdin.txt", "log.out", "log.err")
    assert got.arguments == ("-i", "in.txt", "-n", "5")
    assert got.metadata == {"owner": "me", "attempt": "2"}
    assert got.hooks == {"shell": [{"_on": "end", "cmd": "echo done"}]}
    assert got.profiles["env"] == {"PATH": "/bin"}
    assert got.profiles["condor"] == {"request_memory": "2048"}  # the API converts to MB
    uses = {u.lfn: u for u in got.uses}
    assert uses["in.txt"].size == 1024 and uses["in.txt"].metadata == {"origin": "lab", "size": "1024"}
    assert uses["state.chk"].type == "checkpoint"
    assert not uses["out.txt"].stage_out
    assert read.metadata == {"project": "sheaf"}
    assert read.transformation_catalog is not None and len(read.transformation_catalog) == 1
    assert read.replica_catalog is not None and read.replica_catalog.lookup("in.txt")[0].pfn == "/data/in.txt"
    assert read.site_catalog is not None and "local" in read.site_catalog
    _round_trip_workflow(tmp_path / "full.yml", tmp_path)


# --- catalogs of the clustering section ------------------------------------------------------------

def _read_tc(tc: TransformationCatalog, tmp_path: Path) -> tuple[formats.TransformationCatalog, list[str]]:
    path = _write(tc, tmp_path / "transformations.yml")
    warnings: list[str] = []
    read = formats.read_transformation_catalog(path, warnings=warnings)
    out = tmp_path / "again.yml"
    formats.write_transformation_catalog(read, out)
    assert formats.read_transformation_catalog(out) == read
    return read, warnings


def test_clusters_size_and_num_profiles(tmp_path: Path) -> None:
    tc = TransformationCatalog()
    tc.add_transformations(
        Transformation("B", site="siteX", pfn="/shared/PEGASUS/bin/jobB", is_stageable=False)
        .add_profiles(Namespace.PEGASUS, key="clusters.size", value=3),
        Transformation("C", site="siteX", pfn="/shared/PEGASUS/bin/jobC", is_stageable=False)
        .add_pegasus_profiles(clusters_num=3, clusters_size=3))
    read, warnings = _read_tc(tc, tmp_path)
    assert warnings == []
    b = read.lookup(None, "B", None)
    c = read.lookup(None, "C", None)
    assert b is not None and b.profiles == {"pegasus": {"clusters.size": "3"}}
    assert c is not None and c.profiles == {"pegasus": {"clusters.num": "3", "clusters.size": "3"}}
    assert b.sites[0].pfn == "/shared/PEGASUS/bin/jobB" and b.sites[0].type == "installed"


def test_runtime_clustering_keys_and_the_maxruntime_slip(tmp_path: Path) -> None:
    tc = TransformationCatalog().add_transformations(
        Transformation("C", site="siteX", pfn="/shared/PEGASUS/bin/jobC", is_stageable=False)
        .add_profiles(Namespace.PEGASUS, key="maxruntime", value=300)
        .add_profiles(Namespace.PEGASUS, key="runtime", value=100))
    read, warnings = _read_tc(tc, tmp_path)
    assert read.lookup(None, "C", None).profiles == {"pegasus": {"maxruntime": "300", "runtime": "100"}}  # type: ignore[union-attr]
    assert len(warnings) == 1 and "'maxruntime'" in warnings[0] and "clusters.maxruntime" in warnings[0]
    assert warnings[0].startswith(str(tmp_path / "transformations.yml") + ":")


@pytest.mark.parametrize("name", ["seqexec", "mpiexec"])
def test_seed_aggregator_entries_as_written_are_swapped(tmp_path: Path, name: str) -> None:
    # The chapter writes Transformation("pegasus", "seqexec", ...): name first, so namespace=seqexec.
    tc = TransformationCatalog().add_transformations(
        Transformation("pegasus", name, site="siteX", pfn=f"/usr/bin/pegasus-{name}", arch=Arch.X86_64,
                       is_stageable=False).add_profiles(Namespace.PEGASUS, key="nodes", value=1))
    read, warnings = _read_tc(tc, tmp_path)
    assert read.lookup(name, "pegasus", None) is not None
    swapped = f"transformation '{name}::pegasus' looks like 'pegasus::{name}' with namespace and name swapped"
    assert any(swapped in w for w in warnings)


def test_aggregator_entries_written_right(tmp_path: Path) -> None:
    tc = TransformationCatalog().add_transformations(
        Transformation("seqexec", namespace="pegasus", site="siteX", pfn="/usr/bin/pegasus-cluster",
                       arch=Arch.X86_64, os_type=OS.LINUX, is_stageable=False),
        Transformation("mpiexec", namespace="pegasus", site="siteX", pfn="/usr/bin/pegasus-mpi-cluster",
                       is_stageable=False).add_pegasus_profile(nodes=1, ppn=32))
    read, warnings = _read_tc(tc, tmp_path)
    assert warnings == []
    seqexec = read.lookup("pegasus", "seqexec", None)
    assert seqexec is not None and seqexec.sites[0].arch == "x86_64" and seqexec.sites[0].os_type == "linux"
    assert read.lookup("pegasus", "mpiexec", None).profiles == {"pegasus": {"nodes": "1", "ppn": "32"}}  # type: ignore[union-attr]


def test_decaf_entry(tmp_path: Path) -> None:
    n_nodes = 17
    decaf = (Transformation("decaf", namespace="dataflow", site="cori", pfn="1Kgenome.json",
                            is_stageable=False)
             .add_pegasus_profile(runtime="18000",
                                  glite_arguments=f"--qos=regular --constraint=haswell --nodes={n_nodes}")
             .add_profiles(Namespace.PEGASUS, key="exitcode.successmsg", value="Execution time in seconds:")
             .add_profiles(Namespace.PEGASUS, key="dagman.post", value="pegasus-exitcode")
             .add_env(key="DECAF_ENV_SOURCE", value="/global/env.sh"))
    read, warnings = _read_tc(TransformationCatalog().add_transformations(decaf), tmp_path)
    assert warnings == []
    got = read.lookup("dataflow", "decaf", None)
    assert got is not None
    assert got.profiles["pegasus"] == {
        "runtime": "18000", "glite.arguments": f"--qos=regular --constraint=haswell --nodes={n_nodes}",
        "exitcode.successmsg": "Execution time in seconds:", "dagman.post": "pegasus-exitcode"}
    assert got.profiles["env"] == {"DECAF_ENV_SOURCE": "/global/env.sh"}


def test_job_aggregator_and_containers_requires_metadata(tmp_path: Path) -> None:
    container = Container("centos", Container.SINGULARITY, "docker://centos:7", mounts=["/a:/b"])
    keg = (Transformation("keg", namespace="t", version="4.0", site="siteX", pfn="/bin/keg",
                          is_stageable=True, container=container)
           .add_profiles(Namespace.PEGASUS, key="job.aggregator", value="mpiexec")
           .add_metadata(size=12).add_shell_hook(EventType.START, "echo hi"))
    helper = Transformation("helper", site="siteX", pfn="/bin/h", is_stageable=False)
    keg.add_requirement(helper)
    extra = TransformationSite("siteY", "/opt/keg", is_stageable=False, arch=Arch.PPC64LE)
    keg.add_sites(extra)
    read, _ = _read_tc(TransformationCatalog().add_containers(container).add_transformations(keg, helper),
                       tmp_path)
    got = read.lookup("t", "keg", "4.0")
    assert got is not None and got.requires == ("helper",) and got.metadata == {"size": "12"}
    assert [s.name for s in got.sites] == ["siteX", "siteY"] and got.sites[0].type == "stageable"
    assert got.sites[0].container == "centos" and got.sites[1].arch == "ppc64le"
    centos = read.containers["centos"]
    assert centos.image == "docker://centos:7" and centos.mounts == ("/a:/b",)


def test_site_catalog(tmp_path: Path) -> None:
    site = (Site("condorpool", arch=Arch.X86_64, os_type=OS.LINUX, os_release="rhel", os_version="7")
            .add_directories(Directory(Directory.SHARED_SCRATCH, "/scratch")
                             .add_file_servers(FileServer("gsiftp://x/scratch", Operation.PUT)),
                             Directory(Directory.LOCAL_STORAGE, "/storage")
                             .add_file_servers(FileServer("file:///storage", Operation.ALL)))
            .add_grids(Grid(Grid.BATCH, "x.edu/jobmanager-pbs", Scheduler.PBS,
                            job_type=SupportedJobs.COMPUTE))
            .add_pegasus_profile(style="condor", clusters_size=3).add_env(JAVA_HOME="/opt/java"))
    path = _write(SiteCatalog().add_sites(site, Site("local")), tmp_path / "sites.yml")
    read = formats.read_site_catalog(path)
    got = read.get("condorpool")
    assert got is not None and got.arch == "x86_64" and got.os_release == "rhel" and got.os_version == "7"
    assert got.directory("sharedScratch").file_servers[0].operation == "put"  # type: ignore[union-attr]
    assert got.grids[0].scheduler == "pbs" and got.grids[0].job_type == "compute"
    assert got.profiles == {"pegasus": {"style": "condor", "clusters.size": "3"},
                            "env": {"JAVA_HOME": "/opt/java"}}
    formats.write_site_catalog(read, tmp_path / "again.yml")
    assert formats.read_site_catalog(tmp_path / "again.yml") == read


def test_replica_catalog_with_regex_checksum_metadata(tmp_path: Path) -> None:
    rc = (ReplicaCatalog()
          .add_replica("local", "f.a", "/data/f.a", checksum={"sha256": "ab12"}, metadata={"creator": "me"})
          .add_replica("remote", "f.a", "gsiftp://remote/f.a")
          .add_regex_replica("local", r"f\.b[0-9]+", "/data/[0]"))
    read = formats.read_replica_catalog(_write(rc, tmp_path / "replicas.yml"))
    assert {p.site for p in read.lookup("f.a")} == {"local", "remote"}  # the API keeps pfns in a set
    assert read.lookup("f.b12")[0].pfn == "/data/f.b12"
    exact = read.replicas[0]
    assert exact.checksum == {"sha256": "ab12"} and exact.metadata == {"creator": "me"}
    formats.write_replica_catalog(read, tmp_path / "again.yml")
    assert formats.read_replica_catalog(tmp_path / "again.yml") == read
