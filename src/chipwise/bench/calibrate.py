"""Fit the performance model's efficiency parameters to stored measurements.

For a device in the catalog, each fitted value replaces the packaged one in
``perf.efficiency.Efficiency`` (the field names are ``chipwise.perf.EFFICIENCY_PARAMETERS``):

=================== ==========================================================================
field               fitted as
=================== ==========================================================================
gemm_peak_fraction  best achieved GEMM FLOP/s over the large shapes (M N K >= 2048^3, else
                    all shapes) / the catalog's dense peak for that dtype: the "MAMF" the
                    packaged values also are. dtype: the first measured of bf16, fp16,
                    tf32, fp32.
attention_peak_     best achieved attention FLOP/s (4 B H S^2 Dh, forward, non-causal) /
fraction            dense peak, same dtype order
hbm_fraction        copy bandwidth / catalog HBM bandwidth, where time = overhead + bytes / bw
launch_overhead_s   is fitted by least squares over the copy sizes (each point weighted by
                    1 / time, so small and large sizes count alike)
scale_up_fraction   all-reduce bus bandwidth / scale-up link rate, and the intercept over the
collective_latency  ring's 2 (d-1) steps, from time = intercept + bus bytes / bw (needs 2+
_s                  local devices)
=================== ==========================================================================

Fractions are capped at 1 (the model requires it) with a note when the measurement beat the
catalog figure. For a device the catalog lacks (a CPU), the same fits describe the device
itself (``MeasuredDevice``: its best GEMM rate per dtype, its bandwidth and overhead), which
``MeasuredModel`` turns into a roofline that ``profile`` can time a graph with.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import final

import numpy as np

from chipwise.bench import store
from chipwise.bench.store import CalibrationRow, Measurement
from chipwise.errors import MeasurementError, UnsupportedOpError
from chipwise.hardware import Chip, Interconnect, default_catalog
from chipwise.perf import (
    EFFICIENCY_PARAMETERS,
    Assumption,
    Efficiency,
    OpTime,
    PerfModel,
    efficiency_for,
    op_bytes,
    op_flops,
    roof,
    timed,
)
from chipwise.workload.ir import Op, OpKind

# A GEMM counts as large from 2048^3 multiply-adds: on every catalog GPU that is at least a
# few waves of tiles, where the MAMF tables find the best rates (stas00/ml-engineering).
LARGE_GEMM_MNK = 2048**3
# The dtype whose GEMM rate sets gemm_peak_fraction, first measured wins: the tensor-core
# dtypes the packaged fractions were measured in (MAMF tables are bf16) come first.
GEMM_DTYPE_ORDER: tuple[str, ...] = ("bf16", "fp16", "tf32", "fp32", "fp64")
MEASURED_PREFIX = "measured."  # calibration rows that describe the device, not Efficiency


@dataclass(frozen=True, slots=True, kw_only=True)
class FittedValue:
    """One fitted quantity, from how many measurements, and how."""

    field: str
    value: float
    n_points: int
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasuredDevice:
    """A device described by its own measurements (for one the catalog lacks, e.g. a CPU)."""

    device_name: str
    kind: str
    gemm_flops_per_s: Mapping[str, float]  # best measured, per dtype
    attention_flops_per_s: Mapping[str, float]
    bytes_per_s: float  # fitted copy bandwidth (read + write bytes)
    launch_overhead_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """What ``calibrate`` fitted for one device."""

    run_id: str
    timestamp: str
    device_name: str
    chip_id: str | None
    values: tuple[FittedValue, ...]
    efficiency: Efficiency | None  # catalog chips: packaged values with the fitted ones in
    measured: MeasuredDevice
    notes: tuple[str, ...] = ()

    def value(self, name: str) -> float | None:
        return next((v.value for v in self.values if v.field == name), None)


def fit_overhead_and_rate(sizes: Sequence[float], times_s: Sequence[float]) -> tuple[float, float]:
    """Fit ``time = overhead_s + size / rate`` by least squares; returns (overhead_s, rate).

    Residuals are relative (each row divided by its time), so a 1 KiB and a 1 GiB copy weigh
    the same. A negative intercept (noise at small sizes) is clamped to 0 and the rate refitted
    through the origin.

    Raises:
        MeasurementError: fewer than two distinct sizes, or a non-positive fitted rate.
    """
    x = np.asarray(sizes, dtype=float)
    t = np.asarray(times_s, dtype=float)
    if len(set(x.tolist())) < 2:
        raise MeasurementError(
            "fitting overhead and bandwidth needs two or more sizes; run 'chipwise bench' "
            "without --only, or with the copy benchmark"
        )
    w = 1.0 / t
    design = np.column_stack([np.ones_like(x), x]) * w[:, None]
    (overhead_s, inv_rate), *_ = np.linalg.lstsq(design, t * w, rcond=None)
    if overhead_s < 0:
        overhead_s = 0.0
        inv_rate = float(np.sum(w * w * x * t) / np.sum(w * w * x * x))
    if inv_rate <= 0:
        raise MeasurementError(
            "fitted bandwidth is not positive: the timings do not grow with size"
        )
    return float(overhead_s), float(1.0 / inv_rate)


def _gemm_mnk(m: Measurement) -> int:
    dims = [int(d) for d in m.shape.split("x")]
    return dims[0] * dims[1] * dims[2]


def _best_rate(rows: Sequence[Measurement], *, large_only: bool) -> tuple[Measurement, int]:
    chosen = list(rows)
    if large_only:
        large = [m for m in rows if _gemm_mnk(m) >= LARGE_GEMM_MNK]
        chosen = large or chosen
    return max(chosen, key=lambda m: m.achieved_flops_per_s), len(chosen)


def _cap(name: str, value: float, notes: list[str]) -> float:
    if value > 1.0:
        notes.append(f"{name} measured {value:.3f} > 1 (the catalog figure is beaten); capped at 1")
        return 1.0
    return value


def _pick_dtype(by_dtype: Mapping[str, object]) -> str | None:
    return next((d for d in GEMM_DTYPE_ORDER if d in by_dtype), None)


def _by_dtype(
    rows: Sequence[Measurement], *, large_only: bool
) -> dict[str, tuple[Measurement, int]]:
    """The best-rate row per dtype, and how many rows it was chosen from."""
    groups: dict[str, list[Measurement]] = {}
    for m in rows:
        groups.setdefault(m.dtype, []).append(m)
    return {d: _best_rate(ms, large_only=large_only) for d, ms in groups.items()}


def _fit_tensor(
    what: str, best: Mapping[str, tuple[Measurement, int]], chip: Chip | None, notes: list[str]
) -> list[FittedValue]:
    """``measured.<what>_flops_per_s.<dtype>`` rows, and ``<what>_peak_fraction``."""
    values = [
        FittedValue(field=f"{MEASURED_PREFIX}{what}_flops_per_s.{d}",
                    value=m.achieved_flops_per_s, n_points=n, note=f"best: {m.shape}")
        for d, (m, n) in best.items()
    ]  # fmt: skip
    dtype = _pick_dtype(best)
    if chip is None or dtype is None:
        return values
    if not chip.supports(dtype):
        notes.append(f"{chip.id} has no {dtype} peak in the catalog; {what} not calibrated")
        return values
    m, n = best[dtype]
    peak = chip.peak_flops_per_s(dtype)
    name = f"{what}_peak_fraction"
    values.append(
        FittedValue(
            field=name,
            value=_cap(name, m.achieved_flops_per_s / peak, notes),
            n_points=n,
            note=f"{dtype} {m.shape}: {m.achieved_flops_per_s:.4g} of {peak:.4g} FLOP/s",
        )
    )
    return values


def _fit_copy(
    copies: Sequence[Measurement], chip: Chip | None, notes: list[str]
) -> tuple[list[FittedValue], float, float]:
    """Bandwidth and overhead from the copy sweep; (values, bytes_per_s, overhead_s)."""
    if not copies:
        notes.append("no copy measurements: hbm_fraction and launch_overhead_s not calibrated")
        return [], 0.0, 0.0
    overhead_s, bytes_per_s = fit_overhead_and_rate(
        [m.n_bytes for m in copies], [m.time_s for m in copies]
    )
    n = len(copies)
    values = [
        FittedValue(field=f"{MEASURED_PREFIX}bytes_per_s", value=bytes_per_s, n_points=n,
                    note="copy fit slope"),
        FittedValue(field="launch_overhead_s", value=overhead_s, n_points=n,
                    note="copy fit intercept"),
    ]  # fmt: skip
    if chip is not None:
        fraction = bytes_per_s / chip.hbm_bytes_per_s
        values.append(
            FittedValue(
                field="hbm_fraction",
                value=_cap("hbm_fraction", fraction, notes),
                n_points=n,
                note=f"{bytes_per_s:.4g} of {chip.hbm_bytes_per_s:.4g} B/s",
            )
        )
    return values, bytes_per_s, overhead_s


def _fit_allreduce(
    reduces: Sequence[Measurement], chip: Chip, notes: list[str]
) -> list[FittedValue]:
    """Scale-up efficiency and per-step latency from an all-reduce sweep (NCCL bus bytes)."""
    devices = int(reduces[0].shape.split("x")[0])
    if devices < 2 or len({m.shape for m in reduces}) < 2:
        notes.append("all-reduce needs 2+ devices and 2+ sizes; scale_up not calibrated")
        return []
    bus = [m.achieved_bytes_per_s * m.time_s for m in reduces]
    latency_s, bus_bytes_per_s = fit_overhead_and_rate(bus, [m.time_s for m in reduces])
    link = chip.scale_up.bytes_per_s_per_chip
    steps = 2 * (devices - 1)  # ring all-reduce: reduce-scatter + all-gather
    return [
        FittedValue(
            field="scale_up_fraction",
            value=_cap("scale_up_fraction", bus_bytes_per_s / link, notes),
            n_points=len(bus),
            note=f"bus {bus_bytes_per_s:.4g} of {link:.4g} B/s over {devices} devices",
        ),
        FittedValue(
            field="collective_latency_s",
            value=latency_s / steps,
            n_points=len(bus),
            note=f"intercept / {steps} ring steps",
        ),
    ]


def fit_measurements(
    rows: Sequence[Measurement], chip: Chip | None
) -> tuple[tuple[FittedValue, ...], MeasuredDevice, tuple[str, ...]]:
    """Fit every parameter the measurements allow (see the module table). Pure."""
    if not rows:
        raise MeasurementError("no measurements to calibrate from; run 'chipwise bench' first")
    notes: list[str] = []
    by_bench: dict[str, list[Measurement]] = {}
    for m in rows:
        by_bench.setdefault(m.benchmark, []).append(m)
    gemm = _by_dtype(by_bench.get("gemm", []), large_only=True)
    attention = _by_dtype(by_bench.get("attention", []), large_only=False)
    if not gemm:
        notes.append("no GEMM measurements: gemm_peak_fraction not calibrated")
    values = _fit_tensor("gemm", gemm, chip, notes) + _fit_tensor("attention", attention, chip,
                                                                   notes)  # fmt: skip
    copy_values, bytes_per_s, overhead_s = _fit_copy(by_bench.get("copy", []), chip, notes)
    values += copy_values
    if chip is not None and by_bench.get("allreduce"):
        values += _fit_allreduce(by_bench["allreduce"], chip, notes)
    last = rows[-1]
    measured = MeasuredDevice(
        device_name=last.device_name,
        kind=last.device_kind,
        gemm_flops_per_s={d: m.achieved_flops_per_s for d, (m, _) in gemm.items()},
        attention_flops_per_s={d: m.achieved_flops_per_s for d, (m, _) in attention.items()},
        bytes_per_s=bytes_per_s,
        launch_overhead_s=overhead_s,
    )
    return tuple(values), measured, tuple(notes)


def _select(
    db: str | Path | None, chip_id: str | None, device: str | None
) -> tuple[tuple[Measurement, ...], Chip | None]:
    """The measurements of one device: a chip id, a device name part, else the latest run's."""
    if chip_id is not None:
        chip = default_catalog().chip(chip_id)
        rows = store.list_measurements(db, chip_id=chip.id)
        if not rows:
            raise MeasurementError(
                f"no measurements of {chip.id} in {store.resolve_db(db)}; run 'chipwise bench' "
                f"on one (or see 'chipwise bench list')"
            )
        return rows, chip
    rows = store.list_measurements(db, device=device)
    if not rows:
        where = f" matching {device!r}" if device else ""
        raise MeasurementError(
            f"no measurements{where} in {store.resolve_db(db)}; run 'chipwise bench' first"
        )
    names = list(dict.fromkeys(m.device_name for m in rows))
    if device is not None and len(names) > 1:
        raise MeasurementError(
            f"{device!r} matches several devices ({'; '.join(names)}); be more specific"
        )
    name = rows[-1].device_name
    rows = tuple(m for m in rows if m.device_name == name)
    known = rows[-1].chip_id
    return rows, default_catalog().chip(known) if known else None


def calibrate(
    db: str | Path | None = None, *, chip_id: str | None = None, device: str | None = None
) -> Calibration:
    """Fit efficiency parameters for one measured device (nothing is written; see ``save``).

    Args:
        db: the measurement store (default: ``$CHIPWISE_DB`` or the user data dir).
        chip_id: calibrate this catalog chip (id or alias) from its measurements.
        device: else a part of a device name; else the device of the latest measurement.
    """
    rows, chip = _select(db, chip_id, device)
    values, measured, notes = fit_measurements(rows, chip)
    now = dt.datetime.now(dt.UTC)
    run_id = f"cal-{now:%Y%m%dT%H%M%S}-{rows[-1].run_id[-8:]}"
    timestamp = now.isoformat(timespec="seconds")
    efficiency = None
    if chip is not None:
        fitted = {v.field: v.value for v in values if v.field in EFFICIENCY_PARAMETERS}
        efficiency = efficiency_for(chip).with_values(
            source=f"chipwise calibrate {run_id} ({rows[0].device_name})", **fitted
        )
    return Calibration(
        run_id=run_id,
        timestamp=timestamp,
        device_name=rows[-1].device_name,
        chip_id=chip.id if chip else None,
        values=values,
        efficiency=efficiency,
        measured=measured,
        notes=notes,
    )


def save_calibration(db: str | Path | None, cal: Calibration) -> int:
    """Write ``cal``'s fitted values to the store's ``calibrations`` table."""
    rows = [
        CalibrationRow(run_id=cal.run_id, timestamp=cal.timestamp, chip_id=cal.chip_id,
                       device_name=cal.device_name, device_kind=cal.measured.kind,
                       field=v.field, value=v.value, n_points=v.n_points, note=v.note)
        for v in cal.values
    ]  # fmt: skip
    return store.add_calibration(db, rows)


def load_calibration(chip_id: str, db: str | Path | None = None) -> Efficiency | None:
    """The packaged ``Efficiency`` of ``chip_id`` with its latest calibrated values in, or
    ``None`` if the chip was never calibrated in ``db``."""
    chip = default_catalog().chip(chip_id)
    rows = store.latest_calibration(db, chip_id=chip.id)
    fitted = {r.field: r.value for r in rows if r.field in EFFICIENCY_PARAMETERS}
    if not fitted:
        return None
    source = f"chipwise calibrate {rows[0].run_id} ({rows[0].timestamp}, {rows[0].device_name})"
    return efficiency_for(chip).with_values(source=source, **fitted)


def calibrated_efficiency(chip_id: str, db: str | Path | None = None) -> Efficiency | None:
    """For ``predict --calibrated``: ``load_calibration`` under the name predict uses."""
    return load_calibration(chip_id, db)


def load_measured_device(device_name: str, db: str | Path | None = None) -> MeasuredDevice | None:
    """The latest calibration of a device by its exact name, as a ``MeasuredDevice``."""
    rows = store.latest_calibration(db, device_name=device_name)
    if not rows:
        return None
    by_field = {r.field: r.value for r in rows}

    def per_dtype(prefix: str) -> dict[str, float]:
        key = f"{MEASURED_PREFIX}{prefix}."
        return {f.removeprefix(key): v for f, v in by_field.items() if f.startswith(key)}

    return MeasuredDevice(
        device_name=device_name,
        kind=rows[0].device_kind,
        gemm_flops_per_s=per_dtype("gemm_flops_per_s"),
        attention_flops_per_s=per_dtype("attention_flops_per_s"),
        bytes_per_s=by_field.get(f"{MEASURED_PREFIX}bytes_per_s", 0.0),
        launch_overhead_s=by_field.get("launch_overhead_s", 0.0),
    )


def measured_chip(device: MeasuredDevice) -> Chip:
    """A ``Chip`` whose peaks are what ``device`` measured (for ``MeasuredModel``)."""
    if not device.gemm_flops_per_s or device.bytes_per_s <= 0:
        raise MeasurementError(
            f"{device.device_name}: calibrating a device needs GEMM and copy measurements; "
            "run 'chipwise bench' without --only"
        )
    none = Interconnect(name="none", bytes_per_s_per_chip=0.0, topology="none")
    return Chip(
        id="measured", name=device.device_name, vendor="unknown", kind=device.kind,
        architecture="measured", aliases=(), dense_flops_per_s=dict(device.gemm_flops_per_s),
        hbm_capacity_bytes=0.0, hbm_bytes_per_s=device.bytes_per_s, memory_type="measured",
        unit_name="device", units=1, matrix_units_per_unit=None, matrix_unit_dim=None,
        clock_hz=None, l2_bytes=None, sram_per_unit_bytes=None, vector_flops_per_s=None,
        tdp_w=0.0, typical_w=None, scale_up=none, scale_out=None, clouds=(), purchasable=False,
        software=(), release_year=0, notes="peaks are chipwise bench measurements",
    )  # fmt: skip


@final
class MeasuredModel(PerfModel):
    """The roofline at a measured device's own rates plus its per-op overhead.

    Tensor ops run at the best GEMM rate measured in their dtype (attention at the measured
    attention rate when there is one); other FLOPs at the fp32 GEMM rate (an upper bound);
    bytes at the fitted copy bandwidth. A dtype that was not measured is an error, never a
    fallback to another dtype.
    """

    def __init__(self, device: MeasuredDevice) -> None:
        super().__init__(measured_chip(device))
        self.device = device

    def _rate(self, op: Op) -> float:
        rates = self.device.gemm_flops_per_s
        if op.kind is OpKind.ATTENTION and op.dtype in self.device.attention_flops_per_s:
            return self.device.attention_flops_per_s[op.dtype]
        dtype = op.dtype if op.tensor_op else "fp32"
        if dtype not in rates:
            raise UnsupportedOpError(
                f"{self.device.device_name}: no {dtype} GEMM measured (have: "
                f"{', '.join(rates)}); run 'chipwise bench --dtypes {dtype}' and calibrate"
            )
        return rates[dtype]

    def op_time(self, op: Op) -> OpTime:
        flops, n_bytes = op_flops(op), op_bytes(op)
        rate = self._rate(op) if flops else 0.0
        bandwidth = self.device.bytes_per_s
        r = roof(flops, n_bytes, rate, bandwidth, self.device.launch_overhead_s)
        return timed(op, r, flops=flops, n_bytes=n_bytes, peak=rate, bandwidth=bandwidth)

    def assumptions(self) -> tuple[Assumption, ...]:
        d = self.device
        source = f"chipwise bench on {d.device_name}"
        return (
            *(Assumption(name=f"gemm_flops_per_s.{k}", value=v, source=source)
              for k, v in d.gemm_flops_per_s.items()),
            Assumption(name="bytes_per_s", value=d.bytes_per_s, source=source),
            Assumption(name="launch_overhead_s", value=d.launch_overhead_s, source=source),
        )  # fmt: skip


__all__ = [
    "Calibration",
    "FittedValue",
    "MeasuredDevice",
    "MeasuredModel",
    "calibrate",
    "calibrated_efficiency",
    "fit_measurements",
    "fit_overhead_and_rate",
    "load_calibration",
    "load_measured_device",
    "measured_chip",
    "save_calibration",
]
