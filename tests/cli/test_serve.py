"""``chipwise serve``: binds 127.0.0.1:8765 by default, warns when exposed, clear error
without the [web] extra. uvicorn.run is replaced, so no server starts."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.cli.serve import check_bindable, is_loopback
from chipwise.report.charts import ReportError

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake_run(web_app: Any, **kwargs: Any) -> None:
        calls.append({"app": web_app, **kwargs})

    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.setattr("chipwise.cli.serve.check_bindable", lambda host, port: None)
    return calls


def test_serve_binds_localhost_by_default(runs: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    (call,) = runs
    assert call["host"] == "127.0.0.1" and call["port"] == 8765
    assert "warning" not in result.output
    assert "http://127.0.0.1:8765/" in result.output
    routes = {r.path for r in call["app"].routes}
    assert {"/", "/api/advise", "/api/chips", "/api/workloads"} <= routes


def test_serve_warns_when_bound_to_every_interface(runs: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "9000"])
    assert result.exit_code == 0, result.output
    assert runs[0]["host"] == "0.0.0.0" and runs[0]["port"] == 9000
    assert "warning" in result.output and "no login" in result.output


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("example.org", False)],
)  # fmt: skip
def test_only_loopback_addresses_count_as_local(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_bad_port_is_a_usage_error(runs: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(app, ["serve", "--port", "70000"])
    assert result.exit_code == 2 and not runs


def test_without_uvicorn_serve_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "pip install 'chipwise[web]'" in result.output


# ---- binding is checked before the banner ----------------------------------------------------


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


def test_a_port_in_use_is_one_line_before_any_banner(
    monkeypatch: pytest.MonkeyPatch, busy_port: int
) -> None:
    started: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(a))
    result = CliRunner().invoke(app, ["serve", "--port", str(busy_port)])
    assert result.exit_code == 2 and not started
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "another --port" in lines[0]
    assert "web UI on" not in result.output


@pytest.mark.parametrize("host", ["999.1.1.1", "no-such-host.invalid"])
def test_an_address_that_cannot_be_bound_says_which_host_to_use(host: str) -> None:
    with pytest.raises(ReportError, match=r"--host 127\.0\.0\.1"):
        check_bindable(host, 8765)


def test_a_free_port_passes_the_check() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    check_bindable("127.0.0.1", port)
