"""Where a plan keeps podman's state, named apart from the planning code that writes it.

``sheaf run`` removes podman's run-time directory when the engine stops (``sheaf.app.run``); it needs
these names without importing the planner (``tests/cli/test_run_startup.py``).
"""

from __future__ import annotations

import os

__all__ = ["CONF_DIR", "RUN_ROOT_LOCK", "podman_env", "run_root"]

#: the plan's directory of podman configuration and storage (relative to the submit directory)
CONF_DIR = "containers"
#: the lock each containerized task holds while podman runs; the last one out removes the run root
RUN_ROOT_LOCK = "run-root.lock"


def run_root(state_dir: str) -> str:
    """podman's run-time directory for the state kept in ``state_dir``: short, because podman puts
    sockets in it (``sheaf.codegen._containers``' docstring)."""
    import hashlib  # here: loading OpenSSL is for plans with containers only

    digest = hashlib.sha256(os.path.abspath(state_dir).encode()).hexdigest()[:16]
    return f"/tmp/sheaf-podman-{digest}"


def podman_env(state_dir: str) -> dict[str, str]:
    """The environment that points podman at the plan's configuration and storage in ``state_dir``
    (written by ``sheaf.codegen._containers.podman_config``)."""
    return {"CONTAINERS_CONF": os.path.join(state_dir, "containers.conf"),
            "CONTAINERS_STORAGE_CONF": os.path.join(state_dir, "storage.conf")}
