"""HTTP(S) and WebDAV for ``sheaf-transfer``: GET with resume, PUT.

- ``webdav://``/``webdavs://`` are ``http://``/``https://`` with another name: a WebDAV read is a GET and
  a write a PUT, so both go through this module.
- **Resume.**  A GET writes into the runner's temporary file.  When an earlier attempt left part of the
  file there, the next asks for the rest (``Range: bytes=N-``); a ``206`` whose ``Content-Range`` starts
  at N is appended, anything else (a ``200``: the server ignores ranges) rewrites the file from the start.
  A ``416`` on a resume means the part kept is unusable: it is dropped and the attempt retried.  The
  resume carries ``If-Range`` with the first response's strong ``ETag`` (else its ``Last-Modified``):
  a file that changed on the server in between comes back whole (``200``), never spliced.
- **Completeness.**  A body shorter than its ``Content-Length`` (the connection dropped midway) is a
  failed attempt worth retrying, and the bytes received are kept for the resume.
- **Which failures are retried**: connection errors, timeouts, a short body, ``408``, ``429`` and
  every ``5xx``; any other status (``404``, ``403``) is final for that URL.
- ``user:password@`` in a URL is sent as Basic authentication, never to a host a redirect leads to,
  and never shown: messages print the URL with the password replaced (``shown_url``).
- **Writing** is one PUT; a WebDAV destination whose collections are missing gets them made (``MKCOL``).
- ``timeout`` bounds each connect and each read, not the whole transfer (a 200 MB file over a slow
  link is not a hang; a server that stops sending is); and a body arriving slower than ``LOW_SPEED``
  over a window of ``timeout`` seconds is a failed attempt (a server trickling bytes is a hang too).
"""

from __future__ import annotations

__all__ = ["http_get", "http_put"]

import base64
import http.client
import os
import time
import urllib.error
import urllib.request
from typing import BinaryIO
from urllib.parse import unquote, urlsplit, urlunsplit

from sheaf.jobtools._transfer_schemes import AttemptFailed, scheme_of

CHUNK = 1 << 20
LOW_SPEED = 1024  # bytes/s, averaged over a window of the timeout (curl's --speed-limit/--speed-time)
# part file -> the validator of the body it holds part of.  Part names are unique within the process
# (the runner's counter), so threads never share a key.
_VALIDATORS: dict[str, str] = {}
_RETRIED_STATUS = frozenset({408, 429})


def http_url(url: str) -> str:
    """``url`` with ``webdav``/``webdavs`` spelled as the HTTP scheme it is."""
    scheme = scheme_of(url)
    if scheme in ("webdav", "webdavs"):
        return ("https" if scheme == "webdavs" else "http") + url[len(scheme):]
    return url


def http_get(url: str, target: str, timeout: float) -> None:
    """``url``'s body into ``target``, resuming a part an earlier attempt left there."""
    have = os.path.getsize(target) if os.path.exists(target) else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    if have and target in _VALIDATORS:
        headers["If-Range"] = _VALIDATORS[target]
    try:
        request = _request(url, headers)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = have > 0 and response.status == 206 and _starts_at(response, have)
            if not resumed:
                _remember(target, response)
            _receive(response, target, append=resumed, window=timeout)
        _VALIDATORS.pop(target, None)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:
            os.unlink(target)
            raise AttemptFailed(f"HTTP 416 resuming at byte {have}: starting again", retry=True) from None
        retry = exc.code >= 500 or exc.code in _RETRIED_STATUS
        raise AttemptFailed(f"HTTP {exc.code} {exc.reason}", retry=retry) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        raise _connection_failure(exc, timeout) from None
    except ValueError as exc:  # urllib's own parse of the URL (``http://[::1/x``)
        raise AttemptFailed(f"bad URL: {exc}", retry=False) from None


def _request(url: str, headers: dict[str, str], method: str | None = None,
             data: BinaryIO | None = None) -> urllib.request.Request:
    """A request for ``url``; a ``user:password@`` in it becomes Basic authentication.

    The credentials go in an unredirected header: a redirect to another host does not carry them.
    """
    parts = urlsplit(http_url(url))
    userinfo, at, hostport = parts.netloc.rpartition("@")
    request = urllib.request.Request(urlunsplit(parts._replace(netloc=hostport)), headers=headers,
                                     method=method, data=data)
    if at:
        user, _, password = userinfo.partition(":")
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
        request.add_unredirected_header("Authorization", f"Basic {token}")
    return request


def _remember(target: str, response: http.client.HTTPResponse) -> None:
    """Keep what identifies the body being written to ``target`` (a strong ETag, else Last-Modified)."""
    etag = response.headers.get("ETag")
    validator = etag if etag and not etag.startswith("W/") else response.headers.get("Last-Modified")
    if validator:
        _VALIDATORS[target] = validator
    else:
        _VALIDATORS.pop(target, None)


def _starts_at(response: http.client.HTTPResponse, offset: int) -> bool:
    return (response.headers.get("Content-Range") or "").startswith(f"bytes {offset}-")


def _receive(response: http.client.HTTPResponse, target: str, *, append: bool, window: float) -> None:
    length = response.headers.get("Content-Length")
    expected = int(length) if length and length.isdigit() else None
    got = 0
    speed = _Speed(window)
    with open(target, "ab" if append else "wb") as out:
        while chunk := response.read1(CHUNK):  # what has arrived: the speed check sees a trickle
            out.write(chunk)
            got += len(chunk)
            speed.check(len(chunk), got)
    if expected is not None and got < expected:
        raise AttemptFailed(f"the connection closed after {got} of {expected} bytes", retry=True)


class _Speed:
    """curl's ``--speed-limit``/``--speed-time``: below ``LOW_SPEED`` bytes/s over a whole window fails."""

    def __init__(self, window: float) -> None:
        self.window = window
        self.start = time.monotonic()
        self.bytes = 0

    def check(self, received: int, got: int) -> None:
        self.bytes += received
        now = time.monotonic()
        if now - self.start < self.window:
            return
        if self.bytes < LOW_SPEED * (now - self.start):
            raise AttemptFailed(f"slower than {LOW_SPEED} bytes/s for {self.window:g} s (after {got} bytes)",
                                retry=True)
        self.start, self.bytes = now, 0


def _connection_failure(exc: BaseException, timeout: float) -> AttemptFailed:
    reason = getattr(exc, "reason", None) or exc
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return AttemptFailed(f"no answer within {timeout:g} s", retry=True)
    if isinstance(exc, urllib.error.URLError) and isinstance(reason, str):
        return AttemptFailed(f"bad URL: {reason}", retry=False)
    return AttemptFailed(f"{type(reason).__name__}: {reason}", retry=True)


def http_put(source: str, url: str, timeout: float) -> None:
    """The local file ``source`` to ``url`` with one PUT (the server's 2xx says it is stored).

    A WebDAV server answers ``409 Conflict`` when the parent collection does not exist: the
    collections are then made (``MKCOL``, from the top; an existing one answers 405) and the PUT
    sent once more.
    """
    try:
        _put(source, url, timeout)
    except AttemptFailed as exc:
        if not exc.cause.startswith("HTTP 409") or scheme_of(url) not in ("webdav", "webdavs"):
            raise
        _make_collections(url, timeout)
        _put(source, url, timeout)


def _make_collections(url: str, timeout: float) -> None:
    scheme, _, rest = url.partition("://")  # the collections keep the URL's scheme and user
    host, _, path = rest.partition("/")
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        collection = f"{scheme}://{host}/" + "/".join(parts[:depth]) + "/"
        request = _request(collection, {}, method="MKCOL")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            if exc.code != 405:  # 405: it exists already
                raise AttemptFailed(f"HTTP {exc.code} {exc.reason} to MKCOL {collection}",
                                    retry=False) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            raise _connection_failure(exc, timeout) from None


def _put(source: str, url: str, timeout: float) -> None:
    size = os.path.getsize(source)
    try:
        with open(source, "rb") as body:
            request = _request(url, {"Content-Length": str(size), "Content-Type": "application/octet-stream"},
                               method="PUT", data=body)
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read()
    except urllib.error.HTTPError as exc:
        retry = exc.code >= 500 or exc.code in _RETRIED_STATUS
        raise AttemptFailed(f"HTTP {exc.code} {exc.reason} to PUT", retry=retry) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        raise _connection_failure(exc, timeout) from None
    except ValueError as exc:  # urllib's own parse of the URL (``http://[::1/x``)
        raise AttemptFailed(f"bad URL: {exc}", retry=False) from None
