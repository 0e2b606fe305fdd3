"""The plain roofline and its shared helpers."""

from __future__ import annotations

import dataclasses

import pytest

from chipwise.errors import UnsupportedOpError
from chipwise.hardware import chip
from chipwise.perf.ops.roofline import (
    RooflineModel,
    arithmetic_intensity,
    matmul_bytes,
    ridge_point,
    roof,
)
from chipwise.workload.ir import Op, OpKind

H100 = dataclasses.replace(
    chip("h100-sxm"), hbm_bytes_per_s=3.35e12, dense_flops_per_s={"bf16": 989e12}
)  # pinned to the datasheet so the arithmetic below holds


@pytest.mark.parametrize(
    ("flops", "n_bytes", "compute_s", "memory_s", "bound"),
    [
        (1e12, 1e9, 1.0, 0.5, "compute"),  # 1 TFLOP at 1 TFLOP/s vs 1 GB at 2 GB/s
        (1e12, 4e12, 1.0, 2.0, "memory"),
        (0.0, 2e9, 0.0, 1.0, "memory"),
    ],
)
def test_roof_takes_the_slower_resource(
    flops: float, n_bytes: float, compute_s: float, memory_s: float, bound: str
) -> None:
    r = roof(flops, n_bytes, flops_per_s=1e12, bytes_per_s=2e12 if n_bytes > 2e9 else 2e9)
    assert r.compute_s == pytest.approx(compute_s)
    assert r.memory_s == pytest.approx(memory_s)
    assert r.seconds == pytest.approx(max(compute_s, memory_s))
    assert r.bound == bound


def test_overhead_bound_when_the_fixed_cost_dominates() -> None:
    r = roof(1e3, 1e3, 1e12, 1e12, overhead_s=1e-6)
    assert r.bound == "overhead"
    assert r.seconds == pytest.approx(1e-6 + 1e-9)


def test_h100_bf16_ridge_point_is_peak_over_bandwidth() -> None:
    # 989 TFLOP/s / 3.35 TB/s = 295 FLOP/B (datasheet values in the catalog)
    assert ridge_point(H100, "bf16") == pytest.approx(989e12 / 3.35e12)


def test_matmul_bytes_reads_a_and_b_and_writes_c() -> None:
    # (4 x 2) @ (2 x 3) in bf16: A 8, B 6, C 12 elements -> 26 x 2 bytes
    assert matmul_bytes(4, 3, 2, 1, "bf16") == 52.0


def test_roofline_model_is_a_lower_bound_at_datasheet_peaks() -> None:
    op = Op(name="mm", kind=OpKind.MATMUL, mnk=(4096, 4096, 4096), count=3)
    t = RooflineModel(H100).op_time(op)
    assert t.seconds == pytest.approx(3 * 2 * 4096**3 / 989e12)
    assert t.bound == "compute"
    assert t.efficiency == pytest.approx(1.0)


def test_arithmetic_intensity_of_a_square_gemm() -> None:
    op = Op(
        name="mm",
        kind=OpKind.MATMUL,
        flops=2 * 1024**3,
        bytes_read=2 * 2 * 1024**2,
        bytes_written=2 * 1024**2,
    )
    assert arithmetic_intensity(op) == pytest.approx(2 * 1024**3 / (6 * 1024**2))


def test_unsupported_tensor_dtype_raises_not_falls_back() -> None:
    op = Op(name="mm", kind=OpKind.MATMUL, dtype="int4", mnk=(64, 64, 64))
    with pytest.raises(UnsupportedOpError, match="int4"):
        RooflineModel(H100).op_time(op)
