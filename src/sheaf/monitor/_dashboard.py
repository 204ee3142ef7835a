"""``sheaf dashboard``: a local web page (127.0.0.1 only) of the runs on this machine, refreshed while
they go.

``/`` lists the runs of the per-user master database, each with its state and counts, read from its
own events database (caught up on every request, like every view); the page reloads itself every
few seconds.  ``/run?dir=DIR`` shows one run: its counts and its plots (the offline HTML of ``sheaf
plots``, inline SVG).  The server is the standard library's (``http.server``), bound to the
loopback interface; nothing is fetched from a network and no page runs a script from one.  A run
whose directory went away is listed as ``missing``.
"""

from __future__ import annotations

__all__ = ["make_server", "render_index", "render_run"]

import html
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlparse

from sheaf.errors import InputError, UsageError
from sheaf.monitor._master import list_runs
from sheaf.monitor._plots import plot_data, render_html
from sheaf.monitor._status import WorkflowStatus, workflow_status

REFRESH = 2  # seconds between reloads of a page
_COUNTS = ("done", "failed", "running", "waiting", "total")
_STYLE = ("body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 8px}.failed{color:#c00}.succeeded{color:#080}")


def _counts(status: WorkflowStatus) -> dict[str, int]:
    running = sum(status.counts.get(k, 0) for k in ("submitted", "pre", "post"))
    return {"done": status.counts.get("done", 0), "failed": status.counts.get("failed", 0),
            "running": running, "waiting": status.counts.get("waiting", 0), "total": status.total}


def _status(directory: str, dag: str) -> WorkflowStatus | None:
    try:
        return workflow_status(directory, dag)
    except (UsageError, InputError, OSError):
        return None


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="{REFRESH}"><title>{html.escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body>{body}</body></html>\n")


def render_index() -> str:
    rows = []
    for run in list_runs():
        status = _status(run.submit_dir, run.dag_file)
        state = status.state if status is not None else "missing"
        counts = _counts(status) if status is not None else dict.fromkeys(_COUNTS, 0)
        link = f"/run?dir={quote(run.submit_dir)}&dag={quote(run.dag_file)}"
        cells = "".join(f'<td class="{k}">{counts[k]}</td>' for k in _COUNTS)
        rows.append(f'<tr class="run" data-dir="{html.escape(run.submit_dir)}"><td><a href="{link}">'
                    f'{html.escape(run.label or "-")}</a></td><td class="state {state}">{state}</td>{cells}'
                    f"<td>{html.escape(run.submit_dir)}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("workflow", "state", *_COUNTS, "submit directory"))
    return _page("sheaf dashboard", f"<h1>sheaf dashboard</h1><p id=\"runs\">{len(rows)} run(s)</p>"
                                    f"<table><tr>{head}</tr>{''.join(rows)}</table>")


def render_run(directory: str, dag: str | None) -> str:
    status = _status(directory, dag or "")
    if status is None:
        return _page("sheaf dashboard", f"<p>no run in {html.escape(directory)}</p>")
    counts = "".join(f'<li class="{k}">{k}: {v}</li>' for k, v in _counts(status).items())
    plots = render_html(plot_data(directory, dag))
    inner = plots[plots.index("<body>") + 6:plots.rindex("</body>")]
    body = (f'<p><a href="/">all runs</a></p><h1>{html.escape(status.dag)}: '
            f'<span class="state {status.state}">{status.state}</span></h1><ul>{counts}</ul>{inner}')
    return _page(f"sheaf: {os.path.basename(directory)}", body)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/":
            self._send(200, render_index())
        elif url.path == "/run":
            query = parse_qs(url.query)
            self._send(200, render_run(query.get("dir", [""])[0], query.get("dag", [None])[0]))
        else:
            self._send(404, _page("not found", "<p>not found</p>"))

    def _send(self, code: int, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the terminal shows the URL, not every request


def make_server(port: int = 8000) -> ThreadingHTTPServer:
    """The dashboard's server on 127.0.0.1 (``port`` 0: any free port); call ``serve_forever``."""
    return ThreadingHTTPServer(("127.0.0.1", port), _Handler)
