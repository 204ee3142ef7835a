"""sheaf-cluster against real processes: order, records, failure modes, parallelism, signals -- each test
for the Python program and the compiled one (the ``cluster`` fixture)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PY = sys.executable
TASK_RE = re.compile(
    r'^\[cluster-task id=(\d+), start="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d)", '
    r'duration=(\d+\.\d{3}), status=(-?\d+), line=(\d+), pid=(-?\d+), app="([^"]*)"\]$')
SUMMARY_RE = re.compile(
    r'^\[cluster-summary stat="(ok|fail)", lines=(\d+), tasks=(\d+), succeeded=(\d+), failed=(\d+), '
    r'extra=(\d+), duration=(\d+\.\d{3}), start="[^"]+", pid=(\d+), app="([^"]+)"\]$')


def _run(cluster: str, tmp: Path, lines: list[str], *opts: str, stdin: bool = False,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    infile = tmp / "job.in"
    infile.write_text("".join(line + "\n" for line in lines))
    args = [cluster, *opts] + ([] if stdin else [str(infile)])
    return subprocess.run(args, check=False, input=infile.read_text() if stdin else None, capture_output=True,
                          text=True, timeout=60, cwd=tmp, env={**os.environ, **(env or {})})


def _records(out: str) -> tuple[list[re.Match[str]], re.Match[str]]:
    tasks = [m for line in out.splitlines() if (m := TASK_RE.match(line))]
    summaries = [m for line in out.splitlines() if (m := SUMMARY_RE.match(line))]
    assert len(summaries) == 1, out
    assert out.splitlines()[-1].startswith("[cluster-summary"), out
    return tasks, summaries[0]


def _append(path: Path, text: str) -> str:
    return shlex.join([PY, "-c", f"open({str(path)!r}, 'a').write({text!r})"])


def test_runs_in_order_with_exact_records(cluster: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    lines = ["# a comment", "#@ 1 diamond::preprocess ID0000001", _append(log, "a"), "",
             "#@ 2 diamond::findrange ID0000002", _append(log, "b"), "echo 'x  y' \"$HOME;\" '`id`'"]
    res = _run(cluster, tmp_path, lines)
    assert res.returncode == 0, res.stderr
    assert log.read_text() == "ab"
    assert "x  y $HOME; `id`\n" in res.stdout  # arguments exec'd, never seen by a shell
    tasks, summary = _records(res.stdout)
    assert [(m[1], m[4], m[5]) for m in tasks] == [("1", "0", "3"), ("2", "0", "6"), ("3", "0", "7")]
    assert tasks[0][7] == PY and tasks[2][7].endswith("/echo")  # argv[0] as found on PATH
    assert summary.groups()[:6] == ("ok", "7", "3", "3", "0", "0")
    assert summary[9] == cluster


def test_failures_default_runs_all_and_exits_5(cluster: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    res = _run(cluster, tmp_path, [_append(log, "a"), "false", "no-such-program-here --x", _append(log, "b"),
                          "sh -c 'kill -9 $$'"])
    assert res.returncode == 5
    assert log.read_text() == "ab"
    tasks, summary = _records(res.stdout)
    assert [int(m[4]) for m in tasks] == [0, 256, 127 << 8, 0, signal.SIGKILL]
    assert tasks[2][6] == "-1" and tasks[2][7] == "no-such-program-here"  # missing exec: a failed task
    assert "no-such-program-here" in res.stderr
    assert summary.groups()[:5] == ("fail", "5", "5", "2", "3")


def test_a_task_no_exec_can_take_is_a_failed_task(cluster: str, tmp_path: Path) -> None:
    # An empty program name ('') and a NUL in an argument used to raise out of os.posix_spawn.
    res = _run(cluster, tmp_path, ["''", "true", "echo a\0b"])
    assert res.returncode == 5 and "Traceback" not in res.stderr, res.stderr
    tasks, summary = _records(res.stdout)
    assert [(m[4], m[6]) for m in tasks] == [(str(127 << 8), "-1"), ("0", tasks[1][6]), (str(127 << 8), "-1")]
    assert summary.groups()[:5] == ("fail", "3", "3", "1", "2")


def test_fail_hard_stops_at_first_failure(cluster: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    res = _run(cluster, tmp_path, [_append(log, "a"), "sh -c 'exit 7'", _append(log, "c"), _append(log, "d")],
               "-f")
    assert res.returncode == 5
    assert log.read_text() == "a"
    tasks, summary = _records(res.stdout)
    assert len(tasks) == 2 and tasks[1][4] == str(7 << 8)
    assert summary.groups()[:5] == ("fail", "3", "2", "1", "1")  # stopped when line 3 was read


def test_e_always_succeeds_and_S_adds_success_codes(cluster: str, tmp_path: Path) -> None:
    res = _run(cluster, tmp_path, ["false", "true"], "-e")
    assert res.returncode == 0
    assert _records(res.stdout)[1].groups()[:5] == ("ok", "2", "2", "1", "1")
    res = _run(cluster, tmp_path, ["sh -c 'exit 3'", "sh -c 'exit 4'"], "-S", "3")
    assert res.returncode == 5
    assert _records(res.stdout)[1].groups()[3:5] == ("1", "1")
    assert _run(cluster, tmp_path, ["true"], "-e", "-f").returncode == 2


def test_n_runs_tasks_at_once(cluster: str, tmp_path: Path) -> None:
    # Each task announces itself, then waits (up to 20 s) for the other: only concurrent runs pass.
    wait = tmp_path / "wait.py"
    wait.write_text("import os,sys,time; open(sys.argv[1],'w').close(); t=time.time()+20\n"
                    "while not os.path.exists(sys.argv[2]) and time.time()<t: time.sleep(0.01)\n"
                    "sys.exit(0 if os.path.exists(sys.argv[2]) else 1)\n")
    a, b = tmp_path / "a", tmp_path / "b"
    lines = [shlex.join([PY, str(wait), str(a), str(b)]), shlex.join([PY, str(wait), str(b), str(a)])]
    res = _run(cluster, tmp_path, lines, "-n", "2", stdin=True)
    assert res.returncode == 0, res.stdout
    assert _records(res.stdout)[1][5] == "0"
    assert _run(cluster, tmp_path, ["true"], "-n", "auto").returncode == 0
    assert _run(cluster, tmp_path, ["true"], "-n", "0").returncode == 2


def test_sigterm_is_forwarded_and_nothing_new_starts(cluster: str, tmp_path: Path) -> None:
    got, started, later = tmp_path / "got", tmp_path / "started", tmp_path / "later"
    task = tmp_path / "task.py"
    task.write_text("import signal,sys,time\n"
                    f"signal.signal(signal.SIGTERM, lambda *a: (open({str(got)!r},'w').write('TERM'), "
                    f"sys.exit(9)))\nopen({str(started)!r},'w').close()\ntime.sleep(30)\n")
    (tmp_path / "job.in").write_text(shlex.join([PY, str(task)]) + "\n" + _append(later, "x") + "\n")
    proc = subprocess.Popen([cluster, "job.in"], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while not started.exists() and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    assert got.read_text() == "TERM" and not later.exists()
    tasks, summary = _records(out)
    assert tasks[0][4] == str(9 << 8) and summary[1] == "fail"


def test_status_and_progress_files_and_setup(cluster: str, tmp_path: Path) -> None:
    res = _run(cluster, tmp_path, ["echo hi", "/usr/bin/pegasus-kickstart -n tr -o out.txt /bin/echo x"],
               "-s", "status.txt", "-R", "progress.txt",
               env={"SEQEXEC_SETUP": "true setup", "SEQEXEC_CLEANUP": "true cleanup"})
    assert res.stdout == "" and res.returncode == 5  # no kickstart here: task 2 cannot exec
    status = (tmp_path / "status.txt").read_text()
    assert "hi\n" in status
    assert 'id=setup, start="' in status and "id=cleanup" in status
    tasks, summary = _records(status)
    assert tasks[1][7] == "/bin/echo"  # app is the application kickstart would run
    assert summary[6] == "2"  # setup and cleanup are the extra tasks
    progress = (tmp_path / "progress.txt").read_text().splitlines()
    assert re.match(r"^\S+ [^ :]+:\d+ 0 0/0 START .* ### sysname=\S+ machine=\S+ release=\S+$", progress[0])
    assert re.match(r"^\S+ [^ :]+:\d+ setup 0/0 \d+\.\d{3} \S+ setup$", progress[1])
    assert re.match(r"^\S+ [^ :]+:\d+ 1 0/0 \d+\.\d{3} \S+ hi ### utime=\d+\.\d{3} .* nivcsw=\d+$",
                    progress[2])
    assert progress[3].split(" ", 5)[3:] == ["127/0", progress[3].split(" ")[4], "/bin/echo x > out.txt"]


@pytest.mark.parametrize(("args", "text", "code", "needle"), [
    (["-q"], "true\n", 2, "option -q not recognized"),
    (["a.in", "b.in"], "true\n", 2, "at most one input file"),
    (["-S", "300"], "true\n", 2, "1..255"),
    (["missing.in"], "", 3, "open input missing.in"),
    (["-s", "/nonexistent/dir/x"], "true\n", 2, "open status"),
    (["job.in"], "true\n#@ 1 tr\nfalse\n", 2, "job.in:2: incomplete task record"),
    (["job.in"], "true\nsh -c 'unbalanced\n", 2, "job.in:2: cannot split command line"),
])
def test_bad_usage_and_input(cluster: str, tmp_path: Path, args: list[str], text: str, code: int,
                             needle: str) -> None:
    (tmp_path / "job.in").write_text(text)
    res = subprocess.run([cluster, *args], check=False, cwd=tmp_path, capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == code
    assert needle in res.stderr and "Traceback" not in res.stderr
    assert "[cluster-task" not in res.stdout  # a bad file is rejected before anything runs


@pytest.mark.parametrize(("args", "pairs", "rest"), [
    (["-f", "-n2", "job.in"], [("-f", ""), ("-n", "2")], ["job.in"]),
    (["-dfn", "auto", "-S", "3", "--", "-weird.in"], [("-d", ""), ("-f", ""), ("-n", "auto"), ("-S", "3")],
     ["-weird.in"]),
    (["job.in", "-f"], [], ["job.in", "-f"]),  # options end at the first operand, as getopt(3)
    (["-"], [], ["-"]),
])
def test_getopt_follows_posix(args: list[str], pairs: list[tuple[str, str]], rest: list[str]) -> None:
    from sheaf.jobtools.seqexec import _getopt
    assert _getopt(args, "R:S:defhn:s:") == (pairs, rest)
