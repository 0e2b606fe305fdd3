"""The shipped confidence table is what the current model computes, and reads back."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from chipwise.validate import (
    CONFIDENCE_SCHEMA_VERSION,
    ConfidenceDataError,
    Report,
    confidence_entries,
    confidence_json,
    confidence_table,
    load_confidence,
    out_of_sample_results,
    parse_confidence,
    row_subsets,
)

STALE = (
    "the shipped confidence table differs from what the model computes now; rewrite it with "
    "'python benchmarks/validate.py --write-confidence' and commit "
    "src/chipwise/validate/data/confidence.json"
)


@pytest.fixture(scope="module")
def report(validation_report: Report) -> Report:
    return validation_report  # every row, predicted once per session (tests/conftest.py)


def test_the_shipped_table_equals_what_the_model_computes_now(report) -> None:  # type: ignore[no-untyped-def]
    shipped = load_confidence()
    assert shipped.schema_version == CONFIDENCE_SCHEMA_VERSION
    # the training rows the table scored out of sample are today's training rows
    train = {r.case.id for r in report.results if r.case.phase == "train" and r.predicted}
    assert set(shipped.lopo_predicted) == train, STALE
    # packaged entries from today's predictions; out-of-sample ones from today's rows with
    # the stored leave-one-publication-out predictions (tests/validate/test_lopo.py
    # recomputes those for one publication)
    oos = Report(results=out_of_sample_results(report, shipped.lopo_results(report)))
    entries = confidence_entries(report) + confidence_entries(
        oos, basis="out_of_sample", out_of_sample=True
    )
    now = {(e.phase, e.scope, e.subset, e.basis): e for e in entries}
    have = {(e.phase, e.scope, e.subset, e.basis): e for e in shipped.entries}
    assert set(have) == set(now), STALE
    for key, e in now.items():
        got = have[key]
        assert (got.rows, got.kind, got.out_of_sample) == (e.rows, e.kind, e.out_of_sample), key
        assert got.median_abs_error == pytest.approx(e.median_abs_error, rel=1e-9), STALE
        assert got.p90_abs_error == pytest.approx(e.p90_abs_error, rel=1e-9), STALE


def test_entries_cover_phases_kinds_chips_and_subsets(report) -> None:  # type: ignore[no-untyped-def]
    entries = confidence_entries(report)
    keys = {(e.phase, e.scope, e.subset) for e in entries}
    assert ("train", "all", "all") in keys and ("train", "gpu", "all") in keys
    assert ("train", "vendor:nvidia", "all") in keys
    assert any(e.scope == "h100-sxm" and e.phase == "train" for e in entries)
    train_all = next(e for e in entries if (e.phase, e.scope, e.subset) == ("train", "all", "all"))
    stats = report.stats("train")
    assert stats is not None and train_all.rows == stats.rows
    assert train_all.median_abs_error == stats.median_abs_error
    # subsets come from each row's data: >= 1024 chips, MoE workloads, serving metrics
    subs = {s for r in report.results for s in row_subsets(r)}
    assert {"1024+", "throughput"} <= subs
    for r in report.results:
        if "1024+" in row_subsets(r):
            assert r.case.phase == "train" and r.case.chips >= 1024
        if r.case.phase == "infer" and r.case.metric == "ttft_s":
            assert "ttft" in row_subsets(r)


def test_json_round_trips_and_a_foreign_schema_or_key_is_an_error(report) -> None:  # type: ignore[no-untyped-def]
    table = confidence_table(confidence_entries(report), source="test")
    text = confidence_json(table)
    assert parse_confidence(text) == table
    raw = json.loads(text)
    with pytest.raises(ConfidenceDataError, match="schema_version"):
        parse_confidence(json.dumps({**raw, "schema_version": CONFIDENCE_SCHEMA_VERSION + 1}))
    raw["entries"][0]["colour"] = "red"
    with pytest.raises(ConfidenceDataError, match="write-confidence"):
        parse_confidence(json.dumps(raw))


def test_find_picks_phase_scope_subset_and_basis() -> None:
    table = load_confidence()
    e = table.find("train", "all")
    assert e is not None and e.out_of_sample
    shipped = table.find("train", "all", basis="packaged")
    assert shipped is not None and not shipped.out_of_sample and shipped.rows == e.rows
    assert (e.phase, e.scope, e.subset, e.basis) == ("train", "all", "all", "out_of_sample")
    assert table.find("train", "no-such-chip") is None
    assert replace(table, entries=()).find("train", "all") is None
