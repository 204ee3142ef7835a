"""The compiled sheaf-cluster against the Python one: the same records (times and pids aside), the same
exit status, on generated ``.in`` files; and what it does not do itself it hands over, visibly."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sheaf.codegen._write import COMPILED_CLUSTER, seqexec_runner

CLUSTER_PY = str(Path(sys.executable).parent / "sheaf-cluster")
pytestmark = pytest.mark.skipif(not os.access(COMPILED_CLUSTER, os.X_OK),
                                reason="sheaf-cluster-c was not built (no C compiler at install time)")

TASK = re.compile(r'^\[cluster-task id=(\d+), start="[^"]+", duration=\d+\.\d{3}, status=(\d+), '
                  r'line=(\d+), pid=(-?\d+), app="([^"]*)"\]$')
SUMMARY = re.compile(r'^\[cluster-summary stat="(\w+)", lines=(\d+), tasks=(\d+), succeeded=(\d+), '
                     r'failed=(\d+), extra=(\d+), duration=\d+\.\d{3}, start="[^"]+", pid=\d+, '
                     r'app="([^"]*)"\]$')

# Commands whose outcome does not depend on timing: exit codes, death by a signal, output with quoting,
# a program that is not there, a kickstart-style wrapper (its app is the program after the options).
_COMMANDS = st.one_of(
    st.integers(0, 4).map(lambda code: f"sh -c 'exit {code}'"),
    st.sampled_from([signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV]).map(
        lambda sig: f"sh -c 'kill -{int(sig)} $$'"),
    st.lists(st.text("ab $'\"\\#\t;\u00e9\u00a0\x0b\x1c\x01", min_size=0, max_size=6), max_size=3).map(
        lambda words: shlex.join(["echo", *words])),
    st.sampled_from(["true", "/bin/true", "no-such-program-here x", "echo \"a \\\" b\" 'c d'\\ e",
                     "/usr/bin/pegasus-kickstart -n tr -o out.txt /bin/echo x", "''"]),
)
_DECORATION = st.sampled_from(["", "# a comment", "   ", "# not #@ a record", "##@", "\t"])


@st.composite
def _job(draw: st.DrawFn) -> tuple[str, list[str], bool]:
    lines: list[str] = []
    for command in draw(st.lists(_COMMANDS, min_size=0, max_size=7)):
        lines.append(draw(_DECORATION))
        if draw(st.booleans()):
            lines.append(f"#@ {len(lines)} tr::t ID{len(lines)}")
        lines.append(command)
    mode = draw(st.sampled_from([[], ["-e"], ["-f"]]))
    cpus = draw(st.integers(1, 3)) if mode != ["-f"] else 1  # -f with -n > 1 depends on timing
    success = draw(st.sampled_from([[], ["-S", "3"], ["-S3", "-S", "4"]]))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = end.join(lines) + (end if lines and draw(st.booleans()) else "")
    return text, [*mode, *success, "-n", str(cpus)], draw(st.booleans())


@pytest.fixture(autouse=True)
def _compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the compiled program: not under the pure-Python rerun's switch."""
    monkeypatch.delenv("SHEAF_PURE_PYTHON", raising=False)


def _outcome(argv: list[str], tmp: Path, text: str, stdin: bool) -> tuple[object, ...]:
    (tmp / "job.in").write_text(text, newline="")
    # No hand-over here: a compiled run that needed the Python program would fail, not hide.
    env = {**os.environ, "SHEAF_CLUSTER_FALLBACK": "/nonexistent/sheaf-cluster"}
    done = subprocess.run([*argv, *([] if stdin else ["job.in"])], input=text.encode() if stdin else None,
                          stdin=None if stdin else subprocess.DEVNULL, capture_output=True, cwd=tmp,
                          timeout=60, check=False, env=env)
    out = done.stdout.decode().splitlines()
    tasks = sorted((m[1], m[2], m[3], m[4] == "-1", m[5]) for line in out if (m := TASK.match(line)))
    summaries = [m.groups() for line in out if (m := SUMMARY.match(line))]
    other = sorted(line for line in out if not line.startswith("[cluster-"))
    assert summaries and out[-1].startswith("[cluster-summary"), out
    assert summaries[0][6] == argv[0]  # app: the program as it was called
    return done.returncode, tasks, summaries[0][:6], other


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_job())
def test_compiled_and_python_agree(tmp_path: Path, job: tuple[str, list[str], bool]) -> None:
    text, options, stdin = job
    compiled = _outcome([COMPILED_CLUSTER, *options], tmp_path, text, stdin)
    assert compiled == _outcome([CLUSTER_PY, *options], tmp_path, text, stdin)


def _fake_python(tmp: Path) -> Path:
    """A stand-in for the Python sheaf-cluster that shows what it was handed."""
    fake = tmp / "fake-cluster"
    fake.write_text('#!/bin/sh\necho "handed $SHEAF_CLUSTER_ARGV0 $*"\ncat\n')
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize(("args", "text", "env"), [
    (["-R", "p.txt", "job.in"], "true\n", {}),
    (["job.in"], "true\n", {"SEQEXEC_PROGRESS_REPORT": "p.txt"}),
    (["job.in"], "true\n", {"SEQEXEC_SETUP": "true"}),
    (["job.in"], "true\n", {"SEQEXEC_CLEANUP": ""}),
    (["-h"], "", {}),
    (["-q", "job.in"], "true\n", {}),
    (["-e", "-f", "job.in"], "true\n", {}),
    (["-S", "256", "job.in"], "true\n", {}),
    (["-n", "0", "job.in"], "true\n", {}),
    (["a.in", "b.in"], "true\n", {}),
    (["missing.in"], "", {}),
    (["job.in"], "#@ 1 tr\ntrue\n", {}),
    (["job.in"], "true\n#@ 1 tr id\n", {}),
    (["job.in"], "echo 'open\n", {}),
    (["job.in"], "#@ 1 tr caf\u00e9\ntrue\n", {}),
    (["job.in"], "#@\u00a01 tr id\ntrue\n", {}),
    (["job.in"], "true\n\u00a0\n", {}),
    (["job.in"], "true\n\x0b\x1c\n", {}),
    (["job.in"], "echo a\0b\n", {}),
    (["job.in"], "true\n", {"SHEAF_PURE_PYTHON": "1"}),
])
def test_hands_over_what_it_does_not_do(tmp_path: Path, args: list[str], text: str,
                                        env: dict[str, str]) -> None:
    (tmp_path / "job.in").write_text(text)
    fake = _fake_python(tmp_path)
    env = {**os.environ, **env, "SHEAF_CLUSTER_FALLBACK": str(fake)}
    done = subprocess.run([COMPILED_CLUSTER, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          cwd=tmp_path, timeout=30, env=env, check=False)
    assert done.stdout.splitlines()[0] == f"handed {COMPILED_CLUSTER} {' '.join(args)}"
    assert "[cluster-task" not in done.stdout  # nothing ran before the hand-over


def test_hand_over_passes_a_consumed_stdin_on(tmp_path: Path) -> None:
    fake = _fake_python(tmp_path)
    text = "true\n#@ 1 tr\n"
    done = subprocess.run([COMPILED_CLUSTER], input=text, capture_output=True, text=True, cwd=tmp_path,
                          timeout=30, env={**os.environ, "SHEAF_CLUSTER_FALLBACK": str(fake)}, check=False)
    assert done.stdout == f"handed {COMPILED_CLUSTER} \n{text}"


def test_the_python_program_reports_as_the_compiled_one_was_called(tmp_path: Path) -> None:
    (tmp_path / "job.in").write_text("true\n")
    done = subprocess.run([COMPILED_CLUSTER, "-R", "p.txt", "job.in"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=30, check=False,
                          env={**os.environ, "SHEAF_CLUSTER_FALLBACK": CLUSTER_PY})
    assert done.returncode == 0, done.stderr
    assert SUMMARY.match(done.stdout.splitlines()[-1])[7] == COMPILED_CLUSTER  # type: ignore[index]
    assert f" START {COMPILED_CLUSTER} -R p.txt job.in ###" in (tmp_path / "p.txt").read_text()


def test_no_python_program_found_is_an_error_not_a_difference(tmp_path: Path) -> None:
    (tmp_path / "job.in").write_text("true\n")
    env = {"PATH": str(tmp_path), "SEQEXEC_SETUP": "true"}
    done = subprocess.run([COMPILED_CLUSTER, "job.in"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=30, env=env, check=False)
    assert done.returncode == 2 and "SHEAF_CLUSTER_FALLBACK" in done.stderr and done.stdout == ""
    loop = subprocess.run([COMPILED_CLUSTER, "job.in"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=30, env={**env, "SHEAF_CLUSTER_FALLBACK": COMPILED_CLUSTER}, check=False)
    assert loop.returncode == 2 and "not the Python one" in loop.stderr


def test_codegen_names_the_compiled_runner_unless_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    runner, environment = seqexec_runner()
    assert runner == COMPILED_CLUSTER
    assert dict(environment)["SHEAF_CLUSTER_FALLBACK"].endswith("sheaf-cluster")
    monkeypatch.setenv("SHEAF_PURE_PYTHON", "1")
    assert seqexec_runner() == (CLUSTER_PY, ())


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "blackdiamond"


def test_a_planned_cluster_runs_compiled_and_hands_over_through_its_environment(tmp_path: Path) -> None:
    # The progress report (an env profile here) is the Python program's: the compiled one must find
    # it through the SHEAF_CLUSTER_FALLBACK that sheaf plan wrote into the job's environment.
    sheaf, progress = str(Path(sys.executable).parent / "sheaf"), tmp_path / "progress.txt"
    planned = subprocess.run([sheaf, "plan", "workflow.yml", "-d", str(tmp_path), "--relative-dir", "plan",
                              "--cluster", "horizontal", "--input-dir", "input",
                              "-D", f"env.SEQEXEC_PROGRESS_REPORT={progress}"],
                             cwd=EXAMPLE, capture_output=True, text=True, check=False, timeout=120)
    assert planned.returncode == 0, planned.stderr
    sub = next((tmp_path / "plan").glob("*.dag")).read_text()  # the clusters' shared description
    assert f"executable = {COMPILED_CLUSTER}\n" in sub and f"SHEAF_CLUSTER_FALLBACK={CLUSTER_PY}" in sub
    ran = subprocess.run([sheaf, "run", str(tmp_path / "plan")], capture_output=True, text=True, check=False,
                         timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f" START {COMPILED_CLUSTER} -f " in progress.read_text()
    outs = "".join(p.read_text() for p in (tmp_path / "plan").rglob("merge_*.out"))
    assert f'app="{COMPILED_CLUSTER}"]' in outs
