"""Shell hooks (notifications) of YAML workflows and DAX 3 ``<invoke>``: run beside a real run with
Pegasus's environment variables; a failing hook is logged and never fails the workflow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from Pegasus.api import EventType, Job, Site, SiteCatalog, Transformation, TransformationCatalog, Workflow
from tests.monitor.conftest import sheaf

from sheaf.formats import read_workflow

HOOK = """\
import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({k: v for k, v in os.environ.items() if k.startswith("PEGASUS_")}) + "\\n")
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


def _hook(tmp: Path, status: int = 0) -> str:
    (tmp / "hook.py").write_text(HOOK)
    return f"{sys.executable} {tmp / 'hook.py'} {tmp / 'events.jsonl'}" + (f" {status}" if status else "")


def _events(tmp: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in (tmp / "events.jsonl").read_text().splitlines()]


def _run(tmp: Path, wf: Workflow, *more: Job) -> tuple[Path, int]:
    tc = TransformationCatalog().add_transformations(
        Transformation("ok", site="local", pfn="/bin/true", is_stageable=False),
        Transformation("bad", site="local", pfn="/bin/false", is_stageable=False))
    wf.add_jobs(*more).add_transformation_catalog(tc).add_site_catalog(SiteCatalog().add_sites(Site("local")))
    wf.write(str(tmp / "wf.yml"))
    planned = sheaf("plan", "wf.yml", "--dir", ".", "--relative-dir", "run", "-s", "local", "-q",
                    "-D", "dagman.retry=0", cwd=tmp)
    assert planned.returncode == 0 and "hooks" not in planned.stderr, planned.stderr
    return tmp / "run", sheaf("run", str(tmp / "run")).returncode


def test_workflow_and_job_hooks_run_with_pegasus_variables(tmp_path: Path) -> None:
    hook = _hook(tmp_path)
    wf = Workflow("hooked").add_shell_hook(EventType.START, hook).add_shell_hook(EventType.SUCCESS, hook)
    job = Job("ok", _id="ID1").add_shell_hook(EventType.ALL, hook).add_shell_hook(EventType.ERROR, hook)
    run_dir, code = _run(tmp_path, wf, job)
    assert code == 0
    seen = [(e["PEGASUS_JOBID"], e["PEGASUS_EVENT"], e.get("PEGASUS_STATUS")) for e in _events(tmp_path)]
    (uuid,) = {j for j, _, _ in seen if j != "ok_ID1"}
    expected = [(uuid, "start", None), ("ok_ID1", "start", None), ("ok_ID1", "at_end", "0"),
                (uuid, "on_success", "0")]
    assert sorted(seen, key=repr) == sorted(expected, key=repr)
    first = _events(tmp_path)[0]
    assert first["PEGASUS_SUBMIT_DIR"] == str(run_dir) and first["PEGASUS_WFID"] == "hooked-0"
    assert first["PEGASUS_EVENT_TIMESTAMP"].isdigit() and "T" in first["PEGASUS_EVENT_TIMESTAMP_ISO"]
    job_end = next(e for e in _events(tmp_path) if e["PEGASUS_EVENT"] == "at_end")
    assert job_end["PEGASUS_STDOUT"].endswith("ID1.out") and job_end["PEGASUS_STDERR"].endswith("ID1.err")


def test_a_failing_hook_is_logged_and_the_workflow_still_succeeds(tmp_path: Path) -> None:
    wf = Workflow("hooked").add_shell_hook(EventType.END, _hook(tmp_path, status=5)) \
        .add_shell_hook(EventType.START, "/no/such/program --flag")
    run_dir, code = _run(tmp_path, wf, Job("ok"))
    assert code == 0
    log = next(run_dir.glob("*.hooks.log")).read_text()
    assert "hook failed (exit status 5)" in log and "hook failed to start" in log
    assert [e["PEGASUS_EVENT"] for e in _events(tmp_path)] == ["at_end"]


def test_error_hooks_fire_on_a_failed_job_and_workflow(tmp_path: Path) -> None:
    hook = _hook(tmp_path)
    wf = Workflow("hooked").add_shell_hook(EventType.ERROR, hook).add_shell_hook(EventType.SUCCESS, hook)
    _, code = _run(tmp_path, wf, Job("bad", _id="ID1").add_shell_hook(EventType.ERROR, hook)
                   .add_shell_hook(EventType.SUCCESS, hook))
    assert code == 1
    assert sorted((e["PEGASUS_EVENT"], e["PEGASUS_STATUS"]) for e in _events(tmp_path)) == [
        ("on_error", "1"), ("on_error", "1")]


def test_dax3_invoke_reads_as_shell_hooks_and_writes_back(tmp_path: Path) -> None:
    dax = tmp_path / "wf.dax"
    dax.write_text("""<?xml version="1.0" encoding="UTF-8"?>
<adag xmlns="http://pegasus.isi.edu/schema/DAX" version="3.6" name="d">
  <invoke when="at_end">/bin/echo done</invoke>
  <job id="ID1" name="ok"><invoke when="on_error">/bin/echo failed</invoke></job>
</adag>
""")
    wf = read_workflow(str(dax))
    assert wf.hooks == {"shell": [{"_on": "end", "cmd": "/bin/echo done"}]}
    assert wf.jobs["ID1"].hooks == {"shell": [{"_on": "error", "cmd": "/bin/echo failed"}]}
    bad = tmp_path / "bad.dax"
    bad.write_text(dax.read_text().replace('when="at_end"', 'when="sometimes"'))
    done = sheaf("validate", str(bad))
    assert done.returncode == 2 and "when is one of" in done.stderr and done.stderr.count("\n") == 1


def test_a_transformations_hooks_run_for_each_job_that_invokes_it(tmp_path: Path) -> None:
    hook = _hook(tmp_path)
    hooked = Transformation("hooked", site="local", pfn="/bin/true", is_stageable=False)
    hooked.add_shell_hook(EventType.END, hook)
    tc = TransformationCatalog().add_transformations(hooked)
    wf = Workflow("tr-hooks").add_jobs(Job(hooked, _id="ID1"), Job(hooked, _id="ID2"))
    wf.add_transformation_catalog(tc).add_site_catalog(SiteCatalog().add_sites(Site("local")))
    wf.write(str(tmp_path / "wf.yml"))
    planned = sheaf("plan", "wf.yml", "--dir", ".", "--relative-dir", "run", "-s", "local", "-q",
                    cwd=tmp_path)
    assert planned.returncode == 0 and "hooks" not in planned.stderr, planned.stderr  # no longer warned
    assert sheaf("run", str(tmp_path / "run")).returncode == 0
    seen = sorted((e["PEGASUS_JOBID"], e["PEGASUS_EVENT"]) for e in _events(tmp_path))
    assert seen == [("hooked_ID1", "at_end"), ("hooked_ID2", "at_end")]
