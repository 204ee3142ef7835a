"""Containerized transformations as Pegasus users catalog them (``Pegasus.api``'s ``Container``),
planned and run for real in podman, with an image built here from Debian's busybox-static (no
registry is reachable): the job runs inside the image, with its working directory mounted."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from Pegasus.api import (
    Container,
    File,
    Job,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import SHEAF, plan_into, run

from http_serving import serving
from sheaf._proc import command_line, pids
from sheaf.codegen._container_state import podman_env, run_root
from sheaf.codegen._containers import podman_config
from sheaf.errors import PlanningError
from sheaf.jobtools.container import release_run_root

BUSYBOX = "/bin/busybox"
MARK = "inside the sheaf test image\n"


def _podman_skip_reason() -> str | None:
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/system-deps.sh installs it when run as root)"
    if not os.path.exists(BUSYBOX):
        return "busybox-static is not installed (scripts/system-deps.sh installs it when run as root)"
    return None


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An image archive (``podman save``) of a root file system holding busybox, its applets and a
    marker file only the image has."""
    reason = _podman_skip_reason()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("image")
    root = base / "rootfs"
    (root / "bin").mkdir(parents=True)
    (root / "etc").mkdir()
    shutil.copy(BUSYBOX, root / "bin" / "busybox")
    for applet in ("sh", "cat", "cp", "echo", "wc", "ls", "pwd", "env", "sleep"):
        (root / "bin" / applet).symlink_to("busybox")
    (root / "etc" / "sheaf-image").write_text(MARK)
    state = base / "podman"
    state.mkdir()
    for name, text in podman_config(str(state)).items():
        (state / name).write_text(text)
    env = {**os.environ, **podman_env(str(state))}
    tar = base / "rootfs.tar"
    subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."], check=True)
    made = subprocess.run(["podman", "import", "-q", str(tar), "localhost/sheaf-test:1"], env=env,
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"podman cannot import an image here: {made.stderr.strip()}")
    archive = base / "sheaf-test.tar"
    subprocess.run(["podman", "save", "-q", "-o", str(archive), "localhost/sheaf-test:1"], env=env,
                   check=True)
    shutil.rmtree(run_root(str(state)), ignore_errors=True)  # the fixture's own podman run root
    return archive


def _catalogs(tmp: Path, containers: Container | tuple[Container, ...],
              *transformations: Transformation) -> None:
    SiteCatalog().add_sites(Site("condorpool"), Site("local"), Site("other")).write(str(tmp / "sites.yml"))
    boxes = containers if isinstance(containers, tuple) else (containers,)
    TransformationCatalog().add_containers(*boxes).add_transformations(*transformations) \
        .write(str(tmp / "transformations.yml"))


def _busybox(image: Path, **extra: object) -> Container:
    return Container("busybox", Container.DOCKER, f"file://{image}", **extra)  # type: ignore[arg-type]


def test_job_runs_inside_its_docker_container_through_podman(tmp_path: Path, image: Path) -> None:
    tools = _busybox(image, mounts=[f"{tmp_path}:/data:ro"])
    _catalogs(tmp_path, tools,
              Transformation("mark", site="condorpool", pfn="/bin/cp", container=tools),
              Transformation("copy", site="condorpool", pfn="/bin/cp", container=tools))
    (tmp_path / "in.txt").write_text("from the host\n")
    replicas = ReplicaCatalog().add_replica("local", "in.txt", str(tmp_path / "in.txt"))
    replicas.write(str(tmp_path / "replicas.yml"))
    Workflow("boxed").add_jobs(
        Job("mark").add_args("/etc/sheaf-image", File("mark.txt")).add_outputs(File("mark.txt")),
        Job("copy").add_args("/data/in.txt", "/scratch/out.txt"),  # a catalogued mount; Pegasus's /scratch
        Job("copy").add_args(File("in.txt"), "staged.txt").add_inputs(File("in.txt")),
    ).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    dag = next(target.glob("*.dag")).read_text()  # the jobs share a description written in the DAG
    assert "executable = /usr/bin/env\n" in dag and "podman" in dag and "docker-archive:" in dag
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    work = target / "scratch" / "condorpool"
    assert (work / "mark.txt").read_text() == MARK  # only the image has /etc/sheaf-image
    assert (work / "out.txt").read_text() == (work / "staged.txt").read_text() == "from the host\n"
    assert (target / "containers" / "storage.conf").is_file()
    jobs = {job["id"]: job for job in json.loads((target / "plan.json").read_text())["jobs"]}
    records = [job["container"] for job in jobs.values() if job["type"] == "compute"]
    assert records == [{"name": "busybox", "type": "docker", "image": f"file://{image}"}] * 3
    assert all("container" not in job for job in jobs.values() if job["type"] != "compute")


def test_the_containers_env_profiles_are_set_inside_it(tmp_path: Path, image: Path) -> None:
    """A container's own env profiles reach the job in it, with their values; the job's own env
    profiles too, and win over the container's for a name both set."""
    box = _busybox(image).add_env(FROM_BOX="box", BOTH="box")
    _catalogs(tmp_path, box, Transformation("env", site="condorpool", pfn="/bin/env", container=box))
    Workflow("envs").add_jobs(Job("env").add_env(FROM_JOB="job", BOTH="job").set_stdout(File("env.txt"))) \
        .write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = set((target / "scratch" / "condorpool" / "env.txt").read_text().splitlines())
    assert {"FROM_BOX=box", "FROM_JOB=job", "BOTH=job"} <= seen, seen


def test_containerized_transformation_catalogued_elsewhere_runs_on_the_selected_site(
        tmp_path: Path, image: Path) -> None:
    tools = _busybox(image)
    _catalogs(tmp_path, tools, Transformation("mark", site="other", pfn="/bin/cp", container=tools))
    Workflow("moved").add_jobs(Job("mark").add_args("/etc/sheaf-image", "mark.txt")) \
        .write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    assert [job.site for job in exec_wf.jobs if job.tasks] == ["condorpool"]
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "scratch" / "condorpool" / "mark.txt").read_text() == MARK


def test_clustered_containerized_tasks_each_run_in_the_container(tmp_path: Path, image: Path) -> None:
    tools = _busybox(image)
    mark = Transformation("mark", site="condorpool", pfn="/bin/cp", container=tools)
    mark.add_pegasus_profile(clusters_size=2)
    _catalogs(tmp_path, tools, mark)
    jobs = [Job("mark").add_args("/etc/sheaf-image", f"m{i}.txt") for i in range(2)]
    Workflow("clustered").add_jobs(*jobs).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"], clustering=["horizontal"])
    assert [job.type for job in exec_wf.jobs if job.tasks] == ["cluster"]
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    for i in range(2):
        assert (target / "scratch" / "condorpool" / f"m{i}.txt").read_text() == MARK


def test_cluster_mixing_containers_is_refused_as_in_pegasus(tmp_path: Path) -> None:
    one = Container("one", Container.DOCKER, "docker:///busybox:latest")
    two = Container("two", Container.DOCKER, "docker:///alpine:3")
    _catalogs(tmp_path, (one, two), Transformation("a", site="condorpool", pfn="/bin/true", container=one),
              Transformation("b", site="condorpool", pfn="/bin/true", container=two))
    wf = Workflow("mixed")
    wf.add_jobs(*(Job(name).add_pegasus_profile(label="L") for name in ("a", "b")))
    wf.write(str(tmp_path / "workflow.yml"))
    with pytest.raises(PlanningError, match="mixes containers"):
        plan_into(tmp_path, "workflow.yml", tmp_path / "plan", clustering=["label"])


@pytest.mark.parametrize(("kind", "runtimes"), [(Container.SINGULARITY, ("apptainer", "singularity")),
                                                (Container.SHIFTER, ("shifter",))])
def test_a_runtime_the_site_lacks_fails_the_job_at_run_time_naming_it(tmp_path: Path, kind: object,
                                                                      runtimes: tuple[str, ...]) -> None:
    """The container runtime is the execution site's: a plan never looks for it on the submit machine (as
    Pegasus does not), and a job whose site lacks it fails when it runs, with a message naming it."""
    if any(shutil.which(name) for name in runtimes):
        pytest.skip(f"{runtimes[0]} is installed here: a job cannot be seen to lack it")
    box = Container("box", kind, "file:///images/box.sif")  # type: ignore[arg-type]
    _catalogs(tmp_path, box, Transformation("t", site="condorpool", pfn="/bin/true", container=box))
    Workflow("nort").add_jobs(Job("t")).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target)  # plans: the runtime is not looked for here
    submit = "".join(path.read_text() for path in [*target.glob("*.dag"), *target.rglob("*.sub")])
    assert runtimes[0] in submit
    done = run(target)
    assert done.returncode == 1
    failure = done.stdout + "".join(path.read_text(errors="replace") for path in target.rglob("*.err"))
    assert runtimes[0] in failure, failure


def test_container_the_catalog_does_not_define_is_an_error_naming_it(tmp_path: Path) -> None:
    ghost = Container("ghost", Container.DOCKER, "docker:///busybox")
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    TransformationCatalog().add_transformations(
        Transformation("t", site="condorpool", pfn="/bin/true", container=ghost)).write(
        str(tmp_path / "transformations.yml"))
    Workflow("ghost").add_jobs(Job("t")).write(str(tmp_path / "workflow.yml"))
    with pytest.raises(PlanningError, match="'ghost'"):
        plan_into(tmp_path, "workflow.yml", tmp_path / "plan")


def test_image_that_cannot_be_fetched_fails_the_job_naming_it(tmp_path: Path, image: Path) -> None:
    absent = Container("absent", Container.DOCKER, "docker:///sheaf-no-such-image:0")
    _catalogs(tmp_path, absent, Transformation("t", site="condorpool", pfn="/bin/true", container=absent))
    Workflow("absent").add_jobs(Job("t")).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 1, done.stdout + done.stderr
    err = next((target / "jobs" / "000").glob("t_*.err")).read_text()
    assert "sheaf-no-such-image" in err


def _one_marking_job(tmp_path: Path, box: Container, name: str, *, jobs: int = 2, retry: int | None = None
                     ) -> Path:
    _catalogs(tmp_path, box, Transformation("mark", site="condorpool", pfn="/bin/cp", container=box))
    marks = [Job("mark").add_args("/etc/sheaf-image", f"m{i}.txt") for i in range(jobs)]
    if retry is not None:
        for job in marks:
            job.add_dagman_profile(retry=retry)
    Workflow(name).add_jobs(*marks).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    return target


def _container_records(target: Path) -> list[dict[str, object]]:
    jobs = json.loads((target / "plan.json").read_text())["jobs"]
    return [job["container"] for job in jobs if "container" in job]


@pytest.mark.parametrize("bypass", [False, True])
def test_http_image_is_fetched_and_run(tmp_path: Path, image: Path, bypass: bool) -> None:
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(image, served / "busybox.tar")
    with serving(served) as base:
        box = Container("web", Container.DOCKER, f"{base}/busybox.tar", bypass_staging=bypass)
        target = _one_marking_job(tmp_path, box, "fetched")
        done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    work = target / "scratch" / "condorpool"
    assert (work / "m0.txt").read_text() == (work / "m1.txt").read_text() == MARK
    shared = list((target / "containers").glob("images/*.tar"))
    # without bypass one copy for the plan; with it, each task's own copy, removed when it ends
    assert len(shared) == (0 if bypass else 1)
    assert not list(work.glob(".sheaf-image-*"))
    assert _container_records(target)[0].get("bypass", False) is bypass


def test_unreachable_image_url_fails_the_job_naming_it(tmp_path: Path, image: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/busybox.tar"
    # one attempt of one job: each waits out the fetch's backoff between its own three tries
    gone = Container("gone", Container.DOCKER, url)
    target = _one_marking_job(tmp_path, gone, "unfetched", jobs=1, retry=0)
    done = run(target)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = "".join(path.read_text() for path in (target / "jobs" / "000").glob("mark_*.err"))
    assert f"cannot fetch the container image {url}" in errors


def test_podman_run_root_is_removed_when_the_jobs_end(tmp_path: Path, image: Path) -> None:
    target = _one_marking_job(tmp_path, _busybox(image), "tidy")
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not Path(run_root(str(target / "containers"))).exists()


def test_run_root_is_left_while_another_task_holds_the_lock(tmp_path: Path) -> None:
    root, lock = tmp_path / "root", str(tmp_path / "run-root.lock")
    root.mkdir()
    other = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_SH)  # a task still running in a container
    assert not release_run_root(lock, str(root)) and root.is_dir()
    os.close(other)
    assert release_run_root(lock, str(root)) and not root.exists()


def test_image_site_is_recorded(tmp_path: Path) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed: the docker runtime check comes first")
    box = Container("sited", Container.DOCKER, "file:///images/box.tar", image_site="local")
    target = _one_marking_job(tmp_path, box, "sited")
    assert _container_records(target)[0] == {"name": "sited", "type": "docker",
                                             "image": "file:///images/box.tar", "image_site": "local"}


def test_podman_run_root_is_removed_when_the_engine_stops(tmp_path: Path, image: Path) -> None:
    box = _busybox(image)
    _catalogs(tmp_path, box, Transformation("nap", site="condorpool", pfn="/bin/sleep", container=box))
    Workflow("stopped").add_jobs(Job("nap").add_args("5")).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    root = Path(run_root(str(target / "containers")))
    env = {**os.environ, "PATH": f"{Path(SHEAF).parent}:{os.environ.get('PATH', '')}"}
    engine = subprocess.Popen([SHEAF, "run", str(target)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env=env, text=True)
    try:
        deadline = time.monotonic() + 60
        while not root.exists() and engine.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert root.exists(), "the container never started"
        engine.send_signal(signal.SIGTERM)
        output, _ = engine.communicate(timeout=60)
    finally:
        engine.kill()
    assert engine.returncode != 0, output
    assert not root.exists(), output
    # the SIGKILLed client left its container running under conmon; sheaf run removed it, so nothing
    # can make the run root again when the nap would have ended
    state = str(target / "containers")
    left = subprocess.run(["podman", "ps", "--all", "--quiet"], env={**os.environ, **podman_env(state)},
                          capture_output=True, text=True, check=True)
    shutil.rmtree(run_root(state), ignore_errors=True)  # made by this podman ps
    assert left.stdout.strip() == "", f"containers left: {left.stdout}"
    # nor a conmon (and its runc init) of a container stopped while it was being created
    named = str(root).encode()
    monitors = [pid for pid in pids() if any(named in arg for arg in command_line(pid) or [])]
    assert monitors == [], f"processes naming the run root left: {monitors}"


def test_containerized_jobs_read_their_stdin_file(tmp_path: Path, image: Path) -> None:
    box = _busybox(image)
    cat = Transformation("cat", site="condorpool", pfn="/bin/cat", container=box)
    cat.add_pegasus_profile(clusters_size=2)
    _catalogs(tmp_path, box, cat)
    (tmp_path / "in.txt").write_text("through the container\n")
    replicas = ReplicaCatalog().add_replica("local", "in.txt", str(tmp_path / "in.txt"))
    replicas.write(str(tmp_path / "replicas.yml"))
    jobs = [Job("cat", _id=f"c{i}").set_stdin(File("in.txt")).set_stdout(File(f"o{i}.txt")) for i in range(3)]
    Workflow("catted").add_jobs(*jobs).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"], clustering=["horizontal"])
    assert sorted(job.type for job in exec_wf.jobs if job.tasks) == ["cluster", "compute"]  # 2 + 1
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    for i in range(3):  # clustered (the launcher's files) and unclustered (the description's)
        assert (target / "scratch" / "condorpool" / f"o{i}.txt").read_text() == "through the container\n"


@pytest.mark.parametrize("config", ["nonsharedfs", "condorio"])
def test_containerized_jobs_work_in_their_own_directory_without_a_shared_filesystem(
        tmp_path: Path, image: Path, config: str) -> None:
    """test/core 044-docker: under nonsharedfs (and condorio) a job runs in a directory of its own
    (sheaf-lite's job directory, the pool's sandbox), where its inputs are and its outputs are looked
    for; the container works there, not in the staging site's directory."""
    tools = _busybox(image)
    (tmp_path / "pegasus.properties").write_text(f"pegasus.data.configuration = {config}\n")
    _catalogs(tmp_path, tools, Transformation("copy", site="condorpool", pfn="/bin/cp", container=tools))
    (tmp_path / "in.txt").write_text("from the host\n")
    replicas = ReplicaCatalog().add_replica("local", "in.txt", str(tmp_path / "in.txt"))
    replicas.write(str(tmp_path / "replicas.yml"))
    Workflow("apart").add_jobs(
        Job("copy", _id="one").add_args(File("in.txt"), File("mid.txt")).add_inputs(File("in.txt"))
        .add_outputs(File("mid.txt")),
        Job("copy", _id="two").add_args("/etc/sheaf-image", File("out.txt")).add_inputs(File("mid.txt"))
        .add_outputs(File("out.txt")),
    ).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    staging = target / "scratch" / "local"  # the staging site's directory: outputs come back there
    assert (staging / "mid.txt").read_text() == "from the host\n"
    assert (staging / "out.txt").read_text() == MARK


def test_an_scp_image_is_staged_like_any_input_and_run(tmp_path: Path, image: Path) -> None:
    """A container image is staged from any scheme sheaf-transfer moves (here scp://, from a real sshd
    on 127.0.0.1), into the plan's image store, then run by the site's runtime."""
    from transfer_servers import start_sshd

    try:
        (tmp_path / "sshd").mkdir()
        sshd = start_sshd(tmp_path / "sshd")
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.skip(f"no sshd to serve the image over scp: {exc} (scripts/system-deps.sh installs it)")
    try:
        served = tmp_path / "served"
        served.mkdir()
        shutil.copy(image, served / "busybox.tar")
        box = Container("remote", Container.DOCKER, f"scp://127.0.0.1:{sshd.port}{served}/busybox.tar")
        tr = Transformation("mark", site="condorpool", pfn="/bin/cp", container=box)
        tr.add_env(SSH_PRIVATE_KEY=sshd.key, SHEAF_SSH_KNOWN_HOSTS=sshd.known_hosts)
        _catalogs(tmp_path, box, tr)
        Workflow("scp").add_jobs(Job("mark").add_args("/etc/sheaf-image", "m0.txt")) \
            .write(str(tmp_path / "workflow.yml"))
        target = tmp_path / "plan"
        plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
        done = run(target)
    finally:
        sshd.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "scratch" / "condorpool" / "m0.txt").read_text() == MARK
    assert len(list((target / "containers").glob("images/*.tar"))) == 1


def test_a_singularity_image_url_is_staged_then_run_through_apptainer(tmp_path: Path) -> None:
    """A singularity image named by a URL is fetched by the container wrapper into the plan's image store
    and run with ``apptainer exec`` (``singularity`` where apptainer is missing), the site's working
    directory bound at its own path and at ``/srv``.  Running it needs apptainer, which Debian does not
    package: that part skips with the reason."""
    box = Container("sif", Container.SINGULARITY, "https://images.example.org/tools.sif")
    _catalogs(tmp_path, box, Transformation("t", site="condorpool", pfn="/usr/bin/tool", container=box))
    Workflow("sif").add_jobs(Job("t").add_args("-x")).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    text = "".join(path.read_text() for path in [*target.glob("*.dag"), *target.rglob("*.sub")])
    (arguments,) = re.findall(r'sheaf_args="\\"(.*?)\\""', text)  # the node's VARS, a shared description
    words = arguments.split()
    at = words.index("--fetch")
    assert words[at + 1] == "https://images.example.org/tools.sif"
    image = words[words.index("--image") + 1]
    assert image.startswith(str(target / "containers" / "images")) and image.endswith(".sif")
    runtime = words[words.index("--") + 1]
    assert os.path.basename(runtime) in ("apptainer", "singularity")
    rest = words[words.index("--") + 2:]
    work = str(target / "scratch" / "condorpool")
    assert rest[0] == "exec" and f"-B={work}:/srv" in rest and rest[-3:] == [image, "/usr/bin/tool", "-x"]
    if shutil.which("apptainer") is None and shutil.which("singularity") is None:
        pytest.skip("apptainer is not installed: Debian has no package and its upstream .deb cannot be "
                    "fetched here; the staging and the command were checked above")
