"""The HTML report: one self-contained page with every chart's div and figure JSON, the
reasons, the compatibility findings and the price sources; user text escaped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipwise.advise import AdviseRequest, Recommendation, recommend
from chipwise.hardware import Catalog
from chipwise.report.charts import ReportError
from chipwise.report.html import render_html, write_html_report
from chipwise.workload import load_workload_model
from chipwise.workload.ir import Training, Workload
from tests.report.factories import fixed_confidence, fixture_catalog, training_recommendation

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

pytest.importorskip("plotly")


class Page(HTMLParser):
    """What the tests look at: element ids, scripts (src, type, data-chart, text), text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.ids: dict[str, tuple[str, dict[str, str]]] = {}
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.text: list[str] = []
        self._script: dict[str, str] | None = None
        self._script_text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids[a["id"]] = (tag, a)
        if tag == "script":
            self._script, self._script_text = a, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._script_text)))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script_text.append(data)
        else:
            self.text.append(data)

    def figures(self) -> dict[str, dict[str, object]]:
        return {
            attrs["data-chart"]: json.loads(body)
            for attrs, body in self.scripts
            if attrs.get("type") == "application/json" and "data-chart" in attrs
        }

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())


@pytest.fixture(scope="module")
def real_rec() -> Iterator[Recommendation]:
    """A real, small recommendation: Llama-3-8B training on two chips, JAX (so a reason fires)."""
    wl = Workload(model=load_workload_model("llama3-8b"), phase=Training(seq_len=4096))
    request = AdviseRequest(
        workload=wl,
        tokens=1e9,
        framework="jax",
        chip_ids=("h100-sxm", "tpu-v5p"),
        max_chips=16,
    )
    with fixed_confidence():
        yield recommend(request)


@pytest.fixture(scope="module")
def page(real_rec: Recommendation) -> Page:
    return Page(render_html(real_rec))


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return fixture_catalog(tmp_path)


def test_every_chart_has_its_div_and_its_plotly_json(real_rec: Recommendation, page: Page) -> None:
    rooflines = {
        f"roofline-{o.chip.id}" for o in (real_rec.pick, real_rec.best_gpu, real_rec.best_tpu) if o
    }
    assert rooflines == {"roofline-h100-sxm", "roofline-tpu-v5p"}
    figures = page.figures()
    for chart_id in [*rooflines, "time-cost", "pareto", "memory"]:
        assert page.ids[chart_id][0] == "div", chart_id
        assert "data" in figures[chart_id] and "layout" in figures[chart_id]
    roof = figures["roofline-h100-sxm"]
    assert roof["layout"]["xaxis"]["type"] == "log"  # type: ignore[index]
    assert {t["type"] for t in figures["time-cost"]["data"]} == {"bar"}  # type: ignore[union-attr]
    names = {t.get("name") for t in figures["pareto"]["data"]}  # type: ignore[union-attr]
    assert {"options", "Pareto front", "the pick"} <= names
    assert figures["memory"]["layout"]["barmode"] == "stack"  # type: ignore[index]


def test_the_page_needs_no_network(page: Page) -> None:
    srcs = [attrs["src"] for attrs, _ in page.scripts if "src" in attrs]
    assert srcs == []  # no <script src=...> at all, let alone http(s)
    plotly = [body for attrs, body in page.scripts if not attrs and "Plotly" in body]
    bundles = [b for b in plotly if len(b) > 1_000_000]
    assert len(bundles) == 1  # plotly.js inlined once per page, not once per chart


def test_the_page_states_the_pick_reasons_confidence_and_prices(
    real_rec: Recommendation, page: Page
) -> None:
    text = page.all_text
    assert real_rec.pick is not None
    assert f"Recommendation: {real_rec.pick.chip.name} ×{real_rec.pick.total_chips}" in text
    assert real_rec.reasons
    for reason in real_rec.reasons:
        assert " ".join(reason.text.split()) in text
        for evidence in reason.evidence:
            assert " ".join(evidence.split()) in text
    assert "p90 band" in text
    for o in real_rec.options:
        assert o.cost is not None
        assert o.cost.offer.source in text and o.cost.offer.date in text  # type: ignore[union-attr]


def test_compatibility_findings_appear_per_platform(catalog: Catalog) -> None:
    page = Page(render_html(training_recommendation(catalog)))
    assert "compatibility" in page.ids
    text = page.all_text
    assert "google-tpu: runs-with-changes" in text
    assert "flash-attn" in text and "Pallas splash attention" in text and "train.py:12" in text


def test_a_hand_built_page_lists_excluded_chips_and_notes(catalog: Catalog) -> None:
    text = Page(render_html(training_recommendation(catalog))).all_text
    assert "other-chip" in text and "no bf16 support" in text
    assert "a note for the golden" in text
    assert "tests/report/catalog (fixture)" in text and "2026-01-02" in text


def test_user_strings_are_escaped(catalog: Catalog) -> None:
    evil = "<script>alert(1)</script>"
    html = render_html(training_recommendation(catalog, name=evil))
    assert evil not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = Page(html)
    assert not any("alert(1)" in body for _, body in page.scripts if "data-chart" not in _)


def test_write_html_report_writes_one_file(tmp_path: Path, catalog: Catalog) -> None:
    out = write_html_report(training_recommendation(catalog), tmp_path / "r.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_an_unwritable_path_is_a_clear_error(tmp_path: Path, catalog: Catalog) -> None:
    with pytest.raises(ReportError, match="cannot write the HTML report"):
        write_html_report(training_recommendation(catalog), tmp_path / "missing" / "r.html")


def test_chipwise_advise_html_writes_the_report(tmp_path: Path) -> None:
    from chipwise.cli import app

    out = tmp_path / "advice.html"
    with fixed_confidence():
        result = CliRunner().invoke(
            app,
            ["advise", "--chips", "h100-sxm", "--max-chips", "8", "--quiet", "--html", str(out)],
        )
    assert result.exit_code == 0, result.output
    page = Page(out.read_text(encoding="utf-8"))
    assert "roofline-h100-sxm" in page.ids and "pareto" in page.ids
