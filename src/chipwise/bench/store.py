"""The measurement store: one SQLite file (stdlib ``sqlite3``) of benchmark results.

Where it lives, first match wins: ``--db PATH``; the ``CHIPWISE_DB`` environment variable;
``platformdirs.user_data_dir("chipwise")/measurements.sqlite``.

Tables (``SCHEMA_VERSION`` 1; a newer file is refused rather than misread):

- ``schema_version(version)``: one row;
- ``measurements``: one row per benchmark case of a run, the columns of ``Measurement``;
- ``calibrations``: fitted parameters, one row per (device, field) and calibration run.

Units are in the column names. ``time_s`` is the median over ``repeats`` timed runs and
``time_s_min`` the fastest; ``achieved_*_per_s`` divide the work by the median.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chipwise.errors import MeasurementError

SCHEMA_VERSION = 1
DB_ENV = "CHIPWISE_DB"
DB_FILE_NAME = "measurements.sqlite"
BENCHMARKS: tuple[str, ...] = ("gemm", "copy", "elementwise", "reduction", "attention", "allreduce")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    device_name TEXT NOT NULL,
    device_kind TEXT NOT NULL,
    vendor TEXT NOT NULL,
    driver_version TEXT NOT NULL,
    library TEXT NOT NULL,
    library_version TEXT NOT NULL,
    host TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    shape TEXT NOT NULL,
    dtype TEXT NOT NULL,
    n_bytes REAL NOT NULL,
    flops REAL NOT NULL,
    time_s REAL NOT NULL,
    time_s_min REAL NOT NULL,
    repeats INTEGER NOT NULL,
    achieved_flops_per_s REAL NOT NULL,
    achieved_bytes_per_s REAL NOT NULL,
    chip_id TEXT
);
CREATE INDEX IF NOT EXISTS measurements_device ON measurements (device_name, benchmark);
CREATE TABLE IF NOT EXISTS calibrations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    chip_id TEXT,
    device_name TEXT NOT NULL,
    device_kind TEXT NOT NULL,
    field TEXT NOT NULL,
    value REAL NOT NULL,
    n_points INTEGER NOT NULL,
    note TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """One benchmark case on one device: the median time and what it achieved.

    ``n_bytes`` counts the logical bytes the op must move (``copy``: read + write, the STREAM
    convention; ``allreduce``: the buffer on each device, and ``achieved_bytes_per_s`` is then
    the NCCL bus bandwidth, 2 (n-1)/n x buffer / time, for n devices). ``shape`` is text:
    ``"MxNxK"`` for GEMM, the element count for memory benchmarks, ``"BxHxSxDh"`` for
    attention, ``"<devices>x<elements>"`` for all-reduce.
    """

    run_id: str
    timestamp: str  # ISO 8601, UTC
    device_name: str
    device_kind: str  # gpu | tpu | cpu
    vendor: str
    driver_version: str
    library: str  # torch | jax | numpy
    library_version: str
    host: str
    benchmark: str  # one of BENCHMARKS
    shape: str
    dtype: str
    n_bytes: float
    flops: float
    time_s: float
    time_s_min: float
    repeats: int
    achieved_flops_per_s: float
    achieved_bytes_per_s: float
    chip_id: str | None = None
    id: int | None = None  # row id, set when read back from the store

    def __post_init__(self) -> None:
        if self.benchmark not in BENCHMARKS:
            raise MeasurementError(
                f"unknown benchmark {self.benchmark!r}; known: {', '.join(BENCHMARKS)}"
            )
        if self.time_s <= 0 or self.time_s_min <= 0 or self.repeats < 1:
            raise MeasurementError(
                f"{self.benchmark} {self.shape}: times must be positive and repeats >= 1 "
                f"(got time_s={self.time_s}, time_s_min={self.time_s_min}, "
                f"repeats={self.repeats})"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationRow:
    """One fitted parameter of one device, from ``n_points`` measurements: an ``Efficiency``
    field (``hbm_fraction``), or a measured rate of the device (``measured.bytes_per_s``)."""

    run_id: str
    timestamp: str
    chip_id: str | None
    device_name: str
    device_kind: str
    field: str
    value: float
    n_points: int
    note: str = ""  # how it was fitted
    id: int | None = None


_MEASUREMENT_COLUMNS = tuple(f.name for f in dataclasses.fields(Measurement) if f.name != "id")
_CALIBRATION_COLUMNS = tuple(f.name for f in dataclasses.fields(CalibrationRow) if f.name != "id")


def default_db_path() -> Path:
    """``$CHIPWISE_DB`` if set, else ``<user data dir>/chipwise/measurements.sqlite``."""
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("chipwise")) / DB_FILE_NAME


def resolve_db(db: str | Path | None) -> Path:
    """The store path: ``db`` when given, else ``default_db_path()``."""
    return Path(db).expanduser() if db is not None else default_db_path()


@contextmanager
def connect(db: str | Path | None = None) -> Iterator[sqlite3.Connection]:
    """Open (creating if needed) the store; commit on success, close always.

    Raises:
        MeasurementError: the file is not a chipwise store, or was written by a newer version.
    """
    path = resolve_db(db)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path)
    except (OSError, sqlite3.Error) as err:
        raise MeasurementError(f"cannot open measurement store {path}: {err}") from err
    try:
        conn.row_factory = sqlite3.Row
        _ensure_schema(conn, path)
        yield conn
        conn.commit()
    except sqlite3.DatabaseError as err:
        raise MeasurementError(
            f"measurement store {path} is unreadable ({err}); pass another --db or move it away"
        ) from err
    finally:
        conn.close()


def _ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    conn.executescript(_SCHEMA)
    rows = conn.execute("SELECT version FROM schema_version").fetchall()
    if not rows:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        return
    version = int(rows[0]["version"])
    if version > SCHEMA_VERSION:
        raise MeasurementError(
            f"measurement store {path} has schema version {version}, newer than this chipwise "
            f"reads ({SCHEMA_VERSION}); upgrade chipwise or pass another --db"
        )


def check_store(db: str | Path | None = None) -> Path:
    """Open the store and take its write lock for a moment, so a benchmark run learns before
    measuring (not after) that its results could not be kept: a corrupt file, a newer
    schema, a read-only or locked store. Creates the store if it is new.

    Raises:
        MeasurementError: naming the store and the fix.
    """
    path = resolve_db(db)
    with connect(path) as conn:
        conn.commit()
        try:
            conn.execute("BEGIN IMMEDIATE")  # the lock a write needs, released at once
            conn.rollback()
        except sqlite3.Error as err:
            raise MeasurementError(
                f"measurement store {path} cannot be written ({err}); pass another --db, or "
                "--no-store to print the results only"
            ) from err
    return path


# Names tried per folder (chipwise-bench-<run>.json, -1, -2, ...) before giving up on it.
_FALLBACK_NAMES = 100


def save_fallback(
    measurements: Iterable[Measurement], *, run_id: str, reason: str, folder: Path | None = None
) -> Path:
    """Write measurements the store refused to a JSON file (as ``export_json``, plus why)
    and return its path: ``chipwise-bench-<run>.json`` in ``folder`` (default: the current
    directory), else in the temporary directory. Nothing measured is lost."""
    doc = {**export_json(measurements), "run_id": run_id, "not_stored_because": reason}
    text = json.dumps(doc, indent=2)
    stem = f"chipwise-bench-{''.join(c for c in run_id if c.isalnum() or c in '-_')[:64]}"
    tried: list[str] = []
    for where in (folder or Path.cwd(), Path(tempfile.gettempdir())):
        for n in range(_FALLBACK_NAMES):
            target = where / (f"{stem}.json" if n == 0 else f"{stem}-{n}.json")
            try:
                with open(target, "x", encoding="utf-8") as file:  # never overwrite
                    file.write(text)
                return target
            except FileExistsError:
                continue
            except OSError as err:
                tried.append(f"{target}: {err.strerror or err}")
                break
    raise MeasurementError(
        f"the results of run {run_id} could not be stored ({reason}) nor saved ({'; '.join(tried)})"
    )


def schema_version(db: str | Path | None = None) -> int:
    """The schema version stored in the file (creating the store if it is new)."""
    with connect(db) as conn:
        return int(conn.execute("SELECT version FROM schema_version").fetchone()["version"])


def add_measurements(db: str | Path | None, measurements: Iterable[Measurement]) -> int:
    """Append ``measurements`` to the store; returns how many were written."""
    rows = [tuple(getattr(m, c) for c in _MEASUREMENT_COLUMNS) for m in measurements]
    columns = ", ".join(_MEASUREMENT_COLUMNS)
    marks = ", ".join("?" for _ in _MEASUREMENT_COLUMNS)
    with connect(db) as conn:
        conn.executemany(f"INSERT INTO measurements ({columns}) VALUES ({marks})", rows)
    return len(rows)


def list_measurements(
    db: str | Path | None = None,
    *,
    device: str | None = None,
    benchmark: str | None = None,
    chip_id: str | None = None,
    dtype: str | None = None,
    run_id: str | None = None,
) -> tuple[Measurement, ...]:
    """Stored measurements, oldest first, filtered by every argument given.

    ``device`` matches a part of the device name or the chip id, case-insensitively
    (``"h100"`` finds ``"NVIDIA H100 80GB HBM3"``); the others match exactly.
    """
    if benchmark is not None and benchmark not in BENCHMARKS:
        raise MeasurementError(
            f"unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}"
        )
    if not resolve_db(db).exists():
        return ()  # a listing reads; it never creates a store
    where: list[str] = []
    args: list[str] = []
    if device is not None:
        where.append("(lower(device_name) LIKE ? OR lower(coalesce(chip_id, '')) = ?)")
        args += [f"%{device.lower()}%", device.lower()]
    for column, value in (
        ("benchmark", benchmark),
        ("chip_id", chip_id),
        ("dtype", dtype),
        ("run_id", run_id),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    sql = "SELECT * FROM measurements"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id"
    with connect(db) as conn:
        rows = conn.execute(sql, args).fetchall()
    return tuple(_measurement_from_row(r) for r in rows)


def _measurement_from_row(row: sqlite3.Row) -> Measurement:
    values: dict[str, Any] = {key: row[key] for key in row.keys()}  # noqa: SIM118
    return Measurement(**values)


def measurement_to_dict(m: Measurement) -> dict[str, Any]:
    """A measurement as plain JSON-ready values, columns in schema order."""
    return {"id": m.id, **{c: getattr(m, c) for c in _MEASUREMENT_COLUMNS}}


def export_json(measurements: Iterable[Measurement]) -> dict[str, Any]:
    """The ``--json`` document of a list of measurements (``schema_version`` + rows)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "measurements": [measurement_to_dict(m) for m in measurements],
    }


def export_json_text(db: str | Path | None = None, **filters: str | None) -> str:
    """The whole store (or a filtered part, as ``list_measurements``) as JSON text."""
    return json.dumps(export_json(list_measurements(db, **filters)), indent=2)


def add_calibration(db: str | Path | None, rows: Iterable[CalibrationRow]) -> int:
    """Append fitted parameters to the ``calibrations`` table; returns how many."""
    values = [tuple(getattr(r, c) for c in _CALIBRATION_COLUMNS) for r in rows]
    columns = ", ".join(_CALIBRATION_COLUMNS)
    marks = ", ".join("?" for _ in _CALIBRATION_COLUMNS)
    with connect(db) as conn:
        conn.executemany(f"INSERT INTO calibrations ({columns}) VALUES ({marks})", values)
    return len(values)


def latest_calibration(
    db: str | Path | None, *, chip_id: str | None = None, device_name: str | None = None
) -> tuple[CalibrationRow, ...]:
    """The rows of the most recent calibration run for a chip id (or, failing that, a
    device name); empty when the device was never calibrated."""
    if chip_id is None and device_name is None:
        raise MeasurementError("latest_calibration needs a chip id or a device name")
    column, key = ("chip_id", chip_id) if chip_id is not None else ("device_name", device_name)
    with connect(db) as conn:
        last = conn.execute(
            f"SELECT run_id FROM calibrations WHERE {column} = ? ORDER BY id DESC LIMIT 1", (key,)
        ).fetchone()
        if last is None:
            return ()
        rows = conn.execute(
            f"SELECT * FROM calibrations WHERE {column} = ? AND run_id = ? ORDER BY id",
            (key, last["run_id"]),
        ).fetchall()
    return tuple(CalibrationRow(**{k: r[k] for k in r.keys()}) for r in rows)  # noqa: SIM118
