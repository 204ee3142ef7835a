"""Workflows and catalogs for the data pass's end-to-end tests, written with the Pegasus API as users
write them, and a tool that reads its inputs and writes its outputs (failing when an input is
missing, so a job that ran before its inputs arrived -- or after they were cleaned up -- fails the run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from Pegasus.api import (
    Directory,
    File,
    FileServer,
    Job,
    Operation,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)

SHEAF = str(Path(sys.executable).parent / "sheaf")

#: ``tool -i IN... -o OUT...``: every output gets the inputs' text plus one line naming the output
TOOL = f"""#!{sys.executable}
import sys
args = sys.argv[1:]
ins = args[args.index("-i") + 1:args.index("-o")]
outs = args[args.index("-o") + 1:]
text = "".join(open(name).read() for name in ins)
for name in outs:
    with open(name, "w") as out:
        out.write(text + name + "\\n")
"""


def tool(directory: Path) -> Path:
    path = directory / "tool.py"
    path.write_text(TOOL)
    path.chmod(0o755)
    return path


def catalogs(work: Path, *, scratch: Path | None = None) -> None:
    """``sites.yml`` (condorpool, with ``scratch`` as its shared scratch when given), ``transformations.yml``
    (the tool as ``tool``) and the input ``f.a`` with its replica in ``replicas.yml``."""
    exe = tool(work)
    condorpool = Site("condorpool")
    if scratch is not None:
        condorpool.add_directories(Directory(Directory.SHARED_SCRATCH, str(scratch)).add_file_servers(
            FileServer(f"file://{scratch}", Operation.ALL)))
    SiteCatalog().add_sites(Site("local"), condorpool).write(str(work / "sites.yml"))
    TransformationCatalog().add_transformations(
        Transformation("tool", site="condorpool", pfn=str(exe), is_stageable=False)).write(
            str(work / "transformations.yml"))
    (work / "input").mkdir(exist_ok=True)
    (work / "input" / "f.a").write_text("A\n")
    rc = ReplicaCatalog().add_replica("local", "f.a", str(work / "input" / "f.a"))
    rc.write(str(work / "replicas.yml"))


def diamond(work: Path, width: int = 2) -> Workflow:
    """preprocess -> findrange x width -> analyze; only ``f.d`` is staged out and registered."""
    fa, fd = File("f.a"), File("f.d")
    bs = [File(f"f.b{i}") for i in range(width)]
    cs = [File(f"f.c{i}") for i in range(width)]
    wf = Workflow("diamond")
    wf.add_jobs(Job("tool", _id="pre").add_args("-i", fa, "-o", *bs).add_inputs(fa).add_outputs(
        *bs, stage_out=False, register_replica=False))
    for i in range(width):
        find = Job("tool", _id=f"find{i}").add_args("-i", bs[i], "-o", cs[i]).add_inputs(bs[i])
        wf.add_jobs(find.add_outputs(cs[i], stage_out=False, register_replica=False))
    wf.add_jobs(Job("tool", _id="post").add_args("-i", *cs, "-o", fd).add_inputs(*cs).add_outputs(fd))
    wf.write(str(work / "workflow.yml"))
    return wf


def sheaf(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, *args], cwd=work, capture_output=True, text=True, check=False, timeout=300)


def plan_dir(done: subprocess.CompletedProcess[str]) -> Path:
    assert done.returncode == 0, done.stdout + done.stderr
    return Path(done.stdout.split("submit directory: ", 1)[1].split()[0])


def plan_json(directory: Path) -> dict[str, object]:
    return json.loads((directory / "plan.json").read_text())  # type: ignore[no-any-return]


def job_types(directory: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for job in plan_json(directory)["jobs"]:  # type: ignore[attr-defined]
        counts[job["type"]] = counts.get(job["type"], 0) + 1
    return counts
