"""Bytes per chip: weights, gradients, optimizer states, activations, KV cache, reserve.

ZeRO levels (Rajbhandari et al. 2020, "ZeRO", §5) as chipwise's plan axes model them:

* ``dp``   ZeRO-1: weights and gradients replicated, optimizer states sharded over the
           data-parallel ranks (Megatron-LM's ``--use-distributed-optimizer``, the default
           in NeMo and in Megatron's published benchmark scripts). Same traffic as
           plain data parallelism (reduce-scatter grads + all-gather weights).
* ``fsdp`` ZeRO-3: weights, gradients and optimizer states all sharded (PyTorch FSDP,
           MaxText's ``fsdp`` axis); weights are gathered layer by layer.
* ``cp``   context-parallel ranks hold the same weights, so they join the sharding groups:
           ZeRO-3 over ``fsdp x cp`` (torchtitan's FSDP mesh), ZeRO-1 over ``dp x cp``
           (Megatron's distributed optimizer spans dp x cp).
* ZeRO-0 (plain DDP) and ZeRO-2 are not separate plan choices.

Mixed-precision Adam keeps 16 bytes per parameter (ZeRO §3.1): 2 (bf16 weights) + 2 (bf16
grads) + 12 (fp32 master copy, m, v). fp32 training: 4 + 4 + 8.

Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation", §4):
the tensors each layer saves for its backward, per token, divided by ``tp`` under sequence
parallelism and by ``cp``. chipwise derives them from the architecture (GQA, gated MLPs,
MoE) instead of the paper's GPT-only 34*s*b*h; with flash attention the 5*a*s^2*b softmax
term is gone and dropout masks are not kept (modern LLMs train without dropout).
Recompute: ``selective`` drops what is cheap to recompute (norm outputs, the activation
function's output, the attention output); ``norm_act`` (Megatron ``recompute_modules``
layernorm and moe_act) the norm and activation outputs only; ``full`` keeps only each
layer's input.

LoRA / QLoRA (``method``): the base weights are frozen, so they have no gradients and no
optimizer states; the adapters (``lora_params``) keep fp32 weights, grads and Adam m, v
(16 bytes each; QLoRA's bf16 adapters 12, ``ops.adapters``). Activations are still stored:
the backward runs through every frozen layer to reach the adapters below it (Hu et al. 2021
§4.2 count the saving in weights and optimizer states only). QLoRA stores the base matmul
weights in NF4 at ``QLORA_WEIGHT_BYTES`` (0.516 B) each; embedding and LM head stay bf16
(bitsandbytes does not quantise them), as in the QLoRA paper's accounting (Dettmers et al.
2023 §3).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from chipwise.hardware.chip import Chip
from chipwise.limits import CACHE_ENTRIES
from chipwise.perf.base import MemoryUse, Plan, expert_tp
from chipwise.perf.ops.adapters import QLORA_WEIGHT_BYTES, adapter_params_bytes
from chipwise.perf.ops.layers import (
    Dtypes,
    activation_bytes,
    attention_params,
    embedding_params,
    excluded_params,
    expert_dtypes,
    head_dtypes,
    heads_per_rank,
    kv_bytes_per_token_per_layer,
    kv_cached_tokens,
    mlp_params,
    recurrent_state_bytes,
    weight_bytes,
)
from chipwise.perf.plan.parallel import layers_per_stage
from chipwise.units import GB, dtype_bytes
from chipwise.workload.ir import TransformerSpec

# ZeRO §3.1: mixed-precision Adam.
WEIGHT_BYTES = {"fp32": 4.0, "default": 2.0}  # the compute copy (bf16; fp8 casts per step)
GRAD_BYTES = {"fp32": 4.0, "default": 2.0}
OPTIMIZER_BYTES = {"fp32": 8.0, "default": 12.0}  # (master) + Adam m + v
# Plan.states == "bf16" (MaxText weight_dtype bfloat16): bf16 weights, gradients, m and v,
# no master copy.
BF16_STATE_BYTES = {"weights": 2.0, "grads": 2.0, "optimizer": 4.0}
# Framework reserve. GPU: CUDA context, cuBLAS/NCCL workspaces (~1.5 GB measured by
# `torch.cuda.mem_get_info` before/after init on H100, PyTorch forum reports 0.5-2 GB) plus
# caching-allocator fragmentation (~5 % of capacity, PyTorch memory docs' "reserved but
# unallocated"). TPU: XLA allocates statically (no fragmentation); runtime ~0.5 GB.
RESERVE_FIXED_BYTES = {"gpu": 1.5 * GB, "tpu": 0.5 * GB, "asic": 1.5 * GB}
RESERVE_FRACTION = {"gpu": 0.05, "tpu": 0.02, "asic": 0.05}
# Logits stay alive for the loss: bf16 logits plus their bf16 gradient (the fp32 upcast is
# fused into the loss in Megatron's fused cross-entropy, MaxText and torch.compile).
LOGITS_BYTES_PER_ELEMENT = 4.0
# LoRA/QLoRA fine-tunes run in Hugging Face Transformers (PEFT, TRL, LLaMA-Factory, Axolotl),
# whose causal-LM loss is not fused: LlamaForCausalLM.forward (transformers 4.40-4.45,
# models/llama/modeling_llama.py) returns `logits.float()` (fp32, kept alive in the output),
# makes a contiguous fp32 copy of the shifted logits for CrossEntropyLoss, whose log-softmax
# output (fp32) is saved for backward: 12 bytes per logit at the end of the forward, and the
# backward's fp32 logit gradient adds 4 more while they live. (Unsloth's chunked cross-entropy
# removes exactly this term, which is why its maximum contexts are several times longer.)
LOGITS_BYTES_PER_ELEMENT_HF = 16.0
# Serving engines prefill in chunks, so the prefill's transient activations are bounded by
# one chunk (vLLM's default max_num_batched_tokens with chunked prefill: 8192; TRT-LLM's
# max_num_tokens default: 8192).
PREFILL_CHUNK_TOKENS = 8192


# Host offload of activation checkpoints. MaxText's remat policies can move the saved layer
# inputs to host memory ("decoder_layer_input: offload" under remat_policy 'custom', with
# XLA's host-offload flags), and the TPU recipes for MoE and large dense models use it
# (github:AI-Hypercomputer/tpu-recipes training/trillium/Mixtral-8x7B-MaxText and
# Mixtral-8x22B-MaxText READMEs, 2025; maxtext benchmarks/maxtext_v5p_model_configs.py).
# Under full recompute the HBM then keeps two layers' inputs: the one being recomputed and
# the next one coming back. The copies (D x 2 bytes per token and layer each way) overlap
# the layer's compute. GPUs: Megatron's activation offloading is not a default; not assumed.
OFFLOAD_KINDS = frozenset({"tpu"})
OFFLOAD_LAYERS_IN_HBM = 2

# ZeRO-3 on XLA (MaxText's ``fsdp`` axis, on the same chips as OFFLOAD_KINDS) gathers each
# weight tensor just before the matmul that uses it (jax-ml/scaling-book, training.md,
# "FSDP": the weights are AllGathered "just-in-time" before each matmul; GSPMD, Xu et al.
# 2021, arXiv 2105.04663 §3: the partitioner inserts the collective per operator), with the
# latency-hiding scheduler prefetching the next one: the transient is two tensors, not the
# whole layer (and the next layer) that PyTorch FSDP's per-block units gather. Whole-layer
# granularity is also ruled out by a published run: Llama 3.1 405B on 512 v6e (32 GB each,
# tpu-recipes, fsdp 512) holds 12.7 GB of fp32 states, and two gathered 405B layers are
# another 12.9 GB, with their full-size gradients 6.4 GB more, before any activation.


def offloads(chip: Chip) -> bool:
    """Whether training on ``chip`` offloads full-recompute checkpoints to host memory."""
    return chip.kind in OFFLOAD_KINDS


# Precisions whose GEMM inputs are saved for the backward in that (1-byte) format, on GPUs
# (Transformer Engine). MaxText's fp8 (qwix/AQT) quantises inside the dot and saves bf16
# residuals: not assumed on TPUs.
FP8_SAVED_INPUTS = frozenset({"fp8"})


@dataclass(frozen=True, slots=True, kw_only=True)
class StageParams:
    """Parameters one chip holds on its busiest pipeline stage (before fsdp sharding)."""

    dense: float  # sharded by tp
    experts: float  # sharded by etp and ep
    total: float  # dense + experts, after tp/etp/ep sharding
    dense_per_chip: float = 0.0  # dense / tp
    experts_per_chip: float = 0.0  # experts / (etp x ep)
    ends_per_chip: float = 0.0  # the embedding and LM head in ``dense_per_chip``


@lru_cache(maxsize=CACHE_ENTRIES)
def moe_layer_count(spec: TransformerSpec) -> int:
    """``spec.n_moe_layers``, computed once per spec (the planner asks thousands of times)."""
    return spec.n_moe_layers


@lru_cache(maxsize=CACHE_ENTRIES)
def sliding_layer_count(spec: TransformerSpec) -> int:
    """``spec.n_local_layers`` (sliding-window or linear-attention), computed once per spec."""
    return spec.n_local_layers


def stage_layer_kinds(
    spec: TransformerSpec, layers: int, pp: int
) -> tuple[tuple[bool, bool, int], ...]:
    """(moe, sliding, count) of the ``layers`` decoder layers on the busiest pipeline stage.

    MoE layers spread evenly over the ``pp`` stages (rounded up on the busiest); global
    attention layers are the costlier kind, so the busiest stage gets its share of them
    rounded up too, and the rest of its layers are sliding-window layers.
    """
    n_moe = min(-(-moe_layer_count(spec) // pp), layers) if spec.is_moe else 0
    n_sliding = sliding_layer_count(spec)
    out: list[tuple[bool, bool, int]] = []
    for moe, count in ((False, layers - n_moe), (True, n_moe)):
        if not count:
            continue
        n_global = count
        if n_sliding:
            n_global = min(count, -(-count * (spec.n_layers - n_sliding) // spec.n_layers))
        for sliding, c in ((False, n_global), (True, count - n_global)):
            if c:
                out.append((moe, sliding, c))
    return tuple(out)


def stage_params(spec: TransformerSpec, plan: Plan) -> StageParams:
    """Parameters of the heaviest stage of ``plan`` on one chip (tp/ep/pp applied, not fsdp)."""
    return _stage_params(spec, plan.pp, plan.vp, plan.tp, plan.ep, plan.expert_tp, plan.end_slots)


@lru_cache(maxsize=CACHE_ENTRIES)
def _stage_params(
    spec: TransformerSpec, pp: int, vp: int, tp: int, ep: int, etp: int = 0, end_slots: int = -1
) -> StageParams:
    etp = etp or tp
    # the busiest stage's layers after the plan's pipeline split (``end_slots``: the
    # embedding and the loss each taking a layer's slot); its heavier end is still added
    # below, an upper bound when that end's stage holds a layer fewer
    per_stage = layers_per_stage(spec.n_layers, pp, vp, end_slots)
    moe_layers = moe_layer_count(spec)
    # MoE layers spread evenly over stages (first dense layers on stage 0 are ignored).
    moe_per_stage = -(-moe_layers // pp)
    dense_layers = per_stage - min(per_stage, moe_per_stage)
    attn = attention_params(spec)
    dense_mlp, _ = mlp_params(spec, moe=False)
    shared, routed = mlp_params(spec, moe=True) if spec.is_moe else (0.0, 0.0)
    emb, head = embedding_params(spec)
    # pp=1 holds both ends; otherwise the heavier end (first: embedding, last: head).
    ends = emb + head if pp == 1 else max(emb, head)
    dense = per_stage * attn + dense_layers * dense_mlp + moe_per_stage * shared + ends
    experts = moe_per_stage * routed
    return StageParams(
        dense=dense,
        experts=experts,
        total=dense / tp + experts / (etp * ep),
        dense_per_chip=dense / tp,
        experts_per_chip=experts / (etp * ep),
        ends_per_chip=ends / tp,
    )


def sharded_params(
    spec: TransformerSpec,
    *,
    pp: int,
    vp: int,
    tp: int,
    ep: int,
    weight_shards: int,
    optimizer_shards: int,
    etp: int = 0,
    end_slots: int = -1,
) -> tuple[float, float]:
    """(weight and gradient params, optimizer-state params) one chip holds.

    Dense params shard over tp, then over the ZeRO-3 group (``weight_shards``). Routed
    experts shard over tp and ep; ep is carved out of the same data-parallel ranks as fsdp
    (innermost first), so the two overlap and experts shard ``max(ep, weight_shards)`` ways,
    not ``ep x weight_shards``. Optimizer states of both shard over every data-parallel
    rank (``optimizer_shards``), since each expert's replicas are data-parallel ranks too.
    """
    sp = _stage_params(spec, pp, vp, tp, ep, etp, end_slots)
    dense, experts = sp.dense / tp, sp.experts / (etp or tp)
    weights = dense / weight_shards + experts / max(ep, weight_shards)
    return weights, (dense + experts) / optimizer_shards


def activation_bytes_per_token_layer(
    spec: TransformerSpec, plan: Plan, precision: str, *, moe: bool
) -> float:
    """Bytes one layer saves per token for its backward, on one chip (tp, cp applied)."""
    return _activation_bytes(spec, plan.tp, plan.recompute, precision, moe)


@lru_cache(maxsize=CACHE_ENTRIES)
def _activation_bytes(
    spec: TransformerSpec, tp: int, recompute: str, precision: str, moe: bool,
    fp8_inputs: bool = False,
) -> float:  # fmt: skip
    a = 2.0 if precision not in ("fp32",) else 4.0
    d = spec.d_model
    h, hkv = heads_per_rank(spec, 1)
    if spec.uses_mla:
        qkv = h * (spec.qk_nope_head_dim + spec.qk_rope_head_dim) * 2 + h * (
            spec.v_head_dim or spec.head_dim
        )
        attn_out = h * (spec.v_head_dim or spec.head_dim)
        extra = spec.kv_lora_rank + spec.q_lora_rank
    else:
        qkv = (h + 2 * hkv) * spec.head_dim
        attn_out = h * spec.head_dim
        extra = 0
    mats = 3 if spec.gated_mlp else 2
    if moe:
        width = spec.moe_d_ff or spec.d_ff
        k = spec.experts_per_token
        up = (mats - 1) * width * (k + spec.n_shared_experts)
        act_out = width * (k + spec.n_shared_experts)
        permuted = d * k  # the routed copies of each token
    else:
        up = (mats - 1) * spec.d_ff
        act_out = spec.d_ff
        permuted = 0
    # Inputs of fp8 GEMMs are saved for the weight gradient in fp8: Transformer Engine
    # keeps the quantised copy (with its transpose), not the bf16 one (TE "FP8 primer";
    # DeepSeek-V3 report §3.3 caches the MoE up-projection inputs in fp8 the same way).
    g = dtype_bytes(precision) if fp8_inputs and precision in FP8_SAVED_INPUTS else a
    # layer input and post-attention residual (the norms' inputs), Q/K/V, MLP up outputs;
    # the routed copies and MLA latents are GEMM inputs
    keep_bytes = (2 * d + qkv + up) * a + (permuted + extra) * g
    # norm outputs, attention output, activation-function output: cheap to recompute, and
    # each the input of the next GEMM
    cheap_bytes = (2 * d + attn_out + act_out) * g
    if recompute == "full":
        return d / tp * a  # only the layer input (sequence-parallel shard)
    if recompute == "selective":
        return keep_bytes / tp
    if recompute == "norm_act":  # drops the norm and activation outputs, keeps attention's
        return (keep_bytes + attn_out * g) / tp
    return (keep_bytes + cheap_bytes) / tp


def in_flight_microbatches(plan: Plan, microbatches: int) -> float:
    """Micro-batches whose activations the busiest (first) stage holds at once.

    1F1B keeps ``pp`` in flight (Narayanan et al. 2021 §2.2); interleaving adds
    ``(pp - 1) / vp`` (Korthikanti §4.2.3, the (1 + (p-1)/(p*v)) factor)."""
    return _in_flight(plan.pp, plan.vp, microbatches)


def _in_flight(pp: int, vp: int, microbatches: int) -> float:
    if pp == 1:
        return 1.0
    base = float(min(pp, microbatches))
    if vp > 1:
        base *= 1 + (pp - 1) / (pp * vp)
    return base


def reserve_bytes(chip: Chip) -> float:
    return fixed_reserve_bytes(chip) + slack_bytes(chip)


def fixed_reserve_bytes(chip: Chip) -> float:
    """The fixed part of the reserve (``RESERVE_FIXED_BYTES``): context and runtime memory
    outside the framework's allocator (``MemoryUse.unallocated_bytes``)."""
    kind = chip.kind if chip.kind in RESERVE_FIXED_BYTES else "gpu"
    return RESERVE_FIXED_BYTES[kind]


def slack_bytes(chip: Chip) -> float:
    """The fragmentation part of the reserve (``RESERVE_FRACTION`` of capacity): kept free
    by the planner when it can, but a margin, not a requirement (``MemoryUse.slack_bytes``)."""
    kind = chip.kind if chip.kind in RESERVE_FRACTION else "gpu"
    return RESERVE_FRACTION[kind] * chip.hbm_capacity_bytes


def train_memory(
    spec: TransformerSpec,
    plan: Plan,
    *,
    seq_len: int,
    microbatches: int,
    precision: str,
    chip: Chip,
    method: str = "full",
    lora_params: float = 0.0,
) -> MemoryUse:
    """Per-chip bytes for training ``spec`` under ``plan`` (the busiest pipeline stage)."""
    w, g, o, a, other = train_memory_parts(
        spec, plan.dp, plan.fsdp, plan.tp, plan.pp, plan.cp, plan.ep, plan.vp,
        plan.microbatch, plan.recompute, seq_len, microbatches, precision,
        method=method, lora_params=lora_params, etp=plan.etp, maxtext=offloads(chip),
        states=plan.states, end_slots=plan.end_slots,
    )  # fmt: skip
    return MemoryUse(
        weights_bytes=w,
        grads_bytes=g,
        optimizer_bytes=o,
        activations_bytes=a,
        other_bytes=other + reserve_bytes(chip),
        slack_bytes=slack_bytes(chip),
        unallocated_bytes=fixed_reserve_bytes(chip),
    )


def train_memory_parts(
    spec: TransformerSpec,
    dp: int,
    fsdp: int,
    tp: int,
    pp: int,
    cp: int,
    ep: int,
    vp: int,
    microbatch: int,
    recompute: str,
    seq_len: int,
    microbatches: int,
    precision: str,
    *,
    method: str = "full",
    lora_params: float = 0.0,
    etp: int = 0,
    maxtext: bool = False,
    states: str = "fp32",
    end_slots: int = -1,
) -> tuple[float, float, float, float, float]:
    """(weights, grads, optimizer, activations, other) bytes without the framework reserve;
    plain arguments so the planner can call it for thousands of layouts cheaply.
    ``method`` full | lora | qlora; ``lora_params`` the model's adapter parameters;
    ``maxtext``: a TPU run (MaxText's host offload, bf16 residuals under fp8); ``states``
    the kept weights' and moments' dtype (``Plan.states``); ``end_slots`` the pipeline split
    (``Plan.end_slots``)."""
    key = "fp32" if precision == "fp32" else "default"
    etp = expert_tp(tp, dp * fsdp, ep, etp)
    p = _stage_params(spec, pp, vp, tp, ep, etp, end_slots).total
    shard3 = fsdp * cp if fsdp > 1 else 1  # see parallel.zero_shards
    held, opt_held = sharded_params(
        spec, pp=pp, vp=vp, tp=tp, ep=ep, weight_shards=shard3,
        optimizer_shards=fsdp * dp * cp, etp=etp, end_slots=end_slots,
    )  # fmt: skip
    weights = held * WEIGHT_BYTES[key]
    grads = held * GRAD_BYTES[key]
    optimizer = opt_held * OPTIMIZER_BYTES[key]
    if states == "bf16" and key == "default":
        weights = held * BF16_STATE_BYTES["weights"]
        grads = held * BF16_STATE_BYTES["grads"]
        optimizer = opt_held * BF16_STATE_BYTES["optimizer"]
    if method != "full":
        weights, grads, optimizer = _adapter_state(
            spec, held, pp, tp, shard3, fsdp * dp * cp, method, lora_params, WEIGHT_BYTES[key]
        )
    tokens = microbatch * seq_len / cp  # tokens per micro-batch on this chip
    layers = layers_per_stage(spec.n_layers, pp, vp, end_slots)
    moe_frac = moe_layer_count(spec) / spec.n_layers
    # GPU frameworks save fp8 GEMM inputs in fp8 (FP8_SAVED_INPUTS); MaxText offloads the
    # full-recompute checkpoints to host memory (OFFLOAD_KINDS)
    f8, offload = not maxtext, maxtext
    per_token_layer = (1 - moe_frac) * _activation_bytes(spec, tp, recompute, precision, False,
                                                         f8)  # fmt: skip
    if moe_frac:
        per_token_layer += moe_frac * _activation_bytes(spec, tp, recompute, precision, True, f8)
    kept_layers = layers
    if recompute == "full" and offload:
        # the layer-input checkpoints wait in host memory; HBM holds the layer being
        # recomputed and the next one being fetched back
        kept_layers = min(layers, OFFLOAD_LAYERS_IN_HBM)
    acts = per_token_layer * kept_layers * tokens * _in_flight(pp, vp, microbatches)
    if recompute == "full":
        acts += _activation_bytes(spec, tp, "none", precision, spec.is_moe, f8) * tokens
    per_logit = (
        LOGITS_BYTES_PER_ELEMENT_HF
        if method != "full" and not maxtext
        else (LOGITS_BYTES_PER_ELEMENT)
    )
    logits = tokens * (-(-spec.vocab_size // tp)) * per_logit
    gather = 0.0
    if fsdp > 1 and layers:
        if maxtext:
            # XLA gathers each weight just before its matmul: the largest tensor in use
            # plus the next layer tensor being prefetched (GATHER_PER_TENSOR_KINDS)
            largest, largest_layer = _gathered_tensors(spec, tp, ep, etp)
            gather = (largest + largest_layer) * WEIGHT_BYTES[key]
        else:
            # PyTorch FSDP gathers a layer (and prefetches the next) at full size.
            gather = 2 * p / layers * WEIGHT_BYTES[key]
    return weights, grads, optimizer, acts + logits, gather


@lru_cache(maxsize=CACHE_ENTRIES)
def _gathered_tensors(spec: TransformerSpec, tp: int, ep: int, etp: int) -> tuple[float, float]:
    """(largest weight tensor, largest decoder-layer weight tensor) one chip gathers under
    ZeRO-3 on XLA, in parameters, after tensor and expert sharding. The unembedding (LM
    head, or the tied embedding) is one [d_model, vocab] tensor; routed experts are stacked
    into one [experts, d_model, width] tensor per projection (MaxText's ``MoeBlock``)."""
    d, dh = spec.d_model, spec.head_dim
    layer = [
        d * spec.n_heads * dh / tp,  # query and output projections
        d * spec.n_kv_heads * dh / tp,
        d * spec.d_ff / tp,  # one dense MLP projection
    ]
    if spec.uses_mla:
        layer.append(attention_params(spec) / 4 / tp)  # no single MLA tensor is larger
    if spec.is_moe:
        width = spec.moe_d_ff or spec.d_ff
        layer.append(spec.n_experts * d * width / (etp * max(ep, 1)))
    head = spec.vocab_size * d / tp
    largest_layer = max(layer)
    return max(head, largest_layer), largest_layer


def frozen_bytes_per_param(method: str, precision: str, *, bf16_states: bool = False) -> float:
    """Bytes every matmul parameter costs at least when training by ``method``: 16 (mixed
    precision Adam) for full training, 8 where bf16 states are allowed (``bf16_states``:
    ``Plan.states``, MaxText), the frozen base's storage for LoRA/QLoRA."""
    key = "fp32" if precision == "fp32" else "default"
    if method == "qlora":
        return QLORA_WEIGHT_BYTES
    if method == "lora":
        return WEIGHT_BYTES[key]
    if bf16_states and key == "default":
        return sum(BF16_STATE_BYTES.values())
    return WEIGHT_BYTES[key] + GRAD_BYTES[key] + OPTIMIZER_BYTES[key]


def _adapter_state(
    spec: TransformerSpec,
    held: float,
    pp: int,
    tp: int,
    weight_shards: int,
    optimizer_shards: int,
    method: str,
    lora_params: float,
    base_bytes: float,
) -> tuple[float, float, float]:
    """(weights, grads, optimizer) bytes of a LoRA/QLoRA chip: the frozen base as stored
    plus the adapters' fp32 weights, grads and Adam states (sharded like the base)."""
    if method == "qlora":
        emb, head = embedding_params(spec)
        ends = (emb + head if pp == 1 else max(emb, head)) / tp / weight_shards
        linear = max(0.0, held - ends)
        base = linear * QLORA_WEIGHT_BYTES + (held - linear) * base_bytes
    else:
        base = held * base_bytes
    stage_share = layers_per_stage(spec.n_layers, pp) / spec.n_layers / tp
    aw, ag, ao = adapter_params_bytes(lora_params * stage_share, method)
    return base + aw / weight_shards, ag / weight_shards, ao / optimizer_shards


# vLLM's Marlin MXFP4 MoE path (gpt-oss on GPUs without fp4 tensor cores) allocates its
# expert tensors padded to the kernel's tiles: "The moe marlin kernel requires that for each
# linear n % 256 == 0 and k % 128 == 0", so the per-rank intermediate width rounds up to a
# multiple of 128 and the hidden width to 256 (vllm-project/vllm@007d5005 vllm/
# model_executor/layers/quantization/mxfp4.py, Mxfp4MoEMethod.create_weights). For
# gpt-oss-120b (hidden and intermediate 2880) that is 2944 x 3072 per 2880 x 2880 expert
# matrix, +9 % on its 56.7 GiB of experts: 66.0 GiB loaded with its 4 GiB of bf16
# attention and embeddings, as vLLM 0.10.1 logs on an H100 ("Model loading took 65.9651
# GiB", Marlin backend: vllm-project/vllm issue #23278, 2025-08-20). Ampere always takes
# this path (vLLM's Triton MXFP4 kernels need SM90+); later Hopper builds with the
# triton_kernels package take the Triton path, which loads 64.38 GiB (vLLM 0.14.1, issue
# #33155, 2026-01-27): Marlin's figure is assumed for both.
MARLIN_MXFP4_N_ALIGN = 256  # the hidden width (n of the down projection)
MARLIN_MXFP4_K_ALIGN = 128  # the per-rank intermediate width


def _round_up(x: float, to: int) -> float:
    return -(-x // to) * to


def marlin_expert_padding(spec: TransformerSpec, plan: Plan) -> float:
    """Factor by which vLLM's Marlin MXFP4 MoE layout pads ``spec``'s routed-expert weights
    on one rank of ``plan`` (1 for a model whose experts are not MXFP4)."""
    if spec.expert_quant != "mxfp4" or not spec.is_moe:
        return 1.0
    hidden = float(spec.d_model)
    inter = (spec.moe_d_ff or spec.d_ff) / plan.expert_tp
    padded = _round_up(inter, MARLIN_MXFP4_K_ALIGN) * _round_up(hidden, MARLIN_MXFP4_N_ALIGN)
    return padded / (inter * hidden)


def _expert_bytes_per_param(spec: TransformerSpec, precision: str) -> float:
    """Bytes per routed-expert weight served at ``precision``: the checkpoint's own 4-bit
    format (``expert_quant``, MXFP4's 4.25 bits) when it is served at 4 bits."""
    wbytes = weight_bytes(precision)
    if spec.expert_quant and wbytes < 1:
        return dtype_bytes(expert_dtypes(spec, Dtypes.for_precision(precision)).weight_dtype)
    return wbytes


def expert_weight_bytes(spec: TransformerSpec, plan: Plan, precision: str) -> float:
    """Bytes of routed-expert weights one chip of ``plan`` holds when serving at
    ``precision`` (the 4.25-bit MXFP4 blocks of an ``expert_quant`` checkpoint)."""
    return stage_params(spec, plan).experts_per_chip * _expert_bytes_per_param(spec, precision)


def serve_memory(
    spec: TransformerSpec,
    plan: Plan,
    *,
    batch: int,
    context: int,
    precision: str,
    kv_dtype: str,
    prefill_tokens: int,
    chip: Chip,
) -> MemoryUse:
    """Per-chip bytes for serving: weights, the KV cache of ``batch`` x ``context`` tokens,
    and the largest transient (one prefill chunk's activations, the logits)."""
    wbytes = weight_bytes(precision)
    params = stage_params(spec, plan)
    # quantised checkpoints keep the embedding and the LM head in bf16 (layers.head_ops)
    ends = params.ends_per_chip
    head_bytes = dtype_bytes(head_dtypes(precision).weight_dtype)
    quantised = params.total - ends
    if spec.expert_quant and wbytes < 1:
        # a checkpoint quantising only its experts (gpt-oss MXFP4), served in its 4-bit
        # format: the experts as it stores them (MXFP4: 4.25 bits), the rest in bf16
        quantised, wbytes = params.experts_per_chip, _expert_bytes_per_param(spec, precision)
    layers = layers_per_stage(spec.n_layers, plan.pp)
    if spec.quant_exclude and wbytes < 2 and not spec.expert_quant:
        # the attention projections the checkpoint keeps in bf16 (quant_exclude)
        quantised -= layers * excluded_params(spec) / plan.tp
    weights = quantised * wbytes + (params.total - quantised) * head_bytes
    kv_tokens = kv_cached_tokens(spec, context, layers)  # sliding layers keep their window
    kv = batch * kv_tokens * kv_bytes_per_token_per_layer(spec, plan.tp, kv_dtype)
    # linear-attention layers hold a fixed state per sequence instead (their stage's share)
    kv += batch * recurrent_state_bytes(spec, plan.tp, layers)
    act_bytes = activation_bytes(precision)
    width = max(spec.d_ff, spec.moe_d_ff * max(1, spec.experts_per_token)) * 2
    chunk = min(prefill_tokens, PREFILL_CHUNK_TOKENS)
    transient = chunk * (4 * spec.d_model + width / plan.tp) * act_bytes
    logits = batch * (-(-spec.vocab_size // plan.tp)) * 4.0
    return MemoryUse(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        activations_bytes=transient + logits,
        other_bytes=reserve_bytes(chip),
        slack_bytes=slack_bytes(chip),
    )
