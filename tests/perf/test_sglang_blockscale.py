"""SGLang's ROCm block-scaled fp8 dense GEMMs and its fused MLA down-projection.

SGLang replaced AITER's CK block-scale GEMM with AITER's Triton one on every ROCm GPU (sglang
PR #13617, 2025-11-20), whose gfx942 default config (128 x 128 tiles, no split-K) each tile
walks all of K: AITER PR #1232 timed it at N = 2112, K = 7168 (efficiency.toml SG-TRITON-BS).
Serving engines run DeepSeek's q_a and kv_a projections as one N = 2112 GEMM
(``attention_ops`` fused_qkv_a)."""

from __future__ import annotations

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import Shard, decode_layer_ops, layer_ops
from chipwise.workload import load_workload_model
from chipwise.workload.ir import Op, OpKind

# AITER PR #1232 (2025-10-23), its "before" table: the Triton A8W8 block-scale GEMM on the
# default config, N = 2112, K = 7168: (M, us)
AITER_1232_UNTUNED = ((64, 128.799), (128, 127.317), (256, 117.496))


def _op(m: int, n: int, k: int) -> Op:
    return Op(name="proj", kind=OpKind.MATMUL, dtype="fp8", mnk=(m, n, k), block_scaled=True)


@pytest.mark.parametrize("chip_id", ["mi300x", "mi325x"])
@pytest.mark.parametrize(("m", "us"), AITER_1232_UNTUNED)
def test_sglang_runs_the_untuned_triton_kernel_on_cdna3(chip_id: str, m: int, us: float) -> None:
    model = GpuModel(chip(chip_id)).for_engine("sglang")
    t = model.op_time(_op(m, 2112, 7168)).seconds
    assert t == pytest.approx(us * 1e-6, rel=0.12)
    # M = 4 (4 clients' decode) takes the same one wave of 17 tiles
    assert model.op_time(_op(4, 2112, 7168)).seconds == pytest.approx(t, rel=0.02)


def test_vllm_and_cdna4_keep_their_kernels() -> None:
    # vLLM's AITER path runs the CK kernel: BS-K's ~19 us at K = 7168
    vllm = GpuModel(chip("mi300x")).for_engine("vllm").op_time(_op(4, 2112, 7168)).seconds
    assert 15e-6 < vllm < 25e-6
    # MI355X had tuned gfx950 Triton configs for DeepSeek's shapes: no untuned floor
    assert efficiency_for(chip("mi355x")).sglang_blockscale_gemm_k_latency_s == 0.0
    mi355 = GpuModel(chip("mi355x")).for_engine("sglang").op_time(_op(4, 2112, 7168)).seconds
    assert mi355 < 30e-6


def test_the_untuned_kernel_runs_in_waves_at_large_m() -> None:
    model = GpuModel(chip("mi300x")).for_engine("sglang")
    units = chip("mi300x").units
    per_wave = 2 * 18e-6  # K = 2048
    one = model.op_time(_op(128, 7168, 2048)).seconds  # 56 tiles: one wave
    assert one == pytest.approx(3e-6 + per_wave, rel=0.05)
    # a prefill chunk of 16384 tokens: 128 x 56 = 7168 tiles, ceil(7168 / 304) = 24 waves
    waves = -(-(128 * 56) // units)
    many = model.op_time(_op(16384, 7168, 2048)).seconds
    assert waves * per_wave <= many <= 1.2 * waves * per_wave
    # a user-sized M stays closed-form
    assert model.op_time(_op(10**12, 2112, 7168)).seconds > 0


def test_serving_fuses_the_mla_down_projections() -> None:
    spec = load_workload_model("deepseek-v3")
    shard = Shard(tp=8)
    dec = decode_layer_ops(spec, batch=4, context=1024, shard=shard, precision="fp8",
                           kv_dtype="bf16", moe=True)  # fmt: skip
    names = [op.name for op in dec]
    assert "q_down" not in names and "kv_down" not in names
    (fused,) = [op for op in dec if op.name == "qkv_down"]
    assert fused.mnk == (4, 1536 + 512 + 64, 7168)
    assert fused.block_scaled
    pre = layer_ops(spec, b=1, seq_len=512, shard=shard, precision="fp8", moe=True, serving=True)
    assert "qkv_down" in {op.name for op in pre}
    # training keeps two projections (Megatron's linear_q_down_proj / linear_kv_down_proj)
    train = {op.name for op in layer_ops(spec, b=1, seq_len=512, shard=shard,
                                         precision="fp8", moe=True)}  # fmt: skip
    assert {"q_down", "kv_down"} <= train and "qkv_down" not in train
