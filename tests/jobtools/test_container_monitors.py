"""A container stopped while podman was creating it leaves its ``conmon`` and ``runc init`` behind;
``remove_leftover_containers`` kills the ``conmon`` processes that name the plan's run root, and
their children, and no other process (``_kill_monitors``, called here on its own: the whole removal
would run ``podman rm --all`` on whatever storage the environment names)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from sheaf._proc import alive
from sheaf.jobtools.container import _kill_monitors

#: a stand-in monitor: a process whose program is called conmon, with a child of its own
MONITOR = ("import subprocess, time; subprocess.Popen(['sleep', '300']); print('up', flush=True); "
           "time.sleep(300)")


def _start(program: Path, *args: str) -> subprocess.Popen[str]:
    if not program.exists():  # the interpreter under another name: its argv[0] says it
        program.symlink_to(os.path.realpath(sys.executable))
    process = subprocess.Popen([str(program), "-c", MONITOR, *args], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "up\n"
    return process


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rfind(b")") + 2:].split()[1]) == pid:
                found.append(int(name))
    return found


def test_the_monitors_naming_the_run_root_are_killed_with_their_children(tmp_path: Path) -> None:
    root, other = tmp_path / "sheaf-podman-run", tmp_path / "sheaf-podman-other"
    root.mkdir()
    ours = _start(tmp_path / "conmon", "-p", f"{root}/vfs-containers/x/userdata/pidfile")
    theirs = _start(tmp_path / "conmon", "-p", f"{other}/vfs-containers/y/userdata/pidfile")
    bystander = _start(tmp_path / "python3", "--runroot", str(root))  # names the root, is no monitor
    started = [pid for process in (ours, theirs, bystander) for pid in _children(process.pid)]
    try:
        (child,) = _children(ours.pid)
        _kill_monitors(str(root))
        assert ours.wait(timeout=10) != 0
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(child)
        assert theirs.poll() is None and bystander.poll() is None
    finally:
        for pid in started:  # a failed kill leaves them, reparented
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        for process in (ours, theirs, bystander):
            process.kill()
            process.wait()
