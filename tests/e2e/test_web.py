"""Browser end to end: the web UI in headless system Chromium (never a downloaded browser),
served by uvicorn on 127.0.0.1 in a background thread.

Skipped when Playwright or /usr/bin/chromium is missing (CI installs Debian's chromium).
Set CHIPWISE_SCREENSHOT_DIR to keep the screenshots for a look.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chipwise.workload.presets import preset_config
from tests.e2e.png import distinct_colours
from tests.report.factories import running_app

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORT = {"width": 1400, "height": 1000}
ADVISE_TIMEOUT_MS = 45_000

sync_api = pytest.importorskip("playwright.sync_api")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """The app on a free local port; the confidence band is fixed so answers come fast."""
    with running_app("the web UI") as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, base_url: str) -> Iterator[Any]:
    """A fresh page that records console errors and every URL it asks for."""
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.errors = []
    pg.urls = []
    pg.on("pageerror", lambda err: pg.errors.append(str(err)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("request", lambda r: pg.urls.append(r.url))
    pg.goto(base_url + "/")
    pg.wait_for_selector("body[data-ready=true]", timeout=20_000)
    yield pg
    context.close()


def _keep(name: str, png: bytes) -> None:
    folder = os.environ.get("CHIPWISE_SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_bytes(png)


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def test_the_page_renders_something_worth_looking_at(page: Any, base_url: str) -> None:
    png = page.screenshot()
    _keep("web-ui-start.png", png)
    assert len(png) > 20_000
    assert distinct_colours(png) > 16  # not a blank or single-colour page
    assert page.locator("#workload option").count() >= 19
    assert page.locator('input[name="chip"]').count() >= 20
    assert all(u.startswith(base_url) for u in page.urls), page.urls  # no CDN, no network
    assert page.errors == []


def test_advise_in_the_browser_matches_the_api(page: Any, base_url: str) -> None:
    page.select_option("#workload", "llama3-8b")
    page.check('input[name="chip"][value="h100-sxm"]')
    page.check('input[name="chip"][value="tpu-v5p"]')
    page.fill("#max-chips", "64")
    page.select_option("#objective", "time")
    page.click("#advise")
    page.wait_for_selector("body[data-answered=true]", timeout=ADVISE_TIMEOUT_MS)
    page.wait_for_function(
        "document.querySelectorAll('#charts .chart').length >= 5 && "
        "Array.from(document.querySelectorAll('#charts .chart'))"
        ".every(d => d.querySelector('.main-svg'))",
        timeout=10_000,
    )
    chip = page.get_attribute("#pick", "data-chip")
    text = page.inner_text("#pick")
    api = _post(
        base_url + "/api/advise",
        {"workload": "llama3-8b", "chips": ["h100-sxm", "tpu-v5p"], "max_chips": 64,
         "objective": "time"},
    )["recommendation"]  # fmt: skip
    pick = api["pick"]
    assert chip == pick["chip"]
    assert text == f"Recommendation: {pick['chip']} ×{pick['chips'] * pick['replicas']}"
    ids = page.eval_on_selector_all("#charts .chart", "ds => ds.map(d => d.id)")
    assert {"time-cost", "pareto", "memory", f"roofline-{pick['chip']}"} <= set(ids)
    rows = page.locator("#options-table tbody tr").count()
    assert rows == len(api["options"])
    _keep("web-ui-answer.png", page.screenshot(full_page=True))
    assert all(u.startswith(base_url) for u in page.urls), page.urls
    assert page.errors == []


def test_an_uploaded_config_becomes_the_workload(page: Any) -> None:
    config = json.dumps(preset_config("llama3-8b")).encode()
    page.set_input_files(
        "#upload", files=[{"name": "my-llama.json", "mimeType": "application/json",
                           "buffer": config}]
    )  # fmt: skip
    page.wait_for_function(
        "document.getElementById('upload-status').textContent.includes('parameters')",
        timeout=30_000,
    )
    assert page.input_value("#workload") == "__uploaded__"
    assert "my-llama" in page.inner_text("#upload-status")
    page.set_input_files(
        "#upload", files=[{"name": "bad.json", "mimeType": "application/json", "buffer": b"{"}]
    )
    page.wait_for_selector("#upload-status.error")
    assert "not valid JSON" in page.inner_text("#upload-status")


def test_serving_within_p99_targets_in_the_browser_matches_the_api(
    page: Any, base_url: str
) -> None:
    page.select_option("#workload", "llama3-8b")
    page.check('input[name="phase"][value="infer"]')
    assert page.is_hidden("#rps")  # static batches until the load says otherwise
    page.select_option("#load", "rps")
    assert page.is_visible("#rps") and page.is_hidden("#requests") and page.is_hidden("#batch")
    page.fill("#rps", "5")
    page.fill("#ttft", "1000")
    page.fill("#tpot", "40")
    page.select_option("#kv-dtype", "fp8")
    page.select_option("#precision", "int4")
    page.check('input[name="chip"][value="h100-sxm"]')
    page.check('input[name="chip"][value="tpu-v6e"]')
    page.fill("#max-chips", "8")
    page.click("#advise")
    page.wait_for_selector("body[data-answered=true]", timeout=ADVISE_TIMEOUT_MS)
    api = _post(
        base_url + "/api/advise",
        {"workload": "llama3-8b", "phase": "infer", "load": "rps", "rps": 5, "ttft_ms": 1000,
         "tpot_ms": 40, "kv_dtype": "fp8", "precision": "int4",
         "chips": ["h100-sxm", "tpu-v6e"], "max_chips": 8},
    )["recommendation"]  # fmt: skip
    pick = api["pick"]
    assert pick["ttft_p99_s"] <= 1.0 and pick["tpot_p99_s"] <= 0.04
    assert page.get_attribute("#pick", "data-chip") == pick["chip"]
    head = page.eval_on_selector_all("#options-table th", "ths => ths.map(t => t.textContent)")
    assert {"TTFT p99", "TPOT p99", "$/1M out", "$/day"} <= set(head)
    assert page.locator("#options-table tbody tr").count() == len(api["options"])
    alternatives = page.inner_text("#alternatives")
    assert "TTFT p99" in alternatives and "per 1M output tokens" in alternatives
    _keep("web-ui-serving.png", page.screenshot(full_page=True))
    assert page.errors == []


def test_a_bad_serving_field_shows_the_servers_one_line(page: Any) -> None:
    page.select_option("#workload", "llama3-8b")
    page.check('input[name="phase"][value="infer"]')
    page.select_option("#load", "rps")
    page.fill("#tpot", "0")  # the form allows 0 (its min); the server wants > 0
    page.check('input[name="chip"][value="h100-sxm"]')
    page.click("#advise")
    page.wait_for_selector("#status.error", timeout=ADVISE_TIMEOUT_MS)
    assert page.inner_text("#status") == "tpot_ms: Input should be greater than 0"


def test_a_disaggregated_pick_shows_its_prefill_and_decode_pools(page: Any) -> None:
    page.select_option("#workload", "llama3-70b")
    page.check('input[name="phase"][value="infer"]')
    page.select_option("#load", "rps")
    page.fill("#input-len", "8192")
    page.fill("#rps", "10")
    page.fill("#ttft", "2000")
    page.fill("#tpot", "20")
    page.check('input[name="chip"][value="h100-sxm"]')
    page.click("#advise")
    page.wait_for_selector("body[data-answered=true]", timeout=ADVISE_TIMEOUT_MS)
    row = page.inner_text("#options-table tbody tr.pick")
    assert "disaggregated: " in row and " prefill + " in row and " decode replicas of " in row
    assert "disaggregated: " in page.inner_text("#alternatives")
    assert page.errors == []
