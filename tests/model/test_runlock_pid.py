"""``sheaf._proc.alive``: a process that ended but is not reaped yet (a zombie) is dead for lock staleness."""

from __future__ import annotations

import os
import subprocess
import time

from sheaf._proc import alive as pid_alive


def test_a_zombie_is_not_alive_and_a_running_process_is() -> None:
    sleeper = subprocess.Popen(["/bin/sleep", "30"])
    ended = subprocess.Popen(["/bin/true"])
    try:
        assert pid_alive(sleeper.pid)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # ended, never waited for: a zombie until reaped
            with open(f"/proc/{ended.pid}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            time.sleep(0.01)
        assert os.path.exists(f"/proc/{ended.pid}") and not pid_alive(ended.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
        ended.wait()
    assert not pid_alive(ended.pid)
