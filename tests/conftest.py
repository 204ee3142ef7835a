"""Session-wide test settings: every run a test starts registers in a throwaway master database
(``SHEAF_HOME``), never in the user's ``~/.sheaf``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


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
