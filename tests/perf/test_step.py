"""Layer op lists and the composition of a training step."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.errors import PlanError, UnsupportedOpError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.layers import (
    ATTENTION_BACKWARD_FLOPS_RATIO,
    Shard,
    backward_ops,
    layer_ops,
)
from chipwise.perf.ops.models import model_for
from chipwise.perf.ops.roofline import RooflineModel
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.timing import time_ops
from chipwise.perf.step.train import StepModel
from chipwise.workload.accounting import attention_params_per_layer, mlp_params
from chipwise.workload.ir import OpKind, TransformerSpec

H100 = chip("h100-sxm")
SPEC = TransformerSpec(
    name="tiny", n_layers=8, d_model=1024, n_heads=16, n_kv_heads=4, head_dim=64,
    d_ff=4096, vocab_size=32000,
)  # fmt: skip


def _model(c=H100, precision: str = "bf16", roofline: bool = True) -> StepModel:
    perf = RooflineModel(c) if roofline else model_for(c)
    return StepModel(SPEC, c, precision, perf, Network(c))


def test_forward_matmul_flops_are_two_per_parameter_per_token() -> None:
    ops = layer_ops(SPEC, b=2, seq_len=512, shard=Shard(), precision="bf16", moe=False)
    matmul = sum(o.flops for o in ops if o.kind is OpKind.MATMUL)
    params = attention_params_per_layer(SPEC) + mlp_params(SPEC, SPEC.d_ff)
    assert matmul == 2 * params * 2 * 512


def test_only_rotary_models_rotate_q_and_k_in_every_layer() -> None:
    gpt2_style = replace(SPEC, learned_positions=2048)  # positions added once at the input
    names = {op.name for op in layer_ops(SPEC, b=1, seq_len=512, shard=Shard(),
                                         precision="bf16", moe=False)}  # fmt: skip
    learned = {op.name for op in layer_ops(gpt2_style, b=1, seq_len=512, shard=Shard(),
                                           precision="bf16", moe=False)}  # fmt: skip
    assert "rope" in names and "rope" not in learned


def test_causal_attention_counts_half_the_pairs_and_cp_splits_it() -> None:
    one = layer_ops(SPEC, b=1, seq_len=1024, shard=Shard(), precision="bf16", moe=False)
    cp4 = layer_ops(SPEC, b=1, seq_len=1024, shard=Shard(cp=4), precision="bf16", moe=False)
    attn = next(o for o in one if o.kind is OpKind.ATTENTION)
    # QK^T and PV: 2 x 2 x S^2/2 x H x Dh
    assert attn.flops == 2 * 1024 * 1024 * 16 * 64
    assert next(o for o in cp4 if o.kind is OpKind.ATTENTION).flops == attn.flops / 4


def test_backward_is_dgrad_plus_wgrad_and_flash_recompute() -> None:
    fwd = layer_ops(SPEC, b=1, seq_len=512, shard=Shard(), precision="bf16", moe=False)
    bwd = backward_ops(fwd)
    mm = sum(o.flops for o in fwd if o.kind is OpKind.MATMUL)
    assert sum(o.flops for o in bwd if o.kind is OpKind.MATMUL) == 2 * mm
    attn = next(o for o in fwd if o.kind is OpKind.ATTENTION).flops
    attn_bwd = next(o for o in bwd if o.kind is OpKind.ATTENTION).flops
    assert attn_bwd == ATTENTION_BACKWARD_FLOPS_RATIO * attn


def test_tensor_parallel_shards_heads_and_mlp_width() -> None:
    ops = layer_ops(SPEC, b=1, seq_len=512, shard=Shard(tp=4), precision="bf16", moe=False)
    qkv = next(o for o in ops if o.name == "qkv_proj")
    up = next(o for o in ops if o.name == "mlp_up")
    assert qkv.mnk == (512, (16 // 4 + 2 * (4 // 4)) * 64, 1024)
    assert up.mnk == (512, 2 * 4096 // 4, 1024)  # gated: gate and up together


def test_one_chip_step_is_compute_plus_optimizer_and_breakdown_adds_up() -> None:
    p = _model().train(Plan(microbatch=2), seq_len=1024, global_batch=8)
    b = p.breakdown
    assert b.communication_s == 0 and b.bubble_s == 0
    assert b.total_s == pytest.approx(p.step_time_s)
    assert p.tokens_per_step == 8 * 1024


def test_recompute_costs_time_in_order() -> None:
    m = _model()
    t = {rc: m.train(Plan(recompute=rc), seq_len=1024, global_batch=4).step_time_s
         for rc in ("none", "selective", "full")}  # fmt: skip
    assert t["none"] < t["selective"] < t["full"]


def test_pipeline_bubble_is_pp_minus_one_over_vp_stage_times() -> None:
    m = _model()
    one = m.train(Plan(pp=4), seq_len=1024, global_batch=8)
    two = m.train(Plan(pp=4, vp=2), seq_len=1024, global_batch=8)
    assert one.breakdown.bubble_s > 0
    assert two.breakdown.bubble_s == pytest.approx(one.breakdown.bubble_s / 2, rel=0.05)


def test_tensor_parallel_adds_communication() -> None:
    p = _model().train(Plan(tp=8), seq_len=1024, global_batch=8)
    assert p.breakdown.communication_s > 0


def test_batch_must_divide_over_data_parallel_ranks() -> None:
    with pytest.raises(PlanError, match="multiple of 8"):
        _model().train(Plan(dp=8), seq_len=1024, global_batch=12)
    with pytest.raises(PlanError, match="divisor of 4"):
        _model().train(Plan(dp=2, microbatch=3), seq_len=1024, global_batch=8)


def test_a_precision_the_chip_lacks_is_an_error() -> None:
    with pytest.raises(UnsupportedOpError, match="fp8"):
        StepModel(
            SPEC, chip("tpu-v5e"), "fp8", RooflineModel(chip("tpu-v5e")), Network(chip("tpu-v5e"))
        )


def test_sustained_fraction_slows_only_compute_bound_tensor_ops() -> None:
    ops = layer_ops(SPEC, b=4, seq_len=2048, shard=Shard(), precision="bf16", moe=False)
    model = model_for(H100)
    f = model.sustained_tensor_fraction()
    assert f == efficiency_for(H100).sustained_tensor_fraction < 1
    raw = {t.op.name: t for t in (model.op_time(o) for o in ops)}
    for t in time_ops(ops, model):
        before = raw[t.op.name]
        if t.op.tensor_op and before.bound == "compute":
            stretched = before.compute_s / f + before.overhead_s
            assert t.seconds == pytest.approx(max(stretched, before.memory_s + before.overhead_s))
        elif not t.op.tensor_op:
            assert t.seconds == before.seconds


def test_sustained_fraction_is_an_efficiency_parameter_calibration_can_replace() -> None:
    eff = efficiency_for(H100).with_values(source="test", sustained_tensor_fraction=0.5)
    base = StepModel(SPEC, H100, "bf16", model_for(H100), Network(H100))
    slow = StepModel(SPEC, H100, "bf16", model_for(H100, eff), Network(H100, eff))
    a = base.train(Plan(), seq_len=2048, global_batch=8).step_time_s
    b = slow.train(Plan(), seq_len=2048, global_batch=8).step_time_s
    assert b > a
    names = {x.name: x for x in slow.train(Plan(), seq_len=2048, global_batch=8).assumptions}
    assert names["sustained_tensor_fraction"].value == 0.5
    assert "test" in names["sustained_tensor_fraction"].source


def test_the_roofline_sustains_its_whole_rate() -> None:
    assert RooflineModel(H100).sustained_tensor_fraction() == 1.0


def test_fp8_training_is_faster_than_bf16_on_hopper() -> None:
    bf16 = _model(roofline=False).train(Plan(), seq_len=2048, global_batch=8)
    fp8 = _model(precision="fp8", roofline=False).train(Plan(), seq_len=2048, global_batch=8)
    assert fp8.step_time_s < bf16.step_time_s


def test_embedding_and_loss_in_a_stage_slot_of_their_own_replace_a_layer() -> None:
    # 8 layers on pp=5 x vp=2: the ends fill the two spare slots (Megatron's
    # --account-for-embedding/loss-in-pipeline-split), so the busiest stage is one layer
    # plus the head (this head outweighs a layer), not two layers plus the head as at pp=4
    model = _model()
    ends = model.train(Plan(pp=5, vp=2), seq_len=512, global_batch=64)
    full = model.train(Plan(pp=4, vp=2), seq_len=512, global_batch=64)
    stage_ends = (ends.step_time_s - ends.breakdown.bubble_s) / 64
    stage_full = (full.step_time_s - full.breakdown.bubble_s) / 64
    assert stage_ends < stage_full
    bound = model.lower_bound_s(Plan(pp=5, vp=2), seq_len=512, global_batch=64)
    assert bound <= ends.step_time_s


def test_the_bound_cache_keys_everything_the_bound_reads() -> None:
    """The planner's bound caches one micro-batch's stage work per layout shape; each layout
    bounded on one shared model must get what a fresh model gives it (a key missing a field
    the bound reads, e.g. fsdp's MoE host time, would hand one layout another's work)."""
    moe = replace(SPEC, n_experts=8, experts_per_token=2, moe_d_ff=1024, first_dense_layers=1)
    layouts = [
        Plan(dp=dp, fsdp=fsdp, tp=tp, pp=pp, vp=vp, ep=ep, microbatch=mb, recompute=rc,
             attn_graph=graph, full_graph=full)
        for dp, fsdp in ((8, 1), (1, 8), (2, 4))
        for tp, pp, vp in ((1, 1, 1), (2, 2, 2))
        for ep in (1, 2)
        for mb in (1, 2)
        for rc in ("none", "full")
        for graph, full in ((-1, -1), (1, -1), (-1, 1))
    ]  # fmt: skip
    shared = StepModel(moe, H100, "bf16", model_for(H100), Network(H100))
    for plan in layouts:
        fresh = StepModel(moe, H100, "bf16", model_for(H100), Network(H100))
        want = fresh.lower_bound_s(plan, seq_len=512, global_batch=64)
        assert shared.lower_bound_s(plan, seq_len=512, global_batch=64) == want, plan
