"""``chipwise serve``: the local web UI (pick a workload, see the answer and its charts).

Binds 127.0.0.1 by default: the UI is for the person at this machine. Binding another
address (0.0.0.0 exposes it to the network) prints a warning; the app has no login.
"""

from __future__ import annotations

import errno
import ipaddress
import socket

import typer

from chipwise.cli.app import app
from chipwise.cli.output import err_console

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
# Open connections uvicorn serves at once; past it, new ones get 503 at once. A local UI
# needs a handful; the advise work has its own smaller bound (report/web/pool.py).
MAX_CONNECTIONS = 128
# Seconds an idle keep-alive connection stays open (uvicorn's default is 5).
KEEP_ALIVE_S = 5


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to a public address


def check_bindable(host: str, port: int) -> None:
    """Fail with one line, before the banner, when ``host:port`` cannot be bound (an address
    that is not this machine's, a name that does not resolve, a port in use)."""
    from chipwise.report.charts import ReportError

    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise ReportError(
            f"cannot serve on {host}: the address does not resolve ({err.strerror or err}); "
            f"use --host {DEFAULT_HOST} or an address of this machine"
        ) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                fix = "choose another --port (or stop what is using it)"
            elif err.errno == errno.EACCES:
                fix = "choose a --port above 1023"
            else:
                fix = f"use --host {DEFAULT_HOST}, 0.0.0.0 or an address of this machine"
            raise ReportError(
                f"cannot serve on {host}:{port}: {err.strerror or err}; {fix}"
            ) from None


@app.command("serve")
def serve(
    host: str = typer.Option(
        DEFAULT_HOST, "--host", help="Address to bind; 0.0.0.0 exposes the UI to the network."
    ),
    port: int = typer.Option(DEFAULT_PORT, "--port", min=1, max=65535, help="TCP port."),
) -> None:
    """Start the web UI on http://HOST:PORT/ (JSON API under /api, docs at /api/docs).

    Runs until Ctrl-C. Nothing is loaded from the internet; the page and its API answer as
    'chipwise advise' does.
    """
    from chipwise.report.charts import WEB_EXTRA_HINT, ReportError

    try:
        import uvicorn
    except ImportError as err:
        raise ReportError(
            f"'chipwise serve' needs uvicorn, which is not installed; {WEB_EXTRA_HINT}"
        ) from err
    from chipwise.report.web import create_app
    from chipwise.report.web.guard import LOOPBACK_HOSTS, host_name

    # A loopback server answers only to this machine's names (DNS-rebinding guard); one
    # bound to a public address answers to any name the user gives it.
    allowed = LOOPBACK_HOSTS | {host_name(host)} if is_loopback(host) else None
    web_app = create_app(allowed_hosts=allowed)
    check_bindable(host, port)
    if not is_loopback(host):
        err_console.print(
            f"[bold yellow]warning:[/] binding {host} makes the UI reachable from other "
            "machines, and it has no login; use the default 127.0.0.1 unless you mean to share it"
        )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    err_console.print(f"chipwise web UI on http://{shown}:{port}/ (Ctrl-C to stop)")
    uvicorn.run(
        web_app,
        host=host,
        port=port,
        log_level="warning",
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE_S,
    )
