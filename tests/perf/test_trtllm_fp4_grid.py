"""TensorRT-LLM's dense NVFP4 GEMMs on Blackwell take the engine's measured kernel grid
(data/kernels/trtllm-fp4-gemm.csv, AIConfigurator 0.12.0's TensorRT-LLM 1.3.0rc20 table):
trilinear between its M, N and K points, a floor below them, scaled past them; only under
TensorRT-LLM, only for dense fp4 linears."""

from __future__ import annotations

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.kernels import measured_grid_gemm_s
from chipwise.perf.step.timing import time_ops
from chipwise.workload.ir import ExpertRouting, Op, OpKind

# trtllm-fp4-gemm.csv, b200 (us): llama3-70b's gate/up at TP1 lies between N 51200 and 65536
B200_64_51200_8192_US = 57.74
B200_64_65536_8192_US = 63.09
B200_1024_8192_8192_US = 46.09
B200_2048_8192_8192_US = 82.75


def _grid(m: int, n: int, k: int, chip_id: str = "b200") -> float:
    t = measured_grid_gemm_s(chip_id, "trtllm", "fp4", m, n, k)
    assert t is not None
    return t


def _op(m: int, n: int, k: int) -> Op:
    return Op(name="proj", kind=OpKind.MATMUL, dtype="fp4", mnk=(m, n, k))


def test_a_grid_point_reads_its_time() -> None:
    assert _grid(64, 51200, 8192) == pytest.approx(B200_64_51200_8192_US * 1e-6)
    assert _grid(1024, 8192, 8192) == pytest.approx(B200_1024_8192_8192_US * 1e-6)


def test_between_grid_points_the_time_is_linear_in_each_dimension() -> None:
    # N: llama3-70b's fused gate/up (2 x 28672 = 57344) at decode M, ~60 us (4.4 TB/s)
    w = (57344 - 51200) / (65536 - 51200)
    expected = (1 - w) * B200_64_51200_8192_US + w * B200_64_65536_8192_US
    assert _grid(64, 57344, 8192) == pytest.approx(expected * 1e-6)
    # M: halfway between 1024 and 2048 rows
    mid = (B200_1024_8192_8192_US + B200_2048_8192_8192_US) / 2
    assert _grid(1536, 8192, 8192) == pytest.approx(mid * 1e-6)


def test_below_the_grid_is_a_floor_and_past_it_scales() -> None:
    assert _grid(1, 256, 8192) == _grid(1, 512, 8192)
    assert _grid(32768, 8192, 8192) == pytest.approx(2 * _grid(16384, 8192, 8192))
    assert _grid(64, 131072, 8192) == pytest.approx(2 * _grid(64, 65536, 8192))


def test_the_grid_is_non_decreasing_in_m() -> None:
    # smoothed so (AIConfigurator's isolated outlier: M=2048 N=8192 K=51200 838 us > 482 at
    # M=2049, 933 at M=4096)
    for n, k in ((8192, 51200), (57344, 8192), (1024, 1024), (16384, 16384)):
        times = [_grid(m, n, k) for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)]
        assert times == sorted(times)


@pytest.mark.parametrize("chip_id", ["b200", "gb200", "b300", "gb300"])
def test_every_blackwell_datacentre_chip_ships_a_grid(chip_id: str) -> None:
    assert measured_grid_gemm_s(chip_id, "trtllm", "fp4", 64, 8192, 8192) is not None


@pytest.mark.parametrize("chip_id", ["h100-sxm", "rtx-pro-6000", "mi355x"])
def test_no_grid_no_time(chip_id: str) -> None:
    assert measured_grid_gemm_s(chip_id, "trtllm", "fp4", 64, 8192, 8192) is None


def test_trtllm_dense_fp4_takes_the_grid_time_and_nothing_else() -> None:
    b200 = chip("b200")
    trt = GpuModel(b200).for_engine("trtllm")
    op = _op(64, 57344, 8192)
    t = trt.op_time(op)
    # the table times the linear back to back in a CUDA graph: no launch on top, and the
    # serving step's sustained stretch does not apply to a measured time
    assert t.seconds == pytest.approx(_grid(64, 57344, 8192))
    assert time_ops((op,), trt, compute_bound_only=True)[0].seconds == pytest.approx(t.seconds)
    # the engine-less model (and vLLM's kernels) keep the weight stream at 0.30 of HBM: ~2x
    assert GpuModel(b200).op_time(op).seconds > 1.7 * t.seconds
    vllm = GpuModel(b200).for_engine("vllm")
    assert vllm.op_time(op).seconds != pytest.approx(t.seconds, rel=0.05)


def test_trtllm_experts_and_other_dtypes_keep_their_model() -> None:
    b200 = chip("b200")
    trt = GpuModel(b200).for_engine("trtllm")
    bf16 = Op(name="proj", kind=OpKind.MATMUL, dtype="bf16", mnk=(64, 8192, 8192))
    assert trt.op_time(bf16).seconds == GpuModel(b200).op_time(bf16).seconds
    routing = ExpertRouting(tokens=64, topk=8, experts=256, local=32)
    expert = Op(name="expert_up", kind=OpKind.MATMUL, dtype="fp4", mnk=(2, 4096, 7168),
                batch=32, routing=routing)  # fmt: skip
    assert not any("measured fp4" in n for n in trt.op_time(expert).notes)
