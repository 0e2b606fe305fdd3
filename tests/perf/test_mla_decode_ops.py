"""An MLA layer's decode step as the serving engines run it: the absorbed form's two batched
GEMMs over the heads (q_nope x W_UK before the latent attention, its output x W_UV after it:
vLLM _k_up / _v_up_proj, SGLang forward_absorb's two torch.bmm, TensorRT-LLM's two
fp8_block_scaling_bmm_out; AIConfigurator's mla_bmm tables time them apart) in place of
kv_b_proj's one GEMM, and the rope kernel on the queries' rope part and the shared rope key
(a kernel of its own in vLLM, SGLang and Megatron; inside TensorRT-LLM's MLA op)."""

from __future__ import annotations

from chipwise.hardware.catalog import chip
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
