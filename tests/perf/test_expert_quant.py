"""Checkpoints that quantise only their routed experts (gpt-oss MXFP4): the rest is bf16."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.layers import Shard, attention_params, decode_layer_ops
from chipwise.perf.plan.memory import serve_memory, stage_params
from chipwise.workload.config import load_config
from chipwise.workload.ir import TransformerSpec
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")


def _gpt_oss() -> TransformerSpec:
    return load_preset("gpt-oss-120b")


def test_gpt_oss_preset_quantises_only_its_experts() -> None:
    assert _gpt_oss().expert_quant == "mxfp4"


def test_a_config_without_modules_to_not_convert_quantises_everything(tmp_path: Path) -> None:
    cfg = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
           "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 4096,
           "vocab_size": 32000, "quantization_config": {"quant_method": "fp8"}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert load_config(tmp_path / "config.json").expert_quant == ""


def _weights(spec: TransformerSpec, precision: str) -> float:
    return serve_memory(
        spec, Plan(), batch=1, context=0, precision=precision, kv_dtype="bf16",
        prefill_tokens=1, chip=H100,
    ).weights_bytes  # fmt: skip


def test_attention_bf16_and_experts_in_the_checkpoint_format_at_4_bits() -> None:
    spec = _gpt_oss()
    plain = replace(spec, expert_quant="")
    params = stage_params(spec, Plan())
    dense = params.dense_per_chip - params.ends_per_chip
    assert dense >= spec.n_layers * attention_params(spec)
    # attention and router from 4-bit to bf16 bytes; experts from int4's 4.16 to MXFP4's
    # 4.25 bits (a 32-element block shares one 8-bit scale)
    int4 = 0.5 + 2.5 / 128
    want = dense * (2.0 - int4) + params.experts_per_chip * (0.5 + 1 / 32 - int4)
    extra = _weights(spec, "int4") - _weights(plain, "int4")
    assert abs(extra - want) < 1e3
    # served wider than its 4-bit format, nothing changes
    assert _weights(spec, "bf16") == _weights(plain, "bf16")
    assert _weights(spec, "fp8") == _weights(plain, "fp8")


def test_decode_reads_bf16_attention_weights() -> None:
    spec = _gpt_oss()
    kw = {"batch": 1, "context": 256, "shard": Shard(), "precision": "int4", "kv_dtype": "bf16",
          "moe": True}  # fmt: skip
    qkv = next(op for op in decode_layer_ops(spec, **kw) if op.name == "qkv_proj")  # type: ignore[arg-type]
    plain = replace(spec, expert_quant="")
    qkv4 = next(op for op in decode_layer_ops(plain, **kw) if op.name == "qkv_proj")  # type: ignore[arg-type]
    assert qkv.bytes_read > 3.5 * qkv4.bytes_read
