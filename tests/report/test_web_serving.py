"""The web API's serving fields: load type, rps, p99 targets, KV-cache dtype and weight-only
precisions, validated at the edge (422 with one line) and answered as the CLI answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.report.factories import fixed_confidence

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("plotly")

from fastapi.testclient import TestClient

from chipwise.limits import MAX_LATENCY_MS, MAX_RPS
from chipwise.report.web import create_app

SERVE = {"workload": "llama3-8b", "phase": "infer", "chips": ["h100-sxm", "tpu-v6e"],
         "max_chips": 8}  # fmt: skip


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with fixed_confidence(), TestClient(create_app()) as c:
        yield c


def _advise(client: TestClient, **body: Any) -> Any:
    response = client.post("/api/advise", json={**SERVE, **body})
    assert response.status_code == 200, response.text
    return response.json()["recommendation"]


def test_an_slo_request_answers_within_its_p99_targets_as_the_cli_does(client: TestClient) -> None:
    from chipwise.cli import app

    api = _advise(client, rps=5, ttft_ms=1000, tpot_ms=40, kv_dtype="fp8")
    pick = api["pick"]
    assert pick["load"] == "rps"
    assert pick["ttft_p99_s"] <= 1.0 and pick["tpot_p99_s"] <= 0.04
    assert pick["usd_per_million_output_tokens"] > 0
    assert api["constraints"]["rps"] == 5 and api["constraints"]["tpot_p99_s"] == 0.04
    with fixed_confidence():
        result = CliRunner().invoke(
            app,
            ["advise", "llama3-8b", "--phase", "infer", "--json", "--rps", "5", "--ttft", "1000",
             "--tpot", "40", "--kv-dtype", "fp8", "--chips", "h100-sxm,tpu-v6e",
             "--max-chips", "8"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    assert api["pick"] == cli["pick"] and api["options"] == cli["options"]
    assert api["constraints"] == cli["constraints"]


def test_the_kv_cache_dtype_reaches_the_engine(client: TestClient) -> None:
    body = {"rps": 5, "tpot_ms": 40, "chips": ["h100-sxm"]}
    bf16 = _advise(client, **body, kv_dtype="bf16")["pick"]
    fp8 = _advise(client, **body, kv_dtype="fp8")["pick"]
    # an fp8 cache holds half the bytes per token: the same load reads less KV per step
    assert fp8["memory_per_chip_bytes"] < bf16["memory_per_chip_bytes"]


def test_load_rps_without_a_rate_spreads_the_daily_load(client: TestClient) -> None:
    rec = _advise(client, load="rps", requests_per_day="864k")
    assert rec["constraints"]["rps"] == pytest.approx(10.0)
    assert rec["pick"]["load"] == "rps"


def test_load_batch_stays_the_static_batch_answer(client: TestClient) -> None:
    rec = _advise(client, load="batch", requests_per_day="1M")
    assert rec["pick"]["load"] == "batch" and rec["constraints"]["rps"] is None


@pytest.mark.parametrize(
    ("body", "where", "words"),
    [
        ({"rps": 0}, "rps", "greater than 0"),
        ({"rps": MAX_RPS * 10}, "rps", "less than or equal"),
        ({"ttft_ms": -1}, "ttft_ms", "greater than 0"),
        ({"tpot_ms": MAX_LATENCY_MS * 2}, "tpot_ms", "less than or equal"),
        ({"tpot_ms": "fast"}, "tpot_ms", "valid number"),
        ({"kv_dtype": "fp4"}, "kv_dtype", "'auto', 'bf16', 'fp16' or 'fp8'"),
        ({"load": "burst"}, "load", "'batch' or 'rps'"),
        ({"load": "batch", "tpot_ms": 50}, "body", "need load 'rps'"),
        ({"kv_dtype": "fp8"}, "body", "kv_dtype needs load 'rps'"),
        ({"rps": 4, "requests_per_day": "1M"}, "body", "give one"),
        ({"phase": "train", "rps": 4}, "body", "use phase 'infer'"),
    ],
)
def test_bad_serving_fields_are_a_422_with_one_short_line(
    client: TestClient, body: dict[str, Any], where: str, words: str
) -> None:
    response = client.post("/api/advise", json={**SERVE, **body})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error.startswith(where) and words in error, error
    assert "\n" not in error and len(error) < 200


def test_a_precision_no_chip_has_is_a_400_naming_it(client: TestClient) -> None:
    response = client.post("/api/advise", json={**SERVE, "precision": "int3"})
    assert response.status_code == 400
    assert "int3" in response.json()["error"] and "int4" in response.json()["error"]


def test_the_form_offers_every_serving_field(client: TestClient) -> None:
    page = client.get("/").text
    script = client.get("/static/app.js").text
    for field in ('id="load"', 'id="rps"', 'id="ttft"', 'id="tpot"', 'id="kv-dtype"',
                  'value="int4"', 'value="fp4"', 'value="w8a16"'):  # fmt: skip
        assert field in page, field
    for key in ("b.rps", "b.ttft_ms", "b.tpot_ms", "b.kv_dtype", 'b.load = "rps"'):
        assert key in script, key
