"""Session-wide test settings and the test tiers.

Every run a test starts registers in a throwaway master database (``SHEAF_HOME``), never in the
user's ``~/.sheaf``.

Tiers (``make test`` runs them all, in one command): the suite runs on every CPU with pytest-xdist,
except the tests marked ``serial``, which time a process against the clock (a stop while the DAG is
read, a disk that fills while jobs run) and so run alone afterwards.  Tests that start a daemon
(Slurm's, Dask's, sshd, an HTTP or S3 server, headless Chromium) are marked ``daemon``; those that need
root (a Slurm daemon, a tmpfs mount, podman) ``root`` -- they skip with the reason where what they
need cannot be had, and ``-m 'not daemon'`` leaves them out of a quick local pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tiers import LONGEST, TIERS

_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank: dict[str, int] = {}
    for item in items:
        try:
            module = item.path.resolve().relative_to(_TESTS).as_posix()
        except ValueError:
            module = ""
        rank[item.nodeid] = LONGEST.index(module) if module in LONGEST else len(LONGEST)
        for tier in TIERS.get(module, ()):
            item.add_marker(tier)
    items.sort(key=lambda item: rank[item.nodeid])  # stable: each module's tests keep their order


@pytest.fixture(autouse=True, scope="session")
def _sheaf_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("sheaf-home")
    old = os.environ.get("SHEAF_HOME")
    os.environ["SHEAF_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("SHEAF_HOME", None)
    else:
        os.environ["SHEAF_HOME"] = old
