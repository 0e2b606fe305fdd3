"""The explore summary: fronts and sensitivities as data, then one self-contained page."""

from __future__ import annotations

from pathlib import Path

import pytest

from chipwise.explore import grid_from, run_grid
from chipwise.report.explore import fronts, render_explore_html, sensitivities

GRID = {
    "workloads": ["llama3-8b"],
    "chips": ["h100-sxm", "h100-sxm:hbm_bandwidth*1.5", "h100-sxm:hbm_bandwidth*2", "tpu-v5p"],
    "counts": [1, 2, 4],
    "phases": ["infer"],
}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, object]]:
    return list(run_grid(grid_from(GRID)).table)


def test_the_front_keeps_only_points_nothing_beats_on_time_and_cost(rows: list) -> None:  # type: ignore[type-arg]
    (front,) = fronts(rows)
    assert front.workload == "llama3-8b" and front.phase == "infer"
    on = [p for p in front.points if p.on_front]
    assert on and len(on) < len(front.points)
    for p in front.points:  # on the front <=> no other point is as fast and as cheap
        dominated = any(
            q.time <= p.time and q.usd <= p.usd and (q.time, q.usd) != (p.time, p.usd)
            for q in front.points
        )
        assert p.on_front != dominated


def test_sensitivity_of_tpot_to_bandwidth_compares_each_derived_chip_with_its_base(
    rows: list,  # type: ignore[type-arg]
) -> None:
    by = {(s.figure, s.parameter): s for s in sensitivities(rows)}
    tpot = by[("TPOT", "memory bandwidth (B/s)")]
    assert tpot.relative and {round(p.x, 6) for p in tpot.points} == {1.0, 1.5, 2.0}
    base = [p for p in tpot.points if p.x == 1.0]
    assert base and all(p.y == 1.0 and p.label == "h100-sxm" for p in base)  # each line's start
    assert len(base) == len({p.series for p in tpot.points})
    assert all(p.y < 1 for p in tpot.points if p.x > 1)  # more bandwidth, faster decode
    two = [p.y for p in tpot.points if round(p.x, 6) == 2.0]
    half = [p.y for p in tpot.points if round(p.x, 6) == 1.5]
    assert max(two) <= max(half)


def test_summary_page_has_a_front_and_a_sensitivity_chart(rows: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    pytest.importorskip("plotly")
    from chipwise.explore import ExploreTable

    page = render_explore_html(ExploreTable(tuple(rows)))  # type: ignore[arg-type]
    assert 'id="front-0"' in page and 'id="sensitivity-0"' in page
    assert "user-supplied" in page.lower() or "User-supplied" in page
    assert "cdn" not in page.split("<script>")[0].lower()
