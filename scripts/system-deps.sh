#!/usr/bin/env bash
# Installs the native packages that parts of the test-suite need, from Debian's archive.
# Idempotent: does nothing when everything is already present.
set -euo pipefail
need=()
command -v mpiexec >/dev/null 2>&1 || need+=(openmpi-bin libopenmpi-dev)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "system-deps: missing ${need[*]} and not root; MPI tests will be skipped" >&2
    exit 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# mpi4py must be built against the MPI just installed.
if command -v mpicc >/dev/null 2>&1 && [ -x .venv/bin/python ]; then
  .venv/bin/python -c 'import mpi4py' 2>/dev/null || .venv/bin/python -m pip install -q 'mpi4py>=3.1'
fi
