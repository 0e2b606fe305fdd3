"""The confidence band comes from the validation rows of the picked chip, or of its kind."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.advise import confidence as confidence_module
from chipwise.advise.confidence import (
    MIN_ROWS,
    confidence_for_chip,
    confidence_for_scope,
    latency_confidence,
)
from chipwise.errors import ChipwiseError
from chipwise.hardware import default_catalog
from chipwise.hardware.catalog import chip as find_chip
from chipwise.validate import (
    Case,
    ConfidenceEntry,
    ConfidenceTable,
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
    assert replace(conf, note="") == confidence_for_scope("gpu")
    assert f"on {chip.id}" in conf.note  # the fallback says why


@needs_data
def test_the_band_widens_a_value_by_the_p90_error() -> None:
    conf = confidence_for_scope("tpu")
    assert conf is not None
    lo, hi = conf.band(100.0)
    assert lo == pytest.approx(100 / (1 + conf.p90_abs_error))
    assert hi == pytest.approx(100 * (1 + conf.p90_abs_error))


@pytest.mark.parametrize("chip_id", [c.id for c in CAT.chips])
def test_a_serving_band_is_the_narrowest_scope_with_enough_rows_and_says_why(
    chip_id: str,
) -> None:
    """Read from the shipped table as data: chip, then vendor, then kind, then all; a
    wider band than the chip's own names the counts that were too few."""
    chip = CAT.chip(chip_id)
    table = load_confidence()

    def rows(scope: str) -> int:
        e = table.find("infer", scope, subset="throughput") or table.find(
            "infer", scope, subset="throughput", basis="packaged"
        )
        return e.rows if e else 0

    scopes = (chip.id, f"vendor:{chip.vendor.lower()}", chip.kind, "all")
    expected = next((s for s in scopes if rows(s) >= MIN_ROWS), None)
    conf = confidence_for_chip(chip, "infer")
    if expected is None:
        return  # the table has fewer than MIN_ROWS serving rows in all
    assert conf is not None and conf.scope == expected and conf.what == "serving-throughput"
    assert conf.rows == rows(expected)
    if expected == chip.id:
        assert conf.note == ""
    else:
        assert f"{rows(chip.id)} on {chip.id}" in conf.note and f"{MIN_ROWS} needed" in conf.note


def _entry(scope: str, subset: str, rows: int, median: float) -> ConfidenceEntry:
    return ConfidenceEntry(phase="infer", scope=scope, kind="gpu", subset=subset,
                           basis="out_of_sample", out_of_sample=True, rows=rows,
                           median_abs_error=median, p90_abs_error=2 * median)  # fmt: skip


def test_latency_bands_come_from_the_ttft_and_tpot_rows_of_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows the table gains (here: AMD latency rows) are used without a code change: two
    TTFT rows on mi300x are too few, so the band is AMD's six, and the note says so."""
    table = ConfidenceTable(
        schema_version=1, chipwise_version="test", date="2026-12-03", source="test",
        entries=(
            _entry("mi300x", "ttft", 2, 0.3), _entry("vendor:amd", "ttft", 6, 0.2),
            _entry("mi300x", "tpot", 5, 0.1), _entry("all", "throughput", 40, 0.15),
        ),
    )  # fmt: skip
    monkeypatch.setattr(confidence_module, "load_confidence", lambda: table)
    ttft, tpot = latency_confidence(CAT.chip("mi300x"))
    assert (ttft.what, ttft.scope, ttft.rows, ttft.median_abs_error) == (
        "serving-TTFT", "vendor:amd", 6, 0.2)  # fmt: skip
    assert "2 on mi300x" in ttft.note and "AMD" in ttft.note
    assert (tpot.what, tpot.scope, tpot.rows, tpot.note) == ("serving-TPOT", "mi300x", 5, "")
    assert latency_confidence(CAT.chip("tpu-v6e")) == ()  # no latency rows anywhere near it
