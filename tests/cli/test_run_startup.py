"""``sheaf run`` starts with the engine, the local backend and the readers of DAG and submit files
only: not the planner, codegen's writers, the workflow and catalog readers or the progress bar
(each package's ``__init__`` re-exports lazily, ``sheaf._lazy``).  Start-up is part of every run's
time (``benchmarks/engine_throughput.py`` times ``sheaf run`` from start to exit)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

_NOT_FOR_RUN = ("sheaf.planner", "sheaf.codegen._write", "sheaf.formats._yaml_workflow",
                "sheaf.formats._yaml_catalogs", "sheaf.formats._discover", "sheaf.model._catalogs",
                "sheaf.model._workflow", "rich.progress", "yaml_rs")


def _loaded(code: str, env: dict[str, str] | None = None) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True, env=env)
    return set(out.stdout.split())


def test_the_run_command_imports_nothing_of_planning() -> None:
    loaded = _loaded("from sheaf.cli._app import main\nmain.get_command(None, 'run')")
    # the backends themselves load when the run makes one (``sheaf.backends`` imports lazily, for
    # the Slurm job wrapper's start-up): the registry is what the command needs
    assert "sheaf.engine._loop" in loaded and "sheaf.backends._registry" in loaded
    assert sorted(m for m in loaded if m.startswith(_NOT_FOR_RUN)) == []


@pytest.mark.parametrize("package", ["sheaf.model", "sheaf.formats", "sheaf.codegen", "sheaf.monitor",
                                     "sheaf.engine"])
def test_lazy_packages_still_export_every_name(package: str) -> None:
    code = (f"import importlib\nm = importlib.import_module({package!r})\n"
            "missing = [n for n in m.__all__ if getattr(m, n, None) is None]\nassert not missing, missing\n"
            "try:\n    m.no_such_name\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit(1)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_local_run_loads_no_grid_backend_nor_container_code(tmp_path: Path) -> None:
    """A whole run of a plain DAG: the grid backend (~120 ms of imports) and the container helpers
    (with urllib, ~35 ms) are for grid plans and plans with containers only; of the monitor, the run
    needs the events loader's process handle, not the loader itself (it runs in a process of its
    own), the dashboard's HTTP server or the analyzer.  Nor the ``regex``
    package (~10 ms; ClassAd regular expressions compile it on first use) or OpenSSL's hashes (~6 ms;
    podman's run root is named by one)."""
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "a.dag").write_text("JOB A a.sub\n")
    run = ("import sys\nfrom sheaf.cli import main\n"
           f"sys.argv = ['sheaf', 'run', {str(tmp_path)!r}]\n"
           "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code")
    loaded = _loaded(run, {**os.environ, "SHEAF_EVENTS": "0", "SHEAF_HOME": str(tmp_path / "home")})
    assert "sheaf.engine._loop" in loaded
    assert sorted(m for m in loaded if m.startswith(("sheaf.backends.grid", "sheaf.jobtools.container",
                                                     "urllib.request", "sheaf.monitor._dashboard",
                                                     "sheaf.monitor._analyze", "sheaf.monitor._loader",
                                                     "http.server", "regex", "_hashlib"))) == []


def test_the_program_exits_fast_with_mains_status_output_and_atexit(tmp_path: Path) -> None:
    """``sheaf`` (``program``) skips the interpreter's teardown, not what an exit does: the status,
    buffered output (to a pipe) and the ``atexit`` handlers."""
    mark = tmp_path / "atexit-ran"
    code = ("import atexit, pathlib, sys\n"
            f"atexit.register(pathlib.Path({str(mark)!r}).write_text, 'yes')\n"
            "from sheaf.cli import program\nsys.argv = ['sheaf', *sys.argv[1:]]\nprogram()")
    env = {**os.environ, "SHEAF_EVENTS": "0", "SHEAF_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True, env=env,
                          check=False)
    assert (done.returncode, mark.read_text()) == (0, "yes")
    assert "sheaf" in done.stdout
    (tmp_path / "a.sub").write_text("executable = /bin/false\nqueue\n")
    (tmp_path / "a.dag").write_text("JOB A a.sub\n")
    done = subprocess.run([sys.executable, "-c", code, "run", str(tmp_path)], capture_output=True, text=True,
                          env=env, check=False)
    assert done.returncode == 1  # the workflow ran and failed
    assert "workflow FAILED" in done.stdout and done.stdout.endswith("to continue from it\n")
    done = subprocess.run([sys.executable, "-c", code, "run", str(tmp_path / "missing")], capture_output=True,
                          text=True, env=env, check=False)
    assert done.returncode == 2 and "missing" in done.stderr


def test_the_run_command_loads_rich_only_for_its_summary_when_stdout_is_no_terminal() -> None:
    """rich.console (~11 ms) is imported once the run is over; progress lines need none of it."""
    loaded = _loaded("from sheaf.cli._app import main\nmain.get_command(None, 'run')")
    assert "sheaf.engine._loop" in loaded and "rich.console" not in loaded


def test_plain_progress_lines_are_what_rich_printed() -> None:
    import io

    from rich.console import Console

    from sheaf.cli._run import _PlainProgress
    from sheaf.engine import Progress

    for elapsed, done in ((0.0, 0), (3.25, 17), (12345678.9, 10002)):
        line = f"[{elapsed:7.1f}s] done {done}/10002  failed 1  running 2  retries 3"
        printed = io.StringIO()
        Console(file=printed, soft_wrap=True).print(line, highlight=False)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            _PlainProgress()(Progress(10002, {"done": done, "failed": 1, "submitted": 2}, 3, elapsed, 0.0,
                                      True, 0))
        assert out.getvalue() == printed.getvalue() == line + "\n"


_RICH_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def test_a_plain_run_prints_without_colour_whatever_the_dags_env_set(tmp_path: Path) -> None:
    """The summary's console, made once the run is over, reads the environment ``sheaf run`` started
    with: a DAG's ``ENV SET FORCE_COLOR`` (in force while the run goes) does not colour a pipe."""
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "a.dag").write_text("ENV SET FORCE_COLOR=1;COLUMNS=20\nJOB A a.sub\n")
    env = {k: v for k, v in os.environ.items() if k not in _RICH_VARIABLES}
    code = "import sys\nfrom sheaf.cli import program\nsys.argv = ['sheaf', *sys.argv[1:]]\nprogram()"
    done = subprocess.run([sys.executable, "-c", code, "run", str(tmp_path)], capture_output=True, text=True,
                          check=False, env={**env, "SHEAF_EVENTS": "0", "SHEAF_HOME": str(tmp_path / "h")})
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout and "done 1/1" in done.stdout
    assert "workflow succeeded: 1 of 1 nodes done" in done.stdout
