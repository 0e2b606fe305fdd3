"""The validation harness against published measurements: every row, and the error bound.

The bounds are the measured errors of this version plus a margin, so a model change that
makes the fit worse fails here (and the commit message must show the before/after):
training median |error| 5.4 % and p90 18 % over 50 rows (GPU 5.2 % / 26 %, TPU 5.6 % /
17 %; in-sample for the three sustained_tensor_fraction values in efficiency.toml - fitted
on the shared rows alone they score the 36 added rows at 7.3 % / 23 %, fitted on the added
rows they score the shared ones at 5.9 % / 17 %). Microbenchmarks: median 2.4 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from chipwise.cli.validate import report_table
from chipwise.perf.validation import (
    PUBLIC_CASES,
    load_cases,
    own_measurements_path,
    read_cases,
    run_validation,
    validation_dir,
)

TRAIN_MEDIAN_BOUND = 0.07
TRAIN_P90_BOUND = 0.28
MICROBENCH_MEDIAN_BOUND = 0.05


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    r = run_validation()
    Console(width=160, color_system=None).print(report_table(r))  # shown with pytest -s
    return r


def test_own_measurements_all_cite_a_source() -> None:
    rows = read_cases(own_measurements_path())
    assert len(rows) >= 30
    for c in rows:
        # a repository at a commit, or a vendor page named with its version or date
        pinned = c.source.startswith("github:") and "@" in c.source
        dated = c.source.startswith("url:") and any(ch.isdigit() for ch in c.source)
        assert pinned or dated, c.id


def test_every_row_is_predicted_or_says_why(report) -> None:  # type: ignore[no-untyped-def]
    assert len(report.results) == len(load_cases())
    for r in report.results:
        assert (r.predicted is not None) != bool(r.why), r.case.id
        if r.case.usable:
            assert r.predicted is not None, f"{r.case.id}: {r.why}"


def test_training_error_stays_within_the_bound(report) -> None:  # type: ignore[no-untyped-def]
    s = report.stats("train")
    assert s is not None and s.rows >= 36
    assert s.median_abs_error <= TRAIN_MEDIAN_BOUND
    assert s.p90_abs_error <= TRAIN_P90_BOUND
    for group in ("train-gpu", "train-tpu"):
        g = report.stats(group)
        assert g is not None and g.median_abs_error <= TRAIN_MEDIAN_BOUND


def test_microbenchmarks_stay_within_the_bound(report) -> None:  # type: ignore[no-untyped-def]
    s = report.stats("microbench")
    assert s is not None and s.median_abs_error <= MICROBENCH_MEDIAN_BOUND


def test_shared_cases_are_found_when_present() -> None:
    shared = validation_dir() / PUBLIC_CASES
    if not shared.exists():
        pytest.skip(f"no shared validation data at {shared}")
    ids = {c.id for c in load_cases()}
    assert "GPU-001" in ids and "TPU-001" in ids


def test_env_var_points_the_harness_elsewhere(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CHIPWISE_VALIDATION_DIR", str(tmp_path))
    assert validation_dir() == tmp_path
    assert all(c.id.startswith("CW-") for c in load_cases())
