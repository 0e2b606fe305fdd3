"""Calibration on synthetic measurements whose answers are known by construction."""

from pathlib import Path

import pytest

from chipwise.bench import store
from chipwise.bench.calibrate import (
    MeasuredDevice,
    MeasuredModel,
    calibrate,
    calibrated_efficiency,
    fit_measurements,
    fit_overhead_and_rate,
    load_calibration,
    load_measured_device,
    save_calibration,
)
from chipwise.bench.store import Measurement
from chipwise.errors import MeasurementError, UnsupportedOpError
from chipwise.hardware import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.workload.ir import Op, OpKind

from .conftest import make

H100 = chip("h100-sxm")  # bf16 989e12 FLOP/s, HBM 3.35e12 B/s, NVLink 450e9 B/s per chip


def gemm(n: int, flops_per_s: float, dtype: str = "bf16", **kw: object) -> Measurement:
    flops = 2.0 * n**3
    return make(benchmark="gemm", shape=f"{n}x{n}x{n}", dtype=dtype, flops=flops,
                time_s=flops / flops_per_s, time_s_min=flops / flops_per_s,
                achieved_flops_per_s=flops_per_s, **kw)  # fmt: skip


def copy(n_elements: int, overhead_s: float, bytes_per_s: float, **kw: object) -> Measurement:
    n_bytes = 2.0 * n_elements * 4  # read + write, fp32
    t = overhead_s + n_bytes / bytes_per_s
    return make(benchmark="copy", shape=str(n_elements), dtype="fp32", flops=0.0,
                n_bytes=n_bytes, time_s=t, time_s_min=t, achieved_flops_per_s=0.0,
                achieved_bytes_per_s=n_bytes / t, **kw)  # fmt: skip


def attention(flops_per_s: float) -> Measurement:
    flops = 4.0 * 4 * 16 * 4096**2 * 128
    return make(benchmark="attention", shape="4x16x4096x128", dtype="bf16", flops=flops,
                time_s=flops / flops_per_s, time_s_min=flops / flops_per_s,
                achieved_flops_per_s=flops_per_s)  # fmt: skip


def allreduce(devices: int, n_elements: int, latency_s: float, bus_per_s: float) -> Measurement:
    n_bytes = n_elements * 4.0
    bus = 2 * (devices - 1) / devices * n_bytes
    t = latency_s + bus / bus_per_s
    return make(benchmark="allreduce", shape=f"{devices}x{n_elements}", dtype="fp32",
                flops=0.0, n_bytes=n_bytes, time_s=t, time_s_min=t, achieved_flops_per_s=0.0,
                achieved_bytes_per_s=bus / t)  # fmt: skip


SYNTHETIC_H100 = [
    gemm(1024, 900e12),  # small: faster than the large ones, but not a "large shape"
    gemm(4096, 700e12),
    gemm(8192, 791.2e12),  # best large: 791.2 / 989 = 0.8
    gemm(8192, 60e12, dtype="fp32"),  # bf16 wins the dtype order
    attention(600e12),  # 600 / 989
    *(copy(n, 5e-6, 2.68e12) for n in (2**12, 2**20, 2**24, 2**28)),  # 2.68 / 3.35 = 0.8
    *(allreduce(8, n, 16e-6, 369e9) for n in (2**18, 2**22, 2**26)),  # 369 / 450 = 0.82
]


def _values(rows: list[Measurement]) -> dict[str, float]:
    values, _, _ = fit_measurements(rows, H100)
    return {v.field: v.value for v in values}


def test_fit_recovers_an_exact_line() -> None:
    sizes = [1e3, 1e6, 1e9]
    times = [3e-6 + s / 2e12 for s in sizes]
    overhead_s, rate = fit_overhead_and_rate(sizes, times)
    assert overhead_s == pytest.approx(3e-6, rel=1e-9)
    assert rate == pytest.approx(2e12, rel=1e-9)


def test_a_negative_intercept_is_clamped_and_the_rate_refitted_through_zero() -> None:
    # x/t = 1.111e9 and 1e9; through the origin with relative residuals the rate is
    # sum((x/t)^2) / sum(x/t) = (1.2346e18 + 1e18) / 2.1111e9 = 1.0585e9
    overhead_s, rate = fit_overhead_and_rate([1e6, 2e6], [0.9e-3, 2e-3])
    assert overhead_s == 0.0
    r = [1e6 / 0.9e-3, 2e6 / 2e-3]
    assert rate == pytest.approx(sum(x * x for x in r) / sum(r))


def test_one_size_cannot_fix_two_parameters() -> None:
    with pytest.raises(MeasurementError, match="two or more sizes"):
        fit_overhead_and_rate([1e6, 1e6], [1e-3, 1.1e-3])


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("gemm_peak_fraction", 791.2e12 / 989e12),
        ("attention_peak_fraction", 600e12 / 989e12),
        ("hbm_fraction", 2.68e12 / 3.35e12),
        ("launch_overhead_s", 5e-6),
        ("scale_up_fraction", 369e9 / 450e9),
        ("collective_latency_s", 16e-6 / (2 * 7)),  # intercept over a ring's 2 (d-1) steps
        ("measured.gemm_flops_per_s.fp32", 60e12),
        ("measured.bytes_per_s", 2.68e12),
    ],
)
def test_synthetic_h100_measurements_give_the_hand_computed_values(
    field: str, expected: float
) -> None:
    assert _values(SYNTHETIC_H100)[field] == pytest.approx(expected, rel=1e-9)


def test_a_measurement_above_the_datasheet_is_capped_with_a_note() -> None:
    values, _, notes = fit_measurements([copy(n, 1e-6, 4e12) for n in (2**20, 2**26)], H100)
    assert {v.field: v.value for v in values}["hbm_fraction"] == 1.0
    assert any("hbm_fraction measured 1.194" in n for n in notes)


def test_without_gemm_or_copy_the_notes_say_what_was_not_calibrated() -> None:
    _, _, notes = fit_measurements([attention(500e12)], H100)
    assert any("gemm_peak_fraction not calibrated" in n for n in notes)
    assert any("hbm_fraction and launch_overhead_s not calibrated" in n for n in notes)


def test_calibrate_saves_and_load_calibration_returns_a_full_efficiency(db: Path) -> None:
    store.add_measurements(db, SYNTHETIC_H100)
    cal = calibrate(db, chip_id="H100")  # an alias
    assert cal.chip_id == "h100-sxm"
    assert save_calibration(db, cal) == len(cal.values)
    eff = load_calibration("h100-sxm", db)
    assert eff is not None
    assert eff.gemm_peak_fraction == pytest.approx(0.8)
    assert eff.hbm_fraction == pytest.approx(0.8)
    packaged = efficiency_for(H100)
    assert eff.scale_out_fraction == packaged.scale_out_fraction  # not measurable here
    assert "chipwise calibrate" in eff.sources["hbm_fraction"]
    assert eff == cal.efficiency
    assert calibrated_efficiency("h100", db) == eff


def test_a_chip_never_calibrated_has_no_calibration(db: Path) -> None:
    assert load_calibration("h100-sxm", db) is None


def test_calibrating_a_chip_without_measurements_says_how_to_get_them(db: Path) -> None:
    with pytest.raises(MeasurementError, match="no measurements of h100-sxm"):
        calibrate(db, chip_id="h100")


def test_an_ambiguous_device_name_lists_the_candidates(db: Path) -> None:
    store.add_measurements(db, [gemm(4096, 7e14), gemm(4096, 6e14, device_name="NVIDIA H100 PCIe")])
    with pytest.raises(MeasurementError, match="several devices"):
        calibrate(db, device="h100")


def test_a_cpu_is_described_by_its_own_measurements(db: Path) -> None:
    cpu = {"device_name": "Test CPU", "device_kind": "cpu", "chip_id": None}
    rows = [gemm(256, 5e10, dtype="fp32", **cpu), gemm(512, 8e10, dtype="fp32", **cpu),
            *(copy(n, 2e-6, 2e10, **cpu) for n in (2**10, 2**16, 2**22))]  # fmt: skip
    store.add_measurements(db, rows)
    cal = calibrate(db)  # the latest measured device
    assert cal.chip_id is None and cal.efficiency is None
    save_calibration(db, cal)
    device = load_measured_device("Test CPU", db)
    assert device == MeasuredDevice(
        device_name="Test CPU", kind="cpu", gemm_flops_per_s={"fp32": pytest.approx(8e10)},
        attention_flops_per_s={}, bytes_per_s=pytest.approx(2e10),
        launch_overhead_s=pytest.approx(2e-6),
    )  # fmt: skip


def test_the_measured_model_is_a_roofline_at_measured_rates_plus_overhead() -> None:
    device = MeasuredDevice(device_name="Test CPU", kind="cpu", gemm_flops_per_s={"fp32": 1e11},
                            attention_flops_per_s={}, bytes_per_s=1e10,
                            launch_overhead_s=1e-6)  # fmt: skip
    model = MeasuredModel(device)
    op = Op(name="mm", kind=OpKind.MATMUL, dtype="fp32", mnk=(100, 100, 100), count=3)
    t = model.op_time(op)
    # compute 2e6 / 1e11 = 2e-5 s beats memory 3 * 1e4 * 4 / 1e10 = 1.2e-5 s; + 1e-6 overhead
    assert t.seconds == pytest.approx(3 * (2e-5 + 1e-6))
    assert t.bound == "compute"
    with pytest.raises(UnsupportedOpError, match="--dtypes bf16"):
        model.op_time(Op(name="mm", kind=OpKind.MATMUL, dtype="bf16", mnk=(8, 8, 8)))
