"""TRT-LLM-Gen's swap-AB token tiles for an MXFP4 checkpoint's experts (gpt-oss on Blackwell,
``gpu.swap_ab_expert_compute_s``) and vLLM's padding of those experts
(``gpu.vllm_mxfp4_padded``): estimate, then check the served step's expert GEMMs."""

from __future__ import annotations

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import (
    VLLM_MXFP4_PAD_FUSED_DATE,
    GpuModel,
    swap_ab_token_tile,
    vllm_moe_pads_activations,
    vllm_mxfp4_padded,
)
from chipwise.perf.ops.layers import Dtypes, Shard, mlp_ops
from chipwise.perf.step.timing import time_ops
from chipwise.workload.ir import Op, TransformerSpec

# gpt-oss-120b's MoE block (hidden 2880, expert inter 2880, 128 experts, top-4)
GPT_OSS = TransformerSpec(
    name="gpt-oss-moe", n_layers=1, d_model=2880, n_heads=64, n_kv_heads=8, head_dim=64,
    d_ff=2880, vocab_size=1024, n_experts=128, experts_per_token=4, moe_d_ff=2880,
    expert_quant="mxfp4",
)  # fmt: skip


def _experts(engine: str, tokens: int, tp: int = 1) -> dict[str, Op]:
    ops = mlp_ops(GPT_OSS, b=tokens, s=1, shard=Shard(tp=tp, ep=1),
                  dt=Dtypes.for_precision("fp4"), moe=True)  # fmt: skip
    return {op.name: op for op in ops if op.name in ("expert_up", "expert_down")}


def _model(engine: str, date: str = "") -> GpuModel:
    model = GpuModel(chip("b200")).for_engine(engine, date).with_moe_backend("trtllm-gen")
    assert isinstance(model, GpuModel)
    return model


@pytest.mark.parametrize("tokens", [4, 32, 128, 256])
def test_decode_size_mxfp4_experts_stream_their_weights_in_a_served_step(tokens: int) -> None:
    """At 1-8 rows an expert the swap-AB tiles' SM time (the shared-memory operand feed)
    stays under the weight stream even at the serving step's sustained tensor share, so the
    served expert GEMMs take the weight stream plus their launch: the 16-row tiles at a
    large tile's operand reuse made them compute-bound there (218 us against a 174 us
    stream for expert_up at 128 tokens, 1.25x)."""
    model = _model("trtllm")
    ops = tuple(_experts("trtllm", tokens).values())
    for t in time_ops(ops, model, sustained=True, compute_bound_only=True):
        assert t.bound == "memory", (t.op.name, t.compute_s, t.memory_s)
        assert t.seconds == pytest.approx(t.memory_s + t.overhead_s, rel=1e-6)
        assert "swap-AB token tiles" in " ".join(t.notes)


@pytest.mark.parametrize(
    ("tokens", "tile"), [(1, 8), (128, 8), (512, 16), (768, 32), (1024, 32), (1536, 64), (4096, 64)]
)
def test_the_token_tile_follows_the_mean_load(tokens: int, tile: int) -> None:
    """TRT-LLM-Gen's token tile: the next power of two of tokens x 4 / 128, within 8-64."""
    routing = _experts("trtllm", tokens)["expert_up"].routing
    assert routing is not None
    assert swap_ab_token_tile(routing) == tile


def test_prefill_size_mxfp4_experts_keep_the_tile_plan() -> None:
    """From 64 rows an expert (2048 tokens) the 64-token tile runs at 0.21-0.37 of the fp8
    peak in AIConfigurator's table, below the feed bound: the tile plan times it, and the
    served expert GEMM stays compute-bound there."""
    model = _model("trtllm")
    t = model.op_time(_experts("trtllm", 4096)["expert_up"])
    assert t.bound == "compute"
    assert "swap-AB token tiles" not in " ".join(t.notes)


def test_vllm_pads_the_mxfp4_experts_to_multiples_of_256() -> None:
    """vLLM's TRT-LLM-Gen MXFP4 backend pads hidden and per-rank intermediate sizes to 256:
    gpt-oss's 2880 to 3072 (tp 1), its tp 8 shard of 360 to 512."""
    assert vllm_mxfp4_padded("expert_up", 5760, 2880) == (6144, 3072)
    assert vllm_mxfp4_padded("expert_down", 2880, 2880) == (3072, 3072)
    assert vllm_mxfp4_padded("expert_up", 720, 2880) == (1024, 3072)
    assert vllm_mxfp4_padded("expert_down", 2880, 360) == (3072, 512)
    assert vllm_mxfp4_padded("expert_down", 3072, 512) == (3072, 512)


@pytest.mark.parametrize("tp", [1, 8])
def test_vllm_streams_the_padded_mxfp4_experts(tp: int) -> None:
    """The same decode step's expert weights take (3072 / 2880)^2 = 1.14x longer to stream
    under vLLM at tp 1 and 1.52x at tp 8 (360 -> 512) than under TensorRT-LLM, which keeps
    the checkpoint's sizes."""
    ratio = {1: (3072 / 2880) ** 2, 8: 3072 * 512 / (2880 * 360)}[tp]
    vllm, trt = _model("vllm"), _model("trtllm")
    for name, op in _experts("vllm", 128, tp).items():
        v, t = vllm.op_time(op), trt.op_time(op)
        assert v.memory_s / t.memory_s == pytest.approx(ratio, rel=0.02), name


def test_vllm_pads_and_slices_the_moe_activations_until_the_fix() -> None:
    """vLLM pads the MoE's input and slices its output in kernels of their own until its
    PR #30647 (merged 2026-03-18); TensorRT-LLM and SGLang are not modelled with them."""
    assert vllm_moe_pads_activations("vllm", "2026-01-02")
    assert not vllm_moe_pads_activations("vllm", VLLM_MXFP4_PAD_FUSED_DATE)
    assert not vllm_moe_pads_activations("vllm", "")
    assert not vllm_moe_pads_activations("trtllm", "2026-01-02")


@pytest.mark.parametrize("tp", [1, 8])
def test_vllm_v0_13_pays_a_pad_and_a_slice_kernel_per_moe_layer(tp: int) -> None:
    """At 4 decode tokens vLLM v0.13 (the InferenceMAX B200 runs, 2026-01-02) pays one more
    launch before the first expert GEMM (the pad) and one after the second (the slice) than
    a vLLM with PR #30647: ~6 us a layer, 0.22 ms a step over gpt-oss-120b's 36 layers."""
    old, new = _model("vllm", "2026-01-02"), _model("vllm", VLLM_MXFP4_PAD_FUSED_DATE)
    launch = old.efficiency.launch_overhead_s
    for name, op in _experts("vllm", 4, tp).items():
        extra = old.op_time(op).seconds - new.op_time(op).seconds
        assert launch < extra < 1.05 * launch, name
        assert "vLLM FusedMoE" in " ".join(old.op_time(op).notes)
