"""``sheaf shims DIR``: a script written for Pegasus, using the real ``Pegasus.api``, drives sheaf.

The script plans with ``wf.plan(submit=True)`` (``pegasus-plan --json``, whose ``submit_dir`` and
``braindump.yml`` the API reads), waits for the detached run through ``sheaf status``, then plans
again, starts it with ``wf.run()`` (``pegasus-run --json``) and stops it with ``wf.remove()``
(``pegasus-remove``: SIGTERM to the engine, FINAL still runs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"
BIN = Path(sys.executable).parent

SCRIPT = '''
import json, logging, sys
logging.basicConfig(level=logging.INFO)  # the API's own lines, and the planner's it passes on
sys.path.insert(0, ".")
from generate import workflow
wf = workflow()
wf.plan(dir="runs", input_dirs=["input"], cluster=["horizontal"], cleanup="leaf", submit=True,
        verbose=1, **{"pegasus.mode": "production"})
print("FIRST", wf.braindump.submit_dir)
slow = workflow()
slow.plan(dir="runs", relative_dir="slow", input_dirs=["input"], sites=["condorpool"])
slow.run()
print("SECOND", slow.braindump.submit_dir)
'''


def _status(directory: Path) -> str:
    done = subprocess.run([str(BIN / "sheaf"), "status", str(directory)], capture_output=True, text=True,
                          check=False, timeout=60)
    return done.stdout


def _wait_for(directory: Path, word: str, timeout: float = 240) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = _status(directory)
        if word in text:
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.2)


@pytest.mark.parametrize("named", ["directory", "dag file"])
def test_remove_stops_a_run_started_in_a_terminal(tmp_path: Path, named: str) -> None:
    """``sheaf run FILE.dag`` (or DIR) in a terminal leaves no pid file: ``sheaf remove`` finds the engine
    by the run lock it holds, given the directory or the DAG file, as condor_rm finds DAGMan's job."""
    (tmp_path / "sleep.sub").write_text("executable = /bin/sleep\narguments = 60\nuniverse = local\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB S sleep.sub\n")
    engine = subprocess.Popen([str(BIN / "sheaf"), "run", "wf.dag"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(tmp_path, "submitted")
        target = str(tmp_path if named == "directory" else tmp_path / "wf.dag")
        removed = subprocess.run([str(BIN / "sheaf"), "remove", target], capture_output=True, text=True,
                                 check=False)
        assert removed.returncode == 0 and f"pid {engine.pid}" in removed.stdout, removed.stderr
        out, _ = engine.communicate(timeout=60)
    finally:
        engine.kill()
    assert "engine received SIGTERM" in out, out
    again = subprocess.run([str(BIN / "sheaf"), "remove", str(tmp_path)], capture_output=True, text=True,
                           check=False)
    assert again.returncode == 2 and "no workflow is running" in again.stderr


def test_an_unchanged_pegasus_api_script_plans_runs_and_removes(tmp_path: Path) -> None:
    work = tmp_path / "bd"
    shutil.copytree(EXAMPLE, work)
    made = subprocess.run([str(BIN / "sheaf"), "shims", str(tmp_path / "pegasus" / "bin")],
                          capture_output=True, text=True, check=False)
    assert made.returncode == 0 and not made.stderr, made.stderr
    env = {**os.environ, "PATH": f"{tmp_path / 'pegasus' / 'bin'}:{os.environ['PATH']}"}
    (work / "script.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, "script.py"], cwd=work, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # said once a run, by the API (plan(submit=True), run()): pegasus-plan --json --submit prints
    # pegasus-run --json's JSON alone
    assert done.stderr.count("Your workflow has been started") == 2, done.stderr
    first = Path(done.stdout.split("FIRST ", 1)[1].split()[0])
    second = Path(done.stdout.split("SECOND ", 1)[1].split()[0])
    assert first.parent.name == "blackdiamond" and first.name == "run0001"
    assert second == (work / "runs" / "slow").resolve()
    assert json.loads((first / "plan.json").read_text())["options"]["cleanup"] == "leaf"
    assert "succeeded" in _wait_for(first, "succeeded")
    # the API's default output site is local: f.d is staged out to its storage, and leaf cleanup
    # leaves no workflow file in scratch
    assert "analyze on" in (first.parent / "wf-output" / "f.d").read_text()
    assert not (first / "scratch" / "condorpool" / "f.d").exists()
    _wait_for(second, "succeeded")  # the second run, started by wf.run(), finishes too


def test_pegasus_remove_stops_a_running_workflow(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / "sleep.sub").write_text("executable = /bin/sleep\narguments = 60\nuniverse = local\nqueue\n")
    (plan / "wf.dag").write_text("JOB S sleep.sub\nFINAL F final.sub\n")
    (plan / "final.sub").write_text("executable = /bin/touch\narguments = final-ran\nuniverse = local\n"
                                    f"initialdir = {plan}\nqueue\n")
    (plan / "braindump.yml").write_text(f'submit_dir: "{plan}"\n')
    started = subprocess.run([str(bindir / "pegasus-run"), "--json", str(plan)], capture_output=True,
                             text=True, check=False)
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["submit_dir"] == str(plan)
    _wait_for(plan, "submitted")
    removed = subprocess.run([str(bindir / "pegasus-remove"), str(plan)], capture_output=True, text=True,
                             check=False)
    assert removed.returncode == 0, removed.stderr
    status = _wait_for(plan, "failed")
    assert (plan / "final-ran").exists(), status
    again = subprocess.run([str(bindir / "pegasus-remove"), str(plan)], capture_output=True, text=True,
                           check=False)
    assert again.returncode == 2 and "no workflow is running" in again.stderr


def test_status_right_after_a_detached_start_says_starting(tmp_path: Path) -> None:
    """Between --submit starting the engine and its first journal record, status is not an error."""
    (tmp_path / "wf.dag").write_text("JOB S s.sub\n")
    assert subprocess.run([str(BIN / "sheaf"), "status", str(tmp_path)], capture_output=True,
                          check=False).returncode == 2  # never started: no journal
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "run", str(tmp_path)])
    try:
        (tmp_path / "sheaf-run.pid").write_text(f"{stand_in.pid}\n")
        done = subprocess.run([str(BIN / "sheaf"), "status", str(tmp_path)], capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0 and "starting" in done.stdout, done.stderr
    finally:
        stand_in.kill()
        stand_in.wait()


WATCHING = '''
import json, logging, sys
logging.basicConfig(level=logging.INFO)  # Pegasus.api logs what its tools print
sys.path.insert(0, ".")
from generate import workflow
wf = workflow()
wf.plan(dir="runs", input_dirs=["input"], submit=True).wait(delay=1)
print("STATUS", json.dumps(wf.get_status()))
wf.status(long=True)
wf.analyze()
wf.statistics()
print("SUBMIT", wf.braindump.submit_dir)
'''


def test_pegasus_api_waits_for_the_run_and_reads_its_status(tmp_path: Path) -> None:
    """``wf.wait()``/``wf.get_status()`` read ``condor_q -json`` and ``<dag>.dagman.out``;
    ``wf.analyze()``/``wf.statistics()`` run pegasus-analyzer/-statistics: all through the wrappers."""
    work = tmp_path / "bd"
    shutil.copytree(EXAMPLE, work)
    bindir = tmp_path / "pegasus" / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    (work / "script.py").write_text(WATCHING)
    done = subprocess.run([sys.executable, "script.py"], cwd=work, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(done.stdout.split("STATUS ", 1)[1].splitlines()[0])
    root = status["dags"]["root"]
    assert root["state"] == "Success" and root["percent_done"] == 100.0, status
    assert root["succeeded"] == root["total"] == status["totals"]["total"] > 0 and root["failed"] == 0
    submit = Path(done.stdout.split("SUBMIT ", 1)[1].split()[0])
    out = next(submit.glob("*.dag.dagman.out")).read_text()
    assert out.rstrip().endswith("EXITING WITH STATUS 0")
    # pegasus-status --jsonrv (what older Pegasus.api runs for wait/status) answers the same
    asked = subprocess.run([str(bindir / "pegasus-status"), "-l", "--jsonrv", str(submit)],
                           capture_output=True, text=True, check=False)
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout) == status
    # wf.statistics() ran pegasus-statistics: sheaf statistics' tables, not the status counts
    shown = done.stdout + done.stderr
    assert "Workflow wall time" in shown and "# Transformation statistics (breakdown)" in shown
    uuid = json.loads((submit / "braindump.yml").read_text().split("\nwf_uuid: ", 1)[1].splitlines()[0])
    assert f"# {uuid} (" in shown  # the workflow pegasus-statistics names is the one the plan named


def test_condor_q_wrapper_is_an_empty_queue_without_htcondor(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0
    env = {**os.environ, "PATH": f"{bindir}:/usr/bin:/bin"}
    done = subprocess.run(["condor_q", "-constraint", 'pegasus_root_wf_uuid == "x"', "-json"], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and json.loads(done.stdout) == [], done.stderr
    fake = tmp_path / "real" / "condor_q"  # a real HTCondor later on PATH is used, not shadowed
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho real \"$@\"\n")
    fake.chmod(0o755)
    env["PATH"] = f"{bindir}:{fake.parent}:/usr/bin:/bin"
    done = subprocess.run(["condor_q", "-json"], env=env, capture_output=True, text=True, check=False)
    assert done.stdout == "real -json\n", done.stderr


# test/core's drivers (and the harness that runs them) find the submit directory in the tools' output
DRIVER = r'''
set -e
pegasus-plan --dir submit --sites condorpool --output-sites local workflow.yml | tee plan.out
WORK_DIR=`cat plan.out | grep pegasus-run | sed -E 's/^pegasus-run[ ]+//'`
test -f "$WORK_DIR/braindump.yml"
pegasus-run $WORK_DIR | tee run.out
RUN_DIR=`grep pegasus-remove run.out | sed 's/.*pegasus-remove //'`
test "$RUN_DIR" = "$WORK_DIR"
pegasus-plan --dir submit --sites condorpool --output-sites local --submit workflow.yml | tee submit.out
SUBMITTED=`grep pegasus-remove submit.out | sed 's/.*pegasus-remove //'`
test -f "$SUBMITTED/braindump.yml"
echo "DIRS $WORK_DIR $SUBMITTED"
'''


def _shims_and_catalogs(tmp_path: Path, name: str, pfn: str) -> tuple[Any, dict[str, str]]:
    """The shims in ``tmp_path/bin`` (their environment), and catalogs with ``name`` at ``pfn``."""
    from Pegasus.api import Site, SiteCatalog, Transformation, TransformationCatalog

    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    transformation = Transformation(name, site="condorpool", pfn=pfn)
    TransformationCatalog().add_transformations(transformation).write(str(tmp_path / "transformations.yml"))
    return transformation, {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}


def test_a_pegasus_driver_script_finds_the_submit_directory_in_the_output(tmp_path: Path) -> None:
    from Pegasus.api import Job, Workflow

    echo, env = _shims_and_catalogs(tmp_path, "echo", "/bin/echo")
    Workflow("hello").add_jobs(Job(echo).add_args("hello")).write(str(tmp_path / "workflow.yml"))
    done = subprocess.run(["bash", "-c", DRIVER], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    first, second = (Path(word) for word in done.stdout.split("DIRS ", 1)[1].split())
    assert first != second and first.name == "run0001" and second.name == "run0002"
    _wait_for(first, "succeeded")
    _wait_for(second, "succeeded")


def test_pegasus_plans_dash_c_is_its_cache_option(tmp_path: Path) -> None:
    """pegasus-plan's ``-c`` is ``--cache`` (a replica cache file), not sheaf plan's ``--conf``."""
    from Pegasus.api import File, Job, Workflow

    cat, env = _shims_and_catalogs(tmp_path, "cat", "/bin/cat")
    Workflow("cached").add_jobs(Job(cat).add_args(File("f.a")).add_inputs(File("f.a"))).write(
        str(tmp_path / "workflow.yml"))
    (tmp_path / "f.a").write_text("A\n")
    (tmp_path / "my.cache").write_text(f'f.a file://{tmp_path}/f.a site="local"\n')
    argv = ["pegasus-plan", "--dir", "submit", "--sites", "condorpool", "-c", "my.cache", "workflow.yml"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "not staged in" not in done.stderr  # f.a was found in the cache file


def test_pegasus_config_says_where_the_tools_and_the_python_api_are(tmp_path: Path) -> None:
    """What Pegasus's test and example scripts ask (``PYTHONPATH=$(pegasus-config --python)``): a
    script run with that path imports the same Pegasus API; what sheaf has no copy of is refused."""
    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0

    def config(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bindir / "pegasus-config"), *args], capture_output=True, text=True,
                              check=False)

    assert config("--bin").stdout == f"{bindir}\n"
    python = config("--python").stdout
    assert python.endswith("\n") and config("--python", "--noeoln").stdout == python.rstrip("\n")
    import Pegasus

    assert Path(python.strip(), "Pegasus").resolve() == Path(Pegasus.__file__).parent.resolve()
    dump = config("--sh-dump").stdout
    assert f'PEGASUS_BIN_DIR="{bindir}";' in dump and f'PEGASUS_PYTHON_DIR="{python.strip()}"' in dump
    assert config("--version").stdout == "5.0.0\n"
    # the directories a plan defines for ${PEGASUS_*}, the wrappers' own as --bin
    java = config("--java").stdout.strip()
    assert java.endswith("share/pegasus/java") and f'PEGASUS_JAVA_DIR="{java}"' in dump
    refused = config("--classpath")
    assert refused.returncode == 2 and "--classpath: sheaf has no Pegasus Java planner" in refused.stderr
    assert config().returncode == 2 and config("--nope").returncode == 2


def test_statistics_and_analyzer_read_their_pegasus_options(tmp_path: Path) -> None:
    """pegasus-statistics' ``-s LEVEL``, ``--statistics-level=LEVEL``, ``-f csv``, ``-o DIR``, and
    pegasus-analyzer's ``--dir=DIR``, ``-d DIR``, ``--dag FILE``, as their manuals give them."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "wf.dag").write_text("JOB ok ok.sub\nJOB bad bad.sub\n")
    (run_dir / "ok.sub").write_text("executable = /bin/true\nqueue\n")
    (run_dir / "bad.sub").write_text("executable = /bin/false\nqueue\n")
    assert subprocess.run([str(BIN / "sheaf"), "run", str(run_dir)], capture_output=True,
                          check=False).returncode == 1
    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0

    def tool(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bindir / argv[0]), *argv[1:]], cwd=tmp_path, capture_output=True,
                              text=True, check=False)

    for argv in (["-s", "all", str(run_dir)], ["--statistics-level=tf_stats,summary", "-v", str(run_dir)]):
        done = tool("pegasus-statistics", *argv)
        assert done.returncode == 0 and "# Transformation statistics (breakdown)" in done.stdout, done.stderr
    done = tool("pegasus-statistics", "-f", "csv", str(run_dir))
    assert done.returncode == 0 and "# summary" in done.stdout, done.stderr
    done = tool("pegasus-statistics", "-o", "stats", str(run_dir))
    assert done.returncode == 0 and "-o stats" in done.stderr and not (tmp_path / "stats").exists()
    done = tool("pegasus-statistics", "-c", "my.properties", str(run_dir))  # read, named, not acted on
    assert done.returncode == 0 and "-c my.properties: has no effect with sheaf" in done.stderr
    for argv, said in ((["-s", "everything", str(run_dir)], "unknown statistics level everything"),
                       (["-m", str(run_dir)], "several workflows"), (["-s"], "needs a value")):
        done = tool("pegasus-statistics", *argv)
        assert done.returncode == 2 and said in done.stderr, done.stderr
    for argv in ([f"--dir={run_dir}"], ["-d", str(run_dir)], ["-i", str(run_dir), "-v"],
                 ["--dag", str(run_dir / "wf.dag")]):
        done = tool("pegasus-analyzer", *argv)
        assert done.returncode == 0 and "bad" in done.stdout, (argv, done.stdout, done.stderr)
    done = tool("pegasus-analyzer", "--debug-job", "bad", str(run_dir))
    assert done.returncode == 2 and "--debug-job" in done.stderr, done.stderr
    # pegasus-status -l: one line per (sub-)workflow, as sheaf status --long shows them
    short, long = (tool("pegasus-status", *flags, str(run_dir)) for flags in ((), ("-l",)))
    assert "running now" in long.stdout and "running now" not in short.stdout, long.stdout


def test_pegasus_graphviz_draws_the_workflow_a_script_graphs(tmp_path: Path) -> None:
    """``wf.graph(...)`` of the Pegasus API (and scripts calling pegasus-graphviz) get the workflow's
    DOT graph: jobs labelled as asked, file boxes with ``--files``, implied edges dropped unless
    ``--nosimplify``; an image needs Graphviz's dot, a DAGMan file is refused by name."""
    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0
    script = f'''
import os
os.environ["PATH"] = {str(bindir)!r} + os.pathsep + os.environ["PATH"]
from Pegasus.api import Job, Workflow
wf = Workflow("g", infer_dependencies=True)
wf.add_jobs(Job("make", _id="a").add_inputs("x").add_outputs("y"),
            Job("use", _id="b").add_inputs("y").add_outputs("z"),
            Job("use", _id="c", node_label="last").add_inputs("x", "y", "z"))
wf.write("wf.yml")
wf.graph(include_files=True, label="xform-id", output="files.dot")
'''
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    drawn = (tmp_path / "files.dot").read_text()
    assert drawn.startswith("digraph dag {") and '"a" [shape=ellipse' in drawn and 'label="make\\na"' in drawn
    assert '"y" [shape=rect' in drawn and '"a" -> "y"' in drawn and '"y" -> "b"' in drawn
    assert '"x" -> "c"' not in drawn  # implied by x -> a -> y -> b -> z -> c

    def graphviz(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bindir / "pegasus-graphviz"), *args], cwd=tmp_path, capture_output=True,
                              text=True, check=False, timeout=60)

    plain = graphviz("wf.yml").stdout
    assert '"a" -> "b"' in plain and '"a" -> "c"' not in plain and 'label="last"' in plain
    full = graphviz("--nosimplify", "-l", "id", "wf.yml").stdout
    assert '"a" -> "c"' in full and 'label="c"' in full
    kept = graphviz("-r", "use", "-r", "other", "wf.yml").stdout
    assert '"a" [' in kept and '"b"' not in kept and '"c"' not in kept
    if shutil.which("dot") is None:
        image = graphviz("-o", "wf.png", "wf.yml")
        assert image.returncode == 2 and "'dot'" in image.stderr and not (tmp_path / "wf.png").exists()
    refused = graphviz("run.dag")
    assert refused.returncode == 2 and "DAGMan" in refused.stderr
    assert graphviz("-l", "nope", "wf.yml").returncode == 2 and graphviz().returncode == 2
    missing = graphviz("absent.yml")
    assert missing.returncode == 2 and "absent.yml" in missing.stderr and "Traceback" not in missing.stderr


def test_pegasus_graphviz_draws_a_long_chain(tmp_path: Path) -> None:
    """A chain of 3,000 jobs is simplified without recursion: 2,999 edges, no traceback."""
    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0
    jobs = "".join(f"  - {{type: job, id: j{i}, name: t, arguments: []}}\n" for i in range(3000))
    deps = "".join(f"  - {{id: j{i}, children: [j{i + 1}]}}\n" for i in range(2999))
    (tmp_path / "wf.yml").write_text(f"pegasus: '5.0'\nname: chain\njobs:\n{jobs}jobDependencies:\n{deps}")
    done = subprocess.run([str(bindir / "pegasus-graphviz"), "wf.yml"], cwd=tmp_path, capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.count(" -> ") == 2999 and '"j0" -> "j1"' in done.stdout


def test_pegasus_plan_names_itself_in_usage_help_and_errors(tmp_path: Path) -> None:
    """As argparse's ``prog`` is the program the user ran: usage, help and error lines say
    ``pegasus-plan``, not the ``sheaf plan`` that plays it."""
    bindir = tmp_path / "bin"
    assert subprocess.run([str(BIN / "sheaf"), "shims", str(bindir)], check=False).returncode == 0

    def plan(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bindir / "pegasus-plan"), *args], cwd=tmp_path, capture_output=True,
                              text=True, check=False, timeout=120)

    helped = plan("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: pegasus-plan [OPTIONS] [WORKFLOW]")
    wrong = plan("--bogus")
    assert wrong.returncode == 2 and wrong.stderr.startswith("Usage: pegasus-plan [OPTIONS] [WORKFLOW]")
    assert "Try 'pegasus-plan --help' for help." in wrong.stderr and "sheaf" not in wrong.stderr
    bare = plan("--sites")
    assert bare.returncode == 2 and "'--sites' requires an argument" in bare.stderr
    assert "sheaf" not in bare.stderr
    missing = plan("missing.yml")
    assert missing.returncode == 2 and missing.stderr.startswith("pegasus-plan: error: "), missing.stderr
    refused = plan("--rescue", "3", "missing.yml")
    assert refused.returncode == 2 and refused.stderr.startswith("pegasus-plan: error: pegasus-plan option")
    assert "Traceback" not in missing.stderr + refused.stderr
    # sheaf plan itself still names itself
    own = subprocess.run([str(BIN / "sheaf"), "plan", "--bogus"], capture_output=True, text=True, check=False)
    assert own.returncode == 2 and own.stderr.startswith("Usage: sheaf plan [OPTIONS] [WORKFLOW]")
