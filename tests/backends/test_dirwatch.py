"""``DirectoryWatch``: a rename into the watched directory ends the wait at once; the timeout still
bounds it; what happens elsewhere does not wake it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from sheaf.backends.slurm._dirwatch import DirectoryWatch


def _rename_into(directory: Path, name: str, after: float) -> threading.Thread:
    def later() -> None:
        time.sleep(after)
        tmp = directory / f"{name}.tmp"
        tmp.write_text("x")
        os.replace(tmp, directory / name)

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def test_a_rename_into_the_directory_ends_the_wait(tmp_path: Path) -> None:
    watch = DirectoryWatch(str(tmp_path))
    assert watch.fd is not None  # Linux: inotify
    thread = _rename_into(tmp_path, "a.exit", 0.2)
    start = time.monotonic()
    watch.wait(60.0)
    assert time.monotonic() - start < 30.0  # woken by the rename, not the 60 s timeout
    thread.join()
    watch.close()


def test_the_timeout_bounds_the_wait_and_other_directories_do_not_wake_it(tmp_path: Path) -> None:
    inbox, elsewhere = tmp_path / "inbox", tmp_path / "elsewhere"
    inbox.mkdir()
    elsewhere.mkdir()
    watch = DirectoryWatch(str(inbox))
    thread = _rename_into(elsewhere, "b.exit", 0.0)
    thread.join()
    start = time.monotonic()
    watch.wait(0.3)
    assert time.monotonic() - start >= 0.25
    watch.close()
    watch.close()  # closing twice is harmless
