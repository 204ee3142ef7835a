"""Containers: the tasks of a containerized transformation run inside its container.

Pegasus runs a job whose transformation names a ``container`` (transformation catalog ``containers:``,
types docker, singularity, shifter) inside that container, with the job's directory mounted in it.
sheaf does the same by rewriting each such task's command before the submit descriptions are
written, so compute jobs, seqexec clusters and PMC clusters need nothing of their own:

- **docker** runs through ``podman`` (Debian's drop-in for the docker CLI).  The task's argv becomes
  ``/usr/bin/env CONTAINERS_CONF=... CONTAINERS_STORAGE_CONF=... PYTHON -m sheaf.jobtools.container
  --run-root R --lock L [--fetch URL --image PATH [--bypass]] -- podman run --rm --quiet
  --network=none -v W:W -v W:/scratch -w W [-v mount]... [-e NAME]... [container.arguments]...
  IMAGE EXECUTABLE ARGS...`` -- an argv list, never a shell string.  The wrapper
  (``sheaf.jobtools.container``) fetches an ``http(s)://`` image and removes podman's run root
  when the last container of the plan has ended.  ``W`` is the site's working
  directory, mounted at its own path (so every path sheaf writes -- staged executables, cluster
  inputs -- holds inside) and at ``/scratch`` where Pegasus mounts it for docker.  A job that runs in
  a directory of its own -- ``nonsharedfs`` (sheaf-lite's job directory, where its inputs are pulled
  and its outputs looked for) and ``condorio`` (the pool's sandbox) -- has that directory mounted at
  ``/scratch`` instead and works there (``-v .:/scratch -w /scratch``: podman resolves ``.`` where the
  job starts), ``W`` still at its own path.  The executable is
  the catalog's pfn, a path inside the image (a stageable executable: its copy in ``W``).
- **singularity** (``apptainer``, else ``singularity``) and **shifter** run through their own command
  (``/srv`` is Pegasus's mount point for singularity).  The runtime belongs to the execution site: it
  is not looked for at plan time (as Pegasus does not); a job whose site lacks it fails when it runs,
  with a message naming the runtime.
- **Images**: ``docker:///name:tag`` is the registry image (normalized as docker does:
  ``docker.io/library/...`` for a bare name; pulled when missing -- no registry reachable is a job
  failure whose error names the image); ``file:///path`` or a plain path is an image archive
  (``podman save``/``docker save``), loaded by each run; a URL of a scheme ``sheaf-transfer`` moves
  (``http(s)``, ``scp``/``sftp``, ``s3``, ``webdav(s)``) naming such an archive, or a singularity image,
  is staged like any other input: fetched by the first task that needs it into
  ``DIR/containers/images/`` (with ``bypass``, Pegasus's "pulled directly onto the compute node": by each
  task into its working directory, removed after), and an unreachable URL fails the task with a message
  naming it.  ``image.site`` (where a
  ``file://`` image lives) is recorded in plan.json: every site of the embedded engine sees the
  submit host's files, so the path is read where it is.  Other schemes are a ``PlanningError`` naming
  the ones that are fetched.
- **stdin**: a task whose job reads a stdin file runs ``podman run --interactive`` (without it podman
  gives the container no stdin).
- **mounts** from the catalog are added as they are written (``src:dst[:options]``); the task's ``env``
  profiles are passed into the container from the job's environment (``--env=NAME``, docker; a
  singularity container has the job's environment), and the container's own, which the job's do not
  set, with their values (``--env=NAME=VALUE``) -- Pegasus sets both in the job's script inside it;
  the pegasus ``container.arguments`` profile is split into extra run options.
- **podman's configuration** is the plan's own, never ``/etc``: ``DIR/containers/containers.conf``
  and ``storage.conf`` (vfs storage under ``DIR/containers``; its run-time directory of sockets and
  locks at ``/tmp/sheaf-podman-<digest of DIR>``, because conmon's sockets under a run root longer
  than about 50 characters cannot be made and every run then waits out conmon's 20 s timeout; the
  cgroupfs manager, the ``runc``
  runtime when installed -- ``crun`` refuses the hybrid cgroup hierarchy of many VMs -- the ``file``
  events logger, no network, and open-file/process limits a container may set without
  ``CAP_SYS_RESOURCE``).
- **Clusters**: as in Pegasus (which refuses to merge jobs with different containers), the tasks of
  one cluster must share one container, or all run without; otherwise a ``PlanningError``.  Each
  task of a cluster runs in its own container from that image (sheaf's aggregators are host
  programs); Pegasus starts one container for the whole cluster.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from sheaf._shellwords import split_words
from sheaf.codegen._container_state import CONF_DIR, RUN_ROOT_LOCK, podman_env, run_root
from sheaf.errors import PlanningError
from sheaf.model import Container, file_url_path, url_scheme
from sheaf.planner import ExecJob, ExecutableWorkflow, Task

#: where Pegasus mounts the job directory, per container type
MOUNT_POINT = {"docker": "/scratch", "singularity": "/srv", "shifter": "/srv"}
#: the commands that run each type, in the order they are looked for
RUNTIMES = {"docker": ("podman",), "singularity": ("apptainer", "singularity"), "shifter": ("shifter",)}
IMAGES_DIR = "images"
WRAPPER = "sheaf.jobtools.container"
_FETCHED = ("http", "https", "scp", "sftp", "s3", "webdav", "webdavs")  # what sheaf-transfer reads


@dataclass(frozen=True, slots=True)
class ContainerRun:
    """What containerized tasks of a plan need: podman's configuration files (relative to DIR)."""

    files: Mapping[str, str]
    #: job id -> the container its tasks run in (plan.json's ``container``)
    jobs: Mapping[str, Container]


def podman_config(state_dir: str) -> dict[str, str]:
    """``containers.conf`` and ``storage.conf`` for podman keeping its state under ``state_dir``
    (module docstring says why each setting)."""
    runtime = "runc" if shutil.which("runc") else "crun"
    containers = ("[containers]\n"
                  'netns = "none"\n'
                  'default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n'
                  "[engine]\n"
                  'cgroup_manager = "cgroupfs"\n'
                  'events_logger = "file"\n'
                  f'runtime = "{runtime}"\n')
    storage = ("[storage]\n"
               'driver = "vfs"\n'
               f'graphroot = "{os.path.join(state_dir, "storage")}"\n'
               f'runroot = "{run_root(state_dir)}"\n')
    return {"containers.conf": containers, "storage.conf": storage}


def containerize(exec_wf: ExecutableWorkflow, final_dir: str, workdirs: Mapping[str, str]) -> ContainerRun:
    """Rewrite the tasks of containerized transformations to run in their container (in place, as
    the staging slice rewrites stageable ones); return the files and records the plan adds."""
    if not exec_wf.containers:
        return ContainerRun({}, {})
    state = os.path.join(final_dir, CONF_DIR)
    wrapper = _Wrapper(state, {})
    jobs: dict[str, Container] = {}
    for job in exec_wf.jobs:
        container = _job_container(job, exec_wf.containers)
        if container is None or job.site is None:
            continue
        workdir = workdirs.get(job.site) or os.path.join(final_dir, "scratch", job.site)
        # nonsharedfs (sheaf-lite's job directory) and condorio (the pool's sandbox): the job runs
        # in a directory of its own, not in the site's working directory
        apart = job.id in exec_wf.lite or job.id in exec_wf.file_transfers
        job.tasks = tuple(wrapper.wrap(task, container, workdir, _reads_stdin(exec_wf, task), apart=apart)
                          for task in job.tasks)
        if job.type == "compute" and len(job.tasks) == 1:
            job.executable, job.arguments = job.tasks[0].executable, job.tasks[0].argv
        jobs[job.id] = container
    files = {f"{CONF_DIR}/{name}": text for name, text in podman_config(state).items()} if jobs else {}
    return ContainerRun(files, jobs)


def _reads_stdin(exec_wf: ExecutableWorkflow, task: Task) -> bool:
    source = exec_wf.workflow.jobs.get(task.id)
    return source is not None and bool(source.stdin)


def _job_container(job: ExecJob, containers: Mapping[tuple[str, str], Container]) -> Container | None:
    if job.site is None or job.type not in ("compute", "cluster") or not job.tasks:
        return None
    found = [containers.get((job.site, task.transformation)) for task in job.tasks]
    first = found[0]
    for task, other in zip(job.tasks, found, strict=True):
        if (other is None) != (first is None) or (other is not None and first is not None
                                                  and other.name != first.name):
            raise PlanningError(
                f"cluster '{job.id}' mixes containers: task '{task.id}' runs in "
                f"{_named(other)}, task '{job.tasks[0].id}' in {_named(first)}",
                rule="the tasks of a cluster share one container (as Pegasus requires)", value=job.id)
    return first


def _named(container: Container | None) -> str:
    return "no container" if container is None else f"container '{container.name}'"


@dataclass(slots=True)
class _Wrapper:
    state: str
    commands: dict[str, str]

    def wrap(self, task: Task, container: Container, workdir: str, stdin: bool = False, *,
             apart: bool = False) -> Task:
        kind = container.type.strip().lower()
        if kind not in RUNTIMES:
            raise PlanningError(f"container '{container.name}' has type '{container.type}'",
                                rule="a container's type is docker, singularity or shifter",
                                value=container.type)
        command = self.runtime(kind, container)
        options = _options(task, container, workdir, kind, apart)
        if stdin and kind == "docker":
            options[:0] = ["--interactive"]  # podman gives the container no stdin without it
        fetched = fetched_image(container, self.state, workdir, task.id)
        if fetched:
            image = f"docker-archive:{fetched}" if kind == "docker" else fetched
        else:
            image = image_reference(container)
        if kind == "docker":
            env = podman_env(self.state)
            argv = (*(f"{k}={v}" for k, v in env.items()), *self.wrapper(container, fetched),
                    command, "run", "--rm", "--quiet", *options, image, task.executable, *task.argv)
            return replace(task, executable="/usr/bin/env", argv=argv)
        if kind == "singularity":
            argv = ("exec", *options, image, task.executable, *task.argv)
            if fetched:  # the wrapper fetches the image first
                wrapper = self.wrapper(container, fetched)
                return replace(task, executable=wrapper[0], argv=(*wrapper[1:], command, *argv))
            return replace(task, executable=command, argv=argv)
        return replace(task, executable=command, argv=(f"--image={image}", *options, "--", task.executable,
                                                       *task.argv))

    def wrapper(self, container: Container, fetched: str | None) -> tuple[str, ...]:
        """``PYTHON -m sheaf.jobtools.container ... --``: the fetch and the run root's removal."""
        fetch = ("--fetch", container.image.strip(), "--image", fetched) if fetched else ()
        bypass = ("--bypass",) if fetched and container.bypass else ()
        return (sys.executable, "-m", WRAPPER, "--run-root", run_root(self.state),
                "--lock", os.path.join(self.state, RUN_ROOT_LOCK), *fetch, *bypass, "--")

    def runtime(self, kind: str, container: Container) -> str:
        """The runtime's command: its path when this machine has it, else its name -- the runtime is
        the execution site's, never checked at plan time (as Pegasus does not); a site without it fails
        the job at run time with a message naming it."""
        found = self.commands.get(kind)
        if found is None:
            names = RUNTIMES[kind]
            found = next((path for path in map(shutil.which, names) if path), names[0])
            self.commands[kind] = found
        return found


def _options(task: Task, container: Container, workdir: str, kind: str, apart: bool = False) -> list[str]:
    """The runtime's options: ``workdir`` mounted at its own path and at the type's mount point, the
    job working there -- or, for a job ``apart`` from ``workdir`` (module docstring), the directory
    it runs in (``.``, which the runtime resolves where the job starts) at the mount point, working
    there, and ``workdir`` at its own path still (staged executables, cluster inputs)."""
    point = MOUNT_POINT[kind]
    flag = {"docker": "-v", "singularity": "-B", "shifter": "--volume"}[kind]
    here = "." if apart else workdir
    options = [f"{flag}={workdir}:{workdir}", f"{flag}={here}:{point}"]
    options += [f"{flag}={mount}" for mount in container.mounts]
    cwd = point if apart else workdir
    if kind == "docker":
        options[:0] = ["--network=none"]
        options += ["-w", cwd]
        options += [f"--env={name}" for name in (task.profiles.get("env") or {})]  # from the job's
    elif kind == "singularity":
        options += ["--pwd", cwd]  # the job's environment is the container's already
    if kind in ("docker", "singularity"):  # the container's own variables, with their values
        options += [f"--env={name}={value}" for name, value in _container_env(task, container).items()]
    options += _extra_arguments(task, container)
    return options


def _container_env(task: Task, container: Container) -> dict[str, str]:
    """The container's env profiles the job's own do not set (the job's win, as its own profiles)."""
    own = task.profiles.get("env") or {}
    return {name: value for name, value in (container.profiles.get("env") or {}).items() if name not in own}


def _extra_arguments(task: Task, container: Container) -> Sequence[str]:
    text = ((task.profiles.get("pegasus") or {}).get("container.arguments")
            or (container.profiles.get("pegasus") or {}).get("container.arguments") or "")
    try:
        return split_words(text)
    except ValueError as exc:
        raise PlanningError(f"the container.arguments profile of container '{container.name}' cannot be "
                            f"split into words: {exc}", rule="container.arguments is shell words",
                            value=text) from None


def fetched_image(container: Container, state: str, workdir: str, task_id: str) -> str | None:
    """Where the wrapper puts a docker image archive or a singularity image that a URL of a scheme
    ``sheaf-transfer`` moves names (module docstring), else None."""
    image = container.image.strip()
    kind = container.type.strip().lower()
    if url_scheme(image) not in _FETCHED or kind not in ("docker", "singularity"):
        return None
    digest = hashlib.sha256(image.encode()).hexdigest()[:16]
    suffix = ".tar" if kind == "docker" else ".sif"
    if container.bypass:
        return os.path.join(workdir, f".sheaf-image-{task_id}-{digest}{suffix}")
    return os.path.join(state, IMAGES_DIR, f"{digest}{suffix}")


def image_reference(container: Container) -> str:
    """What the runtime is given for the catalog's image URL (module docstring)."""
    image = container.image.strip()
    scheme = url_scheme(image)
    kind = container.type.strip().lower()
    if scheme == "docker":
        name = image.split("://", 1)[1].lstrip("/")
        return _docker_name(name) if kind == "docker" else image
    if scheme in (None, "file"):
        path = file_url_path(image) if scheme == "file" else os.path.abspath(image)
        if path is None:
            raise PlanningError(f"container '{container.name}' has image {image}, a file:// URL on another "
                                "host",
                                rule="a container image is a docker:// or file:// URL", value=image)
        return f"docker-archive:{path}" if kind == "docker" else path
    if kind != "docker" and scheme in ("shub", "library", "oras"):
        return image
    raise PlanningError(f"container '{container.name}' has image {image}: a {kind} image is not fetched "
                        f"from {scheme}:// (a docker:// name, a file:// path, or a URL sheaf-transfer "
                        "moves -- http(s), scp, sftp, s3, webdav(s) -- for docker and singularity)",
                        rule="a container image is a docker://, file:// or transferable URL", value=image)


def _docker_name(name: str) -> str:
    """``ubuntu:22.04`` -> ``docker.io/library/ubuntu:22.04``, ``me/tool`` -> ``docker.io/me/tool``; a
    name whose first part is a registry (has a ``.`` or ``:``, or is ``localhost``) as it is."""
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return name
    return f"docker.io/{name}" if rest else f"docker.io/library/{name}"
