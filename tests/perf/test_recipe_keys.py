"""Recipe settings a plan may state: gradient-reduction dtype, expert all-to-all overlap,
CUDA-graphed attention and a CUDA-graphed whole iteration."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.errors import PlanError
from chipwise.hardware.catalog import chip
from chipwise.perf.base import Plan, parse_plan
from chipwise.perf.ops.layers import GLU_CLAMP_KERNELS, norm_act_recompute_ops
from chipwise.perf.plan.parallel import groups
from chipwise.perf.plan.planner import plan_constraints
from chipwise.perf.predictor import Predictor
from chipwise.perf.step import train
from chipwise.perf.step.train import StepModel, ep_comm_overlaps, kernel_launches
from chipwise.workload.ir import Training, Workload
from chipwise.workload.presets import load_preset

B200 = chip("b200")
TPU = chip("tpu-v6e")


def _moe(c=B200, precision: str = "bf16") -> StepModel:
    spec = load_preset("gpt-oss-120b")
    work = Workload(model=spec, phase=Training(seq_len=4096, global_batch=1280))
    return Predictor(work, c, precision).step_model()


def _host(model: StepModel, plan: Plan) -> float:
    """The host term of one MoE layer of ``plan`` (4096-token sequences)."""
    lc = model._stage_layer(plan, plan.microbatch, 4096, True, False)
    return model._moe_host_s(plan, lc)


def test_recipe_keys_parse_print_and_reject_bad_values() -> None:
    p = parse_plan("tp=1,ep=64,microbatch=4,grad_reduce=bf16,a2a_overlap=0")
    assert (p.grad_reduce, p.a2a_overlap) == ("bf16", 0)
    assert parse_plan(str(p)) == p
    assert "grad_reduce" not in str(Plan(dp=8)) and "a2a_overlap" not in str(Plan(dp=8))
    with pytest.raises(PlanError, match=r"grad_reduce must be fp32\|bf16"):
        parse_plan("grad_reduce=fp16")
    with pytest.raises(PlanError, match="a2a_overlap must be 0"):
        parse_plan("a2a_overlap=2")
    fixed = plan_constraints("ep=64,grad_reduce=bf16,a2a_overlap=1", 64)
    assert (fixed["grad_reduce"], fixed["a2a_overlap"]) == ("bf16", 1)
    assert "a2a_overlap" not in plan_constraints("ep=64", 64)
    assert parse_plan("ep=8,attn_graph=1").attn_graph == 1
    with pytest.raises(PlanError, match="attn_graph must be 0"):
        parse_plan("attn_graph=2")
    assert plan_constraints("ep=64,attn_graph=1", 64)["attn_graph"] == 1
    assert parse_plan("ep=8,full_graph=1").full_graph == 1
    assert parse_plan(str(Plan(ep=8, full_graph=1))).full_graph == 1
    with pytest.raises(PlanError, match="full_graph must be 0"):
        parse_plan("full_graph=2")
    assert plan_constraints("ep=64,full_graph=1", 64)["full_graph"] == 1


def test_bf16_gradient_reduction_halves_the_data_parallel_gradient_bytes() -> None:
    model = _moe()
    plan = Plan(dp=64, ep=64, microbatch=4)
    _, default = model._weight_bytes(plan)
    _, fp32 = model._weight_bytes(replace(plan, grad_reduce="fp32"))
    _, bf16 = model._weight_bytes(replace(plan, grad_reduce="bf16"))
    assert default == fp32  # Megatron's GPU default: fp32 gradient reduction
    assert bf16 == pytest.approx(fp32 / 2)
    # MaxText reduces bf16 gradients; a plan may still state fp32
    tpu = _moe(TPU)
    _, tpu_default = tpu._weight_bytes(plan)
    _, tpu_fp32 = tpu._weight_bytes(replace(plan, grad_reduce="fp32"))
    assert tpu_fp32 == pytest.approx(2 * tpu_default)


def test_a2a_overlap_key_overrides_the_default_where_the_schedule_allows_it() -> None:
    plan = Plan(dp=64, ep=64, microbatch=4)
    assert ep_comm_overlaps(plan, 5, B200)  # chipwise's default: on
    assert not ep_comm_overlaps(replace(plan, a2a_overlap=0), 5, B200)
    assert ep_comm_overlaps(replace(plan, a2a_overlap=1), 5, B200)
    # the combined 1F1B schedule needs pp = 1 with two micro-batches, or vp > 1
    assert not ep_comm_overlaps(replace(plan, a2a_overlap=1), 1, B200)
    assert not ep_comm_overlaps(Plan(dp=8, pp=8, ep=8, a2a_overlap=1), 8, B200)
    assert not ep_comm_overlaps(replace(plan, a2a_overlap=1), 5, TPU)


def test_no_a2a_overlap_exposes_every_dispatch_and_combine() -> None:
    model = _moe()
    plan = Plan(dp=64, ep=64, microbatch=4)
    g = groups(plan, B200)
    lc = model._stage_layer(plan, 4, 4096, True, False)
    tokens, act = 4 * 4096, 2.0
    a2a = model._alltoall(plan, g["ep"], tokens, act)
    off = model._layer_comm(replace(plan, a2a_overlap=0), g, lc, tokens, act, True, 5)
    on = model._layer_comm(replace(plan, a2a_overlap=1), g, lc, tokens, act, True, 5)
    # dispatch + combine, forward and backward, all on the critical path
    assert off == pytest.approx(4 * a2a)
    assert on == pytest.approx(max(0.0, 4 * a2a - lc.fwd.total_s - lc.bwd.total_s))
    slow = model.train(replace(plan, a2a_overlap=0), seq_len=4096, global_batch=1280)
    fast = model.train(replace(plan, a2a_overlap=1), seq_len=4096, global_batch=1280)
    assert slow.step_time_s > fast.step_time_s


def test_a_zero3_plan_runs_as_an_fsdp2_stack_without_overlap_or_megatron_host_time() -> None:
    model = _moe(chip("h100-sxm"))
    megatron = Plan(dp=64, ep=64, microbatch=2)
    fsdp2 = Plan(fsdp=64, ep=64, microbatch=2)
    # no combined-1F1B schedule on an FSDP2 stack unless the plan states one
    assert ep_comm_overlaps(megatron, 4, B200) and not ep_comm_overlaps(fsdp2, 4, B200)
    assert ep_comm_overlaps(replace(fsdp2, a2a_overlap=1), 4, B200)
    # experts as one grouped kernel: no per-expert host launches
    assert _host(model, megatron) > 1e-3
    assert _host(model, fsdp2) == 0.0
    assert _host(_moe(TPU), megatron) == 0.0


def test_a_cuda_graphed_attention_leaves_less_of_a_moe_layer_host_bound() -> None:
    model = _moe()
    plan = Plan(dp=64, ep=64, microbatch=4)
    ungraphed = _host(model, plan)
    graphed = _host(model, replace(plan, attn_graph=1))
    assert 0.0 < graphed < ungraphed
    assert _host(model, replace(plan, attn_graph=0)) == ungraphed  # off = unstated
    slow = model.train(plan, seq_len=4096, global_batch=1280)
    fast = model.train(replace(plan, attn_graph=1), seq_len=4096, global_batch=1280)
    # the host time saved on every MoE layer of every micro-batch
    m = 1280 // 64 // 4
    saved = m * model.spec.n_layers * (ungraphed - graphed)
    assert slow.step_time_s - fast.step_time_s == pytest.approx(saved, rel=1e-6)
    # an FSDP2 stack has no Megatron host term, graphed or not
    assert _host(model, Plan(fsdp=64, ep=64, microbatch=4, attn_graph=1)) == 0.0


def test_a_whole_iteration_cuda_graph_leaves_no_moe_layer_host_bound() -> None:
    model = _moe()
    plan = Plan(dp=64, ep=64, microbatch=4)
    assert _host(model, replace(plan, full_graph=1)) == 0.0
    assert _host(model, replace(plan, full_graph=1, attn_graph=1)) == 0.0
    assert _host(model, replace(plan, full_graph=0)) == _host(model, plan)
    slow = model.train(plan, seq_len=4096, global_batch=1280)
    fast = model.train(replace(plan, full_graph=1), seq_len=4096, global_batch=1280)
    m = 1280 // 64 // 4
    saved = m * model.spec.n_layers * _host(model, plan)
    assert slow.step_time_s - fast.step_time_s == pytest.approx(saved, rel=1e-6)


def test_stated_pipeline_end_slots_take_a_layer_off_the_busiest_stage() -> None:
    # Megatron --account-for-embedding/loss-in-pipeline-split: Qwen3-235B's 94 layers split as
    # 96 slots, 12 per stage on pp=8 (the embedding and the loss replace a layer each)
    from chipwise.perf.plan.parallel import ends_take_stage_slots, layers_per_stage

    assert parse_plan("pp=8,end_slots=1").end_slots == 1
    assert parse_plan(str(Plan(pp=8, end_slots=0))).end_slots == 0
    with pytest.raises(PlanError, match="end_slots must be 0"):
        parse_plan("end_slots=2")
    assert plan_constraints("pp=8,end_slots=1", 8)["end_slots"] == 1
    assert not ends_take_stage_slots(94, 8, 1) and ends_take_stage_slots(94, 8, 1, 1)
    assert not ends_take_stage_slots(94, 1, 1, 1)  # no pipeline: nothing to split
    assert ends_take_stage_slots(94, 32, 3)  # more virtual stages than layers: always
    assert layers_per_stage(94, 8, 1, 1) == 12 == layers_per_stage(94, 8, 1)
    spec = load_preset("qwen3-235b-a22b")
    work = Workload(model=spec, phase=Training(seq_len=4096, global_batch=256))
    model = Predictor(work, B200, "bf16").step_model()
    plan = Plan(dp=4, pp=8, ep=4, microbatch=1)
    unstated = model.train(plan, seq_len=4096, global_batch=256).step_time_s
    stated = model.train(replace(plan, end_slots=1), seq_len=4096, global_batch=256).step_time_s
    assert stated < unstated  # the head replaces a layer rather than adding to twelve


def test_unfused_attention_passes_the_scores_through_hbm() -> None:
    # Megatron-LM before FlashAttention: scores GEMM, fused softmax, dropout, context GEMM
    from chipwise.perf.ops.layers import (
        Shard,
        is_attention_core,
        layer_ops,
        selective_recompute_ops,
    )
    from chipwise.workload.ir import OpKind

    assert parse_plan("tp=8,flash=0").flash == 0
    assert parse_plan(str(Plan(flash=0))).flash == 0
    with pytest.raises(PlanError, match="flash must be 0"):
        parse_plan("flash=2")
    assert plan_constraints("tp=8,flash=0", 8)["flash"] == 0
    spec = load_preset("llama2-7b")
    shard = Shard(tp=1)
    fused = layer_ops(spec, b=1, seq_len=2048, shard=shard, precision="bf16", moe=False)
    unfused = layer_ops(spec, b=1, seq_len=2048, shard=shard, precision="bf16", moe=False,
                        flash=False)  # fmt: skip
    assert sum(op.kind is OpKind.ATTENTION for op in fused) == 1
    assert not any(op.kind is OpKind.ATTENTION for op in unfused)
    core = [op for op in unfused if is_attention_core(op)]
    assert [op.name for op in core] == [
        "attention_scores", "attention_softmax", "attention_dropout", "attention_context",
    ]  # fmt: skip
    # the softmax reads and writes every score: 32 heads x 2048^2 in bf16, twice
    scores = 32 * 2048 * 2048
    assert core[1].bytes_read + core[1].bytes_written == pytest.approx(2 * 2 * scores)
    # the scores GEMM computes the whole (unmasked) matrix: twice flash's causal FLOPs
    flash_op = next(op for op in fused if op.kind is OpKind.ATTENTION)
    bmm = core[0].flops + core[3].flops
    assert bmm == pytest.approx(2 * flash_op.flops, rel=0.01)
    # selective recompute re-runs the unfused core, GEMMs included, not the projections
    sel = selective_recompute_ops(unfused)
    assert {"attention_scores", "attention_context"} <= {op.name for op in sel}
    assert not any(op.name == "qkv_proj" for op in sel)
    # the step: a small model at 2048 tokens spends far longer in an unfused core
    work = Workload(model=spec, phase=Training(seq_len=2048, global_batch=64))
    model = Predictor(work, chip("a100-sxm-80gb"), "bf16").step_model()
    plan = Plan(dp=8, microbatch=1, recompute="full")
    fast = model.train(plan, seq_len=2048, global_batch=64).step_time_s
    slow = model.train(replace(plan, flash=0), seq_len=2048, global_batch=64).step_time_s
    assert 1.1 * fast < slow < 2 * fast


def test_dispatcher_parses_and_the_plain_alltoall_sends_more_across_nodes() -> None:
    """Megatron's ``alltoall`` dispatcher sends a copy per selected expert; DeepEP/HybridEP
    (``deepep``, and an unstated plan) one per rank and remote node: never fewer bytes."""
    assert parse_plan("ep=16,dispatcher=alltoall").dispatcher == "alltoall"
    assert parse_plan(str(Plan(ep=16, dispatcher="deepep"))).dispatcher == "deepep"
    with pytest.raises(PlanError, match=r"dispatcher must be alltoall\|deepep"):
        parse_plan("dispatcher=flex")
    assert plan_constraints("ep=64,dispatcher=alltoall", 64)["dispatcher"] == "alltoall"
    model = _moe(chip("h100-sxm"))
    plan = Plan(dp=16, ep=16, microbatch=4)
    g = groups(plan, model.chip)["ep"]
    assert g.size == 16 and g.in_domain < g.size  # the ep group spans two 8-GPU nodes
    plain = model._alltoall(replace(plan, dispatcher="alltoall"), g, 4 * 4096, 2.0)
    dedup = model._alltoall(replace(plan, dispatcher="deepep"), g, 4 * 4096, 2.0)
    assert plain > dedup
    assert model._alltoall(plan, g, 4 * 4096, 2.0) == dedup  # unstated: de-duplicated


def test_the_moe_host_term_is_charged_per_kernel_launch() -> None:
    # Megatron launches each local expert's GEMMs one by one: more local experts, more host time
    spec = load_preset("qwen3-235b-a22b")
    work = Workload(model=spec, phase=Training(seq_len=4096, global_batch=1024))
    model = Predictor(work, B200, "bf16").step_model()
    few, many = Plan(dp=32, ep=32, microbatch=1), Plan(dp=32, ep=8, microbatch=1)
    lc_few = model._stage_layer(few, 1, 4096, True, False)
    lc_many = model._stage_layer(many, 1, 4096, True, False)
    # 12 more local experts, each with 2 forward and 4 backward GEMMs
    assert lc_many.launches - lc_few.launches == 12 * 6
    assert _host(model, few) == pytest.approx(train.MOE_LAUNCH_HOST_S * lc_few.launches)
    assert _host(model, many) > _host(model, few)
    # full recompute re-runs the forward, its dispatcher sync included; selective and
    # norm_act re-run ops inside the backward, where the host keeps ahead
    full = replace(few, recompute="full")
    assert lc_few.launches_with("full") == lc_few.launches + kernel_launches(
        [t for t in lc_few.op_times if not t.op.backward]
    )
    assert _host(model, full) > _host(model, few)
    for mode in ("selective", "norm_act"):
        assert _host(model, replace(few, recompute=mode)) == _host(model, few)


def test_gpt_oss_unfused_epilogues_launch_a_kernel_per_pass_and_expert() -> None:
    model = _moe()
    plan = Plan(dp=64, ep=8, microbatch=1)  # 16 local experts
    lc = model._stage_layer(plan, 1, 4096, True, False)
    kernels = {t.op.name: t.op.kernels for t in lc.op_times}
    assert kernels["expert_bias"] == 2 * 16 + 1  # t + b * p per expert, then a cat
    assert kernels["expert_glu_clamp"] == GLU_CLAMP_KERNELS
    assert kernels["attn_norm"] == 1


def test_norm_act_recompute_reruns_the_norms_and_the_expert_activation() -> None:
    plan = parse_plan("tp=1,ep=64,microbatch=4,recompute=norm_act")
    assert plan.recompute == "norm_act" and parse_plan(str(plan)) == plan
    with pytest.raises(PlanError, match=r"none\|selective\|full\|norm_act"):
        parse_plan("recompute=norms")
    model = _moe()
    lc = model._stage_layer(plan, 4, 4096, True, False)
    names = {op.name for op in norm_act_recompute_ops(tuple(
        t.op for t in lc.op_times if not t.op.backward))}  # fmt: skip
    assert names == {"attn_norm", "mlp_norm", "expert_glu_clamp", "expert_act"}
    assert 0.0 < lc.recompute("norm_act").total_s < lc.recompute("selective").total_s
    steps = {
        mode: model.train(
            replace(plan, dp=64, recompute=mode), seq_len=4096, global_batch=1280
        ).step_time_s
        for mode in ("none", "norm_act", "selective")
    }
    assert steps["none"] < steps["norm_act"] < steps["selective"]
