"""Types the performance model returns, and the abstract per-op model.

``PerfModel`` times one op on one chip. ``GpuModel`` and ``TpuModel`` (final) refine the
roofline with what makes each architecture differ. Step composition (parallelism,
collectives, pipeline bubble) lives in ``step.py`` and returns a ``Prediction``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Literal

from chipwise.errors import PlanError
from chipwise.hardware.chip import Chip
from chipwise.limits import MAX_CHIPS, MAX_GLOBAL_BATCH, MAX_LAYERS, check_whole
from chipwise.workload.ir import Op

Bound = Literal["compute", "memory", "overhead", "communication"]
Recompute = Literal["none", "selective", "full", "norm_act"]
# The dtype of the kept weights and Adam moments (see Plan.states).
States = Literal["fp32", "bf16"]
GradReduce = Literal["", "fp32", "bf16"]
# The MoE token dispatcher a recipe runs (see Plan.dispatcher); "" = not stated.
Dispatcher = Literal["", "alltoall", "deepep"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Assumption:
    """A named constant an estimate used, with where it comes from."""

    name: str
    value: float | str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OpTime:
    """Time of ``op`` (all ``op.count`` repetitions) on one chip."""

    op: Op
    seconds: float
    compute_s: float
    memory_s: float
    overhead_s: float
    bound: Bound
    efficiency: float  # achieved / peak for the op's limiting resource
    notes: tuple[str, ...] = ()
    # the time is a measured kernel time (perf/ops/kernels.py), not the per-op model's:
    # whole-step corrections fitted to that model (sustained_tensor_fraction) leave it alone
    measured: bool = False
    # how compute_s and memory_s combine (roofline.combine): 0 = the slower of the two; p > 0
    # = their p-norm, where the kernel overlaps the two imperfectly (CDNA3 GEMMs)
    overlap_exponent: float = 0.0


class PerfModel(ABC):
    """Times single ops on one chip. Subclasses are final; this class is abstract."""

    # Whether element-wise ops that consume a matmul's output are fused into it (XLA does;
    # eager PyTorch does not). ``graph.time_graph`` asks ``fused_op_time`` for those ops.
    fuses_elementwise: bool = False

    def __init__(self, chip: Chip) -> None:
        self.chip = chip

    def fused_op_time(self, op: Op, producer: Op) -> OpTime:
        """Time of ``op`` when it directly consumes ``producer``'s output; default unfused."""
        del producer
        return self.op_time(op)

    @abstractmethod
    def op_time(self, op: Op) -> OpTime:
        """Seconds for ``op`` (times ``op.count``) on ``self.chip``."""

    @abstractmethod
    def assumptions(self) -> tuple[Assumption, ...]:
        """The efficiency parameters this model used, with their sources."""

    def sustained_tensor_fraction(self) -> float:
        """Share of the per-op tensor rate a whole training/prefill step sustains (1 = all;
        the refined models take it from their ``Efficiency``)."""
        return 1.0

    def serving_sustained_fraction(self, dtype: str) -> float:
        """The same for a serving step's dense (non-expert) GEMMs in ``dtype``."""
        del dtype
        return self.sustained_tensor_fraction()

    def serving_expert_sustained_fraction(self, dtype: str, weight: str = "") -> float:
        """The same for a serving step's routed-expert GEMMs in ``dtype`` (their weights
        stored as ``weight``, "" = as ``dtype``)."""
        del dtype, weight
        return self.sustained_tensor_fraction()

    def for_engine(self, engine: str, engine_date: str = "") -> PerfModel:
        """This model as serving ``engine`` of ``engine_date`` ("" = the newest) runs the ops
        (its own MoE kernels); the same model where the engine changes nothing."""
        del engine, engine_date
        return self

    def with_tp_fusion(self, tp: int) -> PerfModel:
        """This model as its serving engine runs the ops of a ``tp``-way tensor-parallel
        replica (the ops it fuses into the all-reduce); the same model where that changes
        nothing."""
        del tp
        return self

    def with_moe_backend(self, backend: str) -> PerfModel:
        """This model with a serving engine's MoE kernels picked by ``backend``
        (``Inference.moe_backend``; "" = the engine's default); the same model where the
        choice changes nothing."""
        del backend
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """How a job is split over chips. dp * fsdp * tp * pp * cp = chips; ep splits experts.

    ``dp`` replicates weights; ``fsdp`` shards weights, grads and optimizer states (ZeRO-3)
    over its group; ``vp`` is virtual pipeline stages per rank (interleaving);
    ``microbatch`` is sequences per micro-batch on one data-parallel rank.

    ``states`` is the dtype of the weights and Adam moments kept between steps: ``fp32``
    (mixed precision, 16 bytes per parameter with the gradients: an fp32 master copy and fp32
    moments beside the bf16 compute copy; MaxText's default ``weight_dtype: float32`` costs
    the same) or ``bf16`` (MaxText ``weight_dtype: bfloat16``, as the TPU recipes for large
    models set it: weights, gradients and both moments in bf16, 8 bytes per parameter; mu
    inherits weight_dtype and optax keeps nu in the weights' dtype, maxtext configs/base.yml).

    ``etp`` is the tensor-parallel width of the routed experts (Megatron's
    ``--expert-tensor-parallel-size``): the ``tp x cp x dp x fsdp`` ranks of a pipeline stage
    are regrouped as ``etp x ep x edp`` for the experts, so expert parallelism can fold over
    the tensor-parallel ranks (EP32 on dp=16 x tp=2 with etp=1). 0 = automatic: 1 when
    ``ep`` > 1, else ``tp`` (see ``expert_tp``).

    Two framework settings a published recipe may state (the planner never searches them):
    ``grad_reduce`` is the dtype data parallelism reduces gradients in, ``fp32`` or ``bf16``
    (Megatron ``ddp.grad_reduce_in_fp32``; "" = the framework default: fp32 on GPUs in bf16
    or fp8, the gradients' own dtype on TPUs); ``a2a_overlap`` is whether expert all-to-alls
    hide behind another micro-batch's compute (Megatron ``overlap_moe_expert_parallel_comm``,
    Megatron-Bridge ``moe_a2a_overlap``): 1 on, 0 off, -1 = chipwise's default
    (``step.train.EP_COMM_OVERLAP``). Either way the schedule must allow it (pp = 1 with
    at least two micro-batches, or vp > 1). ``attn_graph`` is whether each layer's attention
    block runs as a CUDA graph (Megatron ``--cuda-graph-impl transformer_engine
    --cuda-graph-scope attn ...``, Megatron-Bridge ``cuda_graph_scope``): 1 on, 0 off, -1 =
    not stated (Megatron's default ``cuda_graph_impl`` none: off); it sets how much of a GPU
    MoE layer is host-bound (``step.train.MOE_GRAPHED_HOST_S``). ``full_graph`` is whether the
    whole training iteration runs as one CUDA graph (Megatron ``cuda_graph_impl
    full_iteration``, Megatron-Bridge's MXFP8 HybridEP recipes): 1 on, 0 off, -1 = not stated
    (off); no MoE layer waits on host launches then (``step.train.FULL_GRAPH_MOE_HOST_S``).
    ``end_slots`` is whether the embedding and the loss each take a decoder layer's slot in
    the pipeline split (Megatron ``--account-for-embedding-in-pipeline-split
    --account-for-loss-in-pipeline-split``): 1 on, 0 off, -1 = not stated (only when the
    plan has more virtual stages than layers, which cannot run otherwise; see
    ``plan.parallel.ends_take_stage_slots``). ``flash`` is whether training runs attention as
    one fused (flash) kernel: 1 on, 0 off, -1 = not stated (on: every current framework).
    Off is how Megatron-LM ran before FlashAttention (2022): the scores GEMM, a fused
    scale-mask-softmax, dropout and the context GEMM, each passing the s x s scores through
    HBM (``ops.layers.unfused_attention``). ``dispatcher`` is the MoE token dispatcher
    (Megatron ``moe_token_dispatcher_type``): ``alltoall`` sends one copy of a token per
    selected expert to the expert-parallel rank holding it (Megatron's
    MoEAlltoAllTokenDispatcher, NCCL all-to-all), ``deepep`` sends it once per rank and once
    per remote domain and forwards it there (DeepEP, HybridEP: Megatron ``flex``); "" = not
    stated (``deepep``: ``comm.alltoall.CROSS_DOMAIN_DEDUP``).

    ``adp`` is a serving setting: 1 runs the ``tp`` ranks of a replica as attention data
    parallelism (TensorRT-LLM ``enable_attention_dp``, SGLang ``--enable-dp-attention``):
    every non-expert op (attention and its KV cache, norms, dense and shared-expert MLPs,
    embedding and LM head) runs whole (tp = 1) on each rank's own requests, and only the
    routed experts are split over the ``tp`` ranks (``etp x ep = tp``); 0 (the default) is
    tensor-parallel attention. See ``step.serve``.
    """

    dp: int = 1
    fsdp: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    vp: int = 1
    microbatch: int = 1
    recompute: Recompute = "none"
    etp: int = 0
    states: States = "fp32"
    grad_reduce: GradReduce = ""
    dispatcher: Dispatcher = ""
    a2a_overlap: int = -1
    attn_graph: int = -1
    full_graph: int = -1
    end_slots: int = -1
    flash: int = -1
    adp: int = 0

    def __post_init__(self) -> None:
        # the planner builds ~10^5 plans per search: read the count fields by name, not
        # through dataclasses.fields() (a third of the search's time went to it)
        for name in _COUNTS:
            if getattr(self, name) < 1:
                raise PlanError(f"plan: {name} must be >= 1, got {getattr(self, name)}")
        if self.etp < 0:
            raise PlanError(f"plan: etp must be >= 1 (or 0 = automatic), got {self.etp}")
        if self.recompute not in ("none", "selective", "full", "norm_act"):
            raise PlanError(
                f"plan: recompute must be none|selective|full|norm_act, got {self.recompute}"
            )
        if self.states not in ("fp32", "bf16"):
            raise PlanError(f"plan: states must be fp32|bf16, got {self.states}")
        if self.grad_reduce not in ("", "fp32", "bf16"):
            raise PlanError(f"plan: grad_reduce must be fp32|bf16, got {self.grad_reduce}")
        if self.dispatcher not in ("", "alltoall", "deepep"):
            raise PlanError(f"plan: dispatcher must be alltoall|deepep, got {self.dispatcher}")
        for name in PLAN_SWITCHES:
            value = getattr(self, name)
            if value not in (0, 1, _UNSTATED[name]):
                raise PlanError(f"plan: {name} must be 0|1, got {value}")

    @property
    def chips(self) -> int:
        return self.dp * self.fsdp * self.tp * self.pp * self.cp

    @property
    def data_parallel(self) -> int:
        """Ranks that each see different sequences (dp x fsdp)."""
        return self.dp * self.fsdp

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel width of the routed experts (``etp``, resolved when automatic)."""
        return expert_tp(self.tp, self.data_parallel, self.ep, self.etp)

    def __str__(self) -> str:
        parts = [
            f"{f.name}={getattr(self, f.name)}"
            for f in fields(self)
            # automatic etp, the default fp32 states and unstated recipe settings are left out
            if getattr(self, f.name) != _UNSTATED.get(f.name)
        ]
        return ",".join(parts)


def expert_tp(tp: int, data_parallel: int, ep: int, etp: int = 0) -> int:
    """The routed experts' tensor-parallel width: ``etp`` if given; 1 under expert
    parallelism (the experts are whole on each rank: Megatron-Bridge's and NeMo's MoE
    recipes set ``expert_tensor_parallel_size = 1``, e.g. github:NVIDIA-NeMo/Megatron-Bridge
    recipes for DeepSeek-V3, Qwen3-MoE; MaxText keeps experts whole under its expert axis);
    ``tp`` without it (the experts split like a dense MLP, Megatron-Core's default)."""
    del data_parallel  # kept in the signature: the layout, not the rule, may need it
    if etp:
        return etp
    return 1 if ep > 1 else tp


_PLAN_KEYS = {f.name for f in fields(Plan)}
# Plan fields that are on/off switches (0 | 1, or their unstated value), and that a plan's
# text shows whenever they are stated, even at 1.
PLAN_SWITCHES = ("a2a_overlap", "attn_graph", "full_graph", "end_slots", "flash", "adp")
# Plan fields that are not chip counts, and the values __str__ leaves out.
_NOT_COUNTS = (
    "recompute", "etp", "states", "grad_reduce", "dispatcher", *PLAN_SWITCHES,
)  # fmt: skip
# Plan fields that count chips, ranks or sequences (each >= 1).
_COUNTS = tuple(f.name for f in fields(Plan) if f.name not in _NOT_COUNTS)
_UNSTATED: dict[str, object] = {
    "etp": 0,
    "states": "fp32",
    "grad_reduce": "",
    "dispatcher": "",
    "a2a_overlap": -1,
    "attn_graph": -1,
    "full_graph": -1,
    "end_slots": -1,
    "flash": -1,
    "adp": 0,
}
# Each axis splits at most the largest job chipwise sizes (chipwise.limits.MAX_CHIPS); a
# micro-batch is at most the largest global batch; virtual stages split at most the layers.
_PLAN_MAX: dict[str, int] = {
    **dict.fromkeys(("dp", "fsdp", "tp", "pp", "cp", "ep", "etp"), MAX_CHIPS),
    "vp": MAX_LAYERS,
    "microbatch": MAX_GLOBAL_BATCH,
}
_PLAN_FIX = "each axis is a count of chips >= 1, e.g. 'tp=8,pp=2'"
# A --plan string names sixteen keys at most; 512 characters is far more than that needs.
MAX_PLAN_CHARS = 512


# Publications write a layout as axis-and-count words: 'TP8', 'TP8 EP8', 'TP4xPP2'.
_AXIS_COUNT = r"(fsdp|etp|dp|tp|pp|cp|ep|vp)(\d+)"
_SHORTHAND = re.compile(rf"(?:{_AXIS_COUNT}x?)+")


def _plan_pairs(text: str) -> list[tuple[str, str]]:
    """(key, value) pairs of a plan string, in order: ``key=value`` items or axis-and-count
    words, separated by commas, spaces or 'x', in any case."""
    norm = re.sub(r"\s*=\s*", "=", text.strip().lower())
    pairs: list[tuple[str, str]] = []
    for part in re.split(r"[,;\s\u00d7*]+", norm):
        if part in ("", "x"):  # 'TP4 x PP2'
            continue
        m = re.fullmatch(r"([a-z][a-z0-9_]*)=([a-z0-9][a-z0-9_]*)", part)
        if m:
            pairs.append((m.group(1), m.group(2)))
        elif _SHORTHAND.fullmatch(part):
            pairs += re.findall(_AXIS_COUNT, part)
        else:
            raise PlanError(f"plan: cannot read {part!r}; write key=value, e.g. 'tp=8'")
    return pairs


def plan_values(text: str) -> dict[str, int | str]:
    """The ``key=value`` pairs of a ``--plan`` string ('tp=8,pp=2', or as publications
    write it, 'TP8 PP2'); unknown or repeated keys are errors."""
    values: dict[str, int | str] = {}
    if len(text) > MAX_PLAN_CHARS:
        raise PlanError(
            f"plan {text[:40]!r}... is {len(text):,} characters; write key=value pairs, e.g. "
            "'tp=8,pp=2'"
        )
    for key, raw in _plan_pairs(text):
        if key not in _PLAN_KEYS:
            raise PlanError(f"plan: unknown key {key!r}; known: {', '.join(sorted(_PLAN_KEYS))}")
        if key in values:
            raise PlanError(f"plan: {key} is given twice; give each key once")
        if key in ("recompute", "states", "grad_reduce", "dispatcher"):
            values[key] = raw
        elif key in PLAN_SWITCHES:
            if raw not in ("0", "1"):
                raise PlanError(f"plan: {key} must be 0 (off) or 1 (on), got {raw!r}")
            values[key] = int(raw)
        else:
            try:
                number = int(raw)
            except ValueError:
                raise PlanError(f"plan: {key} must be an integer, got {raw!r}") from None
            values[key] = check_whole(
                f"plan: {key}",
                number,
                low=1,
                high=_PLAN_MAX[key],
                fix=_PLAN_FIX,
                error=PlanError,
            )
    return values


def parse_plan(text: str) -> Plan:
    """Parse ``"dp=2,fsdp=8,tp=4,recompute=full"`` into a complete ``Plan``."""
    return Plan(**plan_values(text))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryUse:
    """Bytes per chip, by what they hold."""

    weights_bytes: float = 0.0
    grads_bytes: float = 0.0
    optimizer_bytes: float = 0.0
    activations_bytes: float = 0.0
    kv_cache_bytes: float = 0.0
    other_bytes: float = 0.0  # workspace, fragmentation, framework reserve
    # The part of other_bytes that is the caching allocator's fragmentation allowance: a
    # margin the planner keeps free when it can, not memory a run must have (published runs
    # tuned to the largest micro-batch that fits use it). A total inside capacity + slack
    # fits, "tight".
    slack_bytes: float = 0.0
    # The part of other_bytes that lives outside the framework's caching allocator (the
    # CUDA context and driver state): memory a device has to have, but that
    # torch.cuda.max_memory_allocated / max_memory_reserved never count.
    unallocated_bytes: float = 0.0

    def fits_in(self, capacity_bytes: float) -> bool:
        """Whether this fits ``capacity_bytes``, the fragmentation allowance included."""
        return self.total_bytes - self.slack_bytes <= capacity_bytes

    def tight_in(self, capacity_bytes: float) -> bool:
        """Fits only by using (part of) the fragmentation allowance."""
        return self.fits_in(capacity_bytes) and self.total_bytes > capacity_bytes

    @property
    def total_bytes(self) -> float:
        return (
            self.weights_bytes
            + self.grads_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.kv_cache_bytes
            + self.other_bytes
        )

    @property
    def allocated_bytes(self) -> float:
        """The allocator's peak (``torch.cuda.max_memory_allocated``): the total less the
        memory outside the allocator and the fragmentation allowance."""
        return self.total_bytes - self.unallocated_bytes - self.slack_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakdown:
    """Where a step's time goes (seconds, exposed on the critical path)."""

    compute_s: float = 0.0
    memory_s: float = 0.0
    communication_s: float = 0.0
    bubble_s: float = 0.0
    overhead_s: float = 0.0

    @property
    def total_s(self) -> float:
        return (
            self.compute_s + self.memory_s + self.communication_s + self.bubble_s + self.overhead_s
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainPrediction:
    """One training step of ``workload`` on ``chips`` x ``chip_id`` under ``plan``."""

    workload: str
    chip_id: str
    chips: int
    precision: str
    plan: Plan
    seq_len: int
    global_batch: int
    step_time_s: float
    model_flops_per_token: float
    memory: MemoryUse
    capacity_bytes: float
    breakdown: Breakdown
    assumptions: tuple[Assumption, ...] = ()
    op_times: tuple[OpTime, ...] = field(default=(), repr=False)

    @property
    def tokens_per_step(self) -> int:
        return self.seq_len * self.global_batch

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.step_time_s

    @property
    def tokens_per_s_per_chip(self) -> float:
        return self.tokens_per_s / self.chips

    @property
    def fits(self) -> bool:
        return self.memory.fits_in(self.capacity_bytes)

    @property
    def tight(self) -> bool:
        """Fits only inside the allocator's fragmentation allowance (``MemoryUse``)."""
        return self.memory.tight_in(self.capacity_bytes)

    @property
    def achieved_flops_per_s_per_chip(self) -> float:
        return self.model_flops_per_token * self.tokens_per_s_per_chip

    @property
    def limited_by(self) -> str:
        """What limits the step: 'compute' when the tensor and vector work is at least half
        of it, else the largest of 'memory', 'communication' (collective time not hidden
        behind compute), 'pipeline bubble' and 'overhead'. A step not limited by compute is
        one that more chips need not shorten."""
        b = self.breakdown
        if b.compute_s >= 0.5 * self.step_time_s:
            return "compute"
        parts = {
            "memory": b.memory_s,
            "communication": b.communication_s,
            "pipeline bubble": b.bubble_s,
            "overhead": b.overhead_s,
        }
        return max(parts, key=lambda k: parts[k])


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingLoadResult:
    """What the continuous-batching engine model found at a load (all replicas together
    unless a name says per replica). ``ttft_s``/``tpot_s`` of the prediction are the means;
    this adds the percentiles and the engine's limits."""

    load: str  # concurrency | rps | max_throughput
    requests_per_s: float
    output_tokens_per_s: float
    tokens_per_s: float  # input + output
    decode_batch_per_replica: float  # sequences in the decode phase of a step, on average
    in_system_per_replica: float  # requests admitted or queued (Little's law)
    max_seqs_per_replica: int  # min(max_num_seqs, KV-cache capacity / mean context)
    kv_capacity_tokens_per_replica: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    saturated: bool = False  # arrivals beyond what the replicas can serve: queues grow
    # what bounds the batch: concurrency | max_num_seqs | state_slots | kv_cache | ...
    limit: str = ""
    prefill_chips: int = 0  # disaggregated: chips in the prefill pool (0 = colocated)


@dataclass(frozen=True, slots=True, kw_only=True)
class InferPrediction:
    """Serving ``batch`` requests: prefill (TTFT) then decode (TPOT) per output token.

    Under an engine load (``engine`` set), ``batch`` is the mean number of requests in the
    system and ``ttft_s``/``tpot_s`` the means, so the throughput properties hold by Little's
    law; ``engine`` carries percentiles and limits."""

    workload: str
    chip_id: str
    chips: int
    precision: str
    plan: Plan
    batch: int
    input_len: int
    output_len: int
    ttft_s: float
    tpot_s: float
    memory: MemoryUse
    capacity_bytes: float
    prefill: Breakdown
    decode: Breakdown
    assumptions: tuple[Assumption, ...] = ()
    engine: ServingLoadResult | None = None

    @property
    def ttft_p99_s(self) -> float:
        return self.engine.ttft_p99_s if self.engine is not None else self.ttft_s

    @property
    def tpot_p99_s(self) -> float:
        return self.engine.tpot_p99_s if self.engine is not None else self.tpot_s

    @property
    def output_tokens_per_s_per_chip(self) -> float:
        return self.output_tokens_per_s / self.chips

    @property
    def request_time_s(self) -> float:
        return self.ttft_s + self.tpot_s * self.output_len

    @property
    def output_tokens_per_s(self) -> float:
        if self.engine is not None:
            return self.engine.output_tokens_per_s
        return self.batch * self.output_len / self.request_time_s if self.output_len else 0.0

    @property
    def tokens_per_s(self) -> float:
        if self.engine is not None:
            return self.engine.tokens_per_s
        return self.batch * (self.input_len + self.output_len) / self.request_time_s

    @property
    def fits(self) -> bool:
        return self.memory.fits_in(self.capacity_bytes)

    @property
    def tight(self) -> bool:
        """Fits only inside the allocator's fragmentation allowance (``MemoryUse``)."""
        return self.memory.tight_in(self.capacity_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrimitivePrediction:
    """A microbenchmark primitive (matmul, copy, all-reduce) on one chip or across chips."""

    workload: str
    chip_id: str
    chips: int
    time_s: float
    flops: float = 0.0
    n_bytes: float = 0.0
    bus_bytes: float = 0.0  # NCCL bus-bandwidth convention: 2 (n-1)/n x bytes for all-reduce
    bound: Bound = "compute"
    assumptions: tuple[Assumption, ...] = ()

    @property
    def achieved_tflops(self) -> float:
        return self.flops / self.time_s / 1e12

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.n_bytes / self.time_s

    @property
    def bus_bytes_per_s(self) -> float:
        return self.bus_bytes / self.time_s


Prediction = TrainPrediction | InferPrediction | PrimitivePrediction
