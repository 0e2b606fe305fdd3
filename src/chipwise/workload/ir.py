"""The workload IR: ops with shapes, dtype, FLOPs and bytes, plus model metadata and phase.

Shape legend used across chipwise:
    B = batch (sequences), S = sequence length, D = model width (hidden size),
    H = attention heads, Hkv = key/value heads, Dh = head dim, F = MLP width,
    V = vocabulary, L = layers, E = experts, k = experts per token,
    M, N, K = matmul dims: (M x K) @ (K x N).

Importers (torch, jax, onnx) fill a ``Graph`` of ``Op``s. Transformer models also carry a
``TransformerSpec``: the performance model needs the architecture (not just a flat op
list) to shard it across chips under a parallelism plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum

from chipwise.errors import WorkloadError
from chipwise.limits import (
    MAX_GLOBAL_BATCH,
    MAX_SEQ_LEN,
    MAX_SERVE_BATCH,
    MAX_WIDTH,
    check_whole,
)
from chipwise.units import DTYPE_BYTES


class OpKind(StrEnum):
    """What an op does, as far as hardware cares."""

    MATMUL = "matmul"  # dense GEMM / batched GEMM: tensor cores, MXU
    CONV = "conv"  # convolution: tensor cores (implicit GEMM), MXU
    ATTENTION = "attention"  # fused attention (flash / splash): QK^T, softmax, PV
    ELEMENTWISE = "elementwise"  # add, mul, activation: CUDA cores, TPU VPU
    REDUCTION = "reduction"  # sum, mean, max
    NORM = "norm"  # layer/RMS/batch norm
    SOFTMAX = "softmax"
    GATHER = "gather"  # embedding look-up, indexing: TPU slow path
    SCATTER = "scatter"  # index_put, scatter-add: TPU slow path
    SORT = "sort"  # sort, top-k: TPU slow path
    COPY = "copy"  # transpose, concat, reshape that moves memory
    COLLECTIVE = "collective"  # all-reduce etc. inside the graph
    CUSTOM = "custom"  # custom call / opaque kernel
    FP64 = "fp64"  # double-precision arithmetic (scientific codes)
    OTHER = "other"


TENSOR_KINDS = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION})

# FLOPs per element for ops the importers count by size rather than by formula (torch's
# flop_counter counts only matmul/conv/attention). Per element of the largest tensor the op
# touches. A counting convention, not a measurement: layer norm ~7 (mean, centre, square,
# mean, scale, affine mul, add), softmax ~5 (max, subtract, exp, sum, divide), everything
# else 1. These ops are memory-bound on every catalog chip; the count matters mainly for
# FP64 codes and for the vector-unit side of a roofline.
FLOPS_PER_ELEMENT: dict[OpKind, float] = {
    OpKind.ELEMENTWISE: 1.0,
    OpKind.REDUCTION: 1.0,
    OpKind.NORM: 7.0,
    OpKind.SOFTMAX: 5.0,
    OpKind.FP64: 1.0,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpertRouting:
    """How a routed-expert GEMM's rows reach its experts: ``tokens`` tokens (over every
    expert-parallel rank) each choose ``topk`` of ``experts`` experts, ``local`` of which this
    rank holds; ``balanced``: every expert gets the mean load (the kernel benchmarks'
    forced-balanced routing), else each token's choice is uniform at random. ``shared``:
    always-routed experts in the same grid (a serving engine's fused shared experts), each
    taking all ``shared_rows`` of this rank's tokens."""

    tokens: int
    topk: int
    experts: int
    local: int
    balanced: bool = False
    shared: int = 0
    shared_rows: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """One op instance (or ``count`` identical ones).

    ``flops``, ``bytes_read`` and ``bytes_written`` are for ONE instance. For matmuls,
    ``mnk`` holds (M, N, K) and ``batch`` the number of independent GEMMs of that shape
    (batched matmul / grouped heads), so flops == 2 * batch * M * N * K.
    """

    name: str
    kind: OpKind
    dtype: str = "bf16"
    flops: float = 0.0
    bytes_read: float = 0.0
    bytes_written: float = 0.0
    shape: tuple[int, ...] = ()  # output shape
    mnk: tuple[int, int, int] | None = None
    batch: int = 1
    count: int = 1  # repetitions (e.g. once per layer)
    dynamic: bool = False  # a data-dependent shape (recompilation on XLA)
    backward: bool = False  # part of the backward pass
    grouped: bool = False  # ``batch`` GEMMs of different weights (MoE experts), not one bmm
    # kernels an eager framework launches for this op (a few unfused elementwise passes
    # modelled as one op); each of a ``grouped`` op's ``batch`` GEMMs is its own launch
    kernels: int = 1
    # fp8 GEMMs with per-block weight scales (a block-scaled checkpoint's MoE experts)
    block_scaled: bool = False
    # weight-only GEMMs (W4A16/W8A16): the stored weight dtype the kernel dequantises to
    # ``dtype`` in its main loop; "" = the weights are in ``dtype``. Decode attention: the
    # KV cache's stored dtype (layers._decode_attention)
    weight: str = ""
    # attention only: the mask its kernel skips whole blocks of (a causal mask, a sliding
    # window of ``window`` keys per query; 0 = every key)
    causal: bool = False
    window: int = 0
    # decode attention only: a dense einsum over each sequence's whole contiguous cache
    # array (JetStream without ragged attention), not a paged-attention kernel's page walk
    dense: bool = False
    # routed MoE expert GEMMs and their dispatch / combine (layers.mlp_ops): the routing that
    # loads their experts
    routing: ExpertRouting | None = None

    def __post_init__(self) -> None:
        if self.flops < 0 or self.bytes_read < 0 or self.bytes_written < 0 or self.count < 1:
            raise WorkloadError(f"op {self.name!r} has negative work or count < 1")

    @property
    def routed_expert(self) -> bool:
        """Whether the op is a routed MoE expert GEMM (one GEMM per local expert)."""
        return self.routing is not None and self.kind is OpKind.MATMUL

    @property
    def tensor_op(self) -> bool:
        """Whether the op runs on tensor cores / MXUs."""
        return self.kind in TENSOR_KINDS

    @property
    def bytes_moved(self) -> float:
        return self.bytes_read + self.bytes_written

    @property
    def total_flops(self) -> float:
        return self.flops * self.count


@dataclass(frozen=True, slots=True, kw_only=True)
class Graph:
    """An ordered list of ops for one step (forward, or forward + backward)."""

    name: str
    ops: tuple[Op, ...]
    source: str = ""  # where it came from: "torch.export", "jax cost_analysis", "onnx", ...
    params: float = 0.0  # parameter count, if the importer knows it
    notes: tuple[str, ...] = ()

    @property
    def flops(self) -> float:
        return sum(op.total_flops for op in self.ops)

    @property
    def bytes_moved(self) -> float:
        return sum(op.bytes_moved * op.count for op in self.ops)

    @property
    def tensor_flops_share(self) -> float:
        total = self.flops
        return sum(o.total_flops for o in self.ops if o.tensor_op) / total if total else 0.0


# ``TransformerSpec.qk_norm``: none, per head over head_dim, over the whole q/k projection.
QK_NORM_SHAPES = ("", "head", "proj")


@dataclass(frozen=True, slots=True, kw_only=True)
class TransformerSpec:
    """A decoder (or encoder, or encoder-decoder) transformer, from a HF-style config.

    MoE: ``n_experts`` routed experts of width ``moe_d_ff``, ``experts_per_token`` active,
    plus ``n_shared_experts`` always active; the first ``first_dense_layers`` layers and
    every layer not on ``moe_layer_step`` are dense with width ``d_ff``. Group-limited
    routing (DeepSeek-V2/V3's ``n_group``/``topk_group``): the routed experts form
    ``expert_groups`` contiguous groups and each token picks its experts from at most
    ``expert_groups_per_token`` of them (0 = no limit).
    MLA (DeepSeek): ``kv_lora_rank`` > 0 switches attention to latent KV.
    Sliding-window attention: with ``sliding_window`` > 0, every ``sliding_window_pattern``-th
    layer (1-based, Gemma 3's convention: 6 = five local layers then one global) attends to
    the whole sequence and the others to the last ``sliding_window`` tokens; pattern 0 =
    every layer windowed (Mistral 7B), 2 = alternating from a local first layer (gpt-oss).
    """

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    gated_mlp: bool = True  # SwiGLU/GeGLU: three matrices instead of two
    tied_embeddings: bool = False
    max_seq_len: int = 4096
    n_experts: int = 0
    experts_per_token: int = 0
    n_shared_experts: int = 0
    moe_d_ff: int = 0
    first_dense_layers: int = 0
    moe_layer_step: int = 1  # every n-th layer is MoE (after first_dense_layers)
    expert_groups: int = 0  # group-limited routing: groups of routed experts (0 = none)
    expert_groups_per_token: int = 0  # groups one token's experts may come from
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # DeepSeek Sparse Attention (DeepSeek-V3.2): a lightning indexer of ``index_n_heads``
    # heads of ``index_head_dim`` scores every cached token for each query, and the MLA
    # attention reads only the ``index_topk`` best of them (0 = dense attention)
    index_topk: int = 0
    index_n_heads: int = 0
    index_head_dim: int = 0
    n_encoder_layers: int = 0  # encoder-decoder (T5): encoder layers; n_layers = decoder
    causal: bool = True  # False for encoders (BERT)
    sliding_window: int = 0
    sliding_window_pattern: int = 0  # every n-th layer is global; 0 = all layers windowed
    source: str = ""  # where the architecture figures came from
    published_params: float = 0.0  # the published total, for the 2 % check
    learned_positions: int = 0  # rows of a learned absolute position table (GPT-2, BERT)
    # A checkpoint that quantises only its routed experts, in this format ("mxfp4": gpt-oss,
    # whose HF quantization_config lists attention, router, embeddings and head in
    # modules_to_not_convert): every other weight stays bf16 whatever --precision says.
    expert_quant: str = ""
    # A checkpoint stored in fp8 with per-block weight scales (HF quantization_config
    # quant_method fp8 with a weight_block_size: DeepSeek-V3/R1's 128 x 128), which served
    # fp8 its MoE experts run as block-scaled grouped GEMMs; 0 = per-tensor or not fp8.
    fp8_weight_block: int = 0
    # The attention projections a quantised checkpoint keeps out of its low precision, by
    # chipwise op name (q_down, q_up, q_proj, kv_down, kv_up, qkv_proj, o_proj): its HF
    # quantization_config's exclude_modules (ModelOpt) or ignore (compressed-tensors) list.
    # Served at a quantised --precision these run, and are stored, in bf16 (the checkpoint
    # stores them so): nvidia/DeepSeek-R1-FP4 keeps all of MLA's projections, its -v2
    # checkpoints all but o_proj (workload/config.py ``_quant_exclude``).
    quant_exclude: tuple[str, ...] = ()
    # gpt-oss's expert MLP (HF GptOssExperts, huggingface.co/openai/gpt-oss-120b config.json):
    # the GLU's gate clamped to at most ``glu_clamp`` and its linear half to +-``glu_clamp``
    # (config swiglu_limit 7.0; 0 = no clamp), and biases on both expert projections
    # (``expert_bias``: gate_up_proj_bias, down_proj_bias)
    glu_clamp: float = 0.0
    expert_bias: bool = False
    # An RMSNorm on the queries and keys before attention ("qk-norm"): "head" normalises each
    # head over head_dim (Qwen3, Gemma 3, GLM-4.5 use_qk_norm, Llama 4 use_qk_norm), "proj"
    # the whole q and k projections (OLMo-2, MiniMax-M2); "" = none (workload/config.py
    # ``_qk_norm``)
    qk_norm: str = ""
    # RMSNorms on the attention's and the MLP's outputs before their residual adds, beside the
    # usual pre-norms ("sandwich" norms: Gemma 2 and 3's post_attention_layernorm and
    # post_feedforward_layernorm)
    post_norms: bool = False
    # Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5; Yang et al. 2024, arXiv 2412.06464):
    # with ``full_attention_interval`` n > 0 every n-th layer (1-based) is full attention and
    # the others are Gated DeltaNet layers: ``linear_k_heads`` query/key heads of
    # ``linear_k_head_dim``, ``linear_v_heads`` value heads of ``linear_v_head_dim``, a causal
    # depthwise convolution of ``linear_conv_kernel`` taps, and per sequence a fixed-size
    # recurrent state (one dk x dv matrix per value head) instead of a KV cache
    full_attention_interval: int = 0
    linear_k_heads: int = 0
    linear_v_heads: int = 0
    linear_k_head_dim: int = 0
    linear_v_head_dim: int = 0
    linear_conv_kernel: int = 0
    # the dtype the checkpoint asks its recurrent state be held in (Qwen3.5's config
    # mamba_ssm_dtype "float32"); "" = the engine's default
    linear_state_dtype: str = ""
    # full attention's output gate (Qwen3-Next / Qwen3.5 attn_output_gate): q_proj also
    # produces a per-channel sigmoid gate multiplied into the attention's output
    attn_output_gate: bool = False

    def __post_init__(self) -> None:
        for name in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "vocab_size"):
            if getattr(self, name) <= 0:
                raise WorkloadError(f"{self.name}: {name} must be positive")
        if self.n_heads % self.n_kv_heads:
            raise WorkloadError(f"{self.name}: n_heads must be a multiple of n_kv_heads")
        if self.n_experts and not (0 < self.experts_per_token <= self.n_experts):
            raise WorkloadError(f"{self.name}: experts_per_token must be in 1..n_experts")
        if self.expert_groups and (
            self.n_experts % self.expert_groups
            or not 0 < self.expert_groups_per_token <= self.expert_groups
        ):
            raise WorkloadError(
                f"{self.name}: expert_groups={self.expert_groups} must divide the "
                f"{self.n_experts} experts and expert_groups_per_token must be in "
                f"1..{self.expert_groups}"
            )
        if self.qk_norm not in QK_NORM_SHAPES:
            raise WorkloadError(
                f"{self.name}: qk_norm must be one of {', '.join(map(repr, QK_NORM_SHAPES))}"
            )
        if self.sliding_window < 0 or self.sliding_window_pattern < 0:
            raise WorkloadError(
                f"{self.name}: sliding_window and sliding_window_pattern must be >= 0"
            )
        dsa = (self.index_topk, self.index_n_heads, self.index_head_dim)
        if min(dsa) < 0 or (any(dsa) and not all(dsa)):
            raise WorkloadError(
                f"{self.name}: sparse attention needs all of index_topk, index_n_heads, "
                "index_head_dim (all > 0; all 0 for dense attention)"
            )
        if self.index_topk and not self.uses_mla:
            raise WorkloadError(f"{self.name}: sparse attention (index_topk) needs MLA")
        linear = (self.linear_k_heads, self.linear_v_heads, self.linear_k_head_dim,
                  self.linear_v_head_dim, self.linear_conv_kernel)  # fmt: skip
        if self.full_attention_interval < 0 or min(linear) < 0:
            raise WorkloadError(f"{self.name}: linear-attention fields must be >= 0")
        if self.full_attention_interval and not all(linear):
            raise WorkloadError(
                f"{self.name}: linear attention (full_attention_interval) needs all of "
                "linear_k_heads, linear_v_heads, linear_k_head_dim, linear_v_head_dim, "
                "linear_conv_kernel (all > 0)"
            )
        if self.full_attention_interval and self.linear_v_heads % self.linear_k_heads:
            raise WorkloadError(f"{self.name}: linear_v_heads must be a multiple of linear_k_heads")
        if self.linear_state_dtype and self.linear_state_dtype not in DTYPE_BYTES:
            raise WorkloadError(
                f"{self.name}: linear_state_dtype must be one of {', '.join(DTYPE_BYTES)}"
            )
        if self.full_attention_interval and (self.sliding_window or self.uses_mla):
            raise WorkloadError(
                f"{self.name}: linear attention with a sliding window or MLA is not expressible"
            )

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def uses_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def uses_dsa(self) -> bool:
        """Whether attention is DeepSeek Sparse Attention (an indexer picks the keys)."""
        return self.index_topk > 0

    def is_moe_layer(self, layer: int) -> bool:
        """Whether decoder layer ``layer`` (0-based) has routed experts."""
        if not self.is_moe or layer < self.first_dense_layers:
            return False
        return (layer - self.first_dense_layers) % self.moe_layer_step == 0

    @property
    def n_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.n_layers))

    def is_sliding_layer(self, layer: int) -> bool:
        """Whether decoder layer ``layer`` (0-based) attends only to a sliding window."""
        if not self.sliding_window:
            return False
        n = self.sliding_window_pattern
        return not (n and (layer + 1) % n == 0)

    @property
    def n_sliding_layers(self) -> int:
        return sum(self.is_sliding_layer(i) for i in range(self.n_layers))

    @property
    def uses_linear_attention(self) -> bool:
        """Whether some layers are Gated DeltaNet linear attention (a hybrid model)."""
        return self.full_attention_interval > 0

    def is_linear_layer(self, layer: int) -> bool:
        """Whether decoder layer ``layer`` (0-based) is a linear-attention layer."""
        n = self.full_attention_interval
        return n > 0 and (layer + 1) % n != 0

    @property
    def n_linear_layers(self) -> int:
        return sum(self.is_linear_layer(i) for i in range(self.n_layers))

    @property
    def n_local_layers(self) -> int:
        """Layers of the cheaper attention kind: sliding-window or linear-attention layers
        (a model has one kind or the other; ``__post_init__`` refuses both)."""
        return self.n_sliding_layers + self.n_linear_layers


@dataclass(frozen=True, slots=True, kw_only=True)
class Primitive:
    """A microbenchmark: ``matmul:MxNxK[:dtype]``, ``copy:BYTES``, ``allreduce:BYTES``."""

    kind: str  # matmul | copy | allreduce
    mnk: tuple[int, int, int] = (0, 0, 0)
    n_bytes: float = 0.0
    dtype: str = "bf16"

    @property
    def name(self) -> str:
        if self.kind == "matmul":
            m, n, k = self.mnk
            return f"matmul:{m}x{n}x{k}:{self.dtype}"
        return f"{self.kind}:{int(self.n_bytes)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Requirement:
    """A capability a non-ML workload needs, and how much of it."""

    capability: str  # fp64 | raster | rt-cores | int32 | media-encode | general-compute
    why: str
    amount: float = 0.0  # e.g. FLOPs or ops per unit of work
    unit: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NonMLKind:
    """A workload described by what it needs, not by a graph (graphics, fp64 HPC, ...)."""

    name: str
    title: str
    requirements: tuple[Requirement, ...]
    description: str = ""
    sources: tuple[str, ...] = ()  # where the "why not on a TPU" evidence comes from


Model = TransformerSpec | Graph | Primitive | NonMLKind


# How the weights are trained. ``full``: every weight trains (bf16 weights + fp32 Adam).
# ``lora``: the base weights are frozen and low-rank adapters B @ A of rank r train beside
# the chosen projections (Hu et al. 2021, "LoRA", §4). ``qlora``: LoRA over base weights
# stored in 4-bit NormalFloat with double-quantised block constants (Dettmers et al. 2023,
# "QLoRA", §3), paged optimizer states.
FINETUNE_METHODS = ("full", "lora", "qlora")
# The projections LoRA may adapt, by their Hugging Face (PEFT ``target_modules``) names.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# Default: every attention and MLP projection. The QLoRA paper (§4, "Default LoRA
# hyperparameters do not match full finetuning performance") found all linear layers are
# needed to match full fine-tuning; PEFT's "all-linear" and Unsloth's notebooks do the same.
LORA_DEFAULT_TARGETS = LORA_TARGETS
# Rank 16: Unsloth's and PEFT's example notebooks (r=16); QLoRA's paper used r=64.
LORA_DEFAULT_RANK = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class Training:
    """Training: forward + backward + optimizer over ``global_batch`` sequences of ``seq_len``.

    ``method`` is full training or a LoRA/QLoRA fine-tune with ``lora_rank`` adapters on
    ``lora_targets`` (see ``FINETUNE_METHODS``).
    """

    seq_len: int = 4096
    global_batch: int = 256  # sequences per step
    tokens_to_train: float = 0.0  # for cost of a full run; 0 = unknown
    method: str = "full"
    lora_rank: int = LORA_DEFAULT_RANK
    lora_targets: tuple[str, ...] = LORA_DEFAULT_TARGETS

    def __post_init__(self) -> None:
        if self.seq_len <= 0 or self.global_batch <= 0:
            raise WorkloadError("seq_len and global_batch must be positive")
        check_whole("seq_len", self.seq_len, low=1, high=MAX_SEQ_LEN, error=WorkloadError)
        check_whole(
            "global_batch", self.global_batch, low=1, high=MAX_GLOBAL_BATCH, error=WorkloadError
        )
        if self.method not in FINETUNE_METHODS:
            raise WorkloadError(
                f"unknown training method {self.method!r}; choose one of "
                f"{', '.join(FINETUNE_METHODS)}"
            )
        if self.lora_rank < 1:
            raise WorkloadError(f"LoRA rank must be >= 1, got {self.lora_rank}")
        check_whole("LoRA rank", self.lora_rank, low=1, high=MAX_WIDTH, error=WorkloadError)
        bad = [t for t in self.lora_targets if t not in LORA_TARGETS]
        if bad or not self.lora_targets:
            raise WorkloadError(
                f"unknown LoRA target module(s) {bad or '(none)'}; choose among "
                f"{', '.join(LORA_TARGETS)}"
            )

    @property
    def adapters(self) -> bool:
        """Whether only low-rank adapters train (LoRA or QLoRA)."""
        return self.method != "full"

    @property
    def tokens_per_step(self) -> int:
        return self.seq_len * self.global_batch


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefillPool:
    """The prefill pool of a disaggregated deployment, laid out apart from the decode pool
    (the serving plan): ``instances`` engines of ``tp`` chips, experts over ``ep``, attention
    data parallelism ``adp`` (0|1), ``max_num_tokens`` per step and rank (0 = the engine's
    default). NVIDIA Dynamo's TensorRT-LLM recipes size the two pools apart, e.g. MLPerf
    v6.0 DeepSeek-R1 Interactive on GB200 NVL72: 2 context engines of DEP4 beside 4
    generation engines of DEP16."""

    instances: int = 1
    tp: int = 1
    ep: int = 1
    adp: int = 0
    max_num_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("instances", "tp", "ep"):
            check_whole(f"prefill {name}", getattr(self, name), low=1, high=MAX_POOL_CHIPS,
                        error=WorkloadError)  # fmt: skip
        if self.adp not in (0, 1):
            raise WorkloadError(f"prefill adp must be 0|1, got {self.adp}")
        if self.max_num_tokens < 0:
            raise WorkloadError("prefill max_num_tokens must be >= 0 (0 = the engine default)")
        if self.tp % self.ep:
            raise WorkloadError(
                f"prefill pool: ep={self.ep} must divide tp={self.tp} (each engine splits its "
                "experts over its own tp chips)"
            )

    @property
    def chips(self) -> int:
        """Chips the pool holds: its instances of ``tp`` chips each."""
        return self.instances * self.tp

    def __str__(self) -> str:
        text = f"instances={self.instances},tp={self.tp},ep={self.ep},adp={self.adp}"
        return text + (f",max_num_tokens={self.max_num_tokens}" if self.max_num_tokens else "")


# Keys a prefill-pool string names (``parse_prefill_pool``).
PREFILL_POOL_KEYS = ("instances", "tp", "ep", "adp", "max_num_tokens")
# The most instances or chips a pool states: a bound on typos, not on deployments.
MAX_POOL_CHIPS = 1 << 16


def parse_prefill_pool(text: str) -> PrefillPool:
    """A prefill pool from ``key=value`` pairs ("instances=2,tp=4,ep=4,adp=1,
    max_num_tokens=12288"); ``ep`` defaults to ``tp`` (experts over the engine's chips)."""
    values: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in PREFILL_POOL_KEYS:
            raise WorkloadError(
                f"prefill pool {text!r}: {part!r} is not one of {', '.join(PREFILL_POOL_KEYS)}"
                " as key=value"
            )
        try:
            values[key] = int(value)
        except ValueError as err:
            raise WorkloadError(f"prefill pool {text!r}: {key} must be a whole number") from err
    if "tp" in values and "ep" not in values:
        values["ep"] = values["tp"]
    return PrefillPool(**values)


@dataclass(frozen=True, slots=True, kw_only=True)
class Inference:
    """Serving: ``input_len`` prompt tokens and ``output_len`` generated per request, under a
    load stated as publications state it (``load``):

    * ``batch``: a static batch of ``batch`` requests, prefilled together then decoded
      (``vllm benchmark_latency``);
    * ``concurrency``: a closed loop of ``concurrency`` clients, each sending its next request
      when the last one finishes (``benchmark_serving --max-concurrency``);
    * ``rps``: an open loop, Poisson arrivals at ``rps`` requests per second;
    * ``max_throughput``: every request queued at once, the engine at its limits (MLPerf
      Offline, ``trtllm-bench throughput``);
    * ``server``: Poisson arrivals at the highest rate whose p99 TTFT/TPOT meet
      ``ttft_p99_s``/``tpot_p99_s`` (MLPerf Server).

    Lengths are means; ``input_len_std``/``output_len_std`` (> 0) make them log-normal, or
    ``lengths`` gives a histogram of (input_len, output_len, count) rows. Engine knobs:
    ``max_num_seqs`` and ``max_num_tokens`` per step (0 = the engine default), ``kv_dtype``
    ("" = from the precision), ``prefix_hit_rate`` (share of prompt tokens served from the
    prefix cache), ``disaggregated`` (separate prefill and decode pools), ``engine`` (the
    serving engine, for how it sizes its KV cache: ``vllm`` and ``sglang`` take a share of
    the GPU's total memory, ``trtllm`` a share of what is free after the weights load, and
    for its default batch limits; ``jetstream`` runs fixed decode slots, ``max_num_seqs``,
    and prefills each prompt alone at a padded length; ``atom``, AMD's ATOM, on AMD GPUs
    only), ``engine_date`` (YYYY-MM[-DD]: the engine release of that date, whose defaults
    apply; "" = the newest).
    """

    batch: int = 1
    input_len: int = 1024
    output_len: int = 256
    load: str = "batch"
    concurrency: int = 0
    rps: float = 0.0
    input_len_std: float = 0.0
    output_len_std: float = 0.0
    lengths: tuple[tuple[int, int, float], ...] = ()
    max_num_seqs: int = 0
    max_num_tokens: int = 0
    kv_dtype: str = ""
    prefix_hit_rate: float = 0.0
    disaggregated: bool = False
    # disaggregated: the prefill pool's own layout (None = replicas of the serving plan,
    # the split between the pools searched); the serving plan is then the decode pool
    prefill_pool: PrefillPool | None = None
    # p99 latency targets (seconds; 0 = none) of a ``server`` load: Poisson arrivals at the
    # highest rate whose p99 TTFT and TPOT meet them (MLPerf Inference's Server scenario)
    ttft_p99_s: float = 0.0
    tpot_p99_s: float = 0.0
    engine: str = "vllm"
    engine_date: str = ""
    # JetStream: the cache positions each decode slot reserves, which its dense decode
    # attention reads every step for every slot (jetstream-pytorch --max_cache_length
    # without --ragged_mha; MaxText max_target_length); 0 = attention over each sequence's
    # own context (ragged or paged)
    slot_cache_len: int = 0
    # whether the engine runs its host work (scheduling, input preparation, output
    # processing) for the next step while the device runs this one: vLLM's
    # ``--async-scheduling`` / ``--no-async-scheduling``; None = the engine's default at
    # ``engine_date`` (perf/step/serve.py ``engine_overlaps_host``)
    async_scheduling: bool | None = None
    # requests in a max_throughput or concurrency run (benchmarks state it: trtllm-bench's
    # --num_requests, MLPerf Offline's sample count, vllm bench serve's --num-prompts); 0 =
    # an endless backlog (the engine's steady state)
    num_requests: int = 0
    # the benchmark tool that configured the engine, when it picks limits of its own:
    # "trtllm-bench" sizes TensorRT-LLM's batch and token limits from memory and the
    # dataset's lengths (perf/step/trtllm_bench.py); "amd-mlperf-batcher" holds arrivals
    # for up to 0.3 s and hands each bunch to one engine (AMD's MLPerf Server harness;
    # perf/step/engine.py HARNESS_ARRIVAL_WINDOWS); "amd-mlperf-v5.1-interactive",
    # "amd-mlperf-v5.1-server", "amd-mlperf-v6.0-interactive" and
    # "amd-mlperf-v6.0-server" (and "amd-mlperf-v6.0-gpt-oss-offline" / "-server"): AMD's
    # later MLPerf runs, whose vLLM admits new prompts
    # only every few steps (HARNESS_ADMISSION_GATES);
    # "nvidia-mlperf-adp-T-W": NVIDIA's DeepSeek-R1 Offline and Server runs, whose
    # TensorRT-LLM attention-DP balance (timeout T, batching wait W iterations) admits
    # prompts every few steps (the same gates); "nvidia-mlperf-gemm-ar": NVIDIA's
    # llama3.1-405b runs, whose TensorRT-LLM joins each row-parallel GEMM (attention's
    # output projection, the MLP's down projection) and its tensor-parallel all-reduce in one
    # kernel (perf/step/serve.py GEMM_ALL_REDUCE_HARNESSES); "trtllm-bench-adp-60-0": trtllm-bench's
    # limits with that balance at timeout 60, wait 0 (TensorRT-LLM's perf overview runs
    # DeepSeek-R1 so); "api-sglang-recv-N" / "api-sglang-decode-steps-N": an API client
    # (below) timing SGLang run with --scheduler-recv-interval N or
    # --num-continuous-decode-steps N: the first's scheduler takes new requests only every N
    # decode steps (the same gates), the second's flag is read by no loop SGLang runs (no
    # gate: engine.HARNESS_ADMISSION_GATES); "api-trtllm-adp-50-10": an API client timing
    # trtllm-serve under its attention-DP balance at the default iterations (the same
    # gates); "api":
    # a client that times each request through the engine's OpenAI-compatible HTTP server,
    # streaming (``vllm bench serve``,
    # AIPerf, genai-perf), so its TTFT also holds the server's own latency
    # (``serve.API_REQUEST_S``); "" = in-process (MLPerf LoadGen, offline benchmarks), the
    # engine's own defaults
    harness: str = ""
    # the engine's MoE kernels when the run chose other than its default: "trtllm-gen" =
    # TRT-LLM-Gen's fused MoE (TensorRT-LLM ``moe_config: backend: TRTLLM``; vLLM's FlashInfer
    # MXFP4 x MXFP8 backend, ``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1``), which runs an MXFP4
    # checkpoint's experts (gpt-oss) on Blackwell at its own measured rates; "marlin" =
    # the engine's Marlin-MoE kernel for 4-bit experts with bf16 math (vLLM
    # ``VLLM_MXFP4_USE_MARLIN=1`` on Hopper, in place of triton_kernels' matmul_ogs); "" =
    # the engine's default (TensorRT-LLM's CUTLASS MoE, vLLM's and SGLang's own)
    moe_backend: str = ""
    # The share of memory the engine was launched with, in its own rule (perf/step/engine.py
    # ``kv_pool_bytes``): vLLM's --gpu-memory-utilization and SGLang's --mem-fraction-static
    # (a share of the GPU's total memory), TensorRT-LLM's free_gpu_memory_fraction (a share
    # of what the weights and activations leave free); 0 = the engine's default
    memory_fraction: float = 0.0
    # Speculative decoding (0 = off): each decode step drafts ``spec_tokens`` (k) tokens per
    # sequence with ``spec_method``'s drafter ("mtp": DeepSeek-V3's multi-token-prediction
    # module; "eagle": an EAGLE-3 head; chains, one candidate per position) and the target
    # model verifies 1 + k tokens per sequence in one forward; ``spec_accept`` is the mean
    # acceptance length, tokens emitted per sequence per step (1 <= a <= 1 + k, the bonus
    # token included), as publications state it ("acceptance length", "AL"). An input,
    # measured on the run's data: the model does not predict acceptance.
    spec_tokens: int = 0
    spec_method: str = "mtp"
    spec_accept: float = 1.0

    def __post_init__(self) -> None:
        if self.harness not in HARNESSES:
            raise WorkloadError(f"harness {self.harness!r}: choose one of {HARNESSES}")
        if self.moe_backend not in MOE_BACKENDS:
            raise WorkloadError(
                f"moe backend {self.moe_backend!r}: choose one of {', '.join(MOE_BACKENDS[1:])} "
                "(or leave it unset for the engine's default)"
            )
        if not 0 <= self.memory_fraction <= 1:
            raise WorkloadError(
                f"memory_fraction must be in (0, 1] (0 = the engine's default), "
                f"got {self.memory_fraction}"
            )
        if self.memory_fraction and self.engine == "jetstream":
            raise WorkloadError(
                "the jetstream engine has no memory-fraction knob (its caches take all free "
                "HBM): drop --memory-fraction"
            )
        if self.batch <= 0 or self.input_len <= 0 or self.output_len < 0:
            raise WorkloadError("batch, input_len must be positive and output_len >= 0")
        check_whole("batch", self.batch, low=1, high=MAX_SERVE_BATCH, error=WorkloadError)
        check_whole("input_len", self.input_len, low=1, high=MAX_SEQ_LEN, error=WorkloadError)
        check_whole("output_len", self.output_len, low=0, high=MAX_SEQ_LEN, error=WorkloadError)
        if self.load not in LOADS:
            raise WorkloadError(f"load {self.load!r}: choose one of {', '.join(LOADS)}")
        if self.engine not in ENGINES:
            raise WorkloadError(f"engine {self.engine!r}: choose one of {', '.join(ENGINES)}")
        if self.engine == "jetstream" and (
            self.harness or self.spec_tokens or self.disaggregated or self.max_num_tokens
        ):
            raise WorkloadError(
                "the jetstream engine is modelled in-process (no --harness), without "
                "speculative decoding or disaggregation, and has no per-step token budget "
                "(drop --max-num-tokens: its slots, --max-num-seqs, bound admission)"
            )
        check_whole("slot_cache_len", self.slot_cache_len, low=0, high=MAX_SEQ_LEN,
                    error=WorkloadError)  # fmt: skip
        if self.slot_cache_len and self.engine != "jetstream":
            raise WorkloadError(
                f"slot_cache_len is JetStream's per-slot cache (--engine jetstream), not "
                f"{self.engine!r}'s: drop --slot-cache-len"
            )
        if self.load == "concurrency" and self.concurrency < 1:
            raise WorkloadError("a concurrency load needs concurrency >= 1 (--concurrency N)")
        if api_harness(self.harness) and self.load not in (
            "concurrency",
            "rps",
            "max_throughput",
        ):
            raise WorkloadError(
                f"an API client (harness 'api') times an engine's server loads (concurrency, "
                f"rps, max_throughput), not a {self.load!r} load"
            )
        if self.load == "server" and not (self.ttft_p99_s > 0 or self.tpot_p99_s > 0):
            raise WorkloadError("a server load needs a p99 target (--ttft MS and/or --tpot MS)")
        if self.ttft_p99_s < 0 or self.tpot_p99_s < 0:
            raise WorkloadError("p99 latency targets must be >= 0 (0 = none)")
        if self.load == "rps" and not self.rps > 0:
            raise WorkloadError(f"an rps load needs rps > 0 (--rps R), got {self.rps}")
        if self.input_len_std < 0 or self.output_len_std < 0:
            raise WorkloadError("length standard deviations must be >= 0")
        if not 0 <= self.prefix_hit_rate < 1:
            raise WorkloadError(f"prefix_hit_rate must be in [0, 1), got {self.prefix_hit_rate}")
        if self.num_requests < 0:
            raise WorkloadError(f"num_requests must be >= 0 (0 = endless), got {self.num_requests}")
        if self.engine_date and not _is_date(self.engine_date):
            raise WorkloadError(f"engine_date {self.engine_date!r}: write YYYY-MM or YYYY-MM-DD")
        if self.max_num_seqs < 0 or self.max_num_tokens < 0:
            raise WorkloadError("max_num_seqs and max_num_tokens must be >= 0 (0 = default)")
        check_whole("spec_tokens", self.spec_tokens, low=0, high=MAX_SPEC_TOKENS,
                    error=WorkloadError)  # fmt: skip
        if self.spec_method not in SPEC_METHODS:
            raise WorkloadError(
                f"spec_method {self.spec_method!r}: choose one of {', '.join(SPEC_METHODS)}"
            )
        if self.spec_tokens and self.load == "batch":
            raise WorkloadError(
                "speculative decoding is modelled for the engine's loads (--concurrency, --rps, "
                "--max-throughput, --server), not a static --batch; use --concurrency N"
            )
        if not 1.0 <= self.spec_accept <= 1 + self.spec_tokens:
            raise WorkloadError(
                f"spec_accept {self.spec_accept} must be in [1, 1 + spec_tokens = "
                f"{1 + self.spec_tokens}]: a step emits the verified token plus at most "
                "every draft token"
            )
        if self.prefill_pool is not None and not self.disaggregated:
            raise WorkloadError(
                "a prefill pool is a disaggregated deployment's: set disaggregated (or "
                "drop the prefill pool)"
            )
        for row in self.lengths:
            if row[0] < 1 or row[1] < 1 or row[2] <= 0:
                raise WorkloadError(
                    f"length histogram row {row}: lengths must be >= 1 and counts > 0"
                )


# An engine release date (``Inference.engine_date``).
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")


def _is_date(text: str) -> bool:
    """Whether ``text`` is a real calendar date written YYYY-MM or YYYY-MM-DD."""
    if not _DATE.fullmatch(text):
        return False
    try:
        date.fromisoformat(text if len(text) == 10 else f"{text}-01")
    except ValueError:
        return False
    return True


# How a serving load is stated (see ``Inference``).
LOADS = ("batch", "concurrency", "rps", "max_throughput", "server")
# Serving engines whose KV-cache sizing rule the engine model knows (``perf/step/engine.py``).
# "jetstream": google/JetStream's fixed decode slots with bucketed one-prompt prefills
# (perf/step/jetstream.py), as served on TPUs with MaxText or jetstream-pytorch models.
# "atom": AMD's ATOM (ROCm/ATOM, a nano-vLLM-shaped engine on aiter kernels, AMD Instinct
# GPUs only): whole prompts in prefill-only steps, vLLM's memory rule (perf/step/engine.py).
ENGINES = ("vllm", "sglang", "trtllm", "jetstream", "atom")
# Engines that run on one GPU vendor only (the engine model refuses other chips).
ENGINE_VENDORS = {"atom": "amd"}
# ``Inference.moe_backend``: "" = the engine's default MoE kernels
MOE_BACKENDS = ("", "trtllm-gen", "marlin")
# How publications and configs spell them, lower-cased with punctuation and a release
# ("v0.10.2", "1.0") dropped: the product, its ROCm build, its server or benchmark command.
_ENGINE_SPELLINGS = {
    "vllm": "vllm", "vllmrocm": "vllm", "rocmvllm": "vllm", "vllmserve": "vllm",
    "sglang": "sglang", "sglangrocm": "sglang",
    "trtllm": "trtllm", "tensorrtllm": "trtllm", "trtllmserve": "trtllm",
    "tensorrtllmserve": "trtllm",
    "jetstream": "jetstream", "jetstreampytorch": "jetstream", "maxtextjetstream": "jetstream",
    "jetstreammaxtext": "jetstream",
    "atom": "atom", "rocmatom": "atom", "amdatom": "atom",
}  # fmt: skip
_RELEASE = re.compile(r"(?<![a-z])v?\d+(?:\.\d+)*(?:\.?(?:rc|post|dev)\d*)?(?![a-z])")


def engine_id(name: str) -> str:
    """The ``ENGINES`` id a written engine name means ('TensorRT-LLM', 'vLLM v0.10.2',
    'SGLang', 'jetstream-pytorch' ...); a name it does not know comes back lower-cased and
    stripped, for ``Inference`` to refuse with the list of engines."""
    text = name.strip().lower()
    key = re.sub(r"[^a-z0-9]", "", _RELEASE.sub("", text))
    return _ENGINE_SPELLINGS.get(key, text)


# Speculative-decoding drafters the step model costs (``Inference.spec_method``;
# perf/step/serve.py ``EngineStepTimer.draft_s``).
SPEC_METHODS = ("mtp", "eagle")
# Draft tokens per step accepted: published runs use 1-7 (TensorRT-LLM MTP nextn 1-3,
# EAGLE-3 chains of 3-7); 16 bounds the verify step's width.
MAX_SPEC_TOKENS = 16
# Benchmark tools whose own engine configuration the serving model knows ("" = none).
HARNESSES = (
    "",
    "trtllm-bench",
    "trtllm-bench-adp-60-0",
    "amd-mlperf-batcher",
    "amd-mlperf-v5.1-interactive",
    "amd-mlperf-v5.1-server",
    "amd-mlperf-v6.0-interactive",
    "amd-mlperf-v6.0-server",
    "amd-mlperf-v6.0-gpt-oss-offline",
    "amd-mlperf-v6.0-gpt-oss-server",
    "nvidia-mlperf-adp-9-3",
    "nvidia-mlperf-adp-6-2",
    "nvidia-mlperf-adp-50-10",
    "nvidia-mlperf-adp-500-10",
    "nvidia-mlperf-gemm-ar",
    "api",
    "api-sglang-recv-10",
    "api-sglang-recv-30",
    "api-sglang-decode-steps-4",
    "api-trtllm-adp-50-10",
)
# API clients (``Inference.harness``): "api" and "api-<gate>", an HTTP client timing an engine
# whose scheduler admits new requests only every few steps (``HARNESS_ADMISSION_GATES``)


def api_harness(harness: str) -> bool:
    """Whether ``harness`` times its requests through the engine's HTTP server."""
    return harness == "api" or harness.startswith("api-")


# The harnesses that are a ``trtllm-bench throughput`` run (its own batch and token limits,
# perf/step/trtllm_bench.py), with or without an admission gate.
TRTLLM_BENCH_HARNESSES = frozenset({"trtllm-bench", "trtllm-bench-adp-60-0"})


Phase = Training | Inference


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """A model plus what is done with it."""

    model: Model
    phase: Phase = field(default_factory=Training)

    @property
    def name(self) -> str:
        return self.model.name
