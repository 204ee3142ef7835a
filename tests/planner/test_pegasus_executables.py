"""Executables and arguments as Pegasus users catalog and write them, planned and run for real:
``file://`` PFNs, stageable executables, argument lists joined and split as Pegasus does."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from Pegasus.api import (
    File,
    Job,
    Namespace,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import SHEAF, argv_seen, plan_into, recorder, run

from sheaf.errors import PlanningError, ValidationError
from sheaf.model import join_arguments, quote_words, split_arguments


def _catalogs(tmp: Path, *transformations: Transformation) -> None:
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp / "sites.yml"))
    TransformationCatalog().add_transformations(*transformations).write(str(tmp / "transformations.yml"))


def test_file_url_pfn_runs_the_path_and_arguments_split_as_pegasus(tmp_path: Path) -> None:
    keg = recorder(tmp_path / "pegasus-keg")
    _catalogs(tmp_path, Transformation("keg", namespace="diamond", version="4.0", site="condorpool",
                                       pfn=f"file://{keg}"))
    Workflow("urls").add_jobs(
        Job("keg", namespace="diamond", version="4.0")
        .add_args("-a preprocess", "-T", 60, "'hello world'", '"it\'s"', File("f.a"), "", "x\\ y")
    ).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target)
    (job,) = [job for job in exec_wf.jobs if job.type == "compute"]
    assert job.executable == str(keg)  # not <cwd>/file:/...
    # the job's description: its own .sub file, or one shared in the DAG (SUBMIT-DESCRIPTION)
    texts = "".join(p.read_text() for p in [*target.glob("*.dag"), *target.rglob("keg_*.sub")])
    assert f"executable = {keg}\n" in texts
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert argv_seen(target / "scratch" / "condorpool" / "argv.json") == [
        "-a", "preprocess", "-T", "60", "hello world", "it's", "f.a", "x y"]


def test_stageable_executable_is_transferred_and_made_executable(tmp_path: Path) -> None:
    source = recorder(tmp_path / "keg.py", executable=False)  # as downloaded: not executable
    _catalogs(tmp_path, Transformation("keg", site="condorpool", pfn=f"file://{source}", is_stageable=True))
    Workflow("staged").add_jobs(Job("keg").add_args("-i", File("f.a"))).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target)
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    staged = target / "scratch" / "condorpool" / "keg"
    assert staged.stat().st_mode & 0o111 and not source.stat().st_mode & 0o111
    assert argv_seen(target / "scratch" / "condorpool" / "argv.json") == ["-i", "f.a"]


def test_transformations_staged_from_one_source_each_run_their_own_name(tmp_path: Path) -> None:
    """Pegasus names a staged executable after the job's transformation (namespace-name-version), so
    preprocess, findrange and analyze catalogued with one script each run as their own name, which a
    program reading its argv[0] (the tutorials' transformation.py) relies on."""
    source = tmp_path / "transformation.py"
    source.write_text("#!/bin/sh\nbasename \"$0\" > \"$(basename \"$0\").ran\"\n")
    names = ("preprocess", "findrange", "analyze")
    _catalogs(tmp_path, *(Transformation(name, site="condorpool", pfn=str(source), is_stageable=True)
                          for name in names))
    Workflow("same-source").add_jobs(*(Job(name, _id=name) for name in names)).write(
        str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target)
    runs = {job.tasks[0].id: Path(job.tasks[0].executable).name
            for job in exec_wf.jobs if job.type == "compute"}
    assert runs == {name: name for name in names}
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    scratch = target / "scratch" / "condorpool"
    assert {name: (scratch / f"{name}.ran").read_text().strip() for name in names} == {n: n for n in names}


@pytest.mark.parametrize("configuration", ["sharedfs", "condorio", "nonsharedfs"])
def test_a_compound_transformations_requirements_are_staged_beside_it(tmp_path: Path,
                                                                       configuration: str) -> None:
    """Pegasus's compound transformation (add_requirement, YAML requires): the executables a staged
    transformation requires are staged beside it, each named after its transformation, into the
    directory the job runs in (its sandbox or job directory under condorio and nonsharedfs), as
    Montage's mDiffFit finds mDiff and mFitplane there."""
    fit, diff = tmp_path / "mDiffFit.sh", tmp_path / "mDiff.sh"
    fit.write_text("#!/bin/sh\n./mDiff > fit.out\n")
    diff.write_text("#!/bin/sh\necho diffed\n")
    m_diff = Transformation("mDiff", site="condorpool", pfn=str(diff), is_stageable=True)
    m_fit = Transformation("mDiffFit", site="condorpool", pfn=str(fit), is_stageable=True)
    m_fit.add_requirement(m_diff)
    _catalogs(tmp_path, m_fit, m_diff)
    Workflow("compound").add_jobs(Job("mDiffFit").add_outputs(File("fit.out"), stage_out=False)).write(
        str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target,
              defines=[f"pegasus.data.configuration={configuration}"])  # type: ignore[arg-type]
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr  # ./mDiff not found: exit 127
    assert [p.read_text() for p in target.rglob("fit.out")] == ["diffed\n"]


def test_a_dax_compound_transformations_executables_are_staged_beside_it(tmp_path: Path) -> None:
    """DAX 3's compound ``<transformation>``: the executables its ``<uses>`` name are required by it, and
    staged beside it as the Python API's add_requirement is."""
    fit, diff = tmp_path / "mDiffFit.sh", tmp_path / "mDiff.sh"
    fit.write_text("#!/bin/sh\n./mDiff > fit.out\n")
    diff.write_text("#!/bin/sh\necho diffed\n")
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    (tmp_path / "workflow.dax").write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<adag xmlns="http://pegasus.isi.edu/schema/DAX" version="3.6" name="compound">
  <executable name="mDiffFit" installed="false"><pfn url="file://{fit}" site="condorpool"/></executable>
  <executable name="mDiff" installed="false"><pfn url="file://{diff}" site="condorpool"/></executable>
  <transformation name="mDiffFit"><uses name="mDiff"/></transformation>
  <job id="ID1" name="mDiffFit"><uses name="fit.out" link="output" transfer="false"/></job>
</adag>
""")
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.dax", target)
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr  # ./mDiff not found: exit 127
    assert [p.read_text() for p in target.rglob("fit.out")] == ["diffed\n"]


@pytest.mark.parametrize("pfn", ["gsiftp://example.org/bin/keg", "file://otherhost/bin/keg"])
def test_installed_executable_at_a_url_is_refused_naming_it(tmp_path: Path, pfn: str) -> None:
    _catalogs(tmp_path, Transformation("keg", site="condorpool", pfn=pfn))
    Workflow("remote").add_jobs(Job("keg")).write(str(tmp_path / "workflow.yml"))
    with pytest.raises(PlanningError) as caught:
        plan_into(tmp_path, "workflow.yml", tmp_path / "plan")
    assert pfn.split(":", 1)[0] + "://" in str(caught.value) and pfn in str(caught.value)


def test_unclosed_quote_in_arguments_is_one_error_naming_the_job(tmp_path: Path) -> None:
    keg = recorder(tmp_path / "keg")
    _catalogs(tmp_path, Transformation("keg", site="condorpool", pfn=str(keg)))
    Workflow("quote").add_jobs(Job("keg", _id="J1").add_args("'open")).write(str(tmp_path / "workflow.yml"))
    with pytest.raises(ValidationError) as caught:
        plan_into(tmp_path, "workflow.yml", tmp_path / "plan")
    assert "J1" in str(caught.value) and "unclosed" in str(caught.value)
    # sheaf validate refuses what the planner refuses, at the job's line
    done = subprocess.run([SHEAF, "validate", "workflow.yml"], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and "workflow.yml:" in done.stderr and "'J1'" in done.stderr, done.stderr
    assert "quotes in a job's arguments are closed" in done.stderr and "Traceback" not in done.stderr


_WORD = st.text(st.sampled_from("ab \t'\"\\$"), max_size=8)


def _quote(word: str) -> str:
    """A word quoted so that split_arguments gives it back (single quotes, a ' escaped outside)."""
    return "'" + word.replace("'", "'\\''") + "'"


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORD, max_size=6))
def test_split_inverts_quoting(words: list[str]) -> None:
    assert split_arguments(" ".join(_quote(w) for w in words)) == tuple(words)


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORD, max_size=6))
def test_quote_words_gives_arguments_that_split_into_the_words(words: list[str]) -> None:
    quoted = quote_words(words)
    assert split_arguments(join_arguments(quoted)) == tuple(words)
    assert all(q == w for q, w in zip(quoted, words, strict=True) if w and w.isalnum())  # plain as it is


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.sampled_from("ab-=.,/:"), min_size=1, max_size=6), max_size=6))
def test_plain_arguments_are_unchanged(words: list[str]) -> None:
    assert split_arguments(" ".join(words)) == tuple(words)


def test_split_is_linear() -> None:
    import time

    text = "'" + "a " * 500_000 + "'" + ' "b' + "\\" * 100_000  # a long quote, then an unclosed one
    start = time.perf_counter()
    with pytest.raises(ValueError, match="unclosed"):
        split_arguments(text)
    assert time.perf_counter() - start < 5.0


def test_condor_arguments_quote_false_passes_the_string_as_written(tmp_path: Path) -> None:
    keg = recorder(tmp_path / "keg")
    _catalogs(tmp_path, Transformation("keg", site="condorpool", pfn=str(keg)))
    Workflow("raw").add_jobs(Job("keg").add_args("-a", "'x y'", File("f.a"))
                             .add_profiles(Namespace.PEGASUS, key="condor.arguments.quote", value="false")) \
        .write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    sub = next((target / "jobs" / "000").glob("keg_*.sub")).read_text()
    assert "arguments = -a 'x y' f.a\n" in sub  # as Pegasus writes it: HTCondor's old syntax
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert argv_seen(target / "scratch" / "condorpool" / "argv.json") == ["-a", "'x", "y'", "f.a"]
