"""SGLang's fused shared expert: DeepSeek-V3/R1's shared expert as one more, always-routed
expert of the fused MoE (DeepseekV2ForCausalLM.determine_num_fused_shared_experts; the ROCm
branch from sglang PR #12201), on ROCm gfx942+ under any EP, on CUDA at ep = 1 unless the MoE
runner is flashinfer_trtllm (sm100's default for a DeepSeek fp8/fp4 checkpoint)."""

from __future__ import annotations

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel, routed_row_tiles
from chipwise.perf.ops.layers import Shard, decode_layer_ops, engine_fuses_shared_experts, layer_ops
from chipwise.perf.step.timing import time_ops
from chipwise.workload import load_workload_model
from chipwise.workload.ir import ExpertRouting, Op


def _fuses(chip_id: str, engine: str = "sglang", precision: str = "fp8", ep: int = 1) -> bool:
    spec = load_workload_model("deepseek-v3")
    arch = chip(chip_id).architecture
    return engine_fuses_shared_experts(
        spec, engine=engine, architecture=arch, precision=precision, ep=ep
    )


def test_where_sglang_fuses_the_shared_expert() -> None:
    # ROCm gfx942 / gfx950, with or without expert parallelism
    for chip_id in ("mi300x", "mi325x", "mi355x"):
        assert _fuses(chip_id) and _fuses(chip_id, ep=8)
    # CUDA: Hopper's Triton fused MoE at ep = 1 only
    assert _fuses("h200-sxm") and not _fuses("h200-sxm", ep=8)
    # sm100 runs a DeepSeek fp8/fp4 checkpoint on flashinfer_trtllm, which turns it off
    assert not _fuses("b200") and not _fuses("b200", precision="fp4")
    # other engines keep the shared expert as its own MLP
    assert not _fuses("mi300x", engine="vllm") and not _fuses("h200-sxm", engine="")
    # only DeepSeek-V3's 256 routed + 1 shared experts
    qwen = load_workload_model("qwen3-30b-a3b")
    assert not engine_fuses_shared_experts(
        qwen, engine="sglang", architecture="cdna3", precision="fp8", ep=1
    )


def test_the_fused_shared_expert_is_one_more_expert_of_the_grid() -> None:
    spec = load_workload_model("deepseek-v3")
    shard = Shard(tp=8)
    kw = {"batch": 64, "context": 1024, "shard": shard, "precision": "fp8", "kv_dtype": "bf16"}
    apart = decode_layer_ops(spec, moe=True, **kw)  # type: ignore[arg-type]
    fused = decode_layer_ops(spec, moe=True, fused_shared=True, **kw)  # type: ignore[arg-type]
    assert any(op.name.startswith("shared_expert") for op in apart)
    assert not any(op.name.startswith("shared_expert") for op in fused)
    up_apart = next(op for op in apart if op.name == "expert_up")
    up = next(op for op in fused if op.name == "expert_up")
    assert up.batch == up_apart.batch + 1
    assert up.routing is not None and up.routing.shared == 1 and up.routing.shared_rows == 64

    # the same weights: the shared expert's move into the grid, read once
    def read(ops: tuple[Op, ...], prefix: str) -> float:
        return sum(o.bytes_read * o.count for o in ops if o.name.startswith(prefix) and o.mnk)

    moved = read(apart, "expert_") + read(apart, "shared_expert_")
    assert read(fused, "expert_") == pytest.approx(moved, rel=0.05)
    # prefill too
    pre = layer_ops(spec, b=1, seq_len=512, shard=shard, precision="fp8", moe=True,
                    serving=True, fused_shared=True)  # fmt: skip
    assert not any(op.name.startswith("shared_expert") for op in pre)


def test_the_shared_rows_are_padded_on_their_own() -> None:
    base = ExpertRouting(tokens=64, topk=8, experts=256, local=256)
    fused = ExpertRouting(tokens=64, topk=8, experts=256, local=256, shared=1, shared_rows=64)
    assert routed_row_tiles(fused, 16) == pytest.approx(routed_row_tiles(base, 16) + 4)


def test_sglang_on_mi300x_times_the_fused_layer_faster() -> None:
    """The separate shared expert ran as two untuned Triton block-scale GEMMs (~135 us a
    layer at 64 clients); in the grid it is one expert of ~220."""
    spec = load_workload_model("deepseek-v3")
    model = GpuModel(chip("mi300x")).for_engine("sglang")
    kw = {"batch": 64, "context": 1024, "shard": Shard(tp=8), "precision": "fp8",
          "kv_dtype": "bf16", "moe": True}  # fmt: skip
    apart = sum(t.seconds for t in time_ops(decode_layer_ops(spec, **kw), model))  # type: ignore[arg-type]
    fused = sum(
        t.seconds
        for t in time_ops(decode_layer_ops(spec, fused_shared=True, **kw), model)  # type: ignore[arg-type]
    )
    assert 50e-6 < apart - fused < 200e-6
