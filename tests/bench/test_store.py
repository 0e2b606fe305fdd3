import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.bench import store
from chipwise.bench.store import CalibrationRow, Measurement
from chipwise.errors import MeasurementError

from .conftest import make


def _without_id(m: Measurement) -> Measurement:
    return replace(m, id=None)


def test_measurements_round_trip_through_the_store(db: Path) -> None:
    rows = [make(), make(benchmark="copy", shape="268435456", dtype="fp32", flops=0.0)]
    assert store.add_measurements(db, rows) == 2
    back = store.list_measurements(db)
    assert [_without_id(m) for m in back] == rows
    assert [m.id for m in back] == [1, 2]


def test_a_new_store_records_its_schema_version(db: Path) -> None:
    assert store.schema_version(db) == store.SCHEMA_VERSION == 1
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"schema_version", "measurements", "calibrations"} <= tables


def test_a_store_from_a_newer_version_is_refused(db: Path) -> None:
    store.schema_version(db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(MeasurementError, match="schema version 99"):
        store.list_measurements(db)


def test_a_file_that_is_not_sqlite_is_a_measurement_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(MeasurementError, match=r"junk\.sqlite"):
        store.list_measurements(path)


@pytest.mark.parametrize(
    ("filters", "expected_shapes"),
    [
        ({}, ["a", "b", "c", "d"]),
        ({"benchmark": "gemm"}, ["a", "b"]),
        ({"device": "h100"}, ["a", "c"]),  # part of the device name
        ({"device": "H100-SXM"}, ["a", "c"]),  # the chip id, any case
        ({"device": "xeon"}, ["d"]),
        ({"chip_id": "h100-sxm"}, ["a", "c"]),
        ({"dtype": "fp32"}, ["b", "d"]),
        ({"run_id": "run-b"}, ["c", "d"]),
        ({"benchmark": "gemm", "dtype": "fp32"}, ["b"]),
    ],
)
def test_list_filters_combine(
    db: Path, filters: dict[str, str], expected_shapes: list[str]
) -> None:
    xeon = {"device_name": "Intel(R) Xeon(R) Platinum", "device_kind": "cpu", "chip_id": None}
    store.add_measurements(
        db,
        [
            make(shape="a"),
            make(shape="b", dtype="fp32", device_name="AMD Instinct MI300X", chip_id=None),
            make(shape="c", run_id="run-b", benchmark="copy"),
            make(shape="d", run_id="run-b", benchmark="copy", dtype="fp32", **xeon),
        ],
    )
    assert [m.shape for m in store.list_measurements(db, **filters)] == expected_shapes


def test_an_unknown_benchmark_filter_names_the_choices(db: Path) -> None:
    with pytest.raises(MeasurementError, match="gemm, copy"):
        store.list_measurements(db, benchmark="matmul")


def test_json_export_carries_the_schema_version_and_every_column(db: Path) -> None:
    store.add_measurements(db, [make()])
    doc = json.loads(store.export_json_text(db))
    assert doc["schema_version"] == 1
    (row,) = doc["measurements"]
    assert row["id"] == 1
    assert row["chip_id"] == "h100-sxm"
    assert row["achieved_flops_per_s"] == pytest.approx(2 * 4096**3 / 2e-4)
    assert set(row) == {"id", *(f for f in Measurement.__dataclass_fields__ if f != "id")}


def test_default_path_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHIPWISE_DB", "/somewhere/m.sqlite")
    assert store.default_db_path() == Path("/somewhere/m.sqlite")
    assert store.resolve_db("x.sqlite") == Path("x.sqlite")
    monkeypatch.delenv("CHIPWISE_DB")
    default = store.default_db_path()
    assert default.name == "measurements.sqlite"
    assert default.parent.name == "chipwise"


@pytest.mark.parametrize(
    "bad",
    [{"time_s": 0.0}, {"time_s_min": -1.0}, {"repeats": 0}, {"benchmark": "matmul"}],
)
def test_a_measurement_with_impossible_values_is_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(MeasurementError):
        make(**bad)


def test_latest_calibration_returns_only_the_newest_run(db: Path) -> None:
    def row(run: str, value: float, field: str = "hbm_fraction") -> CalibrationRow:
        return CalibrationRow(run_id=run, timestamp="t", chip_id="h100-sxm",
                              device_name="NVIDIA H100 80GB HBM3", device_kind="gpu",
                              field=field, value=value, n_points=3)  # fmt: skip

    store.add_calibration(db, [row("old", 0.5), row("old", 0.7, "gemm_peak_fraction")])
    store.add_calibration(db, [row("new", 0.9)])
    latest = store.latest_calibration(db, chip_id="h100-sxm")
    assert [(r.run_id, r.field, r.value) for r in latest] == [("new", "hbm_fraction", 0.9)]
    by_name = store.latest_calibration(db, device_name="NVIDIA H100 80GB HBM3")
    assert [r.value for r in by_name] == [0.9]
    assert store.latest_calibration(db, chip_id="b200") == ()


def test_listing_a_missing_store_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "nowhere" / "measurements.sqlite"
    assert store.list_measurements(db) == ()
    assert not db.exists() and not db.parent.exists()
