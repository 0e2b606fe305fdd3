"""The web UI's advise endpoint takes the user's own prices, as 'advise --prices' does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("plotly")

from fastapi.testclient import TestClient

from chipwise.report.web import create_app

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

BODY = {"workload": "llama3-8b", "chips": ["h100-sxm", "tpu-v5p"], "max_chips": 8}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def test_advise_uses_and_names_the_posted_prices(client: TestClient) -> None:
    prices = "chip,provider,pricing,usd_per_chip_hour\ntpu-v5p,gcp,on-demand,1.11\n"
    body = {**BODY, "prices": prices, "prices_name": "deal.csv"}
    response = client.post("/api/advise", json=body)
    assert response.status_code == 200, response.text
    rec = response.json()["recommendation"]
    (tpu,) = [o for o in rec["options"] if o["chip"] == "tpu-v5p"]
    assert "$1.11/chip-h; --prices deal.csv" in tpu["price"]
    assert any("--prices deal.csv" in n for n in rec["notes"])


def test_a_bad_price_row_is_a_400_with_one_line(client: TestClient) -> None:
    body = {**BODY, "prices": "chip,provider,pricing,usd_per_chip_hour\nh100,aws,spot,-2\n"}
    body["prices_name"] = "p.csv"
    response = client.post("/api/advise", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert "p.csv: 1 bad row(s): line 2: usd_per_chip_hour" in error and "\n" not in error
