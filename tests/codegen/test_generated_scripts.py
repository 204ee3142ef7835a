"""Generated scripts and cluster files carry job arguments only as data.

The bundled example is planned through the command line with hostile arguments in its findrange jobs;
each cluster file is read back with the reader of its format and must give back the same argv, and
the Decaf run script is run (with a stand-in ``srun``) to show that no argument reaches bash.  What a
format cannot carry (a newline, a NUL) is refused by ``sheaf plan``: exit 2, one message, nothing
written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import msgspec
import pytest
import yaml

from sheaf.formats._multiprog import parse_multiprog
from sheaf.formats._pmcdag import parse_pmc_dag
from sheaf.formats._seqexec_in import parse_seqexec_input
from sheaf.model import join_arguments, split_arguments

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"
BIN = Path(sys.executable).parent

# What a shell would act on, and what srun's and the line formats' own quoting would.
HOSTILE = ["EOF", "$(touch {mark})", "`touch {mark}`", "'; touch {mark}; '", '" ; touch {mark} "',
           "%t %o %x", "a\\b\\", "\\", "ünï ☃", "--rm", "-", "#not-a-comment", "", "tab\there",
           "x\x0bvt", "x\x85\u2028y"]


def _example(tmp_path: Path, aggregator: str, arguments: list[str]) -> Path:
    """A copy of the example whose findrange jobs (one cluster of 3 on condorpool) get ``arguments``."""
    work = tmp_path / "wf"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns("__pycache__"))
    wf = yaml.safe_load((work / "workflow.yml").read_text())
    for job in wf["jobs"]:
        if job["name"] == "findrange":
            job["arguments"] = [*job["arguments"], *arguments]
    # JSON is YAML: every character is an escape any YAML reader decodes alike (PyYAML's block
    # scalars do not keep U+0085 and U+2028 as written)
    (work / "workflow.yml").write_text(json.dumps(wf))
    tc = yaml.safe_load((work / "transformations.yml").read_text())
    for tr in tc["transformations"]:
        if tr["name"] == "findrange":
            tr.setdefault("profiles", {}).setdefault("pegasus", {})["job.aggregator"] = aggregator
    tc["transformations"].append({"namespace": "dataflow", "name": "decaf", "sites": [
        {"name": "condorpool", "pfn": "/x/1Kgenome.json", "type": "installed"}]})
    (work / "transformations.yml").write_text(yaml.safe_dump(tc))
    return work


def _plan(work: Path, target: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    return subprocess.run([str(BIN / "sheaf"), "plan", "workflow.yml", "-d", str(target.parent),
                           "--relative-dir", target.name, "--cluster", "horizontal", "--input-dir", "input"],
                          cwd=work, capture_output=True, text=True, env=env, timeout=300, check=False)


def _cluster(plan: Path) -> tuple[dict[str, object], Path]:
    doc = msgspec.json.decode((plan / "plan.json").read_bytes())
    index, job = next((i, j) for i, j in enumerate(doc["jobs"]) if j["type"] == "cluster")
    return job, plan / "jobs" / f"{index // 1000:03d}"


def _expected(work: Path, task_ids: list[str]) -> list[list[str]]:
    """Each task's argv: its arguments joined with spaces and split again, as Pegasus does."""
    jobs = {j["id"]: j for j in json.loads((work / "workflow.yml").read_text())["jobs"]}
    return [list(split_arguments(join_arguments([str(a) for a in jobs[t]["arguments"]]))) for t in task_ids]


@pytest.fixture()
def mark(tmp_path: Path) -> Path:
    return tmp_path / f"PWNED-{uuid.uuid4().hex}"


def _hostile(mark: Path) -> list[str]:
    return [arg.replace("{mark}", str(mark)) for arg in HOSTILE]


STAND_IN_SRUN = """#!{python}
# stand-in srun: reads --multi-prog CONF as slurmstepd does and records each rank's argv
import json, sys
from sheaf.formats._multiprog import parse_multiprog
conf = open(sys.argv[2], encoding="utf-8", newline="").read()  # bytes as slurmstepd reads them
ranks = sum(1 for line in conf.split("\\n") if line.strip())
json.dump([parse_multiprog(conf, r) for r in range(ranks)], open({out!r}, "w"))
"""


def test_decaf_script_holds_no_argument_and_srun_gets_each_argv_back(tmp_path: Path, mark: Path) -> None:
    work = _example(tmp_path, "decaf", [*_hostile(mark), "cr\rhere"])  # srun carries a CR in quotes
    done = _plan(work, tmp_path / "plan")
    assert done.returncode == 0, done.stderr
    job, jobs_dir = _cluster(tmp_path / "plan")
    decaf = jobs_dir / str(job["id"])
    script = (decaf / f"{job['id']}.sh").read_text()
    assert "touch" not in script and "EOF" not in script and "<<" not in script  # no argument in bash
    assert f"srun --multi-prog ./{job['id']}.conf\n" in script
    subprocess.run(["bash", "-n", str(decaf / f"{job['id']}.sh")], check=True)
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    record = tmp_path / "ranks.json"
    (stand_in / "srun").write_text(STAND_IN_SRUN.format(python=sys.executable, out=str(record)))
    (stand_in / "srun").chmod(0o755)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "PATH": f"{stand_in}:{os.environ['PATH']}", "DECAF_ENV_SOURCE": "/dev/null",
           "PEGASUS_SCRATCH_DIR": str(scratch)}
    run = subprocess.run([str(decaf / f"{job['id']}.sh")], cwd=decaf, env=env, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    ranks = json.loads(record.read_text())
    assert [argv[1:] for argv in ranks] == _expected(work, list(job["tasks"]))  # type: ignore[arg-type]
    assert not mark.exists()


@pytest.mark.parametrize("aggregator", ["seqexec", "mpiexec"])
def test_cluster_files_give_back_each_argv(tmp_path: Path, mark: Path, aggregator: str) -> None:
    work = _example(tmp_path, aggregator, _hostile(mark))
    done = _plan(work, tmp_path / "plan")
    assert done.returncode == 0, done.stderr
    job, jobs_dir = _cluster(tmp_path / "plan")
    path = jobs_dir / f"{job['id']}.{'in' if aggregator == 'seqexec' else 'dag'}"
    text = path.read_text()
    if aggregator == "seqexec":
        argvs = [list(t.argv[1:]) for t in parse_seqexec_input(text, str(path))]
    else:
        argvs = [list(t.argv[1:]) for t in parse_pmc_dag(text, str(path)).tasks.values()]
    assert argvs == _expected(work, list(job["tasks"]))  # type: ignore[arg-type]
    assert not mark.exists()


@pytest.mark.parametrize("aggregator", ["decaf", "seqexec", "mpiexec"])
@pytest.mark.parametrize("bad", ["x\nEOF\ntouch {mark}\nEOF", "nul\0byte", "x\n"])
def test_what_a_cluster_file_cannot_carry_is_refused(tmp_path: Path, mark: Path, aggregator: str,
                                                     bad: str) -> None:
    bad = bad.replace("{mark}", str(mark))
    work = _example(tmp_path, aggregator, [f"'{bad}'"])  # quoted: a line break unquoted separates words
    done = _plan(work, tmp_path / "plan")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    # names the value, and the cluster that cannot carry it (a NUL is refused earlier, when the
    # workflow is read, naming the job)
    assert repr(bad)[1:-1] in done.stderr
    assert ("ID0000002" if "\0" in bad else "merge_") in done.stderr
    assert not (tmp_path / "plan").exists() and not mark.exists()
    assert not [p for p in tmp_path.iterdir() if ".sheaf-new-" in p.name]


def test_multiprog_reader_follows_slurm() -> None:
    conf = "# comment\n\n0 ./a 'x y' \\% %t-%o %q\n1-2,4 ./b %o\n3 c\\\n3 skipped\n* ./d\n"
    assert parse_multiprog(conf, 0) == ["./a", "x y", "%", "0-0", ""]
    assert parse_multiprog(conf, 2) == ["./b", "1"]
    assert parse_multiprog(conf, 4) == ["./b", "2"]
    assert parse_multiprog(conf, 3) == ["c3", "skipped"]  # the word goes on with the next line
    assert parse_multiprog(conf, 5) == ["./d"]


# -- DAG and submit lines --------------------------------------------------------------------------

def test_post_script_arguments_stay_words(tmp_path: Path) -> None:
    """The POST line's words are split on white space by DAGMan: a plan directory or a message that
    would split them is refused, not run with the wrong arguments."""
    from codegen_plans import blackdiamond_plan, write_planned

    from sheaf.errors import PlanningError

    with pytest.raises(PlanningError, match="white space"):
        write_planned(blackdiamond_plan(), tmp_path / "a b")
    assert not (tmp_path / "a b").exists()
    plan = blackdiamond_plan()
    plan.jobs[-1].tasks[0].profiles["pegasus"]["exitcode.successmsg"] = "all\tdone"
    with pytest.raises(PlanningError, match="exit-code message"):
        write_planned(plan, tmp_path / "tab")


def test_a_submit_value_ending_in_a_backslash_is_refused(tmp_path: Path) -> None:
    from codegen_plans import blackdiamond_plan, write_planned

    from sheaf.errors import PlanningError

    plan = blackdiamond_plan()
    plan.jobs[0].tasks[0].profiles["condor"]["requirements"] = "true \\"
    with pytest.raises(PlanningError, match="backslash"):
        write_planned(plan, tmp_path / "plan")
