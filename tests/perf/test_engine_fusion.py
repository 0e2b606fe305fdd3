"""Serving engines' elementwise fusions (gpu.py ``ENGINE_FUSED_OPS``): every engine adds the
residual inside the next RMSNorm's kernel, TensorRT-LLM applies RoPE inside its attention op;
those ops launch nothing of their own and add only the traffic the fused kernel adds. Training
(no engine) and non-GPU chips keep every op as its own kernel."""

from __future__ import annotations

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import ENGINE_FUSED_OPS, TP_FUSED_OPS, GpuModel, fused_traffic
from chipwise.perf.ops.layers import Shard, decode_layer_ops
from chipwise.perf.ops.models import model_for
from chipwise.workload.ir import Op
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
B200 = chip("b200")


def _decode_layer(batch: int = 4) -> dict[str, Op]:
    spec = load_preset("llama3-8b")
    ops = decode_layer_ops(spec, batch=batch, context=1024, shard=Shard(), precision="bf16",
                           kv_dtype="bf16", moe=False)  # fmt: skip
    return {op.name: op for op in ops}


def _gpu(engine: str) -> GpuModel:
    model = model_for(H100).for_engine(engine)
    assert isinstance(model, GpuModel)
    return model


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_engine_adds_the_residual_inside_the_norm(engine: str) -> None:
    ops = _decode_layer()
    eff = _gpu(engine).efficiency
    for name in ("attn_residual", "mlp_residual"):
        op = ops[name]
        t = _gpu(engine).op_time(op)
        assert t.overhead_s == 0.0
        # the residual's read and the new residual's write: two of the add's three passes
        assert fused_traffic(op) == pytest.approx(op.bytes_moved * 2 / 3)
        bandwidth = H100.hbm_bytes_per_s * eff.hbm_fraction
        assert t.seconds == pytest.approx(fused_traffic(op) / bandwidth)
        # the norm it joins keeps its launch
        assert _gpu(engine).op_time(ops["mlp_norm"]).overhead_s == eff.launch_overhead_s


def test_only_tensorrt_llm_applies_rope_inside_attention() -> None:
    rope = _decode_layer()["rope"]
    assert _gpu("trtllm").op_time(rope).seconds == 0.0
    for engine in ("vllm", "sglang"):
        t = _gpu(engine).op_time(rope)
        assert t.overhead_s == _gpu(engine).efficiency.launch_overhead_s
        assert t.seconds > t.overhead_s
    assert "rope" in ENGINE_FUSED_OPS["trtllm"] and "rope" not in ENGINE_FUSED_OPS["vllm"]


def test_training_keeps_every_op_a_kernel_of_its_own() -> None:
    base = model_for(H100)
    assert isinstance(base, GpuModel) and not base.fused_ops
    ops = _decode_layer()
    for name in ("attn_residual", "mlp_residual", "rope"):
        t = base.op_time(ops[name])
        assert t.overhead_s == base.efficiency.launch_overhead_s


def test_a_served_decode_layer_is_faster_by_the_fused_launches() -> None:
    ops = tuple(_decode_layer().values())
    base = model_for(B200)
    assert isinstance(base, GpuModel)
    eager = sum(base.op_time(op).seconds for op in ops)
    served = base.for_engine("trtllm")
    fused = sum(served.op_time(op).seconds for op in ops)
    launch = base.efficiency.launch_overhead_s
    # three launches (two residual adds, RoPE) and their passes fewer, nothing else changes
    assert eager - fused >= 3 * launch
    assert eager - fused < 3 * launch + 2e-6


def test_a_non_gpu_chip_fuses_nothing() -> None:
    gaudi = GpuModel(chip("gaudi3"), fused_ops=ENGINE_FUSED_OPS["vllm"])
    assert not gaudi.fused_ops


def test_tensorrt_llm_runs_the_norms_inside_the_all_reduce_under_tp() -> None:
    """Under tp > 1 TensorRT-LLM's all-reduce returns the normed activations
    (RESIDUAL_RMS_NORM fusion, ``TP_FUSED_OPS``): the norms launch nothing and write only
    their output; at tp 1, and under vLLM or SGLang at any tp, they keep their kernel."""
    ops = _decode_layer()
    trt = _gpu("trtllm")
    launch = trt.efficiency.launch_overhead_s
    tp8 = trt.with_tp_fusion(8)
    assert trt.with_tp_fusion(1) is trt
    for name in TP_FUSED_OPS["trtllm"]:
        t = tp8.op_time(ops[name])
        assert t.overhead_s == 0.0
        assert fused_traffic(ops[name]) == ops[name].bytes_written
        assert trt.op_time(ops[name]).overhead_s == launch
    # the model it came from is unchanged (cached plans and all)
    assert trt.op_time(ops["mlp_norm"]).overhead_s == launch
    for engine in ("vllm", "sglang"):
        model = _gpu(engine)
        assert model.with_tp_fusion(8) is model
    training = model_for(H100)  # no engine: nothing fuses
    assert training.with_tp_fusion(8) is training
