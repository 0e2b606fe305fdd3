"""The HTML report's charts without plotly: well-formed inline SVG, labels escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from chipwise.report.svg import cost_time_svg, memory_svg, svg_charts_section
from tests.report.factories import fixture_catalog, training_recommendation

SVG = "{http://www.w3.org/2000/svg}"


def test_both_charts_are_well_formed_svg_with_a_point_per_option(tmp_path: Path) -> None:
    rec = training_recommendation(fixture_catalog(tmp_path))
    scatter = ET.fromstring(cost_time_svg(rec))
    points = scatter.findall(f"{SVG}circle")
    assert len(points) == len(rec.considered or rec.options) > 0
    bars = ET.fromstring(memory_svg(rec))
    assert bars.findall(f"{SVG}rect") and bars.findall(f"{SVG}line")
    assert svg_charts_section(rec, "hint").count("<svg") == 2


def test_labels_are_escaped(tmp_path: Path) -> None:
    rec = training_recommendation(fixture_catalog(tmp_path), name="<b>evil</b>")
    page = svg_charts_section(rec, "<script>")
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_the_html_answer_names_the_job_it_sized(tmp_path: Path) -> None:
    from chipwise.report.html import answer_section

    rec = training_recommendation(fixture_catalog(tmp_path))
    assert 'id="job"' in answer_section(rec) and "full training" in answer_section(rec)
