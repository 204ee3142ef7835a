"""Pegasus properties and profiles of its configuration reference, planned through ``sheaf plan`` as
a Pegasus user writes them (``Pegasus.api`` files, ``-D`` on the command line) and run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from Pegasus.api import (
    EventType,
    File,
    Job,
    Namespace,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import SHEAF, argv_seen, recorder, run

from sheaf.formats import read_replica_catalog

#: a program that prints its first argument and exits 0
SAYS = f"""#!{sys.executable}
import sys
print(sys.argv[1])
"""


def _plan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([SHEAF, "plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", *args],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False)


def _program(tmp: Path, name: str, text: str) -> Transformation:
    """``text`` as the program ``tmp/name``, catalogued as transformation ``name`` on condorpool."""
    program = tmp / name
    program.write_text(text)
    program.chmod(0o755)
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp / "sites.yml"))
    tr = Transformation(name, site="condorpool", pfn=str(program))
    TransformationCatalog().add_transformations(tr).write(str(tmp / "transformations.yml"))
    return tr


def _saying(tmp: Path, words: str, **dagman: str) -> None:
    """One job on condorpool that prints ``words`` and exits 0, with ``dagman`` profiles."""
    job = Job(_program(tmp, "says", SAYS), _id="talk").add_args(words)
    if dagman:
        job.add_dagman_profile(**dagman)
    Workflow("talk").add_jobs(job).write(str(tmp / "workflow.yml"))


def test_dagman_post_arguments_alone_go_to_the_exit_code_check(tmp_path: Path) -> None:
    """Pegasus gives every job pegasus-exitcode as its POST script and ``dagman.post.arguments`` to
    it: ``-f MSG`` there fails a job whose output holds MSG, with no exitcode profile besides."""
    _saying(tmp_path, "Traceback", post_arguments="-f Traceback")
    planned = _plan(tmp_path)
    assert planned.returncode == 0, planned.stderr
    dag = (tmp_path / "runs" / "p" / "talk.dag").read_text()
    assert "SCRIPT POST says_talk" in dag and "-f Traceback" in dag
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 1, done.stdout + done.stderr


def test_dagman_post_arguments_from_the_properties_reach_every_job(tmp_path: Path) -> None:
    _saying(tmp_path, "all is well")
    planned = _plan(tmp_path, "-D", "dagman.post.arguments=-f Traceback")
    assert planned.returncode == 0, planned.stderr
    assert "-f Traceback" in (tmp_path / "runs" / "p" / "talk.dag").read_text()
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr


#: a program that writes its second argument's text into the file its first argument names
WRITES = f"""#!{sys.executable}
import os, sys
os.makedirs(os.path.dirname(sys.argv[1]) or ".", exist_ok=True)
open(sys.argv[1], "w").write(sys.argv[2])
"""


def _deep_output(tmp: Path) -> None:
    """One job writing ``rupture/0001.rx``, staged out and registered (Pegasus's own example)."""
    out = File("rupture/0001.rx")
    job = Job(_program(tmp, "writes", WRITES), _id="make").add_args(out, "rx")
    Workflow("deep").add_jobs(job.add_outputs(out, stage_out=True, register_replica=True)).write(
        str(tmp / "workflow.yml"))


@pytest.mark.parametrize(("deep", "registered"), [("true", "rupture/0001.rx"), ("false", "0001.rx")])
def test_register_deep_false_registers_the_lfns_last_part(tmp_path: Path, deep: str, registered: str) -> None:
    _deep_output(tmp_path)
    planned = _plan(tmp_path, "--output-site", "local", "-D", f"pegasus.register.deep={deep}")
    assert planned.returncode == 0, planned.stderr
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    catalog = read_replica_catalog(str(tmp_path / "runs" / "p" / "deep.replicas.yml"))
    assert [replica.lfn for replica in catalog] == [registered]


def _hooked(tmp: Path) -> None:
    """A workflow and its one job, each with a shell hook at their end that writes a file here."""
    job = Job(_program(tmp, "says", SAYS), _id="talk").add_args("hello")
    job.add_shell_hook(EventType.END, f"/bin/touch {tmp / 'job-hook-ran'}")
    wf = Workflow("talk").add_jobs(job).add_shell_hook(EventType.END, f"/bin/touch {tmp / 'wf-hook-ran'}")
    wf.write(str(tmp / "workflow.yml"))


@pytest.mark.parametrize(("setting", "ran"), [
    ([], True),
    (["-D", "pegasus.monitord.notifications=false"], False),
    (["-D", "pegasus.monitord.notifications.max=0"], False),
])
def test_notifications_off_in_the_properties_run_no_hooks(tmp_path: Path, setting: list[str],
                                                          ran: bool) -> None:
    """pegasus-monitord runs no notification when ``pegasus.monitord.notifications`` is false or
    ``pegasus.monitord.notifications.max`` is 0."""
    _hooked(tmp_path)
    planned = _plan(tmp_path, *setting)
    assert planned.returncode == 0, planned.stderr
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "wf-hook-ran").exists() is ran
    assert (tmp_path / "job-hook-ran").exists() is ran


def test_a_notifications_setting_that_is_no_boolean_is_refused_with_nothing_written(tmp_path: Path) -> None:
    _hooked(tmp_path)
    planned = _plan(tmp_path, "-D", "pegasus.monitord.notifications=maybe")
    assert planned.returncode == 2
    assert "pegasus.monitord.notifications" in planned.stderr and "Traceback" not in planned.stderr
    assert not (tmp_path / "runs" / "p").exists()


#: a program that copies the file its first argument names to the file its second names
COPIES = f"""#!{sys.executable}
import shutil, sys
shutil.copy(sys.argv[1], sys.argv[2])
"""


def _two_replicas(tmp: Path) -> None:
    """f.a in the workflow's own replica catalog (``in-workflow/f.a``) and in replicas.yml
    (``in-catalog/f.a``); one job copies it to f.b, delivered to ``out``."""
    for where in ("in-workflow", "in-catalog"):
        (tmp / where).mkdir()
        (tmp / where / "f.a").write_text(f"{where}\n")
    catalog = ReplicaCatalog().add_replica("local", "f.a", str(tmp / "in-catalog" / "f.a"))
    catalog.write(str(tmp / "replicas.yml"))
    fa, fb = File("f.a"), File("f.b")
    job = Job(_program(tmp, "copies", COPIES), _id="copy").add_args(fa, fb).add_inputs(fa).add_outputs(fb)
    wf = Workflow("two").add_jobs(job)
    wf.add_replica_catalog(ReplicaCatalog().add_replica("local", "f.a", str(tmp / "in-workflow" / "f.a")))
    wf.write(str(tmp / "workflow.yml"))


def test_the_workflows_own_replica_is_used_over_the_replica_catalogs(tmp_path: Path) -> None:
    """Pegasus: the locations of a file in the workflow override the replica catalog's (unless
    ``pegasus.catalog.replica.dax.asrc`` is true)."""
    _two_replicas(tmp_path)
    planned = _plan(tmp_path, "--output-dir", "out")
    assert planned.returncode == 0, planned.stderr
    lists = (tmp_path / "runs" / "p" / "two.lists").read_text()
    assert "in-workflow" in lists and "in-catalog" not in lists
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "f.b").read_text() == "in-workflow\n"


def test_dax_asrc_makes_both_replicas_candidates_the_workflows_first(tmp_path: Path) -> None:
    _two_replicas(tmp_path)
    planned = _plan(tmp_path, "--output-dir", "out", "-D", "pegasus.catalog.replica.dax.asrc=true")
    assert planned.returncode == 0, planned.stderr
    lists = (tmp_path / "runs" / "p" / "two.lists").read_text()
    assert 0 <= lists.index("in-workflow") < lists.index("in-catalog")
    (tmp_path / "in-workflow" / "f.a").unlink()  # the first candidate is gone: the second is read
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "f.b").read_text() == "in-catalog\n"


#: a program that exits 3
EXITS_3 = f"""#!{sys.executable}
raise SystemExit(3)
"""


def test_the_clusterer_aggregator_arguments_property_reaches_the_clusters(tmp_path: Path) -> None:
    """``pegasus.clusterer.job.aggregator.arguments`` (the configuration reference's property of the
    ``job.aggregator.arguments`` profile) is given to every cluster: ``-S 3`` makes exit code 3 a
    success for sheaf-cluster, as for pegasus-cluster."""
    tr = _program(tmp_path, "exits", EXITS_3)
    Workflow("pair").add_jobs(Job(tr, _id="a"), Job(tr, _id="b")).write(str(tmp_path / "workflow.yml"))
    planned = _plan(tmp_path, "--cluster", "horizontal", "-D", "pegasus.clusters.size=2",
                    "-D", "pegasus.clusterer.job.aggregator.arguments=-S 3")
    assert planned.returncode == 0, planned.stderr
    assert "-S 3" in (tmp_path / "runs" / "p" / "pair.dag").read_text()
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    profile = _plan_again(tmp_path, "-D", "pegasus.clusterer.job.aggregator.arguments=-S 3",
                          "-D", "pegasus.job.aggregator.arguments=-S 4")
    assert "-S 4" in profile and "-S 3" not in profile  # the profile's own property wins, as in Pegasus


def _plan_again(tmp: Path, *args: str) -> str:
    """The DAG of a fresh horizontal plan of ``tmp``'s workflow in clusters of 2."""
    shutil.rmtree(tmp / "runs")
    planned = _plan(tmp, "--cluster", "horizontal", "-D", "pegasus.clusters.size=2", *args)
    assert planned.returncode == 0, planned.stderr
    return next((tmp / "runs" / "p").glob("*.dag")).read_text()


def test_a_user_post_script_is_named_and_found_through_post_path(tmp_path: Path) -> None:
    """The dagman profile table: ``POST = user_script`` with ``POST.PATH.user_script = /path`` and
    ``POST.ARGUMENTS = -verbose`` runs ``/path -verbose X.out``, X.out the job's stdout."""
    post = recorder(tmp_path / "post-script")
    job = Job(_program(tmp_path, "says", SAYS), _id="talk").add_args("hello")
    job.add_dagman_profile(post="user_script", post_arguments="-verbose")
    job.add_profiles(Namespace.DAGMAN, key="post.path.user_script", value=str(post))
    Workflow("talk").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    planned = _plan(tmp_path)
    assert planned.returncode == 0, planned.stderr
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    seen = argv_seen(tmp_path / "runs" / "p" / "argv.json")
    assert seen[0] == "-verbose" and seen[1].endswith("says_talk.out") and len(seen) == 2
    assert Path(seen[1]).read_text() == "hello\n"


def test_a_user_post_script_from_the_properties(tmp_path: Path) -> None:
    post = recorder(tmp_path / "post-script")
    _saying(tmp_path, "hello")
    planned = _plan(tmp_path, "-D", "dagman.post=mine", "-D", f"dagman.post.path.mine={post}")
    assert planned.returncode == 0, planned.stderr
    assert f"SCRIPT POST says_talk {post} " in (tmp_path / "runs" / "p" / "talk.dag").read_text()


def test_a_user_post_script_without_its_path_is_refused_naming_the_profile(tmp_path: Path) -> None:
    _saying(tmp_path, "hello", post="user_script")
    planned = _plan(tmp_path)
    assert planned.returncode == 2 and "Traceback" not in planned.stderr
    assert "post.path.user_script" in planned.stderr and "talk" in planned.stderr
    assert not (tmp_path / "runs" / "p").exists()


def test_maxruntime_without_the_runtime_preference_is_warned_about(tmp_path: Path) -> None:
    """Pegasus's horizontal clusterer reads ``clusters.maxruntime`` only under
    ``pegasus.clusterer.preference = Runtime``; set without it, the profile changes nothing, and sheaf
    says so, naming the profile and the property."""
    tr = _program(tmp_path, "says", SAYS)
    jobs = [Job(tr, _id=f"j{i}").add_args(str(i)).add_pegasus_profile(runtime="60", clusters_max_runtime=120)
            for i in range(4)]
    Workflow("fan").add_jobs(*jobs).write(str(tmp_path / "workflow.yml"))
    plain = _plan(tmp_path, "--cluster", "horizontal", "-v")
    assert plain.returncode == 0, plain.stderr
    (warning,) = [line for line in plain.stderr.splitlines() if "clusters.maxruntime" in line]
    assert "pegasus.clusterer.preference" in warning and "says" in warning
    assert "by no clusters.size or clusters.num (size 1)" in plain.stdout  # cut as Pegasus cuts it
    shutil.rmtree(tmp_path / "runs")
    packed = _plan(tmp_path, "--cluster", "horizontal", "-v", "-D", "pegasus.clusterer.preference=Runtime")
    assert packed.returncode == 0, packed.stderr
    assert "clusters.maxruntime" not in packed.stderr and "by clusters.maxruntime 120" in packed.stdout
