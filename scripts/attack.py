#!/usr/bin/env python3
"""Attack sheaf's command line with hostile and unlucky inputs; print one row per case.

Usage: ``python scripts/attack.py [--sheaf PATH] [--only SUBSTRING]``

Each case builds its input in a fresh temporary directory, runs ``sheaf`` as a user would (a real
process, no shell) and checks what a user must see: the expected exit code, one message and no
Python traceback on stderr, a bounded time, and case-specific facts (no injected command ran, a
done node never reran, no garbage left behind).  The cases are the reproducers of the reliability
and security review (SECURITY.md lists what sheaf promises); the fuzz, chaos and disk-full tests in
the suite cover the same ground in bulk.  Exit status: 0 when every case holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    seconds: float


class Attack:
    def __init__(self, sheaf: str) -> None:
        self.sheaf = sheaf
        self.rows: list[tuple[str, bool, str]] = []

    def run(self, args: list[str], cwd: Path, timeout: float = 120.0,
            env: dict[str, str] | None = None) -> Outcome:
        start = time.monotonic()
        try:
            proc = subprocess.run([self.sheaf, *args], cwd=cwd, capture_output=True, text=True,
                                  timeout=timeout, env=env, errors="replace", check=False)
        except subprocess.TimeoutExpired:
            return Outcome(-999, "", f"timed out after {timeout} s", time.monotonic() - start)
        return Outcome(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)

    def check(self, name: str, outcome: Outcome, codes: tuple[int, ...] = (2,), bound: float = 20.0,
              extra: str | None = None) -> None:
        problems = []
        if outcome.code not in codes:
            problems.append(f"exit {outcome.code} (want {'/'.join(map(str, codes))})")
        if "Traceback" in outcome.err or "Traceback" in outcome.out:
            problems.append("traceback")
        if outcome.seconds > bound:
            problems.append(f"{outcome.seconds:.1f} s > {bound:.0f} s")
        if extra:
            problems.append(extra)
        first = (outcome.err.strip().splitlines() or [""])[-1][:110]
        detail = "; ".join(problems) if problems else f"exit {outcome.code}, {outcome.seconds:.2f} s: {first}"
        self.rows.append((name, not problems, detail))


# ---- inputs ------------------------------------------------------------------------------------

SUB = """universe = vanilla
executable = {exe}
arguments = {args}
output = {node}.out
error = {node}.err
log = wf.log
{extra}
queue
"""


def hand_dag(root: Path, nodes: dict[str, str], edges: str = "", extra_sub: str = "",
             exe: str = "/bin/true") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for node, args in nodes.items():
        (root / f"{node}.sub").write_text(SUB.format(exe=exe, args=args, node=node, extra=extra_sub))
        lines.append(f"JOB {node} {node}.sub")
    (root / "wf.dag").write_text("\n".join(lines) + "\n" + edges)
    return root


def workflow_yaml(jobs: str, name: str = "wf") -> str:
    return f"pegasus: '5.0'\nname: {name}\njobs:\n{jobs}jobDependencies: []\n"


def job_yaml(jid: str, args: str = "[]", extra: str = "") -> str:
    return f"- {{type: job, name: keg, id: {jid}, arguments: {args}, uses: []{extra}}}\n"


TC = """pegasus: '5.0'
transformations:
- name: keg
  sites:
  - {name: local, pfn: /bin/echo, type: installed}
"""

SC = """pegasus: '5.0'
sites:
- name: local
  directories: []
"""


def catalogs(root: Path) -> None:
    (root / "transformations.yml").write_text(TC)
    (root / "sites.yml").write_text(SC)


TASK = """#!{python}
import fcntl, os, sys, time
path = os.path.join({markers!r}, sys.argv[1])
with open(path, "a") as fh:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.write("overlap\\n")
        raise SystemExit(0)
    fh.write(f"start {{os.getpid()}}\\n"); fh.flush()
    time.sleep(1.0)
    fh.write(f"end {{os.getpid()}}\\n")
"""


# ---- the cases ---------------------------------------------------------------------------------

def case_deep_yaml(a: Attack, tmp: Path) -> None:
    wf = tmp / "deep.yml"
    wf.write_text("- " * 50_000 + "x\n")
    a.check("deep YAML (50,000 nested items)", a.run(["validate", str(wf)], tmp))
    flow = tmp / "flow.yml"
    flow.write_text("[" * 50_000 + "]" * 50_000 + "\n")
    a.check("deep YAML flow ([ x 50,000)", a.run(["validate", str(flow)], tmp))


def case_huge_value(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    wf = tmp / "big.yml"
    wf.write_text(f"pegasus: '5.0'\nname: w\njobs:\n- type: {'x' * 1_000_000}\n  name: keg\n  id: ID1\n")
    a.check("1 MB value with an error near it", a.run(["validate", str(wf)], tmp), bound=10)


def case_text_tc_braces(a: Attack, tmp: Path) -> None:
    (tmp / "tc.txt").write_text("tr a " + "{" * 4_000_000)
    wf = tmp / "wf.yml"
    wf.write_text(workflow_yaml(job_yaml("ID1")))
    (tmp / "sites.yml").write_text(SC)
    a.check("4 MB text TC of '{'", a.run(["validate", str(wf), "--tc", str(tmp / "tc.txt")], tmp), bound=2)


def case_not_utf8(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    wf = tmp / "wf.json"
    wf.write_bytes(b'{"name": "w\xff", "schemaVersion": "1.4", "workflow": {}}')
    a.check("WfCommons file not UTF-8", a.run(["validate", str(wf)], tmp))
    d = hand_dag(tmp / "dag", {"A": "x"})
    (d / "wf.dag").write_bytes(b"JOB A A.sub\n# \xff\xfe\n")
    a.check("DAG file not UTF-8", a.run(["run", str(d)], tmp))
    d = hand_dag(tmp / "dag2", {"A": "x"})
    (d / "A.sub").write_bytes((d / "A.sub").read_bytes().replace(b"log", b"# \xff\nlog"))
    # a submit description is read when its node is submitted, as condor_submit reads it: the node
    # fails (the run goes on and exits 1), with one warning naming the file
    a.check("submit file not UTF-8", a.run(["run", str(d)], tmp), codes=(1,))


def case_dag_grammar(a: Attack, tmp: Path) -> None:
    cases = {
        "VARS with no value": "VARS A\n",
        "DONE ALL_NODES": "DONE ALL_NODES\n",
        "DAG INCLUDEs itself": "INCLUDE wf.dag\n",
        "400-digit DEFER time": f"SCRIPT DEFER 1 {'9' * 400} PRE A /bin/true\n",
        "400-digit NODE_STATUS_FILE time": f"NODE_STATUS_FILE st {'9' * 400}\n",
        "400-digit RETRY": f"RETRY A {'9' * 400}\n",
    }
    for n, (name, line) in enumerate(cases.items()):
        d = hand_dag(tmp / f"g{n}", {"A": "x"})
        with (d / "wf.dag").open("a") as fh:
            fh.write(line)
        a.check(name, a.run(["run", str(d)], tmp), codes=(0, 2) if name == "DONE ALL_NODES" else (2,))


def case_inf_memory(a: Attack, tmp: Path) -> None:
    for n, value in enumerate(["1e400", "9" * 400, "nan", "-5"]):
        d = hand_dag(tmp / f"m{n}", {"A": "x"}, extra_sub=f"request_memory = {value}")
        # refused when the node is submitted: the node fails, the run exits 1 (twice: no crash on resume)
        a.check(f"request_memory = {value[:12]}", a.run(["run", str(d)], tmp), codes=(1,))
        a.check(f"request_memory = {value[:12]} (resume)", a.run(["run", str(d)], tmp), codes=(1,))
    catalogs(tmp)
    wf = tmp / "mem.yml"
    wf.write_text(workflow_yaml(job_yaml("ID1", extra=", profiles: {condor: {request_memory: '1e400'}}")))
    a.check("plan: condor request_memory 1e400", a.run(["plan", str(wf), "-d", str(tmp / "p1")], tmp))
    wf.write_text(workflow_yaml(job_yaml("ID1", extra=", profiles: {condor: {priority: '1 +'}}")))
    a.check("plan: invalid condor priority", a.run(["plan", str(wf), "-d", str(tmp / "p2")], tmp))


def case_classad(a: Attack, tmp: Path) -> None:
    a.check("ClassAd with 8,000 trailing spaces", a.run(["classad", "eval", "1 +" + " " * 8000], tmp),
            bound=2)
    a.check("ClassAd integer of 5,000 digits", a.run(["classad", "eval", "9" * 5000], tmp), codes=(0, 2))


def case_line_formats(a: Attack, tmp: Path) -> None:
    line = "TASK t /bin/echo " + " ".join(["'a b'"] * 120_000) + "\n"
    (tmp / "big.dag").write_text(line)
    exe = shutil.which("sheaf-mpi-cluster", path=str(Path(a.sheaf).parent))
    if exe is None:
        return
    start = time.monotonic()
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, check=False)
    del proc
    out = Attack(exe)
    got = out.run([str(tmp / "big.dag")], tmp, timeout=60)
    a.check("PMC DAG with a 1 MB line", got, codes=(0, 1, 2), bound=10)
    del start


def case_dax_entities(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    dax = tmp / "wf.dax"
    dax.write_text(textwrap.dedent("""\
        <?xml version="1.0"?>
        <!DOCTYPE adag [<!ENTITY dir "/data">]>
        <adag xmlns="http://pegasus.isi.edu/schema/DAX" version="3.6" name="ent">
          <job id="ID1" name="keg"><argument>-i &dir;/f.a</argument></job>
        </adag>
        """))
    got = a.run(["plan", str(dax), "-d", str(tmp / "plan")], tmp)
    # arguments are in the job's submit file, or in its VARS line when jobs share a description
    texts = "".join(p.read_text(errors="replace") for p in (tmp / "plan").rglob("*")
                    if p.suffix in (".sub", ".dag")) if (tmp / "plan").exists() else ""
    a.check("DAX internal entity expanded", got, codes=(0,),
            extra=None if "/data/f.a" in texts else "argument lost its entity")
    ext = tmp / "ext.dax"
    ext.write_text(dax.read_text().replace('<!ENTITY dir "/data">', '<!ENTITY dir SYSTEM "file:///etc/hostname">'))
    a.check("DAX external entity refused", a.run(["validate", str(ext)], tmp))


def case_long_ids(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    wf = tmp / "long.yml"
    wf.write_text(workflow_yaml(job_yaml("I" * 300), name="w" * 300))
    a.check("300-character workflow name and job id", a.run(["plan", str(wf), "-d", str(tmp / "p")], tmp),
            codes=(0, 2))


def case_nul_args(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    wf = tmp / "nul.yml"
    jobs = job_yaml("ID1", '["a\\0b"]') + job_yaml("ID2", '["c\\nd"]')
    wf.write_text(workflow_yaml(jobs))
    a.check("NUL/newline arguments, horizontal clustering",
            a.run(["plan", str(wf), "-d", str(tmp / "p"), "-C", "horizontal"], tmp), codes=(0, 2))


def case_corrupt_journal(a: Attack, tmp: Path) -> None:
    markers = tmp / "markers"
    markers.mkdir()
    task = tmp / "task.py"
    task.write_text(TASK.format(python=sys.executable, markers=str(markers)).replace("1.0", "0.0"))
    task.chmod(0o755)
    d = hand_dag(tmp / "j", {"A": "A", "B": "B"}, edges="PARENT A CHILD B\n", exe=str(task))
    first = a.run(["run", str(d)], tmp)
    journal = d / ".sheaf" / "wf.dag.journal"
    if first.code != 0 or not journal.exists():
        a.check("corrupt journal: set-up run", first, codes=(0,), extra="no journal found")
        return
    # As if the engine was killed after both nodes finished: the run's end record is gone.
    good = b"".join(ln for ln in journal.read_bytes().splitlines(keepends=True) if not ln.startswith(b'["E"'))
    lines = good.splitlines(keepends=True)
    for name, data in (("invalid UTF-8 byte", lines[0] + b"\xff" + b"".join(lines[1:])),
                       ("record of the wrong shape",
                        lines[0] + b'["C", 1.0, {"x": 1}]\n' + b"".join(lines[1:])),
                       ("unknown state string", good.replace(b'"done"', b'"zzz"', 1)),
                       ("value of the wrong type", good.replace(b'"return":0', b'"return":{}', 1))):
        journal.write_bytes(data)
        a.check(f"journal: {name} (status)", a.run(["status", str(d)], tmp), codes=(0, 1, 2))
        got = a.run(["run", str(d)], tmp)
        runs = sum(p.read_text().count("start") for p in markers.iterdir())
        a.check(f"journal: {name} (run)", got, codes=(0, 1, 2),
                extra=f"done nodes ran again ({runs - 2} extra runs)" if runs > 2 else None)
        journal.write_bytes(good)


def case_plan_over_running(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    (tmp / "transformations.yml").write_text(TC.replace("/bin/echo", "/bin/sleep"))
    wf = tmp / "sleep.yml"
    wf.write_text(workflow_yaml(job_yaml("ID1", "['60']")))  # still running when both plans are tried
    plan = tmp / "plan"
    into = ["plan", str(wf), "-d", str(tmp), "--relative-submit-dir", "plan"]
    first = a.run(into, tmp)
    if first.code != 0:
        a.check("plan over a running workflow: set-up", first, codes=(0,))
        return
    running = subprocess.Popen([a.sheaf, "run", str(plan)], cwd=tmp, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60  # a busy machine starts the engine late: wait for its job
    while not any(p.stat().st_size for p in plan.glob("*.nodes.log")) and time.monotonic() < deadline:
        time.sleep(0.1)
    got = a.run([*into, "--force"], tmp)
    replanned = a.run([*into, "--deferred"], tmp)  # how a sub-workflow's retry replans its directory
    running.terminate()  # the run stops, its job with it
    running.wait(timeout=60)
    a.check("plan --force over a running workflow", got)
    a.check("plan --deferred over a running workflow", replanned)


def case_garbage(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    wf = tmp / "wf.yml"
    wf.write_text(workflow_yaml(job_yaml("ID1")))
    first = a.run(["plan", str(wf), "-d", str(tmp / "plan")], tmp)
    runs = tmp / "plan"
    found = sorted(runs.rglob("run0001"))
    if first.code != 0 or not found:
        a.check("what a killed plan left: set-up plan", first, codes=(0,), extra="no run0001")
        return
    runs = found[0].parent
    dead = 2**22 + 4321  # above the kernel's largest pid: never alive
    # what a plan killed while it wrote run0002 leaves: the reserved directory and its temporary sibling
    (runs / "run0002").mkdir()
    (runs / f".run0002.sheaf-new-{dead}-abcd" / "jobs").mkdir(parents=True)
    got = a.run(["plan", str(wf), "-d", str(tmp / "plan")], tmp)
    left = sorted(p.name for p in runs.iterdir())
    a.check("what a killed plan left is removed by the next plan", got, codes=(0,),
            extra=None if left == ["run0001", "run0002"] and (runs / "run0002" / "plan.json").exists()
            else f"left: {left}")


def case_blank_catalog(a: Attack, tmp: Path) -> None:
    catalogs(tmp)
    wf = tmp / "wf.yml"
    wf.write_text(workflow_yaml(job_yaml("ID1")))
    (tmp / "replicas.yml").unlink(missing_ok=True)
    (tmp / "rc.txt").write_text("\n" * 5000 + 'f.a file:///data/f.a site="local"\n')
    a.check("replica catalog of 5,000 blank lines then an entry", a.run(["validate", str(wf)], tmp),
            codes=(0,), bound=10)


def case_lost_reason(a: Attack, tmp: Path) -> None:
    d = hand_dag(tmp / "r", {"A": "x"}, exe="/bin/false")
    (d / "B.sub").write_text(SUB.format(exe="/bin/sleep", args="3", node="B", extra=""))
    with (d / "wf.dag").open("a") as fh:
        fh.write("JOB B B.sub\n")
    proc = subprocess.Popen([a.sheaf, "run", str(d)], cwd=tmp, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    journal = d / ".sheaf" / "wf.dag.journal"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (journal.exists() and b'"failed"' in journal.read_bytes()):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    got = a.run(["run", str(d)], tmp)
    text = got.out + got.err
    a.check("reason of a failure kept across a kill", got, codes=(1,),
            extra="reason shown as unknown" if "unknown" in text.lower() else None)


def case_kill_after_spawn(a: Attack, tmp: Path) -> None:
    markers = tmp / "markers"
    markers.mkdir()
    task = tmp / "task.py"
    task.write_text(TASK.format(python=sys.executable, markers=str(markers)))
    task.chmod(0o755)
    d = hand_dag(tmp / "k", {f"N{i}": f"N{i}" for i in range(6)}, exe=str(task))
    kills = 0
    for _ in range(12):
        before = sum(p.read_text().count("start") for p in markers.iterdir())
        proc = subprocess.Popen([a.sheaf, "run", str(d)], cwd=tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if sum(p.read_text().count("start") for p in markers.iterdir()) != before:
                break
            time.sleep(0.002)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    final = a.run(["run", str(d)], tmp, timeout=120)
    time.sleep(1.5)
    overlaps = sum(p.read_text().count("overlap") for p in markers.iterdir())
    reruns = sum(max(0, p.read_text().count("end") - 1) for p in markers.iterdir())
    problems = [f"{overlaps} runs overlapped a live one"] if overlaps else []
    if reruns:
        problems.append(f"{reruns} finished tasks ran again")
    a.check(f"kill -9 right after spawns ({kills} kills)", final, codes=(0,),
            extra="; ".join(problems) or None)


CASES: list[Callable[[Attack, Path], None]] = [
    case_deep_yaml, case_huge_value, case_text_tc_braces, case_not_utf8, case_dag_grammar, case_inf_memory,
    case_classad, case_line_formats, case_dax_entities, case_long_ids, case_nul_args, case_corrupt_journal,
    case_plan_over_running, case_garbage, case_blank_catalog, case_lost_reason, case_kill_after_spawn,
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sheaf", default=str(ROOT / ".venv" / "bin" / "sheaf"))
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    attack = Attack(args.sheaf)
    for case in CASES:
        if args.only not in case.__name__:
            continue
        with tempfile.TemporaryDirectory(prefix="sheaf-attack-") as tmp:
            try:
                case(attack, Path(tmp))
            except Exception as exc:  # noqa: BLE001 - the harness reports, it does not stop
                attack.rows.append((case.__name__, False, f"harness error: {exc!r}"))
    width = max(len(name) for name, _, _ in attack.rows)
    for name, ok, detail in attack.rows:
        print(f"{'ok  ' if ok else 'FAIL'} {name:<{width}}  {detail}")
    failed = sum(not ok for _, ok, _ in attack.rows)
    print(f"{len(attack.rows) - failed} held, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
