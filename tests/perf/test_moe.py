"""MoE physics: the expert all-to-all by placement, EP folded over TP (EP x ETP), the expert
data-parallel group, grouped GEMMs of small experts."""

from __future__ import annotations

import pytest

from chipwise.errors import PlanError
from chipwise.hardware.catalog import chip
from chipwise.perf.base import Plan, parse_plan
from chipwise.perf.comm.alltoall import alltoall_time, remote_domains_per_token
from chipwise.perf.ops.layers import Shard, mlp_ops
from chipwise.perf.plan.memory import stage_params
from chipwise.perf.plan.parallel import check_plan, groups
from chipwise.workload.presets import load_preset as preset_spec

H100 = chip("h100-sxm")


def _a2a(group: int, in_domain: int, *, dedup: bool = True) -> float:
    return alltoall_time(
        H100, tokens=4096, k=8, bytes_per_copy=7168 * 2, group_size=group,
        in_domain=in_domain, experts=256, dedup=dedup,
    ).seconds  # fmt: skip


def test_alltoall_across_nodes_is_slower_than_inside_nvlink() -> None:
    inside = _a2a(8, 8)
    across = _a2a(64, 8)
    assert across > 2 * inside


def test_alltoall_sends_one_copy_per_remote_node_when_deduplicated() -> None:
    assert _a2a(64, 8, dedup=True) < _a2a(64, 8, dedup=False)
    # 8 experts of 256 over 8 nodes: about 4.6 other nodes per token, never more than 7
    r = remote_domains_per_token(256, 8, 8)
    assert 4.0 < r < 5.0
    assert remote_domains_per_token(256, 8, 1) == 0.0


def test_alltoall_inside_a_domain_sends_one_copy_per_rank_on_gpus() -> None:
    # Qwen3-30B-A3B: 128 experts, top-8, ep = 8 in one NVLink node: ~5.3 ranks per token
    kw = dict(tokens=16384, k=8, bytes_per_copy=2048 * 2, group_size=8, in_domain=8,
              experts=128)  # fmt: skip
    dedup = alltoall_time(H100, **kw)  # type: ignore[arg-type]
    per_expert = alltoall_time(H100, dedup=False, **kw)  # type: ignore[arg-type]
    ranks = remote_domains_per_token(128, 8, 8) * 8 / 7  # ranks touched, own included
    assert 5.0 < ranks < 5.6
    assert dedup.scale_up_bytes == pytest.approx(per_expert.scale_up_bytes * ranks / 8)
    assert dedup.seconds < per_expert.seconds
    # one expert per rank and k = 1: nothing to de-duplicate
    one = dict(kw, k=1, experts=8)
    assert alltoall_time(H100, **one).scale_up_bytes == pytest.approx(  # type: ignore[arg-type]
        alltoall_time(H100, dedup=False, **one).scale_up_bytes  # type: ignore[arg-type]
    )
    # MaxText's ragged all-to-all on a TPU slice sends every (token, expert) copy
    v5p = chip("tpu-v5p")
    tpu = dict(kw, group_size=64, in_domain=64)
    assert alltoall_time(v5p, **tpu).scale_up_bytes == pytest.approx(  # type: ignore[arg-type]
        alltoall_time(v5p, dedup=False, **tpu).scale_up_bytes  # type: ignore[arg-type]
    )


def test_alltoall_on_a_tpu_torus_is_timed() -> None:
    t = alltoall_time(chip("tpu-v5p"), tokens=8192, k=8, bytes_per_copy=7168 * 2,
                      group_size=64, in_domain=64, experts=256)  # fmt: skip
    assert t.seconds > 0 and t.scale_out_s == 0.0


def test_expert_parallelism_folds_over_tensor_parallel_ranks() -> None:
    spec = preset_spec("qwen3-235b-a22b")
    # Megatron-Bridge's Qwen3-235B on 256 H100s: TP2 PP8 VP4 EP32 -> dp = 16 < ep
    plan = Plan(dp=16, tp=2, pp=8, vp=4, ep=32)
    assert plan.expert_tp == 1
    check_plan(plan, 256, H100, spec)
    g = groups(plan, H100)
    assert g["ep"].size == 32 and g["ep"].in_domain == 8  # 4 nodes of 8, innermost ranks
    assert g["edp"].size == 1
    with pytest.raises(PlanError, match="etp"):
        check_plan(Plan(dp=16, tp=2, pp=8, vp=4, ep=32, etp=2), 256, H100, spec)
    assert parse_plan("tp=2,pp=8,vp=4,ep=32,etp=1").etp == 1


def test_expert_data_parallel_group_is_one_chip_per_node() -> None:
    spec = preset_spec("gpt-oss-120b")
    plan = Plan(dp=64, ep=8)
    check_plan(plan, 64, H100, spec)
    g = groups(plan, H100)
    assert g["edp"].size == 8 and g["edp"].in_domain == 1  # expert grads cross IB in full


def test_experts_shard_by_etp_not_tp() -> None:
    spec = preset_spec("qwen3-235b-a22b")
    whole = stage_params(spec, Plan(dp=16, tp=2, pp=8, ep=32))
    split = stage_params(spec, Plan(dp=16, tp=2, pp=8, ep=8, etp=2))
    assert whole.experts_per_chip == pytest.approx(whole.experts / 32)
    assert split.experts_per_chip == pytest.approx(split.experts / 16)


def test_expert_gemm_rows_follow_the_routed_tokens() -> None:
    spec = preset_spec("qwen3-235b-a22b")
    from chipwise.perf.ops.layers import Dtypes

    dt = Dtypes.for_precision("bf16")
    ops = {o.name: o for o in mlp_ops(spec, b=1, s=4096, shard=Shard(tp=2, ep=32, etp=1),
                                     dt=dt, moe=True)}  # fmt: skip
    up = ops["expert_up"]
    # 4096 / tp=2 tokens x 8 experts each over 128 / 32 = 4 local experts
    assert up.batch == 4 and up.mnk is not None and up.mnk[0] == 2048 * 8 // 4
    assert up.mnk[1] == 2 * spec.moe_d_ff  # whole experts (etp=1): gate + up


def test_tpu_full_recompute_offloads_layer_inputs_to_host() -> None:
    from chipwise.perf.plan.memory import train_memory

    spec = preset_spec("mixtral-8x7b")
    plan = Plan(fsdp=256, microbatch=12, recompute="full")
    args = {"seq_len": 4096, "microbatches": 1, "precision": "bf16"}
    tpu = train_memory(spec, plan, chip=chip("tpu-v6e"), **args)
    gpu = train_memory(spec, plan, chip=chip("h100-sxm"), **args)
    # the v6e-256 recipe (per-device batch 12, layer inputs offloaded) runs in 32 GB
    assert tpu.activations_bytes < gpu.activations_bytes * 0.7
    assert tpu.total_bytes <= chip("tpu-v6e").hbm_capacity_bytes


def test_training_times_experts_one_gemm_each_serving_as_one_grouped_kernel() -> None:
    from chipwise.perf.ops.gpu import GpuModel
    from chipwise.perf.ops.layers import Dtypes
    from chipwise.perf.step.train import per_expert_gemms

    spec = preset_spec("deepseek-v3")
    ops = mlp_ops(spec, b=1, s=2048, shard=Shard(ep=1), dt=Dtypes.for_precision("bf16"),
                  moe=True)  # fmt: skip
    served = next(o for o in ops if o.name == "expert_up")
    trained = next(o for o in per_expert_gemms(tuple(ops)) if o.name == "expert_up")
    assert not served.grouped and trained.grouped
    model = GpuModel(H100)
    assert model.op_time(trained).seconds >= model.op_time(served).seconds


def test_fp8_training_quantises_each_expert_gemm_input_in_its_own_pass() -> None:
    from chipwise.perf.ops.layers import Dtypes
    from chipwise.perf.step.train import expert_input_casts

    spec = preset_spec("deepseek-v3")
    ops = tuple(mlp_ops(spec, b=1, s=2048, shard=Shard(ep=8),
                        dt=Dtypes.for_precision("fp8"), moe=True))  # fmt: skip
    cast = expert_input_casts(ops)
    names = [o.name for o in cast]
    assert names.index("expert_up_cast") == names.index("expert_up") - 1
    assert names.index("expert_down_cast") == names.index("expert_down") - 1
    up = next(o for o in ops if o.name == "expert_up")
    m, _, k = up.mnk or (0, 0, 0)
    up_cast = next(o for o in cast if o.name == "expert_up_cast")
    # read the bf16 rows once, write the fp8 copy and its transpose
    assert up_cast.bytes_read == 2.0 * up.batch * m * k
    assert up_cast.bytes_written == 2.0 * up.batch * m * k
    bf16 = tuple(mlp_ops(spec, b=1, s=2048, shard=Shard(ep=8),
                         dt=Dtypes.for_precision("bf16"), moe=True))  # fmt: skip
    assert expert_input_casts(bf16) == bf16


def test_grouped_gemm_of_small_experts_is_much_less_efficient_than_one_big_gemm() -> None:
    from chipwise.perf.ops.gpu import GpuModel
    from chipwise.workload.ir import Op, OpKind

    def gemm(m: int, batch: int) -> Op:
        n, k = 4096, 7168
        return Op(name="expert_up", kind=OpKind.MATMUL, flops=2.0 * batch * m * n * k,
                  bytes_read=batch * (m * k + k * n) * 2.0, bytes_written=batch * m * n * 2.0,
                  mnk=(m, n, k), batch=batch, grouped=batch > 1)  # fmt: skip

    model = GpuModel(H100)
    small = gemm(8, 256)  # 256 experts x 8 tokens each
    big = gemm(2048, 1)  # the same FLOPs as one GEMM
    assert small.flops == big.flops
    assert model.op_time(small).seconds > 5 * model.op_time(big).seconds


def test_experts_gemms_share_the_sms_on_transformer_engines_streams() -> None:
    from chipwise.perf.ops.gpu import TE_GEMM_STREAMS, GpuModel
    from chipwise.workload.ir import Op, OpKind

    def experts(batch: int) -> Op:
        m, n, k = 2560, 2048, 128  # K too short to split: 160 tiles, 2 waves on 132 SMs
        return Op(name="expert_up", kind=OpKind.MATMUL, flops=2.0 * batch * m * n * k,
                  bytes_read=batch * (m * k + k * n) * 2.0, bytes_written=batch * m * n * 2.0,
                  mnk=(m, n, k), batch=batch, grouped=True)  # fmt: skip

    model = GpuModel(H100)
    one_set = model.op_time(experts(TE_GEMM_STREAMS)).compute_s
    two_sets = model.op_time(experts(2 * TE_GEMM_STREAMS)).compute_s
    alone = model.op_time(experts(1)).compute_s
    # 4 x 160 tiles pack into 5 waves together, not 4 x 2 one expert at a time...
    assert one_set < 0.7 * TE_GEMM_STREAMS * alone
    # ...and twice as many experts take two such sets
    assert two_sets == pytest.approx(2 * one_set)


def test_fp8_gemm_inputs_are_saved_in_fp8_on_gpus_only() -> None:
    from chipwise.perf.plan.memory import train_memory

    spec = preset_spec("deepseek-v3")
    plan = Plan(dp=8, pp=8, ep=8, recompute="selective")
    args = {"seq_len": 4096, "microbatches": 8}
    fp8 = train_memory(spec, plan, chip=H100, precision="fp8", **args)
    bf16 = train_memory(spec, plan, chip=H100, precision="bf16", **args)
    assert fp8.activations_bytes < 0.95 * bf16.activations_bytes
    tpu = chip("tpu-v7")
    assert train_memory(spec, plan, chip=tpu, precision="fp8", **args).activations_bytes == (
        train_memory(spec, plan, chip=tpu, precision="bf16", **args).activations_bytes
    )


def test_uneven_interleaved_pipeline_is_a_plan() -> None:
    from chipwise.perf.plan.parallel import layers_per_stage

    spec = preset_spec("qwen3-235b-a22b")  # 94 layers
    plan = parse_plan("tp=2,pp=8,vp=4,ep=32")
    check_plan(Plan(dp=16, tp=2, pp=8, vp=4, ep=32), 256, H100, spec)
    # 94 layers on 32 virtual stages: 3 per chunk on the busiest rank, 4 chunks
    assert layers_per_stage(spec.n_layers, plan.pp, plan.vp) == 12


def test_deepseek_attention_is_mla_and_fp8_runs_only_the_linear_layers() -> None:
    from chipwise.perf.ops.layers import layer_ops

    spec = preset_spec("deepseek-v3")
    ops = layer_ops(spec, b=1, seq_len=4096, shard=Shard(), precision="fp8", moe=True)
    names = {o.name for o in ops}
    assert {"kv_down", "kv_up", "q_down", "q_up"} <= names  # latent projections
    for o in ops:
        if o.name in ("router",):
            continue
        assert (o.dtype == "fp8") == (
            o.name.startswith(("q_", "kv_", "o_proj", "expert_", "shared_expert_"))
            and o.mnk is not None
            and o.kind.value == "matmul"
        ), o.name


def test_a_named_etp_is_kept_and_checked() -> None:
    from chipwise.perf.plan.planner import plan_constraints

    assert plan_constraints("tp=2,pp=8,vp=4,ep=32,etp=1", 256)["etp"] == 1
    assert "etp" not in plan_constraints("tp=2,pp=8,ep=32", 256)
    with pytest.raises(PlanError, match="etp=3 must divide tp=2"):
        plan_constraints("tp=2,ep=8,etp=3", 64)


def test_the_planner_folds_expert_parallelism_over_tensor_parallel_ranks() -> None:
    from chipwise.perf.plan.planner import _expert_parallel_sizes

    # a stage of tp=2 x dp=16: whole experts (etp 1) let ep reach 32 (Megatron EP x ETP)
    assert _expert_parallel_sizes(128, tp=2, cp=1, data=16, etp=0)[-1] == 32
    # experts split like the dense layers (etp = tp): ep stays within the 16 data ranks
    assert _expert_parallel_sizes(128, tp=2, cp=1, data=16, etp=2)[-1] == 16
    assert _expert_parallel_sizes(128, tp=1, cp=1, data=16, etp=0)[-1] == 16
    # only divisors of the experts
    assert 3 not in _expert_parallel_sizes(128, tp=2, cp=1, data=12, etp=0)


def test_the_planner_search_reaches_the_published_ep32_on_tp2_dp16_layout() -> None:
    from chipwise.perf.plan.planner import _layouts
    from chipwise.perf.predictor import Predictor
    from chipwise.workload.ir import Training, Workload

    spec = preset_spec("qwen3-235b-a22b")
    work = Workload(model=spec, phase=Training(seq_len=4096, global_batch=2048))
    model = Predictor(work, H100, "fp8").step_model()
    fixed = {"tp": 2, "pp": 8, "vp": 4, "microbatch": 1}
    eps = {p.ep for p in _layouts(model, 256, 4096, 2048, fixed)}
    assert 32 in eps  # the Megatron-Bridge Qwen3-235B-A22B H100 plan (dp=16 < ep)
    for ep in eps:
        check_plan(Plan(dp=16, tp=2, pp=8, vp=4, ep=ep), 256, H100, spec)


def test_group_limited_routing_reaches_fewer_nodes() -> None:
    spec = preset_spec("deepseek-v3")  # n_group 8, topk_group 4 in its config
    assert (spec.expert_groups, spec.expert_groups_per_token) == (8, 4)
    free = remote_domains_per_token(256, 8, 8)
    limited = remote_domains_per_token(256, 8, 8, groups=8, groups_per_token=4)
    # one group per node: a token's 8 experts lie on at most 4 nodes (report §2.1.2)
    assert limited < free and limited <= 4
    # a node holding two whole groups: at most the nodes of the token's 4 groups
    assert remote_domains_per_token(256, 8, 4, 8, 4) < remote_domains_per_token(256, 8, 4)
    # no limit when every group may be used
    assert remote_domains_per_token(256, 8, 8, 8, 8) == free
    t = alltoall_time(H100, tokens=4096, k=8, bytes_per_copy=7168 * 2, group_size=64,
                      in_domain=8, experts=256, groups=8, groups_per_token=4)  # fmt: skip
    assert t.scale_out_bytes < _alltoall_bytes_out(64, 8)


def _alltoall_bytes_out(group: int, in_domain: int) -> float:
    return alltoall_time(
        H100, tokens=4096, k=8, bytes_per_copy=7168 * 2, group_size=group,
        in_domain=in_domain, experts=256,
    ).scale_out_bytes  # fmt: skip


def test_maxtext_scatter_adds_gpt_oss_expert_bias_gradients_on_tpu() -> None:
    """gpt-oss's three expert biases are gathered per routed row (MaxText transform_bias);
    their gradients are scatter-adds of every routed row, on TPUs only."""
    from chipwise.perf.ops.layers import Dtypes, backward_ops
    from chipwise.perf.step.train import maxtext_expert_bias_grads, per_expert_gemms
    from chipwise.workload.ir import OpKind

    spec = preset_spec("gpt-oss-120b")
    assert spec.expert_bias
    fwd = per_expert_gemms(tuple(mlp_ops(spec, b=1, s=4096, shard=Shard(ep=1),
                                         dt=Dtypes.for_precision("bf16"), moe=True)))  # fmt: skip
    bwd = tuple(reversed(backward_ops(fwd)))
    out = maxtext_expert_bias_grads(bwd, spec)
    added = [o for o in out if o not in bwd]
    assert [o.name for o in added] == ["expert_bias_wo_bwd", "expert_bias_wi_bwd"]
    assert all(o.kind is OpKind.SCATTER and o.backward for o in added)
    rows = 4096 * spec.experts_per_token
    assert added[0].bytes_read == rows * spec.d_model * 2  # bf16 rows of width d
    assert added[1].bytes_read == rows * 2 * spec.moe_d_ff * 2  # wi_0 and wi_1
    # a model without expert biases keeps its backward
    qwen = preset_spec("qwen3-235b-a22b")
    assert maxtext_expert_bias_grads(bwd, qwen) == bwd
