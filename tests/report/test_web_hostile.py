"""The web API under hostile input (issue 14): bounded bodies (chunked too), no echo of the
body, NaN and Infinity refused, the Host allowlist, a bounded advise pool, and never a 500
for any input."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.report.factories import fixed_confidence

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("plotly")

from fastapi.testclient import TestClient

from chipwise.report.web import create_app
from chipwise.report.web.guard import host_name
from chipwise.report.web.models import BODY_LIMIT_BYTES
from chipwise.report.web.pool import AdvisePool, PoolFull, TimeLimitExceeded

SMALL = {"chips": ["h100-sxm"], "max_chips": 8}
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with fixed_confidence(), TestClient(create_app()) as c:
        yield c


def _error_of(response: Any) -> str:
    body = response.json()
    assert set(body) <= {"error", "detail"}, body
    assert "\n" not in body["error"]
    return str(body["error"])


# ---- finite numbers, no echo ------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"budget_usd": NaN}',
        b'{"deadline_days": Infinity}',
        b'{"tokens": -Infinity}',
        b'{"requests_per_day": NaN, "phase": "infer"}',
        b'{"config": {"hidden_size": NaN}}',
    ],
)
def test_nan_and_infinity_are_422_with_a_short_message(client: TestClient, raw: bytes) -> None:
    response = client.post("/api/advise", content=raw, headers=JSON)
    assert response.status_code == 422, response.text
    assert "finite" in _error_of(response)


def test_a_422_never_echoes_the_body(client: TestClient) -> None:
    secret = "s3cr3t" * 20_000
    for body in ({"workload": secret}, {secret: 1}, {"chips": [secret]}, {"tokens": secret}):
        response = client.post("/api/advise", json=body)
        assert response.status_code == 422, response.text[:200]
        assert secret[:100] not in response.text and len(response.text) < 2000


def test_deep_json_is_refused_not_a_500(client: TestClient) -> None:
    deep = b'{"config": ' + b'{"a": ' * 100 + b"1" + b"}" * 100 + b"}"
    response = client.post("/api/advise", content=deep, headers=JSON)
    assert response.status_code == 422 and "nests more than" in _error_of(response)
    deeper = b"[" * 200_000 + b"]" * 200_000
    response = client.post("/api/advise", content=deeper, headers=JSON)
    assert response.status_code in (400, 413, 422), response.text[:200]


@pytest.mark.parametrize(
    "body",
    [
        {"tokens": 1e300},
        {"tokens": "1e30"},
        {"budget_usd": 1e300},
        {"max_chips": 10**12},
        {"global_batch": 10**20},
        {"config": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 1e12}},
        {"config": {"hidden_size": "x" * 100}},
        {"config": []},
        {"workload": "matmul:99999999999x99999999999x99999999999"},
    ],
)
def test_absurd_values_are_a_4xx_with_one_line(client: TestClient, body: dict[str, Any]) -> None:
    response = client.post("/api/advise", json={**SMALL, **body})
    assert response.status_code in (400, 422), response.text[:300]
    _error_of(response)


# ---- bodies and uploads -------------------------------------------------------------------------


def test_a_chunked_body_over_the_limit_is_413_without_echo(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"workload": "'
        for _ in range(20):  # 20 MiB, no Content-Length
            yield b"A" * (1024 * 1024)
        yield b'"}'

    response = client.post("/api/advise", content=chunks(), headers=JSON)
    assert response.status_code == 413
    assert "limit" in _error_of(response) and "AAAA" not in response.text


def test_a_declared_length_over_the_limit_is_413(client: TestClient) -> None:
    body = b"{" + b" " * (BODY_LIMIT_BYTES + 1) + b"}"
    response = client.post("/api/advise", content=body, headers=JSON)
    assert response.status_code == 413


def test_a_chunked_upload_over_the_limit_is_413(client: TestClient) -> None:
    boundary = "xyz"

    def chunks() -> Iterator[bytes]:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.json"'
            "\r\nContent-Type: application/json\r\n\r\n"
        ).encode()
        for _ in range(4):
            yield b" " * (256 * 1024)
        yield f"\r\n--{boundary}--\r\n".encode()

    response = client.post(
        "/api/workloads/upload",
        content=chunks(),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status_code == 413 and "256 KiB" in _error_of(response)


@pytest.mark.parametrize(
    ("content", "status"),
    [
        (b"[" * 50_000 + b"]" * 50_000, 400),
        (b'{"hidden_size": NaN}', 400),
        (b'{"num_hidden_layers": 1e12, "hidden_size": 64}', 400),
        (bytes(range(256)), 400),
        ('{"name": "café"}'.encode("latin-1"), 400),
    ],
)
def test_hostile_uploads_are_400(client: TestClient, content: bytes, status: int) -> None:
    response = client.post(
        "/api/workloads/upload", files={"file": ("config.json", content, "application/json")}
    )
    assert response.status_code == status, response.text[:300]
    _error_of(response)


# ---- the Host allowlist -----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "attacker.test:8765", "127.0.0.1.evil.test"])
def test_a_foreign_host_header_is_421(client: TestClient, host: str) -> None:
    response = client.get("/api/chips", headers={"host": host})
    assert response.status_code == 421 and "DNS rebinding" in _error_of(response)


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST"])
def test_this_machines_names_are_served(client: TestClient, host: str) -> None:
    assert client.get("/api/chips", headers={"host": host}).status_code == 200


def test_a_public_binding_accepts_any_host() -> None:
    with TestClient(create_app(allowed_hosts=None)) as open_client:
        assert open_client.get("/api/chips", headers={"host": "box.lan"}).status_code == 200


def test_host_names_are_parsed() -> None:
    assert host_name("[::1]:8765") == "::1"
    assert host_name("Example.COM.:80") == "example.com"
    assert host_name("localhost") == "localhost"


# ---- the last resort and the pool ---------------------------------------------------------------


def test_an_unhandled_error_is_a_short_500_json() -> None:
    app = create_app()

    def broken() -> None:
        raise KeyError("a bug")

    app.add_api_route("/api/broken", broken)
    with TestClient(app, raise_server_exceptions=False) as c:
        response = c.get("/api/broken")
    assert response.status_code == 500
    assert response.json() == {"error": "internal error (KeyError); the server log has the details"}


def test_the_pool_refuses_past_its_queue_and_stops_at_its_time_limit() -> None:
    pool = AdvisePool(workers=1, queue=0, time_limit_s=0.05)
    release = threading.Event()

    def blocking(check: Callable[[], None]) -> str:
        release.wait(10)
        return "done"

    def endless(check: Callable[[], None]) -> str:
        while True:
            check()

    async def scenario() -> tuple[str, str]:
        first = asyncio.ensure_future(pool.run(blocking))
        await asyncio.sleep(0.01)
        try:
            await pool.run(blocking)
            refused = "admitted"
        except PoolFull as err:
            refused = str(err)
        release.set()
        done = await first
        try:
            await pool.run(endless)
        except TimeLimitExceeded as err:
            return refused, f"{done}; {err}"
        return refused, done

    refused, outcome = asyncio.run(scenario())
    pool.shutdown()
    assert "busy" in refused
    assert outcome.startswith("done; the advice took over 0.05 s")


def test_pool_full_is_503_with_retry_after() -> None:
    app = create_app(workers=1, queue=0)
    pool: AdvisePool = app.state.advise_pool
    release = threading.Event()

    async def hold() -> None:
        await pool.run(lambda check: release.wait(10))

    with fixed_confidence(), TestClient(app) as c:
        portal = c.portal  # the app's event loop
        assert portal is not None
        future = portal.start_task_soon(hold)
        try:
            response = c.post("/api/advise", json=SMALL)
        finally:
            release.set()
            future.result(timeout=10)
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert "busy" in json.loads(response.text)["error"]


def test_identical_requests_in_flight_share_one_computation() -> None:
    from chipwise.report.web.pool import SharedAnswers

    calls = []

    async def compute() -> int:
        calls.append(1)
        await asyncio.sleep(0.01)
        return 42

    async def scenario() -> list[int]:
        answers: SharedAnswers[int] = SharedAnswers(size=1)
        together = await asyncio.gather(*(answers.get("q", compute) for _ in range(8)))
        again = await answers.get("q", compute)  # kept
        await answers.get("other", compute)  # evicts "q" (size 1)
        await answers.get("q", compute)
        return [*together, again]

    assert asyncio.run(scenario()) == [42] * 9
    assert len(calls) == 3


def test_the_docs_page_lists_the_status_codes(client: TestClient) -> None:
    page = client.get("/api/docs").text
    for code in ("413", "421", "422", "503"):
        assert code in page


def test_a_body_that_never_finishes_is_408(monkeypatch: pytest.MonkeyPatch) -> None:
    import chipwise.report.web.guard as guard

    monkeypatch.setattr(guard, "BODY_TIMEOUT_S", 0.05)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"type": "http.request", "body": b"x", "more_body": True}  # forever

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app must not run")

    wrapped = guard.Guard(
        app, allowed_hosts=None, body_limit=lambda p: 10**6, too_large=lambda p, n: "big"
    )
    scope = {"type": "http", "path": "/api/advise", "headers": [(b"host", b"127.0.0.1")]}
    asyncio.run(wrapped(scope, receive, send))
    assert sent[0]["status"] == 408
    assert b"took over 0.05 s" in sent[1]["body"]
