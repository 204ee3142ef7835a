"""Real servers on 127.0.0.1 for the transfer tests: HTTP (with faults), OpenSSH's sshd, moto's S3.

``FaultyHTTP`` serves an in-memory tree over GET (with ``Range``), HEAD and PUT, and can be told, per
path, to answer the first N requests with 503, to drop the connection after N bytes of a body, or to
ignore ranges; it logs every request.  ``start_sshd`` runs ``/usr/sbin/sshd`` as the current user with
a private host key and an authorized key in a temporary directory.  ``start_s3`` runs moto in
server mode and writes a Pegasus-style credentials file for it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SSHD = "/usr/sbin/sshd"


@dataclass
class Faults:
    fail_first: dict[str, int] = field(default_factory=dict)   # path -> 503s before serving
    drop_after: dict[str, int] = field(default_factory=dict)   # path -> bytes sent before a drop (once)
    no_ranges: set[str] = field(default_factory=set)
    delay: dict[str, float] = field(default_factory=dict)  # path -> seconds before answering
    busy: int = 0  # GETs being answered now, and the most at once
    most_busy: int = 0
    auth: dict[str, str] = field(default_factory=dict)  # path -> the Authorization header it needs
    trickle: set[str] = field(default_factory=set)  # paths sent a byte every 50 ms
    replace_after_drop: dict[str, bytes] = field(default_factory=dict)  # path -> its content after a drop
    log: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, Range


class FaultyHTTP(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, bytes] = {}
        self.collections: set[str] | None = None  # a set: WebDAV rules (a PUT needs its collection)
        self.faults = Faults()
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: FaultyHTTP
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        del format, args

    def _fault(self) -> bool:
        faults = self.server.faults
        with self.server.lock:
            faults.log.append((self.command, self.path, self.headers.get("Range")))
            left = faults.fail_first.get(self.path, 0)
            if left:
                faults.fail_first[self.path] = left - 1
        if left:
            self.send_error(503, "try later")
        return bool(left)

    def do_GET(self) -> None:
        faults = self.server.faults
        with self.server.lock:
            faults.busy += 1
            faults.most_busy = max(faults.most_busy, faults.busy)
        try:
            time.sleep(faults.delay.get(self.path, 0.0))
        finally:
            # counted while the answer is delayed, not while it is written: a client may send its next
            # request as soon as it has the last byte, before this thread is scheduled again
            with self.server.lock:
                faults.busy -= 1
        self._get()

    def _get(self) -> None:
        if self._fault():
            return
        needed = self.server.faults.auth.get(self.path)
        if needed is not None and self.headers.get("Authorization") != needed:
            self.send_error(401, "who are you")
            return
        data = self.server.files.get(self.path)
        if data is None:
            self.send_error(404, "no such file")
            return
        etag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'
        start = self._range_start(len(data), etag)
        body = data[start:]
        self.send_response(206 if start else 200)
        self.send_header("ETag", etag)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.path in self.server.faults.trickle:
            self._trickle(body)
            return
        drop = self.server.faults.drop_after.pop(self.path, None)
        if drop is not None:
            self.wfile.write(body[:drop])
            self.wfile.flush()
            if self.path in self.server.faults.replace_after_drop:
                self.server.files[self.path] = self.server.faults.replace_after_drop.pop(self.path)
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(body)

    def _trickle(self, body: bytes) -> None:
        try:
            for index in range(len(body)):
                self.wfile.write(body[index:index + 1])
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:  # the client gave up
            self.close_connection = True

    def _range_start(self, size: int, etag: str) -> int:
        spec = self.headers.get("Range")
        if not spec or self.path in self.server.faults.no_ranges or not spec.startswith("bytes="):
            return 0
        if self.headers.get("If-Range") not in (None, etag):
            return 0  # the file changed since the part was read: the whole file
        first = spec[len("bytes="):].split("-", 1)[0]
        return int(first) if first.isdigit() and int(first) < size else 0

    def _reply(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_MKCOL(self) -> None:
        collections = self.server.collections
        if collections is None or self._fault():
            self._reply(405)
            return
        path = self.path.rstrip("/")
        parent = path.rsplit("/", 1)[0]
        status = 405 if path in collections else 409 if parent and parent not in collections else 201
        if status == 201:  # made before the reply: the client's next MKCOL may reach another thread first
            collections.add(path)
        self._reply(status)

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self._fault():
            return
        collections = self.server.collections
        if collections is not None and self.path.rsplit("/", 1)[0] not in collections | {""}:
            self._reply(409)
            return
        self.server.files[self.path] = body
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()


@dataclass
class Sshd:
    process: subprocess.Popen[bytes]
    port: int
    key: str
    known_hosts: str

    def env(self) -> dict[str, str]:
        return {**os.environ, "SSH_PRIVATE_KEY": self.key, "SHEAF_SSH_KNOWN_HOSTS": self.known_hosts}

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_sshd(home: Path) -> Sshd:
    """An sshd on 127.0.0.1 accepting the current user with a key made here (skip when absent)."""
    keygen = shutil.which("ssh-keygen")
    if not os.path.exists(SSHD) or keygen is None:
        raise FileNotFoundError("sshd or ssh-keygen is not installed (Debian: openssh-server)")
    for name in ("host", "user"):
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(home / name)], check=True)
    (home / "authorized_keys").write_text((home / "user.pub").read_text())
    port = _free_port()
    config = home / "sshd_config"
    config.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {home / 'host'}\n"
                      f"AuthorizedKeysFile {home / 'authorized_keys'}\nPidFile {home / 'sshd.pid'}\n"
                      "UsePAM no\nStrictModes no\nPasswordAuthentication no\nPermitRootLogin yes\n"
                      "Subsystem sftp internal-sftp\nLogLevel ERROR\n")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL)
    _wait_for_port(port, process)
    return Sshd(process, port, str(home / "user"), str(home / "known_hosts"))


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"nothing listens on port {port}")


@dataclass
class S3:
    server: Any
    port: int
    config: str

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=f"http://127.0.0.1:{self.port}", aws_access_key_id="ak",
                            aws_secret_access_key="sk", region_name="us-east-1")


def start_s3(home: Path) -> S3:
    """moto's S3 in server mode on 127.0.0.1, and an s3cfg naming it as site ``moto``."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    config = home / "s3cfg"
    config.write_text(f"[moto]\nendpoint = http://127.0.0.1:{port}\nregion = us-east-1\n\n"
                      "[user@moto]\naccess_key = ak\nsecret_key = sk\n")
    config.chmod(0o600)
    return S3(server, port, str(config))


def entry(lfn: str, sources: list[str], dest: str, **extra: Any) -> dict[str, Any]:
    """One transfer of a list, as the planner writes it."""
    return {"type": "transfer", "lfn": lfn, "linkage": extra.pop("linkage", "input"),
            "src_urls": [{"site_label": "local", "url": url} for url in sources],
            "dest_urls": [{"site_label": "condorpool", "url": dest}], **extra}


def tool(name: str) -> str:
    import sys

    return str(Path(sys.executable).parent / name)


def run_transfer(tmp: Path, entries: list[dict[str, Any]], *options: str,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``sheaf-transfer`` on a list of ``entries`` (small back-off: the tests' waits stay short)."""
    import json

    path = tmp / "transfers.json"
    path.write_text(json.dumps(entries))
    return subprocess.run([tool("sheaf-transfer"), "--backoff", "0.01", *options, str(path)],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
