"""gpt-oss's expert GLU clamp and expert biases: the memory passes Megatron-Core's
TEGroupedMLP runs outside fused kernels, on the training path only."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.errors import WorkloadError
from chipwise.hardware.catalog import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.layers import (
    Shard,
    backward_ops,
    layer_ops,
    unfused_expert_epilogues,
)
from chipwise.perf.predictor import Predictor
from chipwise.units import dtype_bytes
from chipwise.workload.config import load_config
from chipwise.workload.ir import Training, Workload
from chipwise.workload.presets import load_preset

B200 = chip("b200")


def test_gpt_oss_presets_state_the_clamp_and_the_expert_biases() -> None:
    for name in ("gpt-oss-120b", "gpt-oss-20b"):
        spec = load_preset(name)
        assert spec.glu_clamp == 7.0 and spec.expert_bias
    qwen = load_preset("qwen3-235b-a22b")
    assert qwen.glu_clamp == 0.0 and not qwen.expert_bias


def test_a_bad_swiglu_limit_is_rejected(tmp_path: Path) -> None:
    cfg = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
           "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 32000,
           "swiglu_limit": -1}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(WorkloadError, match="swiglu_limit"):
        load_config(tmp_path / "config.json")


def _ops(spec_name: str, precision: str = "bf16") -> tuple:
    spec = load_preset(spec_name)
    fwd = layer_ops(spec, b=4, seq_len=4096, shard=Shard(ep=8), precision=precision, moe=True)
    return spec, fwd, unfused_expert_epilogues(fwd, spec)


def test_clamp_and_bias_passes_are_counted_kernel_by_kernel() -> None:
    _, fwd, ops = _ops("gpt-oss-120b")
    by = {op.name: op for op in ops}
    act, down = by["expert_act"], by["expert_down"]
    names = [op.name for op in ops]
    assert names.index("expert_glu_clamp") == names.index("expert_act") - 1
    assert names.index("expert_bias") == names.index("expert_down") + 1
    # two clamps and a cat over the rows x 2F GLU input: read and written twice
    glu_in = 2 * act.shape[0]
    assert by["expert_glu_clamp"].bytes_read == pytest.approx(2 * glu_in * 2)
    assert by["expert_glu_clamp"].bytes_written == pytest.approx(2 * glu_in * 2)
    # t + b * p and the cat over the rows x D fc2 output: 3 reads, 3 writes
    rows, d, _ = down.mnk
    elements = down.batch * rows * d
    assert by["expert_bias"].bytes_read == pytest.approx(3 * elements * dtype_bytes("bf16"))
    bwd = {op.name: op for op in backward_ops(ops)}
    # the bias's backward: mul's two reductions and split's cat, 8 passes of the forward's 6
    assert bwd["expert_bias_bwd"].bytes_read + bwd["expert_bias_bwd"].bytes_written == (
        pytest.approx(8 * elements * 2)
    )
    assert len(ops) == len(fwd) + 2


def test_fp8_experts_keep_the_passes_in_bf16_and_other_models_unchanged() -> None:
    _, _, ops = _ops("gpt-oss-120b", "fp8")
    assert {op.dtype for op in ops if op.name in ("expert_glu_clamp", "expert_bias")} == {"bf16"}
    _, fwd, ops = _ops("qwen3-235b-a22b")
    assert ops == fwd
    spec, fwd, _ = _ops("gpt-oss-120b")
    plain = replace(spec, glu_clamp=0.0, expert_bias=False)
    assert unfused_expert_epilogues(fwd, plain) == fwd


def test_only_megatron_plans_without_a_whole_iteration_graph_pay_them() -> None:
    work = Workload(model=load_preset("gpt-oss-120b"),
                    phase=Training(seq_len=4096, global_batch=1280))  # fmt: skip
    model = Predictor(work, B200, "bf16").step_model()
    plan = Plan(dp=64, ep=64, microbatch=4)
    assert model._megatron_experts(plan)
    assert not model._megatron_experts(replace(plan, full_graph=1))
    assert not model._megatron_experts(Plan(fsdp=64, ep=64, microbatch=4))
    names = {t.op.name for t in model._stage_layer(plan, 4, 4096, True, False).op_times}
    assert {"expert_glu_clamp", "expert_bias", "expert_bias_bwd"} <= names
    graphed = model._stage_layer(replace(plan, full_graph=1), 4, 4096, True, False)
    assert "expert_bias" not in {t.op.name for t in graphed.op_times}
    slow = model.train(plan, seq_len=4096, global_batch=1280).step_time_s
    fast = model.train(replace(plan, full_graph=1), seq_len=4096, global_batch=1280).step_time_s
    assert slow > fast
