"""``sheaf dashboard [--port N]``: serve the local dashboard (127.0.0.1) of the runs on this machine.

Thin: :func:`sheaf.monitor.make_server` builds the server; this prints its URL and serves until
Ctrl-C.  A port already in use is one message and exit 2.
"""

from __future__ import annotations

import click

from sheaf.errors import UsageError
from sheaf.monitor import make_server

__all__ = ["command"]


@click.command(name="dashboard")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="The port on 127.0.0.1 (0: any free port).")
def command(port: int) -> None:
    """Serve a web page listing this machine's runs, their state and plots."""
    try:
        server = make_server(port)
    except OSError as exc:
        raise UsageError(f"cannot serve the dashboard on 127.0.0.1:{port}: {exc.strerror}") from None
    click.echo(f"sheaf dashboard: http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C stops it)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
