"""The web UI speaks the CLI's words and offers what it does: fine-tune method, project scan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("plotly")

from fastapi.testclient import TestClient

from chipwise.report.web import create_app
from tests.report.factories import fixed_confidence

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

CUDA_EXT = Path(__file__).parents[1] / "compat" / "fixtures" / "cuda_ext"
BODY = {"chips": ["h100-sxm", "mi300x"], "max_chips": 8}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with fixed_confidence(), TestClient(create_app()) as c:
        yield c


def test_the_form_says_infer_like_the_cli_and_offers_method_and_project(
    client: TestClient,
) -> None:
    page = client.get("/").text
    assert 'value="infer"> infer' in page and "> serve<" not in page
    for field in ('id="method"', 'id="lora-rank"', 'id="project"', 'id="porting"'):
        assert field in page
    js = client.get("/static/app.js").text
    assert all(k in js for k in ("method:", "lora_rank:", "project:", "porting:"))


def test_a_project_path_is_scanned_and_its_port_weighed(client: TestClient) -> None:
    r = client.post("/api/advise", json={**BODY, "project": str(CUDA_EXT)})
    assert r.status_code == 200, r.text
    data = r.json()["recommendation"]
    assert data["pick"]["chip"] == "h100-sxm"
    assert any(x["rule"] == "porting-effort" for x in data["reasons"])
    assert data["training"]["method"] == "lora"


def test_a_public_server_refuses_to_scan_its_own_paths() -> None:
    with TestClient(create_app(allowed_hosts=None)) as open_client:
        r = open_client.post("/api/advise", json={**BODY, "project": str(CUDA_EXT)})
    assert r.status_code == 400 and "loopback" in r.json()["error"]
