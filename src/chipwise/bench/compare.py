"""Compare stored measurements with what the performance model predicts for the same work.

Every stored measurement of a catalog chip becomes one row: the measured median time, the
model's time for the same primitive on that chip, and the error ``predicted / measured - 1``
(positive: the model is too slow). GEMM, copy and all-reduce go through
``perf.primitives.predict_primitive`` (the same path as ``chipwise predict matmul:...``);
element-wise, reduction and attention through the chip's per-op model
(``perf.models.model_for``) with the op counted as ``micro.py`` counts it.

This backs ``chipwise validate --measured`` and ``chipwise bench compare``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chipwise.bench import store
from chipwise.bench.calibrate import load_calibration
from chipwise.bench.store import Measurement
from chipwise.errors import ChipwiseError, MeasurementError
from chipwise.hardware import Chip, default_catalog
from chipwise.perf import Efficiency, model_for, predict_primitive
from chipwise.units import dtype_bytes
from chipwise.workload.ir import Op, OpKind, Primitive


@dataclass(frozen=True, slots=True, kw_only=True)
class ComparisonRow:
    """One measurement next to the model's prediction of it."""

    measurement_id: int | None
    chip_id: str
    benchmark: str
    shape: str
    dtype: str
    measured_s: float
    predicted_s: float
    bound: str  # what the model says limits it: compute | memory | overhead | communication

    @property
    def error(self) -> float:
        """``predicted / measured - 1``: +0.1 means the model is 10 % too slow."""
        return self.predicted_s / self.measured_s - 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """All rows, the error summary, and the measurements that could not be compared."""

    rows: tuple[ComparisonRow, ...]
    calibrated: bool  # predictions used the store's calibrated efficiencies
    skipped: tuple[str, ...] = ()

    @property
    def median_abs_error(self) -> float:
        return _percentile(self.rows, 50)

    @property
    def p90_abs_error(self) -> float:
        return _percentile(self.rows, 90)


def _percentile(rows: Sequence[ComparisonRow], q: float) -> float:
    if not rows:
        return float("nan")
    return float(np.percentile([abs(r.error) for r in rows], q))


def _dims(m: Measurement) -> list[int]:
    return [int(d) for d in m.shape.split("x")]


def predict_measurement(
    m: Measurement, chip: Chip, efficiency: Efficiency | None = None
) -> tuple[float, str]:
    """The model's seconds (and bound) for the work of measurement ``m`` on ``chip``."""
    if m.benchmark == "gemm":
        mm, nn, kk = _dims(m)
        p = predict_primitive(
            Primitive(kind="matmul", mnk=(mm, nn, kk), dtype=m.dtype), chip, efficiency=efficiency
        )
        return p.time_s, p.bound
    if m.benchmark == "copy":
        # the store counts read + write; a copy primitive is sized by ONE array
        one_array = Primitive(kind="copy", n_bytes=m.n_bytes / 2, dtype=m.dtype)
        p = predict_primitive(one_array, chip, efficiency=efficiency)
        return p.time_s, p.bound
    if m.benchmark == "allreduce":
        devices = _dims(m)[0]
        p = predict_primitive(
            Primitive(kind="allreduce", n_bytes=m.n_bytes, dtype=m.dtype),
            chip,
            chips=devices,
            efficiency=efficiency,
        )
        return p.time_s, p.bound
    op = _as_op(m)
    t = model_for(chip, efficiency).op_time(op)
    return t.seconds, t.bound


def _as_op(m: Measurement) -> Op:
    """An element-wise, reduction or attention measurement as the model's op."""
    if m.benchmark == "elementwise":  # 3 reads, 1 write (micro.py)
        return Op(name=m.shape, kind=OpKind.ELEMENTWISE, dtype=m.dtype, flops=m.flops,
                  bytes_read=m.n_bytes * 3 / 4, bytes_written=m.n_bytes / 4)  # fmt: skip
    if m.benchmark == "reduction":
        return Op(name=m.shape, kind=OpKind.REDUCTION, dtype=m.dtype, flops=m.flops,
                  bytes_read=m.n_bytes, bytes_written=dtype_bytes(m.dtype))  # fmt: skip
    if m.benchmark == "attention":  # q, k, v read, o written
        b, h, s, dh = _dims(m)
        return Op(name=m.shape, kind=OpKind.ATTENTION, dtype=m.dtype, flops=m.flops,
                  bytes_read=m.n_bytes * 3 / 4, bytes_written=m.n_bytes / 4,
                  shape=(b, h, s, dh))  # fmt: skip
    raise MeasurementError(f"no model comparison for benchmark {m.benchmark!r}")


def compare_measured(
    db: str | Path | None = None,
    *,
    chip_id: str | None = None,
    benchmark: str | None = None,
    calibrated: bool = False,
) -> Comparison:
    """Compare every stored measurement of a catalog chip with the model's prediction.

    Args:
        db: the measurement store (default: ``$CHIPWISE_DB`` or the user data dir).
        chip_id: only this chip (id or alias).
        benchmark: only this benchmark.
        calibrated: predict with the store's calibrated efficiencies where a chip has them
            (in-sample: the calibration was fitted to these same measurements).

    Measurements of devices outside the catalog (CPUs) are not compared; a measurement the
    model cannot time (a dtype the chip lacks) is listed in ``skipped``.
    """
    catalog = default_catalog()
    wanted = catalog.chip(chip_id).id if chip_id is not None else None
    rows: list[ComparisonRow] = []
    skipped: list[str] = []
    efficiencies: dict[str, Efficiency | None] = {}
    for m in store.list_measurements(db, chip_id=wanted, benchmark=benchmark):
        if m.chip_id is None:
            continue
        chip = catalog.chip(m.chip_id)
        if calibrated and chip.id not in efficiencies:
            efficiencies[chip.id] = load_calibration(chip.id, db)
        try:
            seconds, bound = predict_measurement(m, chip, efficiencies.get(chip.id))
        except ChipwiseError as err:
            skipped.append(f"#{m.id} {m.benchmark} {m.shape} {m.dtype}: {err}")
            continue
        rows.append(
            ComparisonRow(measurement_id=m.id, chip_id=chip.id, benchmark=m.benchmark,
                          shape=m.shape, dtype=m.dtype, measured_s=m.time_s,
                          predicted_s=seconds, bound=bound)
        )  # fmt: skip
    return Comparison(rows=tuple(rows), calibrated=calibrated, skipped=tuple(skipped))


def row_to_dict(r: ComparisonRow) -> dict[str, object]:
    return {
        "measurement_id": r.measurement_id, "chip_id": r.chip_id, "benchmark": r.benchmark,
        "shape": r.shape, "dtype": r.dtype, "measured_s": r.measured_s,
        "predicted_s": r.predicted_s, "error": r.error, "bound": r.bound,
    }  # fmt: skip


def comparison_to_dict(c: Comparison) -> dict[str, object]:
    """The ``--json`` document of a comparison (errors are ``null`` when there are no rows)."""
    return {
        "schema_version": store.SCHEMA_VERSION,
        "calibrated": c.calibrated,
        "n": len(c.rows),
        "median_abs_error": c.median_abs_error if c.rows else None,
        "p90_abs_error": c.p90_abs_error if c.rows else None,
        "rows": [row_to_dict(r) for r in c.rows],
        "skipped": list(c.skipped),
    }
