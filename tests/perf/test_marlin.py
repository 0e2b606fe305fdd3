"""Weight-only dense GEMMs under vLLM/SGLang: Marlin on Ampere/Ada cuts a batch into 64-row
slices at its measured rate, so W4A16 beats bf16 at decode batches and trails it once
compute-bound; Hopper (Machete) and engine-less runs keep the bf16 GEMM plan."""

from __future__ import annotations

import pytest

from chipwise.hardware.catalog import chip
from chipwise.hardware.chip import Chip
from chipwise.perf.ops.gpu import GpuModel, marlin_rows
from chipwise.perf.ops.layers import Dtypes, _matmul

A100 = chip("a100-sxm-80gb")
RTX4090 = chip("rtx-4090")
H100 = chip("h100-sxm")


def _gemm_s(model: GpuModel, m: int, precision: str) -> float:
    """Seconds of a Qwen3-8B-sized gate/up projection (4096 -> 2 x 12288) at batch ``m``."""
    op = _matmul("gate_up", m, 24576, 4096, Dtypes.for_precision(precision))
    return model.op_time(op).seconds


@pytest.mark.parametrize(("m", "rows"), [(1, 16), (16, 16), (17, 32), (64, 64), (65, 128),
                                         (2048, 2048), (2049, 2112)])  # fmt: skip
def test_marlin_rows_pad_to_16_then_64_row_slices(m: int, rows: int) -> None:
    assert marlin_rows(m) == rows


@pytest.mark.parametrize("gpu", [A100, RTX4090])
def test_marlin_int4_faster_at_decode_slower_when_compute_bound(gpu: Chip) -> None:
    vllm = GpuModel(gpu).for_engine("vllm")
    assert isinstance(vllm, GpuModel)
    assert _gemm_s(vllm, 16, "int4") < 0.5 * _gemm_s(vllm, 16, "bf16")
    # compute-bound: the bf16 GEMM time over Marlin's measured share of that rate
    slower = 1.0 / vllm.efficiency.marlin_relative_rate
    assert _gemm_s(vllm, 2048, "int4") == pytest.approx(slower * _gemm_s(vllm, 2048, "bf16"),
                                                        rel=0.1)  # fmt: skip
    # w8a16 runs the same kernel: the same compute-bound time
    assert _gemm_s(vllm, 2048, "w8a16") == pytest.approx(_gemm_s(vllm, 2048, "int4"))


def test_hopper_machete_and_engineless_keep_bf16_plan() -> None:
    h100 = GpuModel(H100).for_engine("vllm")
    assert isinstance(h100, GpuModel)
    assert _gemm_s(h100, 2048, "int4") == pytest.approx(_gemm_s(h100, 2048, "bf16"))
    eager = GpuModel(A100)
    assert _gemm_s(eager, 2048, "int4") == pytest.approx(_gemm_s(eager, 2048, "bf16"))
