"""Compose one training step from per-op times, collectives, the pipeline and the optimizer.

For a plan, one chip on the busiest pipeline stage runs ``m`` micro-batches, each through
``L / pp`` layers forward and backward (backward = dgrad + wgrad for every matmul; full
recompute adds a forward, selective the attention core and cheap elementwise ops, norm_act
the norms and the experts' activation). Each op is timed by the per-op model of the chip
(``OpTimer``). On top:

* tensor parallelism: per layer 2 all-reduces of the activations forward and 2 backward
  (Shoeybi et al. 2019 §3; as reduce-scatter + all-gather under sequence parallelism,
  same bytes), on the scale-up domain when ``tp`` fits there, partly overlapped;
* context parallelism: the ring exchange of K/V (forward) and K/V + their gradients
  (backward), hidden behind attention when it is long enough;
* expert parallelism: 2 all-to-alls per MoE layer forward (dispatch, combine), 2 backward;
* FSDP (ZeRO-3): all-gather of the stage's weights forward and again backward, and a
  reduce-scatter of its gradients, overlapped with compute (exposed = max(0, comm -
  compute)) except the first layer's gather, which nothing hides;
* data parallel (ZeRO-1): reduce-scatter of gradients overlapped with the last
  micro-batch's backward, all-gather of updated weights with the next forward;
* pipeline: bubble = (pp - 1) / vp of one micro-batch's stage time (Narayanan et al. 2021
  §2.2), plus point-to-point sends of activations;
* the optimizer step: Adam, memory-bound over the chip's shard of the weights.

LoRA / QLoRA fine-tunes (``Training.method``) change the per-layer ops as
``ops.adapters`` describes (no weight gradients of frozen weights, adapter GEMMs, QLoRA's
dequantisation); gradient traffic and the optimizer cover only the adapters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from chipwise.errors import PlanError
from chipwise.hardware.chip import Chip
from chipwise.limits import CACHE_ENTRIES
from chipwise.perf.base import Assumption, Breakdown, OpTime, PerfModel, Plan, TrainPrediction
from chipwise.perf.comm.alltoall import alltoall_time
from chipwise.perf.ops.adapters import (
    ADAPTER_GRAD_BYTES,
    QLORA_WEIGHT_BYTES,
    adapter_forward_ops,
    frozen_backward,
    with_dequant,
)
from chipwise.perf.ops.layers import (
    Shard,
    activation_bytes,
    backward_ops,
    embedding_ops,
    head_ops,
    heads_per_rank,
    is_attention_core,
    layer_ops,
    norm_act_recompute_ops,
    selective_recompute_ops,
    unfused_expert_epilogues,
)
from chipwise.perf.plan.memory import (
    GRAD_BYTES,
    WEIGHT_BYTES,
    sharded_params,
    stage_layer_kinds,
    stage_params,
    train_memory,
)
from chipwise.perf.plan.parallel import (
    Collective,
    Group,
    Network,
    check_plan,
    ends_take_stage_slots,
    groups,
    layers_per_stage,
    zero_shards,
)
from chipwise.perf.step.timing import Cost, StepTimer, cost_of
from chipwise.units import dtype_bytes
from chipwise.workload.accounting import (
    active_matmul_params,
    lm_head_params,
    model_flops_per_token,
)
from chipwise.workload.finetune import lora_params
from chipwise.workload.ir import Op, OpKind, Training, TransformerSpec

# ---- step-level constants (each an assumption reported with every prediction) -------------

# Share of tensor-parallel collective time hidden behind GEMMs. Megatron/NeMo overlap TP
# communication with the neighbouring GEMMs (userbuffers "tp-comm-overlap", Transformer
# Engine) and XLA with collective matmuls; neither hides all of it (NVIDIA NeMo docs,
# "Communication overlap": "partially hidden"). Half is assumed.
TP_OVERLAP = 0.5
# Share of FSDP/DP traffic's time that compute can hide: collectives and GEMMs share HBM and
# (on GPUs) SMs, so overlap is imperfect (PyTorch FSDP paper, Zhao et al. 2023 §6.2:
# communication-compute overlap recovers most but not all of the comm time).
DATA_PARALLEL_OVERLAP = 0.9
# Expert-parallel all-to-alls sit between router and experts with data dependencies; they
# are exposed (DeepSeek-V3's DualPipe overlap is not a default anywhere).
EP_OVERLAP = 0.0
# Whether frameworks hide expert all-to-alls behind another micro-batch's compute where the
# schedule allows it (``ep_comm_overlaps``). An assumption, not a framework default:
# Megatron-Bridge's performance recipes enable ``overlap_moe_expert_parallel_comm`` per recipe
# (``moe_a2a_overlap``, default False in scripts/performance WorkloadBaseConfig; on for e.g.
# Qwen3-235B on H100 and gpt-oss-120b V2 on GB200, explicitly off for Qwen3-235B on B200 and
# Qwen3-30B on H100). A row does not say which it ran, so the model keeps one setting: off
# everywhere (with the then per-layer host term refitted to 4.5-5.5 ms) scored train-moe 14.6-16.6 %
# median vs 9.0 % on 2026-12-03, because 1024+-GPU DeepSeek-V3 rows (-36 %) and the
# DualPipe H800 row (-46 %) then expose their cross-node all-to-alls in full.
EP_COMM_OVERLAP = True
# Device time a GPU loses per kernel the host launches for a MoE layer (forward + backward, per
# micro-batch): Megatron's token dispatcher copies the per-expert token counts to the host every
# layer (a device-to-host sync the a2a split sizes and grouped-GEMM shapes need), after which the
# GPU idles while the CPU launches the permutation, the per-expert GEMMs and casts, one kernel at a
# time (Megatron-Core MoE docs: MoE layers are host-bound without CUDA graphs; "--cuda-graph-scope
# moe" and sync-free dispatch exist to remove it). So the layer's host time scales with the kernels
# it launches (``LayerCost.launches``: every op once, or its ``Op.kernels`` eager passes (gpt-oss's
# unfused GLU clamp and per-expert bias adds, ``ops.layers.unfused_expert_epilogues``), each
# per-expert GEMM once per local expert, Transformer Engine's GroupedLinear issuing a cuBLAS GEMM
# per expert), not a fixed time per layer: Qwen3-235B-A22B at ep=32 (4 local experts, 61 launches)
# loses far less than Qwen3-30B-A3B at ep=8 (16 local, 133 launches). The per-layer gaps of the
# out-of-sample rows agree (``--moe-host-gaps``, 2026-12-05): 2.2-2.9 ms at 4 local experts (H100
# MOE-009/MOE-020/MOE-036), 3.6 ms at 8 (MOE-053), 4.3-6.4 ms at 16, 5.5-8.4 ms at 32 (DeepSeek-V3
# on B200). Fitted (``python benchmarks/validate.py --fit-moe-host``, 2026-12-05): the median
# per-launch gap between measured and modelled (without it) step time on the 4 rows where the host
# term stands alone: Qwen3-30B-A3B on one 8-GPU B200 or GB200 domain (Megatron-Bridge 25.11 and
# 26.02; pp = 1, the all-to-all inside NVLink, experts of 768 so small their GEMMs take
# microseconds), 133 launches per layer, per-layer gaps 4.2-6.4 ms (5.73 ms median, the per-layer
# constant this replaces) with the rows' recipe settings stated (bf16 gradient reduction, no
# all-to-all overlap), each row's token dispatcher stated (plan ``dispatcher``: the B200 rows
# MOE-006/MOE-016 run Megatron's plain ``alltoall``, the GB200 rows HybridEP) and the fp8 casts of
# the expert GEMMs' inputs (``expert_input_casts``). Those recipes CUDA-graph only the router and
# the permutation's preprocessing (cuda_graph_scope moe_router, moe_preprocess); no Megatron-Bridge
# MoE performance recipe at 00b7660be0 or df0289c180 graphs the whole "moe" scope, so no recipe
# setting that removes the term is stated anywhere. The other GPU MoE rows test it out of sample
# (in_sample.toml).
MOE_LAUNCH_HOST_S = 4.31e-5
# The same with each layer's attention block captured as a CUDA graph (plan attn_graph=1:
# Megatron --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router
# moe_preprocess, Megatron-Bridge's GB200 recipes for Qwen3-235B-A22B and DeepSeek-V3 at
# 00b7660be0 and df0289c180, Megatron-MoE-ModelZoo's GB200/GB300 Qwen3 commands). After the
# MoE layer's device-to-host sync the GPU waits on the host's next launches; with the
# attention a graph, one launch hands it the next layer's attention (milliseconds of work)
# while the host issues the experts' kernels behind it, so little of the launch time stays
# exposed. Fitted per layer (median per-MoE-layer gap, ``python
# benchmarks/validate.py --fit-moe-host``, 2026-12-05) on the 2 Megatron-Bridge rows that
# state it for Qwen3-235B-A22B on GB200 (25.11 BF16 1.47 ms, 26.02 FP8 1.36 ms; 0.98 ms
# before their plans stated the recipe's pipeline split, end_slots=1, which takes a decoder
# layer off their busiest stage; 1.14 ms before ``expert_input_casts``); the other rows that
# state it are out of sample (in_sample.toml).
MOE_GRAPHED_HOST_S = 1.42e-3
# GPU MoE training sharded ZeRO-3 (plan fsdp > 1) is what the PyTorch-native stacks run
# (FSDP2: NeMo AutoModel, TorchTitan); Megatron-Core's MoE recipes shard with the distributed
# optimizer (ZeRO-1: every Megatron-Bridge MoE row in validate/data states FSDP 0). Such a
# plan is modelled as running on that stack, which differs from Megatron in both MoE terms
# above: (1) no combined-1F1B schedule: AutoModel runs torch.distributed.pipelining's
# schedules (pp_schedule interleaved1f1b in examples/benchmark/configs/
# deepseek_v3_te_deepep.yaml @037e04a6) or plain gradient accumulation, one micro-batch at a
# time, so its all-to-alls are exposed unless the plan states a2a_overlap=1; (2) its experts
# run as one grouped kernel per projection (nemo_automodel/components/moe/layers.py,
# GroupedExpertsDeepEP: grouped_gemm's ops.gmm over all local experts), so the per-expert
# launches MOE_LAUNCH_HOST_S stands for are absent and no host term is added (the layer's
# DeepEP/gmm token-count sync remains: microseconds, not modelled).
FSDP_STACK_MOE_HOST_S = 0.0
# A GPU MoE step captured whole as one CUDA graph (plan full_graph=1: Megatron
# ``cuda_graph_impl full_iteration``) replays every kernel of the iteration from one launch,
# so none of the host-side launch time MOE_LAUNCH_HOST_S / MOE_GRAPHED_HOST_S stand for is
# exposed. The dropless layer's device-to-host token-count sync, which leaves the GPU waiting
# on the host's next launches, cannot be captured; the recipes that set it replace it with
# static shapes (moe_expert_rank_capacity_factor 1.5, moe_pad_experts_for_cuda_graph_inference,
# moe_paged_stash: _enable_hybridep_full_iteration_mxfp8 in perf_recipes/qwen/common.py,
# _enable_deepseek_full_iteration_mxfp8 in perf_recipes/deepseek/common.py,
# _apply_gpt_oss_120b_full_iter_fp8mx_configs in perf_recipes/gpt_oss/common.py,
# github:NVIDIA-NeMo/Megatron-Bridge @4ab94dfad, 2026-08-11). Not fitted: no host term.
FULL_GRAPH_MOE_HOST_S = 0.0
# Bytes per parameter of the gradients a GPU job reduces over data parallelism when it
# trains in bf16 (or fp8, whose weights are bf16): fp32. Megatron-LM forces it ("bfloat16
# requires gradient accumulation and all-reduce to be done in fp32", arguments.py: bf16 sets
# accumulate_allreduce_grads_in_fp32 at 285068c8 (2023-01), f2e5db402c (2024-07) and
# d98e8a64dd (2026-08)); Megatron-Bridge's recipe defaults set ddp.grad_reduce_in_fp32=True
# (src/megatron/bridge/recipes/common.py @4ab94dfad). fp16 keeps fp16 gradients (Megatron's
# flag defaults off without bf16). MaxText on TPUs reduces bf16 gradients (MaxText sharding
# guide, 'DP arithmetic intensity': 'All reduce size of params (bf16)').
GPU_BF16_GRAD_REDUCE_BYTES = 4.0
# Point-to-point activation sends between pipeline stages: Megatron overlaps them only in
# the interleaved schedule (--overlap-p2p-communication needs vp > 1).
P2P_OVERLAP_INTERLEAVED = 1.0
# Adam step bytes per parameter: read fp32 master, m, v and the grad; write master, m, v
# and the bf16 compute copy (mixed precision).
ADAM_READ_BYTES = 4 + 4 + 4 + 2
ADAM_WRITE_BYTES = 4 + 4 + 4 + 2
# Plan.states "bf16" (MaxText weight_dtype bfloat16): read weights, m, v and the grad, write
# weights, m and v, all bf16.
ADAM_BF16_READ_BYTES = 2 + 2 + 2 + 2
ADAM_BF16_WRITE_BYTES = 2 + 2 + 2


# Expert load: every expert is modelled at the mean load (tokens x top-k / experts), no
# routing-imbalance or capacity-factor term. That is what Megatron-Bridge's MoE benchmarks run: "we
# force-balance the token distribution among experts and all benchmarks are token-dropless"
# (docs/performance-summary.md @00b7660be0, 25.11 footnote). So the 2x between a plan's 25.09
# token-drop and 25.11 dropless figures on H100 and B200 (Qwen3-30B-A3B: 10494 vs 5275, MOE-008;
# 18066 vs 9299, MOE-006; not on GB200, 22775 vs 23766) is not a busiest-expert effect; MOE-008's
# per-MoE-layer gap (11.4 ms with no host term, twice what its 133 launches are charged,
# ``--moe-host-gaps``, 2026-12-05) stays unexplained. Real dropless training runs at the busiest
# expert's load; no row that states unbalanced routing is scored yet.
def per_expert_gemms(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """Training frameworks run the experts' GEMMs one per expert (Megatron's TEGroupedMLP:
    Transformer Engine's GroupedLinear issues a cuBLAS GEMM per expert), so each expert
    GEMM is tiled and launched on its own (``op.grouped``). Serving engines (vLLM's fused
    MoE, TensorRT-LLM) use one grouped kernel: their ops stay batched."""
    return tuple(
        replace(op, grouped=True)
        if op.kind is OpKind.MATMUL and op.name.startswith("expert_") and op.batch > 1
        else op
        for op in ops
    )


# MaxText's dropless MoE adds gpt-oss's expert biases (``mlp_bias``: wi_0, wi_1 and wo, one
# row per expert) by gathering each routed row's expert's bias, ``bias[selected_experts]``
# (``transform_bias``, src/maxtext/layers/moe.py @e591f30, 2026-08-22), and adding it to the
# gmm outputs. The gather's transpose in JAX is a scatter-add: each bias gradient sums its
# t x k rows of output gradient into its expert's row, an XLA scatter on the TensorCore
# (the ``ops.tpu`` scatter slow path), three per layer and step. The forward adds fuse into
# the GLU activation (wi) and the write the ``mlpwo`` checkpoint makes anyway (wo).


def maxtext_expert_bias_grads(ops: tuple[Op, ...], spec: TransformerSpec) -> tuple[Op, ...]:
    """Backward ops with the scatter-adds of gpt-oss's expert-bias gradients as MaxText runs
    them on a TPU (``transform_bias``): wo's where the output gradient enters the down
    projection's backward, wi_0's and wi_1's after the activation's backward."""
    gemm = next((o for o in ops if o.name == "expert_down_dgrad"), None)
    if not spec.expert_bias or gemm is None or gemm.mnk is None:
        return ops
    rows = float(gemm.batch * gemm.mnk[0])  # t x k routed rows on this chip

    def scatter(name: str, width: int) -> Op:
        size = dtype_bytes(gemm.dtype)
        return Op(name=name, kind=OpKind.SCATTER, dtype=gemm.dtype, flops=rows * width,
                  bytes_read=rows * width * size, bytes_written=gemm.batch * width * size,
                  shape=(int(rows), width), backward=True)  # fmt: skip

    out: list[Op] = []
    wo_added = False
    for op in ops:
        if op.name.startswith("expert_down_") and not wo_added:
            out.append(scatter("expert_bias_wo_bwd", gemm.mnk[2]))
            wo_added = True
        out.append(op)
        if op.name == "expert_act_bwd":
            out.append(scatter("expert_bias_wi_bwd", gemm.mnk[1] * (2 if spec.gated_mlp else 1)))
    return tuple(out)


def kernel_launches(times: list[OpTime]) -> int:
    """Kernels the host launches for an op sequence: ``op.kernels`` per op (one, or the
    eager passes an unfused epilogue runs), one per expert for a per-expert GEMM
    (``per_expert_gemms``: ``batch`` GEMMs of different weights)."""
    return sum(t.op.batch if t.op.grouped else t.op.kernels for t in times)


def expert_input_casts(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """Forward ops with the fp8 quantisation of each fp8 expert GEMM's input inserted before
    it. Transformer Engine's GroupedLinear quantises its bf16 input itself, one unfused pass
    over every expert's rows (``tex.split_quantize(inp_view, m_splits, input_quantizers)``
    in transformer_engine/pytorch/module/grouped_linear.py, every fp8 recipe): the permuted
    tokens before the up projection, and before the down projection the activation's bf16
    output (Megatron's TEGroupedMLP applies its own bias-SwiGLU, not a TE kernel that could
    fuse the cast). Each reads the bf16 rows and writes the fp8 copy and its transpose
    (the dgrad/wgrad layouts), as ``ops.layers``' other fp8 casts do. The weights' casts are
    cached across micro-batches (``is_first_microbatch``) and the backward's dY casts are
    already in ``backward_ops``."""
    out: list[Op] = []
    for op in ops:
        if (op.kind is OpKind.MATMUL and op.name.startswith("expert_") and op.dtype == "fp8"
                and op.mnk is not None):  # fmt: skip
            m, _, k = op.mnk
            elements = float(op.batch * m * k)
            out.append(
                Op(
                    name=f"{op.name}_cast",
                    kind=OpKind.ELEMENTWISE,
                    dtype="bf16",
                    flops=2.0 * elements,
                    bytes_read=elements * dtype_bytes("bf16"),
                    bytes_written=2.0 * elements * dtype_bytes("fp8"),
                    shape=(int(elements),),
                )
            )
        out.append(op)
    return tuple(out)


def ep_comm_overlaps(plan: Plan, microbatches: int, chip: Chip | None = None) -> bool:
    """Whether the schedule can hide one micro-batch's expert all-to-alls behind another's
    compute: Megatron-Core's combined 1F1B schedule (``--overlap-moe-expert-parallel-comm``,
    megatron/core/pipeline_parallel/combined_1f1b.py) co-schedules the forward of one
    micro-batch with the backward of another without pipelining (pp = 1, at least two
    micro-batches) or with an interleaved pipeline (vp > 1); DeepSeek-V3's DualPipe does
    the same on its bidirectional pipeline. A plain 1F1B pipeline (pp > 1, vp = 1) cannot.
    On TPUs (MaxText) the all-to-all sits on the layer's critical path: no such schedule.
    A ZeRO-3 plan (fsdp > 1: an FSDP2 stack, see ``FSDP_STACK_MOE_HOST_S``) has no such
    schedule by default. A plan that states ``a2a_overlap`` (a recipe's ``moe_a2a_overlap``)
    overrides these defaults; the schedule must still allow it."""
    default = EP_COMM_OVERLAP and plan.fsdp == 1
    wanted = default if plan.a2a_overlap < 0 else bool(plan.a2a_overlap)
    if not wanted or (chip is not None and chip.kind == "tpu"):
        return False
    return (plan.pp == 1 and microbatches >= 2) or plan.vp > 1


def step_assumptions() -> tuple[Assumption, ...]:
    """The step-level constants as reportable assumptions."""
    src = "perf/step/train.py"
    return (
        Assumption(name="tp_overlap", value=TP_OVERLAP, source=f"{src} (NeMo comm overlap)"),
        Assumption(
            name="data_parallel_overlap",
            value=DATA_PARALLEL_OVERLAP,
            source=f"{src} (PyTorch FSDP paper §6.2)",
        ),
        Assumption(name="ep_overlap", value=EP_OVERLAP, source=f"{src} (no default overlap)"),
    )


@lru_cache(maxsize=CACHE_ENTRIES)
def _flops_per_token(spec: TransformerSpec, seq_len: int) -> float:
    return model_flops_per_token(spec, seq_len)


def training_flops_per_token(
    spec: TransformerSpec, training: Training, *, causal_halving: bool = False
) -> float:
    """Model FLOPs per token of a training step by ``training.method``: full training's
    6 per weight; LoRA/QLoRA skip the frozen weights' wgrad (4 per weight, Hu et al. 2021
    §4.2) and add the adapters' 6 per adapter parameter."""
    full = model_flops_per_token(spec, training.seq_len, causal_halving=causal_halving)
    if not training.adapters:
        return full
    frozen_wgrad = 2.0 * (active_matmul_params(spec) + lm_head_params(spec))
    return full - frozen_wgrad + 6.0 * lora_params(spec, training)


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerCost:
    """One layer, one micro-batch, one chip."""

    fwd: Cost
    bwd: Cost
    selective: Cost  # what selective recompute re-runs
    norm_act: Cost  # what norm + MoE-activation recompute re-runs
    attention_fwd_s: float
    attention_bwd_s: float
    op_times: tuple[OpTime, ...]
    # kernels the host launches (``kernel_launches``) forward + backward, and those full
    # recompute re-launches with the forward's host-bound condition: full recompute
    # re-runs the layer's forward, the dispatcher's device-to-host sync included; selective
    # and norm_act re-run a few ops inside the backward, which has no such sync (its
    # all-to-alls reuse the forward's split sizes), so the host stays ahead of the GPU there
    launches: int
    full_recompute_launches: int

    def recompute(self, mode: str) -> Cost:
        """What recompute ``mode`` re-runs in the backward."""
        return {"full": self.fwd, "selective": self.selective,
                "norm_act": self.norm_act}.get(mode, Cost())  # fmt: skip

    def launches_with(self, mode: str) -> int:
        """Kernels the host launches under recompute ``mode``."""
        return self.launches + (self.full_recompute_launches if mode == "full" else 0)


class StepModel(StepTimer):
    """Times training steps of one model on one chip type, caching per-shape timings.

    The planner reuses one ``StepModel`` for every candidate plan: per-layer costs depend
    only on (micro-batch, tp, cp, ep, layer kind), and collectives on (kind, bytes, group).
    """

    def __init__(
        self,
        spec: TransformerSpec,
        chip: Chip,
        precision: str,
        model: PerfModel,
        network: Network,
        *,
        training: Training | None = None,
    ) -> None:
        super().__init__(spec, chip, precision, model, network)
        # only the method and the LoRA settings matter here (seq_len/batch come per call)
        self.training = training or Training()
        self.lora_params = lora_params(spec, self.training)
        # (b, seq_len, tp, cp, ep, moe, sliding, etp, flash, unfused_experts)
        self._layers: dict[tuple[int, int, int, int, int, bool, bool, int, bool, bool],
                           LayerCost] = {}  # fmt: skip
        self._ends: dict[tuple[int, int, int, int], tuple[Cost, Cost]] = {}
        # one micro-batch's device work on the busiest stage, by what it depends on
        self._micro_work: dict[tuple[object, ...], float] = {}
        self._comm: dict[tuple[str, float, Group], float] = {}
        self._groups: dict[Plan, dict[str, Group]] = {}
        self._assumptions = step_assumptions() + self.model_assumptions

    # ---- cached pieces ------------------------------------------------------------------

    def comm(self, kind: Collective, n_bytes: float, group: Group) -> float:
        key = (kind, n_bytes, group)
        t = self._comm.get(key)
        if t is None:
            t = self.network.time_s(kind, n_bytes, group)
            self._comm[key] = t
        return t

    def layer(
        self,
        b: int,
        seq_len: int,
        tp: int,
        cp: int,
        ep: int,
        moe: bool,
        sliding: bool = False,
        etp: int = 0,
        flash: bool = True,
        unfused_experts: bool = False,
    ) -> LayerCost:
        key = (b, seq_len, tp, cp, ep, moe, sliding, etp, flash, unfused_experts)
        cached = self._layers.get(key)
        if cached is not None:
            return cached
        shard = Shard(tp=tp, cp=cp, ep=ep, etp=etp)
        fwd_ops = per_expert_gemms(layer_ops(
            self.spec, b=b, seq_len=seq_len, shard=shard, precision=self.precision, moe=moe,
            sliding=sliding, flash=flash,
        ))  # fmt: skip
        if unfused_experts:
            fwd_ops = unfused_expert_epilogues(fwd_ops, self.spec)
        tr = self.training
        adapters = adapter_forward_ops(fwd_ops, self.spec, tr)
        # the casts are timed with the forward; backward_ops derives from the GEMMs alone
        cast = expert_input_casts(fwd_ops) if self.chip.kind != "tpu" else fwd_ops
        fwd = self.time_ops(with_dequant(cast, tr, backward=False) + adapters)
        bwd_ops = frozen_backward(tuple(reversed(backward_ops(fwd_ops + adapters))), tr)
        if self.chip.kind == "tpu":
            bwd_ops = maxtext_expert_bias_grads(bwd_ops, self.spec)
        bwd = self.time_ops(with_dequant(bwd_ops, tr, backward=True))
        sel = self.time_ops(selective_recompute_ops(fwd_ops))
        norm_act = self.time_ops(norm_act_recompute_ops(fwd_ops))
        attn_f = sum(t.seconds for t in fwd if is_attention_core(t.op))
        attn_b = sum(t.seconds for t in bwd if is_attention_core(t.op))
        cost = LayerCost(
            fwd=cost_of(fwd),
            bwd=cost_of(bwd),
            selective=cost_of(sel),
            norm_act=cost_of(norm_act),
            attention_fwd_s=attn_f,
            attention_bwd_s=attn_b,
            op_times=tuple(fwd + bwd),
            launches=kernel_launches(fwd + bwd),
            full_recompute_launches=kernel_launches(fwd),
        )
        self._layers[key] = cost
        return cost

    def ends(self, b: int, seq_len: int, tp: int, cp: int) -> tuple[Cost, Cost]:
        """(embedding fwd+bwd, head + loss fwd+bwd) for one micro-batch."""
        key = (b, seq_len, tp, cp)
        cached = self._ends.get(key)
        if cached is not None:
            return cached
        shard = Shard(tp=tp, cp=cp)
        emb = embedding_ops(self.spec, b=b, seq_len=seq_len, shard=shard, precision=self.precision)
        head = head_ops(self.spec, b=b, seq_len=seq_len, shard=shard, precision=self.precision)
        tr = self.training
        e = cost_of(self.time_ops(emb) + self.time_ops(frozen_backward(backward_ops(emb), tr)))
        h_bwd = frozen_backward(tuple(reversed(backward_ops(head))), tr)
        h = cost_of(self.time_ops(head) + self.time_ops(h_bwd))
        self._ends[key] = (e, h)
        return e, h

    def _moe_host_s(self, plan: Plan, lc: LayerCost) -> float:
        """Host-bound time of one MoE layer ``lc``, one micro-batch, forward + backward (GPU
        only): Megatron's launches of the layer's kernels (less with the attention
        CUDA-graphed, none with the whole iteration one CUDA graph), or none on an FSDP2
        stack (fsdp > 1)."""
        if self.chip.kind == "tpu":
            return 0.0
        if plan.full_graph == 1:
            return FULL_GRAPH_MOE_HOST_S
        if plan.fsdp > 1:
            return FSDP_STACK_MOE_HOST_S
        if plan.attn_graph == 1:
            return MOE_GRAPHED_HOST_S
        return MOE_LAUNCH_HOST_S * lc.launches_with(plan.recompute)

    def _stage_layer(self, plan: Plan, b: int, seq_len: int, moe: bool, sliding: bool) -> LayerCost:
        """One layer of ``plan``'s busiest stage; MoE layers with the plan's ep and etp."""
        flash = plan.flash != 0  # unstated: flash attention (every current framework)
        if not moe:
            return self.layer(b, seq_len, plan.tp, plan.cp, 1, False, sliding, flash=flash)
        etp = plan.expert_tp
        return self.layer(b, seq_len, plan.tp, plan.cp, plan.ep, True, sliding,
                          0 if etp == plan.tp else etp, flash=flash,
                          unfused_experts=self._megatron_experts(plan))  # fmt: skip

    def _megatron_experts(self, plan: Plan) -> bool:
        """Whether ``plan``'s experts run Megatron-Core's TEGroupedMLP with its unfused
        epilogue passes (``ops.layers.unfused_expert_epilogues``): GPU plans on Megatron
        (fsdp = 1; ZeRO-3 plans are the FSDP2 stacks, see ``FSDP_STACK_MOE_HOST_S``) that are
        not captured whole as one CUDA graph. The recipes that capture the full iteration
        (plan full_graph=1) also set ``use_transformer_engine_op_fuser``, whose fused grouped
        MLP (Transformer Engine's ``ScaledClampedQGeGLU``, GroupedLinear ``scale_bias``) fuses
        those passes (_apply_gpt_oss_120b_full_iter_fp8mx_configs in perf_recipes/gpt_oss/
        common.py, the deepseek and qwen full-iteration helpers, github:NVIDIA-NeMo/
        Megatron-Bridge @4ab94dfad, 2026-08-11)."""
        return self.chip.kind != "tpu" and plan.fsdp == 1 and plan.full_graph != 1

    # ---- the step -----------------------------------------------------------------------

    def lower_bound_s(self, plan: Plan, *, seq_len: int, global_batch: int) -> float:
        """A cheap lower bound on ``train(plan).step_time_s``: the device work of the
        micro-batches and the bubble, without any communication (the planner prunes with it).
        """
        m = global_batch // plan.data_parallel // plan.microbatch
        return self._micro_work_s(plan, seq_len) * (m + (plan.pp - 1) / plan.vp)

    def _micro_work_s(self, plan: Plan, seq_len: int) -> float:
        """Device work of one micro-batch on ``plan``'s busiest stage (layers, their
        recompute, MoE host time and the stage's ends), cached: the planner bounds ~10^5
        layouts a search, and those differing only in dp (or in fsdp beyond on/off) share it."""
        key = (plan.microbatch, seq_len, plan.tp, plan.cp, plan.ep, plan.expert_tp, plan.pp,
               plan.vp, plan.end_slots, plan.recompute, plan.fsdp > 1, plan.full_graph,
               plan.attn_graph, plan.flash)  # fmt: skip
        cached = self._micro_work.get(key)
        if cached is not None:
            return cached
        b = plan.microbatch
        layers = layers_per_stage(self.spec.n_layers, plan.pp, plan.vp, plan.end_slots)
        work = 0.0
        for moe, sliding, count in stage_layer_kinds(self.spec, layers, plan.pp):
            lc = self._stage_layer(plan, b, seq_len, moe, sliding)
            extra = lc.recompute(plan.recompute).total_s
            work += count * (lc.fwd.total_s + lc.bwd.total_s + extra)
            if moe:
                work += count * self._moe_host_s(plan, lc)
        work += self._stage_ends(plan, b, seq_len, work / layers).total_s
        self._micro_work[key] = work
        return work

    def _stage_ends(self, plan: Plan, b: int, seq_len: int, layer_s: float) -> Cost:
        """What the embedding and head add to the busiest stage of one micro-batch of ``b``
        sequences, whose decoder layers take ``layer_s`` each: both without a pipeline, else
        the costlier end (the first and last stages hold one each); when the ends take a
        layer's slot of their own (``ends_take_stage_slots``), only what that end costs
        beyond the layer it replaces (the busiest stage is then a middle one or the end
        stage, whichever is longer)."""
        emb, head = self.ends(b, seq_len, plan.tp, plan.cp)
        ends = emb + head if plan.pp == 1 else (emb if emb.total_s > head.total_s else head)
        if not ends_take_stage_slots(self.spec.n_layers, plan.pp, plan.vp, plan.end_slots):
            return ends
        extra = ends.total_s - layer_s
        return ends.scaled(extra / ends.total_s) if extra > 0 else Cost()

    def train(self, plan: Plan, *, seq_len: int, global_batch: int) -> TrainPrediction:
        """One training step under ``plan`` (which must already match the chip count)."""
        spec, chip = self.spec, self.chip
        check_plan(plan, plan.chips, chip, spec)
        ranks = plan.data_parallel
        if global_batch % ranks:
            raise PlanError(
                f"global batch {global_batch} does not divide over dp*fsdp={ranks} ranks; "
                f"choose a batch that is a multiple of {ranks}"
            )
        per_rank = global_batch // ranks
        if per_rank % plan.microbatch:
            raise PlanError(
                f"microbatch={plan.microbatch} does not divide the {per_rank} sequences per "
                f"data-parallel rank; choose a divisor of {per_rank}"
            )
        m = per_rank // plan.microbatch
        b = plan.microbatch
        g = self._groups.get(plan)
        if g is None:
            g = self._groups[plan] = groups(plan, chip)
        act = activation_bytes(self.precision)
        tokens = b * seq_len // plan.cp  # tokens on this chip per micro-batch

        layers = layers_per_stage(spec.n_layers, plan.pp, plan.vp, plan.end_slots)

        # per micro-batch, per stage
        work = Cost()
        exposed = 0.0
        fwd_s = bwd_s = 0.0
        op_times: tuple[OpTime, ...] = ()
        for moe, sliding, count in stage_layer_kinds(spec, layers, plan.pp):
            lc = self._stage_layer(plan, b, seq_len, moe, sliding)
            op_times = op_times or lc.op_times
            per = lc.fwd + lc.bwd
            recompute = lc.recompute(plan.recompute)
            per = per + recompute
            work = work + per.scaled(count)
            fwd_s += lc.fwd.total_s * count
            bwd_s += (lc.bwd.total_s + recompute.total_s) * count
            exposed += count * self._layer_comm(plan, g, lc, tokens, act, moe, m)
            if moe:
                host = self._moe_host_s(plan, lc)
                work = work + Cost(overhead_s=count * host)
                bwd_s += count * host
        work = work + self._stage_ends(plan, b, seq_len, work.total_s / layers)
        stage_s = work.total_s + exposed  # one micro-batch through this stage

        bubble = (plan.pp - 1) / plan.vp * stage_s
        p2p = self._p2p(plan, g, tokens, act, m)
        fsdp_exposed = m * self._fsdp(plan, g, fwd_s, bwd_s, layers)
        dp_exposed = self._dp(plan, g, fwd_s, bwd_s)
        opt = self._optimizer(plan)
        step = m * stage_s + bubble + p2p + fsdp_exposed + dp_exposed + opt.total_s

        comm_exposed = m * exposed + p2p + fsdp_exposed + dp_exposed
        breakdown = Breakdown(
            compute_s=m * work.compute_s,
            memory_s=m * work.memory_s + opt.memory_s + opt.compute_s,
            communication_s=comm_exposed,
            bubble_s=bubble,
            overhead_s=m * work.overhead_s + opt.overhead_s,
        )
        memory = train_memory(
            spec, plan, seq_len=seq_len, microbatches=m, precision=self.precision, chip=chip,
            method=self.training.method, lora_params=self.lora_params,
        )  # fmt: skip
        return TrainPrediction(
            workload=spec.name,
            chip_id=chip.id,
            chips=plan.chips,
            precision=self.precision,
            plan=plan,
            seq_len=seq_len,
            global_batch=global_batch,
            step_time_s=step,
            model_flops_per_token=self._flops_per_token(seq_len),
            memory=memory,
            capacity_bytes=chip.hbm_capacity_bytes,
            breakdown=breakdown,
            assumptions=self._assumptions,
            op_times=op_times,
        )

    def _flops_per_token(self, seq_len: int) -> float:
        if not self.training.adapters:
            return _flops_per_token(self.spec, seq_len)
        return training_flops_per_token(self.spec, replace(self.training, seq_len=seq_len))

    # ---- communication pieces -------------------------------------------------------------

    def _layer_comm(
        self,
        plan: Plan,
        g: dict[str, Group],
        lc: LayerCost,
        tokens: int,
        act: float,
        moe: bool,
        microbatches: int = 1,
    ) -> float:
        """Exposed communication of one layer, one micro-batch (fwd + bwd + recompute)."""
        spec = self.spec
        t = 0.0
        if plan.tp > 1:
            ar = self.comm("all_reduce", tokens * spec.d_model * act, g["tp"])
            n = 4 + (2 if plan.recompute == "full" else 0)
            t += n * ar * (1 - TP_OVERLAP)
        if plan.cp > 1:
            _, hkv = heads_per_rank(spec, plan.tp)
            kv_dim = (
                spec.kv_lora_rank + spec.qk_rope_head_dim
                if spec.uses_mla
                else 2 * hkv * spec.head_dim
            )
            chunk = tokens * kv_dim * act
            ring = (plan.cp - 1) * self.comm("p2p", chunk, g["cp"])
            t += max(0.0, ring - lc.attention_fwd_s) + max(0.0, 2 * ring - lc.attention_bwd_s)
        if moe and plan.ep > 1:
            a2a = self._alltoall(plan, g["ep"], tokens, act)
            n = 4 + (2 if plan.recompute == "full" else 0)
            if ep_comm_overlaps(plan, microbatches, self.chip):
                # one micro-batch's dispatch/combine runs under another's compute
                t += max(0.0, n * a2a - lc.fwd.total_s - lc.bwd.total_s)
            else:
                t += n * a2a * (1 - EP_OVERLAP)
        return t

    def _alltoall(self, plan: Plan, group: Group, tokens: int, act: float) -> float:
        """One MoE dispatch (or combine) of this rank's routed tokens over the ep group
        (``comm.alltoall``: NVLink and the NIC concurrently). The plan's ``dispatcher``:
        ``alltoall`` (Megatron's MoEAlltoAllTokenDispatcher) sends a copy per selected
        expert; DeepEP/HybridEP (``deepep``, and unstated) one per rank and remote domain."""
        dedup = plan.dispatcher != "alltoall"
        name = "moe_all_to_all" if dedup else "moe_all_to_all_per_expert"
        key = (name, float(tokens * plan.expert_tp // plan.tp), group)
        t = self._comm.get(key)
        if t is None:
            spec = self.spec
            t = alltoall_time(
                self.chip, tokens=max(1, tokens * plan.expert_tp // plan.tp),
                k=spec.experts_per_token, bytes_per_copy=spec.d_model * act,
                group_size=group.size, in_domain=group.in_domain, experts=spec.n_experts,
                efficiency=self.network.efficiency, groups=spec.expert_groups,
                groups_per_token=spec.expert_groups_per_token, dedup=dedup,
            ).seconds  # fmt: skip
            self._comm[key] = t
        return t

    def _p2p(self, plan: Plan, g: dict[str, Group], tokens: int, act: float, m: int) -> float:
        if plan.pp == 1:
            return 0.0
        send = self.comm("p2p", tokens * self.spec.d_model * act / plan.tp, g["pp"])
        fill_drain = 2 * (plan.pp - 1) * send
        steady = 2 * m * plan.vp * send
        hidden = P2P_OVERLAP_INTERLEAVED if plan.vp > 1 else 0.0
        return fill_drain + steady * (1 - hidden)

    def _weight_bytes(self, plan: Plan, part: str = "total") -> tuple[float, float]:
        """(weights, grads) bytes of this chip's stage after tp/ep, before fsdp: all of them,
        or only the ``dense`` or the routed ``experts`` part."""
        key = "fp32" if self.precision == "fp32" else "default"
        sp = stage_params(self.spec, plan)
        p = {"dense": sp.dense_per_chip, "experts": sp.experts_per_chip}.get(part, sp.total)
        if self.training.adapters:  # frozen base gathered as stored; adapter grads only
            base = QLORA_WEIGHT_BYTES if self.training.method == "qlora" else WEIGHT_BYTES[key]
            share = layers_per_stage(self.spec.n_layers, plan.pp) / self.spec.n_layers / plan.tp
            grad = ADAPTER_GRAD_BYTES.get(self.training.method, 4.0)
            return p * base, self.lora_params * share * grad
        return p * WEIGHT_BYTES[key], p * self._grad_reduce_bytes(plan)

    def _grad_reduce_bytes(self, plan: Plan) -> float:
        """Bytes per parameter of the gradients data parallelism reduces: the plan's stated
        ``grad_reduce`` dtype, else fp32 ones on a GPU in bf16 or fp8
        (``GPU_BF16_GRAD_REDUCE_BYTES``), else the gradients' own dtype."""
        if plan.grad_reduce:
            return GRAD_BYTES["fp32" if plan.grad_reduce == "fp32" else "default"]
        if self.precision == "fp32":
            return GRAD_BYTES["fp32"]
        if self.chip.kind != "tpu" and self.precision != "fp16":
            return GPU_BF16_GRAD_REDUCE_BYTES
        return GRAD_BYTES["default"]

    def _fsdp(
        self, plan: Plan, g: dict[str, Group], fwd_s: float, bwd_s: float, layers: int
    ) -> float:
        """Exposed ZeRO-3 traffic per micro-batch (over fsdp x cp)."""
        if plan.fsdp == 1:
            return 0.0
        w, gr = self._weight_bytes(plan)
        ag = self.comm("all_gather", w, g["zero3"])
        rs = self.comm("reduce_scatter", gr, g["zero3"])
        first_layer = ag / max(1, layers)
        hide = DATA_PARALLEL_OVERLAP
        return max(0.0, ag - hide * fwd_s) + max(0.0, ag + rs - hide * bwd_s) + first_layer

    def _dp(self, plan: Plan, g: dict[str, Group], fwd_s: float, bwd_s: float) -> float:
        """Exposed ZeRO-1 traffic per step (grads reduce-scatter, weights all-gather): over
        dp after fsdp's own reduce-scatter, or over dp x cp when there is no fsdp."""
        w, gr = self._weight_bytes(plan)
        if plan.fsdp > 1:
            group, shard = g["dp"], plan.fsdp * plan.cp
        else:
            group, shard = g["zero1"], 1
        if plan.fsdp == 1 and plan.ep > 1 and self.spec.is_moe:
            # Routed experts are replicated only over the expert-data-parallel ranks (edp),
            # which sit outside the ep group: with ep filling a node they are one chip per
            # node, so their gradients cross the scale-out network without the in-node
            # reduction a dense data-parallel group gets (Megatron's expert DP group).
            dw, dg = self._weight_bytes(plan, "dense")
            ew, eg = self._weight_bytes(plan, "experts")
            rs = self.comm("reduce_scatter", dg, group) + self.comm("reduce_scatter", eg,
                                                                    g["edp"])  # fmt: skip
            ag = self.comm("all_gather", dw, group) + self.comm("all_gather", ew, g["edp"])
        elif group.size == 1:
            return 0.0
        else:
            rs = self.comm("reduce_scatter", gr / shard, group)
            ag = self.comm("all_gather", w / shard, group)
        hide = DATA_PARALLEL_OVERLAP
        return max(0.0, rs - hide * bwd_s) + max(0.0, ag - hide * fwd_s)

    def _optimizer(self, plan: Plan) -> Cost:
        _, params = sharded_params(
            self.spec, pp=plan.pp, vp=plan.vp, tp=plan.tp, ep=plan.ep,
            weight_shards=zero_shards(plan)[0], optimizer_shards=zero_shards(plan)[1],
            etp=plan.expert_tp,
        )  # fmt: skip
        if self.training.adapters:  # Adam over the adapters only (fp32, no master copy)
            share = layers_per_stage(self.spec.n_layers, plan.pp) / self.spec.n_layers
            params = self.lora_params * share / plan.tp / zero_shards(plan)[1]
        bf16 = plan.states == "bf16" and not self.training.adapters
        op = Op(
            name="adam",
            kind=OpKind.ELEMENTWISE,
            dtype="fp32",
            flops=12.0 * params,
            bytes_read=(ADAM_BF16_READ_BYTES if bf16 else ADAM_READ_BYTES) * params,
            bytes_written=(ADAM_BF16_WRITE_BYTES if bf16 else ADAM_WRITE_BYTES) * params,
            shape=(int(params),),
        )
        return cost_of([self.model.op_time(op)])  # the GPU and TPU models cache it
