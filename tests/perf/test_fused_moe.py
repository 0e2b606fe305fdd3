"""Serving engines' fused-MoE kernels: vLLM's and SGLang's Triton fused_moe runs fp8 and
bf16-math experts at its own measured rates; TensorRT-LLM and training keep the
cuBLAS-class rate; the expert time never undercuts a dense GEMM of the same active parameters and
grows with the tokens."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import Dtypes, Shard, mlp_ops
from chipwise.perf.ops.models import model_for
from chipwise.perf.step.timing import time_ops
from chipwise.workload.ir import Op, OpKind
from chipwise.workload.presets import load_preset

H200 = chip("h200-sxm")
A100 = chip("a100-sxm-80gb")
MI300X = chip("mi300x")


def _experts_s(
    model: GpuModel, tokens: int, precision: str = "fp8", tp: int = 8, *, balanced: bool = False
) -> float:
    """Seconds of DeepSeek-V3's routed-expert GEMMs for ``tokens`` tokens on one tp rank
    (``balanced``: every expert on the mean load, as the kernel benchmarks route)."""
    spec = load_preset("deepseek-v3")
    ops = mlp_ops(spec, b=1, s=tokens, shard=Shard(tp=tp), dt=Dtypes.for_precision(precision),
                  moe=True)  # fmt: skip
    experts = tuple(
        replace(op, routing=op.routing and replace(op.routing, balanced=True)) if balanced else op
        for op in ops
        if op.name in ("expert_up", "expert_down")
    )
    assert experts and all(op.batch > 1 for op in experts)
    return sum(t.seconds for t in time_ops(experts, model, compute_bound_only=True))


def test_only_fused_moe_engines_get_the_fused_moe_model() -> None:
    base = model_for(H200)
    assert isinstance(base, GpuModel) and not base.fused_moe
    for engine in ("vllm", "sglang"):
        served = base.for_engine(engine)
        assert isinstance(served, GpuModel) and served.fused_moe
        assert served.for_engine(engine) is served
    # TensorRT-LLM runs its own MoE op (block-scaled fp8 experts at its CUTLASS rate)
    trtllm = base.for_engine("trtllm")
    assert isinstance(trtllm, GpuModel) and trtllm.trtllm_moe and not trtllm.fused_moe
    assert trtllm.for_engine("trtllm") is trtllm
    assert base.for_engine("jetstream") is base


def test_fp8_experts_run_slower_under_the_triton_fused_moe_than_cublas_on_hopper() -> None:
    base = model_for(H200)
    assert isinstance(base, GpuModel)
    fused = base.for_engine("vllm")
    assert isinstance(fused, GpuModel)
    # a prefill chunk: compute-bound experts run at the kernel's rate (0.38 vs 0.709 of the
    # fp8 peak, FUSED-MOE-FP8; the fused experts keep the serving fp8 share, 0.92, where
    # cuBLAS's keep the training step's 0.711 here)
    assert _experts_s(fused, 8192) > 1.5 * _experts_s(base, 8192)
    # bf16 experts: the Triton kernel reaches ~0.69 of cuBLAS's rate once compute-bound (its
    # experts balanced, at 256 rows each, so no random expert pads to a third 128-row tile)
    ratio = _experts_s(fused, 8192, "bf16", balanced=True) / _experts_s(base, 8192, "bf16")
    assert 1.3 < ratio < 1.6
    # at random the busier experts run an extra row tile: the grid's expected time is longer
    assert _experts_s(fused, 8192, "bf16") > 1.1 * _experts_s(fused, 8192, "bf16", balanced=True)


@pytest.mark.parametrize("precision", ["bf16", "w8a16"])
def test_bf16_math_experts_on_ampere_run_at_the_fused_moe_rate(precision: str) -> None:
    base = model_for(A100)
    assert isinstance(base, GpuModel)
    fused = base.for_engine("vllm")
    assert isinstance(fused, GpuModel)
    assert _experts_s(fused, 8192, precision) > 1.2 * _experts_s(base, 8192, precision)
    # a bf16 decode step mostly streams the experts' weights: at the kernel's 0.41 of the
    # peak (FUSED-MOE-BAL) its starved 16-row tiles' tensor time is about the stream's, so
    # the step is at most a fifth slower than at cuBLAS's rate (was equal at 0.60)
    if precision == "bf16":
        for tokens in (1, 4):
            assert _experts_s(fused, tokens, precision) < 1.2 * _experts_s(base, tokens, precision)


def test_a_chip_without_the_measurement_keeps_its_gemm_rate() -> None:
    base = model_for(MI300X)
    assert isinstance(base, GpuModel)
    assert base.efficiency.fused_moe_gemm_peak_fraction == 0.0
    assert base.efficiency.fused_moe_fp8_gemm_peak_fraction == 0.0
    fused = base.for_engine("sglang")
    assert isinstance(fused, GpuModel)
    for precision in ("bf16", "fp8"):
        # the same rate; fp8 inputs pay their quantisation kernels' launches (one per GEMM)
        quant_s = 2 * base.efficiency.launch_overhead_s if precision == "fp8" else 0.0
        assert _experts_s(fused, 4096, precision) == pytest.approx(
            _experts_s(base, 4096, precision) + quant_s
        )


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_expert_time_grows_with_tokens_and_never_beats_the_dense_equivalent(engine: str) -> None:
    model = model_for(H200).for_engine(engine)
    assert isinstance(model, GpuModel)
    spec = load_preset("deepseek-v3")
    width = (spec.moe_d_ff or spec.d_ff) // 8
    d, k = spec.d_model, spec.experts_per_token
    last = 0.0
    for tokens in (1, 16, 128, 1024, 8192):
        t = _experts_s(model, tokens)
        assert t >= last
        last = t
        # the same active parameters as one dense gated MLP over tokens x k rows: the best
        # a grouped kernel could do (no padding, one weight read per active expert at most)
        dense = (
            Op(name="up", kind=OpKind.MATMUL, dtype="fp8", flops=2.0 * tokens * k * 2 * width * d,
               bytes_read=tokens * k * d * 2 + d * 2 * width, bytes_written=0,
               mnk=(tokens * k, 2 * width, d)),
            Op(name="down", kind=OpKind.MATMUL, dtype="fp8", flops=2.0 * tokens * k * d * width,
               bytes_read=tokens * k * width * 2 + d * width, bytes_written=0,
               mnk=(tokens * k, d, width)),
        )  # fmt: skip
        floor = sum(x.seconds for x in time_ops(dense, model, compute_bound_only=True))
        assert t >= floor


def test_fp8_fused_moe_experts_pay_their_input_quantisation_launch() -> None:
    # vLLM's and SGLang's Triton fused_moe quantises each fp8 expert GEMM's input with a
    # kernel of its own (moe_kernel_quantize_input); bf16-math experts launch no such kernel
    fused = model_for(H200).for_engine("vllm")
    assert isinstance(fused, GpuModel)
    launch_s = fused.efficiency.launch_overhead_s
    spec = load_preset("deepseek-v3")
    for precision, launches in (("fp8", 2), ("bf16", 1)):
        ops = mlp_ops(spec, b=64, s=1, shard=Shard(tp=8), dt=Dtypes.for_precision(precision),
                      moe=True)  # fmt: skip
        experts = [op for op in ops if op.name in ("expert_up", "expert_down")]
        for t in time_ops(tuple(experts), fused, compute_bound_only=True):
            assert t.overhead_s == pytest.approx(launches * launch_s)
