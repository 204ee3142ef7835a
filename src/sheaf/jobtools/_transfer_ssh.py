"""``scp://`` and ``sftp://`` for ``sheaf-transfer``, through the OpenSSH client (argv, never a shell).

URLs are ``scp://[user@]host[:port]/absolute/path`` (Pegasus's form; ``%xx`` escapes decoded).

- **Reading**: ``scp://`` runs ``scp``, ``sftp://`` runs ``sftp -b -`` with a ``get``, into the runner's
  temporary file.  **Writing** (stage-out) runs ``sftp -b -`` for both schemes: it can make the parent
  directories (``-mkdir``, failures ignored) and put to a temporary name then ``rename`` it (OpenSSH's
  ``posix-rename``), so a reader on the far side never sees half a file; OpenSSH's ``scp`` speaks the
  SFTP protocol underneath anyway.
- **Options**, as Pegasus's scp transfers use them on worker nodes that have no ``known_hosts``:
  ``BatchMode=yes`` (never a password prompt), ``StrictHostKeyChecking=no`` and ``UserKnownHostsFile``
  = ``$SHEAF_SSH_KNOWN_HOSTS`` or ``/dev/null``; the key is ``$SSH_PRIVATE_KEY`` when set (Pegasus's
  ``env`` profile key for it); ``ConnectTimeout`` and ``ServerAlive*`` bound a dead peer.
- **Retries**: ssh's own failure (exit 255: no connection, reset) is retried; the remote side saying
  the file is missing or the key refused is final for that URL.
- A host starting with ``-`` is refused and ``--`` ends the options: a URL never becomes an option.
- Names with SFTP glob characters (``*?[``) are refused: ``sftp``'s ``get`` and ``scp`` expand them.
"""

from __future__ import annotations

__all__ = ["ssh_get", "ssh_put"]

import os
import posixpath
import shutil
import subprocess
from urllib.parse import unquote

from sheaf.jobtools._transfer_schemes import AttemptFailed, scheme_of

_SSH_FAILED = 255


def _target(url: str) -> tuple[str, str | None, str]:
    """``(user@host or host, port, path)`` of an ``scp://``/``sftp://`` URL."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    authority, slash, path = rest.partition("/")
    host, _, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "")
    if not host or not slash or not path or (port and not port.isdigit()):
        raise AttemptFailed("not an ssh URL of the form scp://[user@]host[:port]/path", retry=False)
    if host.startswith("-") or any(c.isspace() for c in host):
        raise AttemptFailed("the host starts with '-' or holds white space (ssh would read an option)",
                            retry=False)
    real = unquote("/" + path)
    if any(c in real for c in "*?[") or "\n" in real:
        raise AttemptFailed("the path holds a glob character or a newline, which sftp would expand",
                            retry=False)
    return host, port or None, real


def _options(timeout: float) -> list[str]:
    known = os.environ.get("SHEAF_SSH_KNOWN_HOSTS", "/dev/null")
    alive = max(1, round(timeout / 3))
    opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", f"UserKnownHostsFile={known}",
            "-o", "LogLevel=ERROR", "-o", f"ConnectTimeout={max(1, round(timeout))}",
            "-o", f"ServerAliveInterval={alive}", "-o", "ServerAliveCountMax=3"]
    key = os.environ.get("SSH_PRIVATE_KEY")
    return [*opts, "-i", key] if key else opts


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise AttemptFailed(f"{name} is not installed (the OpenSSH client: openssh-client)", retry=False)
    return path


def _run(argv: list[str], batch: str | None = None) -> None:
    done = subprocess.run(argv, input=batch, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return
    # The first lines say why (``connect to host ... Connection refused``); the last is often only
    # ``Connection closed``.
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    cause = "; ".join(lines[:3]) if lines else f"exit {done.returncode}"
    final = "No such file" in done.stderr or "Permission denied" in done.stderr
    raise AttemptFailed(f"{posixpath.basename(argv[0])}: {cause}",
                        retry=done.returncode == _SSH_FAILED and not final)


def _quoted(path: str) -> str:
    """A path as one argument of an sftp batch command (double quotes, ``\\`` and ``"`` escaped)."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ssh_get(url: str, target: str, timeout: float) -> None:
    host, port, path = _target(url)
    if scheme_of(url) == "scp":
        argv = [_tool("scp"), "-B", *(["-P", port] if port else []), *_options(timeout), "--",
                f"{host}:{path}", target]
        _run(argv)
        return
    _run([_tool("sftp"), "-b", "-", *(["-P", port] if port else []), *_options(timeout), "--", host],
         f"get {_quoted(path)} {_quoted(target)}\n")


def ssh_put(source: str, url: str, timeout: float) -> None:
    host, port, path = _target(url)
    parent, name = posixpath.split(path)
    part = posixpath.join(parent, f".{name}.sheaf-part-{os.getpid()}")
    ancestors = []
    while parent not in ("/", ""):
        ancestors.append(parent)
        parent = posixpath.dirname(parent)
    batch = [f"-mkdir {_quoted(d)}" for d in reversed(ancestors)]
    batch += [f"put {_quoted(source)} {_quoted(part)}", f"rename {_quoted(part)} {_quoted(path)}"]
    _run([_tool("sftp"), "-b", "-", *(["-P", port] if port else []), *_options(timeout), "--", host],
         "\n".join(batch) + "\n")
