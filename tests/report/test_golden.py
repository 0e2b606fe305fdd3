"""Golden tests: the terminal renderings of ``chipwise chips`` and ``chipwise advise`` at 100
columns without colour, on a fixture catalog and hand-built recommendations (see
``factories.py``), so neither catalog edits nor perf-model tuning move them."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.hardware import Catalog
from chipwise.report.advice import options_table, render_recommendation
from chipwise.report.chips import chip_detail_table, chips_table
from tests.report.factories import (
    fixture_catalog,
    serving_recommendation,
    training_recommendation,
)
from tests.report.golden import check_golden, render_text

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return fixture_catalog(tmp_path)


def test_chips_table_matches_its_golden(catalog: Catalog) -> None:
    check_golden("chips", render_text(chips_table(catalog.chips, catalog)))


def test_chip_detail_matches_its_golden(catalog: Catalog) -> None:
    check_golden("chip_detail", render_text(chip_detail_table(catalog.chip("testtpu"))))


def test_training_advice_matches_its_golden(catalog: Catalog) -> None:
    check_golden(
        "advise_train", render_text(render_recommendation(training_recommendation(catalog)))
    )


def test_serving_advice_matches_its_golden(catalog: Catalog) -> None:
    check_golden(
        "advise_serve", render_text(render_recommendation(serving_recommendation(catalog)))
    )


def test_golden_rendering_ignores_the_terminal(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A narrow or colour terminal in the environment must not leak into the goldens."""
    rec = training_recommendation(catalog)
    plain = render_text(render_recommendation(rec))
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    assert render_text(render_recommendation(rec)) == plain
    assert "\x1b[" not in plain
    assert max(len(line) for line in plain.splitlines()) <= 100


def test_a_changed_rendering_fails_the_golden(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHIPWISE_REGEN_GOLDEN", raising=False)
    text = render_text(render_recommendation(training_recommendation(catalog)))
    with pytest.raises(pytest.fail.Exception, match="differs"):
        check_golden("advise_train", text.replace("testtpu-v1", "testtpu-v2"))


def test_training_advice_at_80_columns_matches_its_golden(catalog: Catalog) -> None:
    """A narrow terminal: wrapped lines stay under their bullet or indent."""
    text = render_text(render_recommendation(training_recommendation(catalog)), width=80)
    check_golden("advise_train_80", text)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_no_qualifying_chip_prints_no_empty_table(catalog: Catalog) -> None:
    rec = replace(
        training_recommendation(catalog), options=(), pick=None, best_gpu=None, best_tpu=None
    )
    text = render_text(render_recommendation(rec))
    assert "No chip qualifies." in text
    assert "┏" not in text and "request" not in text  # no empty (serving-headed) table
    assert options_table(rec).columns[3].header == "run"  # training columns even when empty


def test_the_pareto_front_is_cheaper_at_every_slower_point() -> None:
    from chipwise.advise import recommend
    from chipwise.report.advice import pareto_front
    from tests.advise.factories import training

    rec = recommend(training("llama3-70b", tokens=2e12, chips=("h100-sxm",), max_chips=1024))
    front = pareto_front(rec.considered)
    assert len(front) >= 2
    for faster, slower in itertools.pairwise(front):
        assert faster.days is not None and slower.days is not None
        assert faster.days <= slower.days and (slower.usd or 0) < (faster.usd or 0)
