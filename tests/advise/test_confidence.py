"""The confidence band comes from the validation rows of the picked chip, or of its kind."""

from __future__ import annotations

import pytest

from chipwise.advise.confidence import MIN_ROWS, confidence_for_chip, confidence_for_scope
from chipwise.errors import ChipwiseError
from chipwise.hardware import default_catalog
from chipwise.hardware.catalog import chip as find_chip
from chipwise.validate import (
    Case,
    Report,
    load_cases,
    load_confidence,
    out_of_sample_results,
    run_validation,
)

CAT = default_catalog()


def _train_cases() -> list[tuple[str, str, Case]]:
    out = []
    for case in load_cases():
        if case.phase != "train":
            continue
        try:
            c = find_chip(case.chip)
        except ChipwiseError:
            continue
        out.append((c.id, c.kind, case))
    return out


CASES = _train_cases()
needs_data = pytest.mark.skipif(not CASES, reason="no validation data found")


def _rows_of(chip_id: str) -> list[Case]:
    return [case for cid, _, case in CASES if cid == chip_id]


@needs_data
def test_a_chip_with_enough_rows_gets_its_own_band_computed_from_them() -> None:
    """The band is the out-of-sample score of the chip's rows: predicted as shipped, with
    the training rows' leave-one-publication-out predictions from the shipped table."""
    chip_id = max({cid for cid, _, _ in CASES}, key=lambda c: len(_rows_of(c)))
    report = run_validation("train", cases=_rows_of(chip_id))
    held = load_confidence().lopo_results(report)
    stats = Report(results=out_of_sample_results(report, held)).stats("train")
    conf = confidence_for_chip(CAT.chip(chip_id))
    assert stats is not None and stats.rows >= MIN_ROWS
    assert conf is not None and conf.scope == chip_id
    assert conf.kind == CAT.chip(chip_id).kind
    assert conf.rows == stats.rows
    assert conf.median_abs_error == pytest.approx(stats.median_abs_error, rel=1e-9)
    assert conf.p90_abs_error == pytest.approx(stats.p90_abs_error, rel=1e-9)


@needs_data
def test_a_chip_without_rows_falls_back_to_its_kind() -> None:
    measured = {cid for cid, _, _ in CASES}
    chip = next(c for c in CAT.chips if c.kind == "gpu" and c.id not in measured)
    conf = confidence_for_chip(chip)
    assert conf is not None and conf.scope == "gpu" and conf.kind == "gpu"
    assert conf.rows >= MIN_ROWS
    assert conf == confidence_for_scope("gpu")


@needs_data
def test_the_band_widens_a_value_by_the_p90_error() -> None:
    conf = confidence_for_scope("tpu")
    assert conf is not None
    lo, hi = conf.band(100.0)
    assert lo == pytest.approx(100 / (1 + conf.p90_abs_error))
    assert hi == pytest.approx(100 * (1 + conf.p90_abs_error))
