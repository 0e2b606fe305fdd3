from pathlib import Path

import pytest

from chipwise.bench import store
from chipwise.bench.calibrate import calibrate, save_calibration
from chipwise.bench.compare import (
    Comparison,
    ComparisonRow,
    compare_measured,
    comparison_to_dict,
    predict_measurement,
)
from chipwise.hardware import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.primitives import predict_primitive
from chipwise.workload.ir import Primitive

from .conftest import make
from .test_calibrate import copy, gemm

H100 = chip("h100-sxm")


def _row(measured_s: float, predicted_s: float) -> ComparisonRow:
    return ComparisonRow(measurement_id=1, chip_id="h100-sxm", benchmark="gemm", shape="1x1x1",
                         dtype="bf16", measured_s=measured_s, predicted_s=predicted_s,
                         bound="compute")  # fmt: skip


def test_error_is_predicted_over_measured_minus_one() -> None:
    assert _row(2.0, 2.5).error == pytest.approx(0.25)
    assert _row(2.0, 1.0).error == pytest.approx(-0.5)


def test_median_and_p90_of_absolute_errors() -> None:
    rows = tuple(_row(1.0, 1.0 + e) for e in (0.1, -0.2, 0.3, -0.4, 0.5))
    c = Comparison(rows=rows, calibrated=False)
    assert c.median_abs_error == pytest.approx(0.3)
    assert c.p90_abs_error == pytest.approx(0.46)  # linear between 0.4 and 0.5
    assert comparison_to_dict(Comparison(rows=(), calibrated=False))["median_abs_error"] is None


def test_a_gemm_row_uses_the_same_prediction_as_chipwise_predict(db: Path) -> None:
    store.add_measurements(db, [gemm(4096, 7e14)])
    (row,) = compare_measured(db).rows
    expected = predict_primitive(Primitive(kind="matmul", mnk=(4096, 4096, 4096)), H100)
    assert row.predicted_s == expected.time_s
    assert row.error == pytest.approx(expected.time_s / (2 * 4096**3 / 7e14) - 1)


def test_a_copy_row_is_sized_by_one_array(db: Path) -> None:
    m = copy(2**26, 5e-6, 2.9e12)
    seconds, bound = predict_measurement(m, H100)
    one = predict_primitive(Primitive(kind="copy", n_bytes=2**26 * 4, dtype="fp32"), H100)
    assert (seconds, bound) == (one.time_s, "memory")


def test_cpus_are_left_out_and_unknown_dtypes_are_skipped_with_a_reason(db: Path) -> None:
    store.add_measurements(
        db,
        [
            gemm(1024, 1e11, dtype="fp32", device_name="Test CPU", device_kind="cpu",
                 chip_id=None),
            gemm(1024, 1e14, dtype="fp8", chip_id="v100", device_name="Tesla V100-SXM2-16GB"),
            gemm(1024, 5e14),
        ],
    )  # fmt: skip
    result = compare_measured(db)
    assert [r.chip_id for r in result.rows] == ["h100-sxm"]
    (reason,) = result.skipped
    assert "v100 has no fp8" in reason


@pytest.mark.parametrize("kind", ["elementwise", "reduction"])
def test_memory_kernels_are_predicted_at_the_efficient_bandwidth(kind: str) -> None:
    eff = efficiency_for(H100)
    m = make(benchmark=kind, shape="268435456", dtype="fp32", flops=2**28, n_bytes=2**30)
    seconds, bound = predict_measurement(m, H100)
    assert bound == "memory"
    # the reduction also writes one fp32 scalar
    n_bytes = 2**30 + (4 if kind == "reduction" else 0)
    expected = n_bytes / (H100.hbm_bytes_per_s * eff.hbm_fraction) + eff.launch_overhead_s
    assert seconds == pytest.approx(expected)


def test_attention_is_predicted_at_the_attention_fraction_of_peak() -> None:
    eff = efficiency_for(H100)
    flops = 4.0 * 4 * 16 * 4096**2 * 128
    m = make(benchmark="attention", shape="4x16x4096x128", dtype="bf16", flops=flops,
             n_bytes=4.0 * 4 * 16 * 4096 * 128 * 2)  # fmt: skip
    seconds, bound = predict_measurement(m, H100)
    assert bound == "compute"
    expected = flops / (989e12 * eff.attention_peak_fraction) + eff.launch_overhead_s
    assert seconds == pytest.approx(expected)


def test_calibrated_copy_predictions_reproduce_measurements_of_the_model_form(db: Path) -> None:
    # time = overhead + bytes / bw is the model's copy form, so after calibration the
    # prediction matches each synthetic copy; the packaged efficiency does not.
    rows = [copy(n, 4e-6, 2.5e12) for n in (2**14, 2**20, 2**24, 2**28)]
    store.add_measurements(db, rows)
    save_calibration(db, calibrate(db, chip_id="h100-sxm"))
    calibrated = compare_measured(db, calibrated=True)
    assert calibrated.calibrated
    assert max(abs(r.error) for r in calibrated.rows) < 1e-9
    assert compare_measured(db).median_abs_error > 0.01
