"""Microbenchmark primitives: counting conventions, errors, and published measurements."""

from __future__ import annotations

import pytest

from chipwise.errors import PlanError, UnsupportedOpError, WorkloadError
from chipwise.hardware import chip
from chipwise.perf.ops.primitives import predict_primitive
from chipwise.workload.ir import Primitive

H100 = chip("h100-sxm")


def test_matmul_counts_2mnk_flops() -> None:
    p = predict_primitive(Primitive(kind="matmul", mnk=(4096, 2048, 1024)), H100)
    assert p.flops == 2 * 4096 * 2048 * 1024
    assert p.bound == "compute"
    assert 0 < p.achieved_tflops < 989


def test_copy_counts_read_plus_write() -> None:
    p = predict_primitive(Primitive(kind="copy", n_bytes=1e9), H100)
    assert p.n_bytes == 2e9
    assert p.bound == "memory"
    assert p.achieved_bytes_per_s < H100.hbm_bytes_per_s


def test_small_copies_lose_bandwidth_to_the_fixed_overhead() -> None:
    big = predict_primitive(Primitive(kind="copy", n_bytes=1e10), H100)
    small = predict_primitive(Primitive(kind="copy", n_bytes=1e6), H100)
    assert small.achieved_bytes_per_s < 0.5 * big.achieved_bytes_per_s


def test_allreduce_reports_nccl_bus_bytes() -> None:
    p = predict_primitive(Primitive(kind="allreduce", n_bytes=1e9), H100, chips=8)
    assert p.bus_bytes == pytest.approx(2 * 7 / 8 * 1e9)
    assert p.bound == "communication"


@pytest.mark.parametrize(
    ("prim", "chips", "error"),
    [
        (Primitive(kind="allreduce", n_bytes=1e9), 1, PlanError),
        (Primitive(kind="matmul", mnk=(8, 8, 8)), 2, PlanError),
        (Primitive(kind="matmul", mnk=(0, 8, 8)), 1, WorkloadError),
        (Primitive(kind="copy", n_bytes=0), 1, WorkloadError),
        (Primitive(kind="fft", n_bytes=1e6), 1, WorkloadError),
        (Primitive(kind="matmul", mnk=(8, 8, 8), dtype="int4"), 1, UnsupportedOpError),
    ],
)
def test_bad_primitives_raise(prim: Primitive, chips: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        predict_primitive(prim, H100, chips=chips)


# Published measurements (cases-public.csv microbench rows). Tolerances are what the model
# holds today; rows marked in-sample share their measurement with an efficiency.toml value,
# so they check the shape model around that constant only.
MEASURED = [
    # id, chip, chips, primitive, metric, measured, tolerance
    ("GPU-061", "h100-sxm", 1, "matmul:2048x2048x13312", "tflops", 794.5, 0.10),
    ("GPU-062", "a100-sxm-80gb", 1, "matmul:1024x10240x5120", "tflops", 271.2, 0.10),
    ("GPU-065", "mi300x", 1, "matmul:10240x15360x8192", "tflops", 668.4, 0.10),
    ("TPU-049", "tpu-v6e", 1, "matmul:8192x8192x8192", "tflops", 827.474, 0.10),  # in-sample
    ("GPU-070", "h100-sxm", 1, "copy:10468982784", "bytes", 2.9e12, 0.05),  # in-sample
    ("GPU-072", "a100-sxm-80gb", 1, "copy:10468982784", "bytes", 1.61e12, 0.05),  # in-sample
    ("TPU-050", "tpu-v6e", 1, "copy:33554432", "bytes", 1.3596e12, 0.15),
    ("GPU-073", "h100-sxm", 8, "allreduce:8589934592", "bus", 478.87e9, 0.10),
    # Known gap: the model lets XLA drive all 4 ICI links at once at 80 %; measured ~59 %.
    ("TPU-053", "tpu-v6e", 256, "allreduce:606076928", "bus", 235.76e9, 0.40),
]


def _primitive(text: str) -> Primitive:
    kind, arg = text.split(":")
    if kind == "matmul":
        m, n, k = (int(x) for x in arg.split("x"))
        return Primitive(kind="matmul", mnk=(m, n, k))
    return Primitive(kind=kind, n_bytes=float(arg))


@pytest.mark.parametrize(
    ("case", "chip_id", "chips", "text", "metric", "measured", "tol"), MEASURED
)
def test_published_microbenchmarks_within_tolerance(
    case: str, chip_id: str, chips: int, text: str, metric: str, measured: float, tol: float
) -> None:
    p = predict_primitive(_primitive(text), chip(chip_id), chips=chips)
    predicted = {
        "tflops": p.achieved_tflops,
        "bytes": p.achieved_bytes_per_s,
        "bus": p.bus_bytes_per_s,
    }[metric]
    error = predicted / measured - 1
    print(
        f"{case} {chip_id} {text}: predicted {predicted:.4g}, measured {measured:.4g}, {error:+.1%}"
    )
    assert abs(error) <= tol, f"{case}: {error:+.1%} exceeds {tol:.0%}"
