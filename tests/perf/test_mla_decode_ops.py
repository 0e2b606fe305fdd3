"""An MLA layer's decode step as the serving engines run it: the absorbed form's two batched
GEMMs over the heads (q_nope x W_UK before the latent attention, its output x W_UV after it:
vLLM _k_up / _v_up_proj, SGLang forward_absorb's two torch.bmm, TensorRT-LLM's two
fp8_block_scaling_bmm_out; AIConfigurator's mla_bmm tables time them apart) in place of
kv_b_proj's one GEMM, and the rope kernel on the queries' rope part and the shared rope key
(a kernel of its own in vLLM, SGLang and Megatron; inside TensorRT-LLM's MLA op)."""

from __future__ import annotations

import csv
import statistics
from dataclasses import replace
from pathlib import Path

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import Shard, decode_layer_ops, layer_ops
from chipwise.workload import load_workload_model


def _decode(tp: int = 8) -> dict[str, object]:
    spec = load_workload_model("deepseek-v3")
    ops = decode_layer_ops(spec, batch=4, context=1024, shard=Shard(tp=tp), precision="fp8",
                           kv_dtype="bf16", moe=True)  # fmt: skip
    return {op.name: op for op in ops}


def test_decode_runs_kv_b_proj_as_two_absorbed_batched_gemms_around_the_attention() -> None:
    spec = load_workload_model("deepseek-v3")
    dec = _decode()
    names = list(dec)
    assert "kv_up" not in dec
    assert names.index("kv_up_k") < names.index("attention") < names.index("kv_up_v")
    heads = spec.n_heads // 8
    k_up, v_up = dec["kv_up_k"], dec["kv_up_v"]
    assert k_up.batch == v_up.batch == heads  # type: ignore[attr-defined]
    # the same weights and FLOPs as kv_b_proj's GEMM over the step's tokens
    pre = {op.name: op for op in layer_ops(spec, b=4, seq_len=1, shard=Shard(tp=8),
                                           precision="fp8", moe=True, serving=True)}  # fmt: skip
    kv_up = pre["kv_up"]
    assert k_up.flops + v_up.flops == kv_up.flops  # type: ignore[attr-defined]


def test_prefill_and_training_keep_kv_b_proj_as_one_gemm() -> None:
    spec = load_workload_model("deepseek-v3")
    ops = {op.name for op in layer_ops(spec, b=1, seq_len=2048, shard=Shard(tp=8),
                                       precision="fp8", moe=True)}  # fmt: skip
    assert "kv_up" in ops and "kv_up_k" not in ops and "rope" in ops


def test_the_rope_kernel_runs_apart_except_inside_tensorrt_llm_mla() -> None:
    rope = _decode()["rope"]
    spec = load_workload_model("deepseek-v3")
    elements = 4 * (spec.n_heads // 8 + 1) * spec.qk_rope_head_dim
    assert rope.shape == (elements,)  # type: ignore[attr-defined]
    h200 = chip("h200-sxm")
    for engine in ("vllm", "sglang"):
        assert GpuModel(h200).for_engine(engine).op_time(rope).overhead_s > 0  # type: ignore[arg-type]
    assert GpuModel(h200).for_engine("trtllm").op_time(rope).overhead_s == 0  # type: ignore[arg-type]


MODULE = Path(__file__).parent / "data" / "aiconfigurator-mla-module-hopper.csv"
# the MLA attention module's ops, from its input (after the layer's norm) to o_proj
_MODULE_OPS = frozenset(
    {"qkv_down", "q_norm", "q_up", "kv_norm", "rope", "kv_up_k", "attention", "kv_up_v",
     "o_proj_cast", "o_proj"}
)  # fmt: skip


def _module_ratios(engine: str, *, vllm_mla: float | None = None) -> list[float]:
    spec = load_workload_model("deepseek-v3")
    with MODULE.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    out = []
    for r in rows:
        if r["engine"] != engine:
            continue
        c = chip(r["chip"])
        eff = efficiency_for(c)
        if vllm_mla is not None:
            eff = replace(eff, vllm_mla_decode_latency_s=vllm_mla)
        model = GpuModel(c, eff).for_engine(engine)
        ops = decode_layer_ops(spec, batch=int(r["batch"]), context=int(r["context"]),
                               shard=Shard(tp=8), precision="fp8", kv_dtype="bf16",
                               moe=True)  # fmt: skip
        s = sum(model.op_time(op).seconds for op in ops if op.name in _MODULE_OPS)
        out.append(s / (float(r["us"]) * 1e-6))
    return out


def test_vllm_mla_decode_module_matches_its_measured_module() -> None:
    """vLLM's DeepseekV2MLAAttention in a CUDA graph runs ~31 us past the modelled ops at
    tp 8 (VLLM-MLA: 40 us before its three block-fp8 input quantisations were modelled);
    with it the module lands within 15 % at the median, where the ops alone ran it ~0.73x."""
    fitted, bare = _module_ratios("vllm"), _module_ratios("vllm", vllm_mla=0.0)
    assert len(fitted) == 24
    assert 0.87 <= statistics.median(fitted) <= 1.15
    assert statistics.median(bare) < 0.75


def test_tensorrt_llm_mla_module_needs_no_such_term() -> None:
    ratios = _module_ratios("trtllm")
    assert 0.85 <= statistics.median(ratios) <= 1.15
    assert efficiency_for(chip("h200-sxm")).vllm_mla_decode_latency_s > 0
    assert efficiency_for(chip("b200")).vllm_mla_decode_latency_s == 0.0
