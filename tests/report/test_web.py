"""The web API (FastAPI TestClient): the page and its assets, the catalog and the zoo, config
uploads, advice with charts, the same answer as the CLI, and one-line errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise.workload.presets import preset_config
from tests.report.factories import fixed_confidence

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("plotly")

from fastapi.testclient import TestClient

from chipwise.report.web import create_app
from chipwise.report.web.models import UPLOAD_LIMIT_BYTES

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

SMALL = {"chips": ["h100-sxm", "tpu-v5p"], "max_chips": 16}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with fixed_confidence(), TestClient(create_app()) as c:
        yield c


def _advise(client: TestClient, **body: Any) -> Any:
    response = client.post("/api/advise", json={**SMALL, **body})
    assert response.status_code == 200, response.text
    return response.json()


# ---- the page -------------------------------------------------------------------------------


def test_the_page_loads_its_scripts_from_the_server_only(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert '<script src="/static/plotly.min.js">' in page.text
    assert 'src="http' not in page.text and 'href="http' not in page.text
    js = client.get("/static/plotly.min.js")
    assert js.status_code == 200 and len(js.content) > 1_000_000 and "plotly" in js.text[:2000]
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").headers["content-type"].startswith("text/css")


def test_openapi_schema_and_docs_are_under_api(client: TestClient) -> None:
    schema = client.get("/api/openapi.json").json()
    assert {"/api/advise", "/api/chips", "/api/workloads", "/api/workloads/upload"} <= set(
        schema["paths"]
    )
    body = schema["components"]["schemas"]["AdviseBody"]["properties"]
    assert {"workload", "phase", "objective", "cloud", "pricing", "chips", "max_chips"} <= set(body)
    assert client.get("/api/docs").status_code == 200


def test_the_api_docs_page_works_offline(client: TestClient) -> None:
    """FastAPI's Swagger UI loads from a CDN; /api/docs is plain HTML from the schema."""
    page = client.get("/api/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "http://" not in page.text and "https://" not in page.text and "<script" not in page.text
    assert 'href="/api/openapi.json"' in page.text
    for path in client.get("/api/openapi.json").json()["paths"]:
        assert f"<code>{path}</code>" in page.text
    assert "<code>pricing</code>" in page.text and "committed-1y" in page.text


# ---- catalog and zoo ------------------------------------------------------------------------


def test_chips_lists_the_catalog(client: TestClient) -> None:
    chips = {c["id"]: c for c in client.get("/api/chips").json()["chips"]}
    assert chips["h100-sxm"]["kind"] == "gpu" and chips["tpu-v5p"]["kind"] == "tpu"
    assert chips["tpu-v5p"]["purchasable"] is False


def test_workloads_lists_the_zoo_and_the_non_ml_kinds(client: TestClient) -> None:
    data = client.get("/api/workloads").json()
    assert data["default"] == "llama3-8b"
    models = {m["id"]: m for m in data["models"]}
    assert models["llama3-8b"]["params_total"] == pytest.approx(8.03e9, rel=0.02)
    assert models["mixtral-8x7b"]["moe"] is True
    assert "graphics" in {k["id"] for k in data["non_ml"]}


# ---- advise ---------------------------------------------------------------------------------


def test_advise_answers_with_the_cli_json_charts_and_text(client: TestClient) -> None:
    data = _advise(client, workload="llama3-8b", objective="cost")
    rec = data["recommendation"]
    assert rec["schema_version"] == 1 and rec["workload"] == "llama3-8b"
    assert rec["pick"]["chip"] in ("h100-sxm", "tpu-v5p")
    ids = [c["id"] for c in data["charts"]]
    assert {"time-cost", "pareto", "memory"} <= set(ids)
    assert any(i.startswith("roofline-") for i in ids)
    assert all("data" in c["figure"] and "layout" in c["figure"] for c in data["charts"])
    assert "Recommendation:" in data["text"]
    assert max(len(line) for line in data["text"].splitlines()) <= 100


@pytest.mark.parametrize("objective", ["cost", "time"])
def test_the_api_and_the_cli_give_the_same_answer(client: TestClient, objective: str) -> None:
    from chipwise.cli import app

    api = _advise(client, workload="llama3-8b", objective=objective)["recommendation"]
    with fixed_confidence():
        result = CliRunner().invoke(
            app,
            ["advise", "llama3-8b", "--json", "--objective", objective,
             "--chips", "h100-sxm,tpu-v5p", "--max-chips", "16"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    assert api["pick"] == cli["pick"]
    assert [o["chip"] for o in api["options"]] == [o["chip"] for o in cli["options"]]
    assert api["constraints"] == cli["constraints"]


@pytest.mark.parametrize("pricing", ["spot", "committed-1y", "any"])
def test_the_api_and_the_cli_agree_on_a_non_default_pricing(
    client: TestClient, pricing: str
) -> None:
    from chipwise.cli import app

    chips = ["h100-sxm", "tpu-v6e"]  # tpu-v6e has committed-use offers (gcp)
    api = _advise(client, workload="llama3-8b", pricing=pricing, chips=chips)["recommendation"]
    with fixed_confidence():
        result = CliRunner().invoke(
            app,
            ["advise", "llama3-8b", "--json", "--pricing", pricing,
             "--chips", ",".join(chips), "--max-chips", "16"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    assert api["constraints"]["pricing"] == cli["constraints"]["pricing"] == pricing
    assert api["pick"] == cli["pick"] and api["options"] == cli["options"]
    priced = [o for o in api["options"] if o["usd"] is not None]
    assert priced
    if pricing != "any":  # every price shown is one of that pricing
        assert all(f" {pricing} " in o["price"] for o in priced)


def test_the_form_sends_every_pricing_the_cli_accepts(client: TestClient) -> None:
    from chipwise.advise.request import PRICINGS

    page = client.get("/").text
    select = page[page.index('<select id="pricing">') : page.index("</select>", page.index(
        '<select id="pricing">'))]  # fmt: skip
    assert re.findall(r'<option value="([^"]+)"', select) == list(PRICINGS)
    assert 'pricing: $("pricing").value' in client.get("/static/app.js").text


def test_serving_is_priced_per_day(client: TestClient) -> None:
    rec = _advise(client, workload="llama3-8b", phase="infer", requests_per_day="1M")[
        "recommendation"
    ]
    assert rec["phase"] == "infer" and rec["constraints"]["requests_per_day"] == 1e6
    assert rec["pick"]["ttft_s"] > 0


def test_a_non_ml_workload_gets_an_answer_without_charts(client: TestClient) -> None:
    data = _advise(client, workload="graphics")
    assert data["recommendation"]["non_ml"] is not None and data["charts"] == []


# ---- uploads --------------------------------------------------------------------------------


def _upload(client: TestClient, content: bytes, name: str = "my-llama.json") -> Any:
    return client.post("/api/workloads/upload", files={"file": (name, content, "application/json")})


def test_an_uploaded_config_is_read_and_can_be_advised_on(client: TestClient) -> None:
    raw = preset_config("llama3-8b")
    response = _upload(client, json.dumps(raw).encode())
    assert response.status_code == 200, response.text
    up = response.json()
    assert up["name"] == "my-llama" and up["n_layers"] == 32
    assert up["params_total"] == pytest.approx(8.03e9, rel=0.02)
    rec = _advise(client, config=up["config"], config_name=up["name"], tokens="1B")[
        "recommendation"
    ]
    assert rec["workload"] == "my-llama" and rec["pick"] is not None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must hold a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"model_type": "mystery", "hidden_size": 64}', "my-llama"),  # missing keys
    ],
)
def test_a_bad_upload_is_a_400_with_one_line(
    client: TestClient, content: bytes, message: str
) -> None:
    response = _upload(client, content)
    assert response.status_code == 400
    error = response.json()["error"]
    assert message in error and "\n" not in error and "/tmp" not in error


def test_an_upload_over_the_limit_is_a_413(client: TestClient) -> None:
    padding = " " * (UPLOAD_LIMIT_BYTES + 10)
    response = _upload(client, ("{" + padding + "}").encode())
    assert response.status_code == 413
    assert "256 KiB" in response.json()["error"]


def test_a_huge_body_is_refused_before_it_is_read(client: TestClient) -> None:
    response = client.post(
        "/api/advise",
        content=b"{" + b" " * (2 * 1024 * 1024) + b"}",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413 and "limit" in response.json()["error"]


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"workload": "llama9-8b"}, "unknown workload"),
        ({"workload": "/etc/passwd"}, "unknown workload"),  # no server paths
        ({"workload": "os:system"}, "unknown workload"),  # no module:factory
        ({"workload": "llama3-8b", "chips": ["h10"]}, "h10"),
        ({"workload": "llama3-8b", "tokens": "lots"}, "not a number"),
        ({"workload": "llama3-8b", "precision": "fp3"}, "precision"),
    ],
)
def test_chipwise_errors_are_400_with_the_one_line_message(
    client: TestClient, body: dict[str, Any], message: str
) -> None:
    response = client.post("/api/advise", json={**SMALL, **body})
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    "body",
    [
        {"objective": "fastest"},
        {"budget_usd": -5},
        {"max_chips": 0},
        {"phase": "finetune"},
        {"unknown_option": 1},
    ],
)
def test_a_malformed_body_is_422_with_an_error_line(
    client: TestClient, body: dict[str, Any]
) -> None:
    response = client.post("/api/advise", json={**SMALL, **body})
    assert response.status_code == 422
    data = response.json()
    assert data["error"] and data["detail"]
