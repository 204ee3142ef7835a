#!/usr/bin/env bash
# Installs the native packages that parts of the test-suite need, from Debian's archive:
# OpenMPI (mpiexec for sheaf-mpi-cluster's MPI transport) and mpi4py in the project's venv; Chromium
# (headless, for the dashboard's tests); podman
# and runc (the runtime docker-type containers run through) and busybox-static (the root file system of the
# image the container tests build locally, since no registry is reachable); openssh-server (the sshd
# the scp/sftp transfer tests run on 127.0.0.1).
# Idempotent: does nothing when everything is already present. Without root, missing pieces are
# reported and the MPI and container tests skip themselves (the local transport is always tested).
set -euo pipefail
cd "$(dirname "$0")/.."

# `system-deps.sh build PYTHON`: what compiles the ClassAd parser's C accelerator (setup.py) for
# PYTHON -- a C compiler and that Python's headers.  Run before the venv is made; without them (and
# without root) the build warns and sheaf uses its pure-Python parser.
if [ "${1:-}" = "build" ]; then
  python="${2:-python3}"
  include="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  build=()
  command -v gcc >/dev/null 2>&1 || build+=(gcc libc6-dev)
  [ -f "$include/Python.h" ] || build+=(python3-dev)
  if [ "${#build[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      echo "system-deps: missing ${build[*]}; the ClassAd parser will run in pure Python" >&2
      exit 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${build[@]}" >/dev/null \
      || echo "system-deps: could not install ${build[*]}; the ClassAd parser will run in pure Python" >&2
  fi
  exit 0
fi

need=()
command -v mpiexec >/dev/null 2>&1 || need+=(openmpi-bin)
command -v mpicc >/dev/null 2>&1 || need+=(libopenmpi-dev)   # mpi4py builds against it if no wheel fits
command -v podman >/dev/null 2>&1 || need+=(podman)
# podman's default crun refuses the hybrid cgroup hierarchy many VMs have; sheaf's podman configuration
# picks runc when it is installed
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -x /bin/busybox ] || need+=(busybox-static)
# headless Chromium reads the dashboard's page in the monitor tests (--dump-dom, --screenshot)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# sshd: the scp:// and sftp:// transfer tests start one on 127.0.0.1 (the client comes with it)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "system-deps: missing ${need[*]} and not root; MPI/container/ssh/dashboard tests will be skipped" >&2
    exit 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# mpi4py must match the MPI just installed; it is not a pyproject dependency for that reason.
if [ -x .venv/bin/python ] && ! .venv/bin/python -c 'import mpi4py' 2>/dev/null; then
  if ! .venv/bin/python -m pip install -q 'mpi4py>=3.1'; then
    echo "system-deps: could not install mpi4py; MPI tests will be skipped" >&2
  fi
fi
