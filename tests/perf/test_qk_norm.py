"""Query/key RMSNorm ("qk-norm", ``TransformerSpec.qk_norm``): read from the model type or its
``use_qk_norm`` flag (workload/config.py ``_qk_norm``), two memory-bound ops after the qkv
projection (layers.qk_norm_ops), the keys' one run beside the queries' by SGLang and
TensorRT-LLM (gpu.py ``ENGINE_FUSED_OPS``)."""

from __future__ import annotations

import pytest

from chipwise.errors import WorkloadError
from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import QK_NORM_OPS, Shard, decode_layer_ops, layer_ops
from chipwise.perf.ops.models import model_for
from chipwise.units import dtype_bytes
from chipwise.workload.config import spec_from_config
from chipwise.workload.ir import Op, TransformerSpec
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")


@pytest.mark.parametrize(
    ("preset", "shape"),
    [
        ("qwen3-8b", "head"),
        ("qwen3-30b-a3b", "head"),
        ("gemma3-1b", "head"),
        ("glm-4.5", "head"),  # use_qk_norm true
        ("glm-4.5-air", ""),  # use_qk_norm false
        ("llama4-scout", "head"),  # use_qk_norm true (text_config)
        ("llama4-maverick", ""),  # use_qk_norm false
        ("minimax-m2", "proj"),
        ("llama3-8b", ""),
        ("deepseek-v3", ""),
        ("qwen2.5-7b", ""),
    ],
)
def test_the_qk_norm_is_read_from_the_model_type_or_its_flag(preset: str, shape: str) -> None:
    assert load_preset(preset).qk_norm == shape


def _cfg(**extra: object) -> dict[str, object]:
    return {"hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
            "vocab_size": 1000, "intermediate_size": 1024, "hidden_act": "silu",
            **extra}  # fmt: skip


def test_the_flag_takes_the_config_class_default_and_unknown_types_have_none() -> None:
    assert spec_from_config(_cfg(model_type="glm4_moe"), name="g").qk_norm == ""
    assert spec_from_config(_cfg(model_type="llama4_text"), name="l").qk_norm == "head"
    assert spec_from_config(_cfg(model_type="olmo2"), name="o").qk_norm == "proj"
    # an unknown model type with the flag is not guessed
    assert spec_from_config(_cfg(model_type="mystery", use_qk_norm=True), name="m").qk_norm == ""


def test_a_malformed_flag_is_refused() -> None:
    with pytest.raises(WorkloadError, match="use_qk_norm"):
        spec_from_config(_cfg(model_type="glm4_moe", use_qk_norm="yes"), name="g")
    with pytest.raises(WorkloadError, match="qk_norm"):
        TransformerSpec(name="x", n_layers=1, d_model=8, n_heads=2, n_kv_heads=2, head_dim=4,
                        d_ff=8, vocab_size=8, qk_norm="sideways")  # fmt: skip


def _ops(spec: TransformerSpec, tp: int = 1, batch: int = 4) -> dict[str, Op]:
    ops = decode_layer_ops(spec, batch=batch, context=512, shard=Shard(tp=tp),
                           precision="bf16", kv_dtype="bf16", moe=False)  # fmt: skip
    return {op.name: op for op in ops}


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_qk_norm_reads_and_writes_the_ranks_queries_and_keys(tp: int) -> None:
    spec = load_preset("qwen3-8b")  # 32 heads, 8 kv heads of 128
    ops = _ops(spec, tp=tp, batch=4)
    q, k = (ops[name] for name in QK_NORM_OPS)
    b = dtype_bytes("bf16")
    assert q.bytes_read == q.bytes_written == 4 * (32 // tp) * 128 * b
    assert k.bytes_read == k.bytes_written == 4 * max(1, 8 // tp) * 128 * b
    names = list(ops)
    assert names.index("qkv_proj") < names.index("q_head_norm") < names.index("rope")


def test_models_without_it_have_no_qk_norm_ops() -> None:
    for preset in ("llama3-8b", "glm-4.5-air"):
        assert not set(QK_NORM_OPS) & set(_ops(load_preset(preset)))
    # and the prefill layer of a model with it has both
    spec = load_preset("qwen3-8b")
    prefill = layer_ops(spec, b=1, seq_len=256, shard=Shard(), precision="bf16", moe=False)
    assert set(QK_NORM_OPS) <= {op.name for op in prefill}


def _gpu(engine: str) -> GpuModel:
    model = model_for(H100).for_engine(engine)
    assert isinstance(model, GpuModel)
    return model


def test_vllm_launches_both_norms_sglang_and_trtllm_one() -> None:
    ops = _ops(load_preset("qwen3-8b"), batch=64)
    q, k = (ops[name] for name in QK_NORM_OPS)
    launch = _gpu("vllm").efficiency.launch_overhead_s
    vllm = _gpu("vllm")
    assert vllm.op_time(q).overhead_s == vllm.op_time(k).overhead_s == launch
    for engine in ("sglang", "trtllm"):
        model = _gpu(engine)
        assert model.op_time(q).overhead_s == launch
        fused = model.op_time(k)
        assert fused.overhead_s == 0.0
        # the keys are still read and written
        bandwidth = H100.hbm_bytes_per_s * model.efficiency.hbm_fraction
        assert fused.seconds == pytest.approx((k.bytes_read + k.bytes_written) / bandwidth)


@pytest.mark.parametrize(("preset", "sandwich"),
                         [("gemma2-9b", True), ("gemma3-12b", True), ("gemma3-1b", True),
                          ("gemma-7b", False), ("qwen3-8b", False)])  # fmt: skip
def test_gemma_2_and_3_norm_each_blocks_output(preset: str, sandwich: bool) -> None:
    spec = load_preset(preset)
    assert spec.post_norms is sandwich
    names = list(_ops(spec))
    if not sandwich:
        assert "attn_post_norm" not in names and "mlp_post_norm" not in names
        return
    assert names.index("o_proj") < names.index("attn_post_norm") < names.index("attn_residual")
    assert names.index("mlp_down") < names.index("mlp_post_norm") < names.index("mlp_residual")
    post = _ops(spec)["attn_post_norm"]
    assert post.bytes_read == post.bytes_written == 4 * spec.d_model * dtype_bytes("bf16")
