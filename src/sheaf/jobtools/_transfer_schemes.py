"""URL schemes ``sheaf-transfer`` knows, and what one attempt of a transfer can fail with.

Supported: ``file`` (a local path: ``file:///abs``, ``file://localhost/abs``, and inside a job
directory the relative ``file:name``), ``symlink`` (a destination only: Pegasus's way to ask for a
link), ``http``/``https``, ``webdav``/``webdavs`` (read and written through the HTTP path: WebDAV is
HTTP GET and PUT), ``scp``/``sftp`` (the OpenSSH client), ``s3``/``s3s`` (boto3, Pegasus's
``s3://user@site/bucket/key`` form).  Known but not supported: the schemes Pegasus moves with tools
sheaf does not drive; each has a message saying how to make the file reachable another way.  Any other
scheme is bad input.

``AttemptFailed`` is one attempt's failure: ``cause`` is the text a user reads, ``retry`` whether the
same URL is worth trying again (a timeout or a 503 is; a 404, a missing file or an unsupported scheme is
not -- the runner falls through to the next replica at once).
"""

from __future__ import annotations

__all__ = ["AttemptFailed", "check_known", "local_path", "scheme_of", "shown_url"]

import os
from urllib.parse import unquote

SUPPORTED = frozenset({"file", "symlink", "http", "https", "webdav", "webdavs", "scp", "sftp",
                       "s3", "s3s"})
_INSTEAD = ("stage the file to an http(s)://, webdav://, scp://, s3:// or file:// location and list that "
            "replica")
UNSUPPORTED = {
    "gs": "Google Cloud Storage needs gsutil, which sheaf does not drive; use its S3-compatible XML API "
          "through s3:// (an endpoint of storage.googleapis.com in the s3cfg file), or " + _INSTEAD,
    "gsiftp": "GridFTP needs globus-url-copy, which sheaf does not drive; " + _INSTEAD,
    "root": "XRootD needs xrdcp, which sheaf does not drive; most XRootD servers also speak "
            "https:// (list that URL), or " + _INSTEAD,
    "irods": "iRODS needs the icommands, which sheaf does not drive; " + _INSTEAD,
    "stash": "OSG's StashCache needs stashcp, which sheaf does not drive; its origins serve "
             "https:// (list that URL), or " + _INSTEAD,
    "go": "Globus transfers need the Globus CLI and a token, which sheaf does not drive; " + _INSTEAD,
}


class AttemptFailed(Exception):
    """One attempt failed: ``cause`` for the message, ``retry`` whether trying the URL again may help."""

    def __init__(self, cause: str, *, retry: bool) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retry = retry


def shown_url(url: str) -> str:
    """``url`` as messages and records show it: a password in it replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}{slash}{path}"


def scheme_of(url: str) -> str:
    head, sep, _ = url.partition(":")
    return head.lower() if sep else ""


def check_known(url: str) -> str | None:
    """Why ``url`` cannot appear in a transfer list at all (``None``: it may)."""
    scheme = scheme_of(url)
    if scheme in SUPPORTED or scheme in UNSUPPORTED:
        return None
    if not scheme:
        return "has no scheme"
    return f"has the unknown scheme {scheme}://"


def unsupported(url: str) -> AttemptFailed | None:
    """The failure for a scheme sheaf knows of but cannot move, naming it and what to do instead."""
    scheme = scheme_of(url)
    if scheme not in UNSUPPORTED:
        return None
    cause = f"{scheme}:// is not supported by sheaf-transfer: {UNSUPPORTED[scheme]}"
    return AttemptFailed(cause, retry=False)


def local_path(url: str, base: str | None = None) -> str | None:
    """The path a ``file:``/``symlink:`` URL names, or ``None`` when it names no local path.

    A relative ``file:name`` is resolved against ``base`` (a job directory); without one it is no
    local path.  ``%xx`` escapes are decoded; a host other than ``localhost`` is not local.
    """
    if scheme_of(url) not in ("file", "symlink"):
        return None
    rest = url.split(":", 1)[1]
    if not rest.startswith("/"):
        return os.path.join(base, unquote(rest)) if base and rest else None
    if not rest.startswith("//"):
        return unquote(rest)
    host, slash, path = rest[2:].partition("/")
    if host not in ("", "localhost") or not slash:
        return None
    return unquote("/" + path)
