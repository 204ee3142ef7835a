"""A file that two jobs produce, as ``Pegasus.api`` writes it without complaint: pegasus-plan plans it,
its readers depending on the last producer in the workflow (its parser keeps the last creator of each
file for the data dependencies).  sheaf plans it too, with a warning naming the file and its
producers, and runs it for real; producers on different sites are refused."""

from __future__ import annotations

from pathlib import Path

from data_inputs import catalogs, job_types, plan_dir, plan_json, sheaf
from Pegasus import api as pg

from sheaf.formats import read_replica_catalog


def _producers(*, sites: tuple[str, str] | None = None) -> tuple[pg.Job, pg.Job]:
    """``first`` and ``second`` both produce ``f.x``, with different text (pinned to ``sites``)."""
    fa, fx = pg.File("f.a"), pg.File("f.x")
    first = pg.Job("tool", _id="first").add_args("-i", fa, "-o", fx).add_inputs(fa).add_outputs(fx)
    second = pg.Job("tool", _id="second").add_args("-i", fa, fa, "-o", fx).add_inputs(fa).add_outputs(fx)
    if sites is not None:
        first.add_selector_profile(execution_site=sites[0])
        second.add_selector_profile(execution_site=sites[1])
    return first, second


def _workflow(work: Path, *, infer: bool, ordered: bool) -> None:
    """The two producers and ``reader``, which reads ``f.x``."""
    first, second = _producers()
    fx, fy = pg.File("f.x"), pg.File("f.y")
    reader = pg.Job("tool", _id="reader").add_args("-i", fx, "-o", fy).add_inputs(fx).add_outputs(
        fy, stage_out=False, register_replica=False)
    wf = pg.Workflow("shared", infer_dependencies=infer).add_jobs(first, second, reader)
    if ordered:
        wf.add_dependency(first, children=[second])
    wf.write(str(work / "workflow.yml"))


def _plan(work: Path, *extra: str) -> tuple[str, Path | None]:
    """``sheaf plan``'s stderr, and its submit directory (None when it refused, with exit code 2)."""
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "--output-dir",
                 str(work / "out"), *extra)
    assert "Traceback" not in done.stderr and done.returncode in (0, 2)
    return done.stderr, plan_dir(done) if done.returncode == 0 else None


def _parents(directory: Path, kind: str) -> list[set[str]]:
    """The compute tasks each job of ``kind`` is a child of."""
    record = plan_json(directory)
    jobs = {job["id"]: job for job in record["jobs"]}  # type: ignore[attr-defined]
    found: dict[str, set[str]] = {job_id: set() for job_id, job in jobs.items() if job["type"] == kind}
    for p, c in record["edges"]:  # type: ignore[attr-defined]
        if c in found and jobs[p]["type"] == "compute":
            found[c].add(jobs[p]["tasks"][0])
    return list(found.values())


def test_readers_follow_the_last_producer_with_a_warning(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    catalogs(work)
    _workflow(work, infer=False, ordered=False)  # the planner, not the API, infers the dependencies
    stderr, directory = _plan(work, "-s", "condorpool")
    assert directory is not None
    (warning,) = [line for line in stderr.splitlines() if "'f.x'" in line]
    assert "produced by 2 jobs: 'first', 'second'" in warning and "depend on the last, 'second'" in warning
    assert _parents(directory, "compute") == [set(), set(), {"second"}]
    # one copy in the site's working directory: staged out once both producers are done
    assert _parents(directory, "stage_out") == [{"first", "second"}]


def test_both_producers_run_and_the_last_copy_is_delivered(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    catalogs(work)
    _workflow(work, infer=True, ordered=True)
    _, directory = _plan(work, "-s", "condorpool")
    assert directory is not None and job_types(directory)["compute"] == 3
    done = sheaf(directory, "run", str(directory))
    assert done.returncode == 0, done.stdout + done.stderr
    out = work / "out"
    assert (out / "f.x").read_text() == "A\nA\nf.x\n"  # second's, which ran after first
    rc = read_replica_catalog(directory / "shared.replicas.yml")
    assert [(p.pfn, p.site) for r in rc if r.lfn == "f.x" for p in r.pfns] == [(f"file://{out}/f.x", "local")]


def test_producers_on_two_sites_are_refused(tmp_path: Path) -> None:
    """Each site would hold its own copy: a reader there would read that site's copy, not the last
    producer's, and the two deliveries would contradict one another's integrity record."""
    work = tmp_path / "w"
    work.mkdir()
    catalogs(work)
    sites = pg.SiteCatalog().add_sites(pg.Site("local"))
    for name in ("condorpool", "other"):
        scratch = pg.Directory(pg.Directory.SHARED_SCRATCH, str(work / name))
        sites.add_sites(pg.Site(name).add_directories(
            scratch.add_file_servers(pg.FileServer(f"file://{work / name}", pg.Operation.ALL))))
    sites.write(str(work / "sites.yml"))
    tool = str(work / "tool.py")
    both = pg.Transformation("tool", site="condorpool", pfn=tool, is_stageable=False).add_sites(
        pg.TransformationSite("other", tool, is_stageable=False))
    pg.TransformationCatalog().add_transformations(both).write(str(work / "transformations.yml"))
    first, second = _producers(sites=("condorpool", "other"))
    pg.Workflow("shared").add_jobs(first, second).add_dependency(first, children=[second]).write(
        str(work / "workflow.yml"))
    stderr, directory = _plan(work, "-s", "condorpool,other")
    assert directory is None and not (work / "submit").exists()
    (error,) = [line for line in stderr.splitlines() if "error" in line]
    assert "workflow.yml:" in error and "file 'f.x' is produced on more than one site" in error
    assert "'first' on condorpool, 'second' on other" in error
