"""The ops of one transformer layer on one chip, for a micro-batch under a parallelism plan.

Shape legend (see ``workload/ir.py``): B = micro-batch (sequences), S = sequence length,
D = model width, H = query heads, Hkv = key/value heads, Dh = head dim, F = MLP width,
V = vocabulary, E = routed experts, k = experts per token, T = tokens one chip holds
in a layer (B * S / cp). Matmuls are ``(M x K) @ (K x N)``.

Sharding (Megatron-LM conventions, Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4):
``tp`` splits heads and the MLP width (column- then row-parallel), ``cp`` splits the
sequence (ring attention), ``ep`` spreads routed experts over ranks. Key/value heads that
do not divide by ``tp`` are replicated (one per rank). MLA down-projections (DeepSeek-V2
§2.1) are replicated over ``tp``; up-projections split by heads.

Every op here has ``count == 1``; callers multiply by layers, so the per-op timing cache
hits across pipeline stages. Forward ops only; ``backward_ops`` derives the backward.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from chipwise.errors import PlanError
from chipwise.limits import CACHE_ENTRIES
from chipwise.units import DTYPE_BYTES, dtype_bytes
from chipwise.workload.accounting import (
    attention_params_per_layer,
    indexer_params_per_layer,
    linear_attention_params_per_layer,
)
from chipwise.workload.ir import ExpertRouting, Op, OpKind, TransformerSpec

# FlashAttention-2 backward runs 5 matmuls of the forward's 2 (it recomputes QK^T):
# backward = 2.5 x forward FLOPs (Dao 2023, "FlashAttention-2", §3.1-3.2).
ATTENTION_BACKWARD_FLOPS_RATIO = 2.5
# A memory-bound op's backward reads the saved input and the output gradient and writes
# the input gradient: about twice the forward's traffic.
ELEMENTWISE_BACKWARD_BYTES_RATIO = 2.0
# Memory-bound ops whose backward was counted kernel by kernel (``unfused_expert_epilogues``):
# backward / forward traffic.
_BACKWARD_BYTES_RATIO = {"expert_bias": 8.0 / 6.0}
# Cross-entropy over the logits runs in fp32 (Megatron, MaxText, torchtitan all upcast).
LOSS_DTYPE = "fp32"
# RMSNorm/LayerNorm statistics and softmax are computed in fp32 but read/write the
# activation dtype; their traffic is in the activation dtype.


@dataclass(frozen=True, slots=True, kw_only=True)
class Shard:
    """How one chip sees the model: tensor, context and expert parallel degrees, and the
    routed experts' tensor-parallel width ``etp`` (0 = the same as ``tp``)."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 0

    @property
    def expert_tp(self) -> int:
        return self.etp or self.tp


@dataclass(frozen=True, slots=True, kw_only=True)
class Dtypes:
    """The dtypes one precision setting uses: matmul inputs, activations, KV cache."""

    matmul: str
    act: str
    weight: str = ""  # stored weight dtype when it differs from ``matmul`` (weight-only)

    @property
    def weight_dtype(self) -> str:
        return self.weight or self.matmul

    @staticmethod
    def for_precision(precision: str) -> Dtypes:
        """fp8/int8/fp4: matmuls in the low precision, everything else bf16 (Transformer
        Engine's recipe, Micikevicius et al. 2022 §4; NVFP4/MXFP4 the same with 4-bit blocks);
        int4 and w8a16 are weight-only (W4A16 as AWQ/GPTQ, W8A16): weights stored in 4 or 8
        bits and dequantised in the GEMM's prologue, the math in bf16 (Lin et al. 2024, AWQ
        §4; vLLM's Marlin kernels), so decode reads fewer bytes but a GEMM runs at bf16;
        fp32/fp16/bf16: everything in that dtype."""
        if precision in WEIGHT_ONLY:
            return Dtypes(matmul="bf16", act="bf16", weight=WEIGHT_ONLY[precision])
        if precision in ("fp8", "int8", "fp4"):
            return Dtypes(matmul=precision, act="bf16")
        return Dtypes(matmul=precision, act=precision)


# Weight-only quantisation: precision name -> stored weight dtype (GEMM math in bf16).
WEIGHT_ONLY = {"int4": "int4", "w8a16": "int8"}


def compute_dtype(precision: str) -> str:
    """The dtype a precision's GEMMs run in (the chip must have a rate for it)."""
    return Dtypes.for_precision(precision).matmul


def activation_bytes(precision: str) -> float:
    """Bytes per activation at ``precision`` (fp32 runs fp32 activations, fp16 fp16, every
    other precision bf16)."""
    return dtype_bytes(Dtypes.for_precision(precision).act)


def weight_bytes(precision: str) -> float:
    """Bytes per stored weight at ``precision`` (fp32 serving keeps fp32 weights)."""
    return dtype_bytes(Dtypes.for_precision(precision).weight_dtype)


def heads_per_rank(spec: TransformerSpec, tp: int) -> tuple[int, int]:
    """(query heads, key/value heads) one tensor-parallel rank holds."""
    if spec.n_heads % tp:
        raise PlanError(
            f"tp={tp} does not divide {spec.name}'s {spec.n_heads} attention heads; "
            f"choose tp among {', '.join(str(d) for d in _divisors(spec.n_heads) if d <= 64)}"
        )
    kv = spec.n_kv_heads // tp if spec.n_kv_heads >= tp else 1
    return spec.n_heads // tp, kv


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _matmul(name: str, m: int, n: int, k: int, dt: Dtypes, *, batch: int = 1,
            grouped: bool = False) -> Op:  # fmt: skip
    """A GEMM; the activation input in the matmul dtype, the weight (K x N) in the stored
    weight dtype, output in the activation dtype; ``grouped``: the ``batch`` GEMMs have
    their own weights (experts), timed as a grouped GEMM."""
    a = dtype_bytes(dt.matmul)
    w = dtype_bytes(dt.weight_dtype)
    o = dtype_bytes(dt.act)
    return Op(
        name=name,
        kind=OpKind.MATMUL,
        dtype=dt.matmul,
        flops=2.0 * batch * m * n * k,
        bytes_read=batch * (m * k * a + k * n * w),
        bytes_written=batch * m * n * o,
        shape=(m, n),
        mnk=(m, n, k),
        batch=batch,
        grouped=grouped,
        weight=dt.weight,
    )


def _memop(name: str, kind: OpKind, elements: float, reads: float, writes: float, dtype: str,
           flops_per_element: float = 1.0) -> Op:  # fmt: skip
    """A memory-bound op over ``elements`` values, reading ``reads`` and writing ``writes``
    tensors of that size."""
    b = dtype_bytes(dtype)
    return Op(
        name=name,
        kind=kind,
        dtype=dtype,
        flops=flops_per_element * elements,
        bytes_read=reads * elements * b,
        bytes_written=writes * elements * b,
        shape=(int(elements),),
    )


def _fp8_cast(name: str, elements: float, dt: Dtypes) -> list[Op]:
    """Quantising a GEMM input to fp8 where no preceding kernel can fuse it (Transformer
    Engine fuses the cast into LayerNorm and activation kernels, not into attention):
    read bf16, write the fp8 copy and its transpose (Hopper fp8 GEMMs need both layouts
    for forward and wgrad; TE docs, "FP8 primer")."""
    if dt.matmul != "fp8":
        return []
    return [
        Op(
            name=name,
            kind=OpKind.ELEMENTWISE,
            dtype=dt.act,
            flops=2.0 * elements,
            bytes_read=elements * dtype_bytes(dt.act),
            bytes_written=2.0 * elements * dtype_bytes("fp8"),
            shape=(int(elements),),
        )
    ]


def causal_pairs(s_q: int, s_kv: int, *, causal: bool, window: int = 0) -> float:
    """Query-key pairs one sequence's attention computes (flash skips masked blocks)."""
    if window and window < s_kv:
        full = s_q * window
        if causal and s_q < s_kv:
            # the queries are the sequence's last s_q (a prefill chunk): the one at
            # position p sees min(p + 1, window) keys, so only those within the first
            # window positions see fewer (the whole-sequence form below went negative for
            # a chunk shorter than half the window)
            start = s_kv - s_q
            short = max(0, window - 1 - start)  # queries that see fewer than window keys
            return full - short * (short + 1) / 2.0
        return full - (window * window / 2.0 if causal else 0.0)
    return s_q * s_kv / 2.0 if causal else float(s_q * s_kv)


@lru_cache(maxsize=CACHE_ENTRIES)
def block_pairs(s: int, *, causal: bool, window: int, block_q: int, block_kv: int) -> float:
    """Query-key pairs a block-sparse flash kernel computes for one sequence of ``s`` tokens
    attending to itself: it skips a (block_q x block_kv) tile only when the mask hides all of
    it, and computes every other tile whole. A causal mask leaves the diagonal tiles half
    masked; a sliding window narrower than a tile still costs the two or more tiles its band
    crosses (a window of 128 under 512 x 512 tiles: 1024 keys per query, not 128)."""
    total = 0
    for q0 in range(0, s, block_q):
        q1 = min(s, q0 + block_q) - 1
        if causal:
            lo = max(0, q0 - window + 1) if 0 < window < s else 0
            hi = q1
        elif 0 < window < s:
            lo, hi = max(0, q0 - window // 2), min(s - 1, q1 + window // 2)
        else:
            lo, hi = 0, s - 1
        total += (hi // block_kv - lo // block_kv + 1) * block_kv * (q1 - q0 + 1)
    return float(total)


def block_overcount(op: Op, block: int) -> float:
    """Computed / logical FLOPs of sliding-window attention ``op`` under ``block`` x
    ``block`` tiles (``block_pairs`` over ``causal_pairs``). 1 for global attention: the
    attention efficiencies (efficiency.toml) are FlashAttention's published TFLOP/s, which
    count causal attention's logical FLOPs, so the half-masked diagonal tiles are already
    in them; a window's band is not. 1 too for other ops and where queries and keys differ
    in length (decode, context-parallel chunks, chunked prefill)."""
    if op.kind is not OpKind.ATTENTION or op.mnk is None or block <= 0 or not op.window:
        return 1.0
    s_q, s_kv = op.mnk[0], op.mnk[1]
    if s_q != s_kv or s_q <= 0:
        return 1.0
    logical = causal_pairs(s_q, s_kv, causal=op.causal, window=op.window)
    if logical <= 0:
        return 1.0
    computed = block_pairs(s_q, causal=op.causal, window=op.window, block_q=block,
                           block_kv=block)  # fmt: skip
    return max(1.0, computed / logical)


def layer_window(spec: TransformerSpec, sliding: bool | None) -> int:
    """The attention window of a layer kind: ``spec.sliding_window`` for a sliding layer,
    0 (the whole sequence) for a global one; ``None`` = the kind of the first layer."""
    if sliding is None:
        sliding = spec.is_sliding_layer(0)
    return spec.sliding_window if sliding else 0


def is_linear_kind(spec: TransformerSpec, local: bool | None) -> bool:
    """Whether the layer kind ``local`` (``stage_layer_kinds``' second flag: the model's
    cheaper kind; ``None`` = the first layer's) is a Gated DeltaNet linear-attention layer."""
    if not spec.uses_linear_attention:
        return False
    return spec.is_linear_layer(0) if local is None else local


def _attention(name: str, b: int, s_q: int, s_kv: int, heads: int, kv_heads: int,
               qk_dim: int, v_dim: int, spec: TransformerSpec, dt: Dtypes,
               window: int = 0) -> Op:  # fmt: skip
    """Fused (flash) attention: QK^T, softmax, PV in one kernel. Causal masks halve the
    FLOPs (flash skips fully masked tiles); a sliding window of ``window`` tokens leaves
    each query at most ``window`` keys. Traffic: Q, K, V read once, O written once."""
    pairs = causal_pairs(s_q, s_kv, causal=spec.causal, window=window)
    flops = 2.0 * b * heads * pairs * (qk_dim + v_dim)
    a = dtype_bytes(dt.act)
    read = b * (s_q * heads * qk_dim + s_kv * kv_heads * (qk_dim + v_dim)) * a
    written = b * s_q * heads * v_dim * a
    return Op(
        name=name,
        kind=OpKind.ATTENTION,
        dtype=dt.act,
        flops=flops,
        bytes_read=read,
        bytes_written=written,
        shape=(b, heads, s_q, v_dim),
        mnk=(s_q, s_kv, qk_dim),
        batch=b * heads,
        causal=spec.causal,
        window=window if window and window < s_kv else 0,
    )


def fp8_context_attention(op: Op) -> Op:
    """A prefill (context) flash-attention op run as TensorRT-LLM's FP8 context FMHA: Q, K
    and V in fp8 (one byte each), its QK and PV MMAs in fp8, its output fp8. The engine
    turns it on where the KV cache is fp8 and the attention's output is quantised for the
    next GEMM (``serve.EngineStepTimer``); other ops are returned unchanged."""
    if op.kind is not OpKind.ATTENTION or op.backward or op.dtype == "fp8":
        return op
    scale = 1.0 / dtype_bytes(op.dtype)
    return replace(
        op, dtype="fp8", bytes_read=op.bytes_read * scale, bytes_written=op.bytes_written * scale
    )


def is_fp8_context_attention(op: Op) -> bool:
    """Whether ``op`` is a prefill attention op run in fp8 (``fp8_context_attention``)."""
    return (
        op.kind is OpKind.ATTENTION
        and op.dtype == "fp8"
        and not op.backward
        and op.mnk is not None
        and op.mnk[0] > 1
    )


# Attention as Megatron-LM ran it before FlashAttention (2021-2022, megatron/model/
# transformer.py ParallelAttention): torch.baddbmm writes the raw scores [b*np, sq, sk],
# FusedScaleMaskSoftmax reads them and writes the probabilities, attention_dropout writes
# the dropped probabilities and a 1-byte mask, torch.bmm multiplies them by V. Each of
# those s x s tensors passes through HBM; Korthikanti et al. 2022 (arXiv 2205.05198) §4.1
# count the same tensors (2as^2b + 2as^2b + as^2b + 2as^2b bytes of activations per layer).
# The GEMMs compute the whole s x s matrix (no causal tile skipping) and the masked softmax
# is charged the whole matrix too.
UNFUSED_ATTENTION_OPS = ("attention_scores", "attention_softmax", "attention_dropout",
                         "attention_context")  # fmt: skip


def unfused_attention(b: int, s_q: int, s_kv: int, heads: int, qk_dim: int, v_dim: int,
                      dt: Dtypes) -> list[Op]:  # fmt: skip
    """The attention core as four kernels, the scores through HBM (see above)."""
    at = Dtypes(matmul=dt.act, act=dt.act)  # the core runs in the activation dtype
    scores = float(b) * heads * s_q * s_kv
    names = UNFUSED_ATTENTION_OPS
    return [
        _matmul(names[0], s_q, s_kv, qk_dim, at, batch=b * heads),
        # scale, mask, max, exp, sum, divide: one read, one write
        _memop(names[1], OpKind.ELEMENTWISE, scores, 1, 1, dt.act, flops_per_element=5),
        # the dropped probabilities and the 1-byte keep mask (half an fp16 tensor)
        _memop(names[2], OpKind.ELEMENTWISE, scores, 1, 1.5, dt.act),
        _matmul(names[3], s_q, v_dim, s_kv, at, batch=b * heads),
    ]


def is_attention_core(op: Op) -> bool:
    """Whether ``op`` is part of the attention core (flash kernel or its unfused parts)."""
    return (
        op.kind is OpKind.ATTENTION
        or op.name.removesuffix("_bwd").removesuffix("_dgrad").removesuffix("_wgrad")
        in UNFUSED_ATTENTION_OPS
    )


def excluded_dtypes(spec: TransformerSpec, name: str, dt: Dtypes) -> Dtypes:
    """The dtypes of attention projection ``name``: bf16 when the checkpoint keeps it out
    of its low precision (``TransformerSpec.quant_exclude``, e.g. MLA's projections in
    nvidia/DeepSeek-R1-FP4) and ``dt`` quantises the weights, else ``dt``."""
    if name in spec.quant_exclude and dtype_bytes(dt.weight_dtype) < 2:
        return Dtypes.for_precision("bf16")
    return dt


def excluded_params(spec: TransformerSpec) -> float:
    """Weights of one layer's attention projections the checkpoint keeps in bf16
    (``TransformerSpec.quant_exclude``), unsharded."""
    if not spec.quant_exclude:
        return 0.0
    bf16 = Dtypes.for_precision("bf16")
    ops = attention_ops(spec, b=1, s=1, shard=Shard(), dt=bf16)
    return float(
        sum(op.mnk[1] * op.mnk[2] for op in ops if op.mnk and op.name in spec.quant_exclude)
    )


def attention_ops(spec: TransformerSpec, *, b: int, s: int, shard: Shard, dt: Dtypes,
                  s_kv: int | None = None, window: int = 0,
                  flash: bool = True, fused_qkv_a: bool = False,
                  absorbed: bool = False) -> list[Op]:  # fmt: skip
    """Norm, projections, attention core, output projection and residual add.

    ``s`` is the query length one chip processes per sequence (already divided by cp);
    ``s_kv`` the key length attended to (the whole sequence under cp ring attention);
    ``window`` a sliding window (0 = global attention); ``flash`` False: the core unfused
    (``unfused_attention``); ``fused_qkv_a``: an MLA model's two down-projections run as
    one GEMM, as the serving engines run them (``qkv_down``); ``absorbed``: one query token
    per sequence (a decode step), an MLA model's kv_b_proj run as the engines' two absorbed
    batched GEMMs (``kv_up_k``, ``kv_up_v``).
    """
    d = spec.d_model
    h, hkv = heads_per_rank(spec, shard.tp)
    t = b * s
    kv_len = s if s_kv is None else s_kv
    # Sequence parallelism (Korthikanti §4.2.2) splits norms and residuals over tp.
    t_sp = max(1, t // shard.tp)
    ops = [_memop("attn_norm", OpKind.NORM, t_sp * d, 1, 1, dt.act, flops_per_element=4)]

    def kept(name: str) -> Dtypes:
        return excluded_dtypes(spec, name, dt)

    if spec.uses_mla:
        qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        v = spec.v_head_dim or spec.head_dim
        kv_n = spec.kv_lora_rank + spec.qk_rope_head_dim
        # Serving engines run q_a_proj and kv_a_proj_with_mqa (both read the layer input,
        # both replicated over tp) as one GEMM of N = q_lora_rank + kv_lora_rank + rope
        # (2112 for DeepSeek-V3): SGLang's fused_qkv_a_proj_with_mqa (models/deepseek_v2.py,
        # on every platform), vLLM's fused_qkv_a_proj, TensorRT-LLM's fused_a. Training
        # frameworks keep two (Megatron's linear_q_down_proj / linear_kv_down_proj).
        fuse = bool(spec.q_lora_rank) and fused_qkv_a and kept("q_down") == kept("kv_down")
        if fuse:
            ops.append(_matmul("qkv_down", t, spec.q_lora_rank + kv_n, d, kept("q_down")))
        if spec.q_lora_rank:
            if not fuse:
                ops.append(_matmul("q_down", t, spec.q_lora_rank, d, kept("q_down")))
            ops.append(_memop("q_norm", OpKind.NORM, t * spec.q_lora_rank, 1, 1, dt.act, 4))
            ops.append(_matmul("q_up", t, h * qk, spec.q_lora_rank, kept("q_up")))
        else:
            ops.append(_matmul("q_proj", t, h * qk, d, kept("q_proj")))
        if not fuse:
            ops.append(_matmul("kv_down", t, kv_n, d, kept("kv_down")))
        ops.append(_memop("kv_norm", OpKind.NORM, t * spec.kv_lora_rank, 1, 1, dt.act, 4))
        # rotary embedding of the queries' rope part (h heads) and the one shared rope key:
        # a kernel of its own in vLLM (DeepseekV2MLAAttention.forward: self.rotary_emb(
        # positions, q[..., qk_nope_head_dim:], k_pe)), SGLang (DeepseekV2AttentionMLA
        # forward_absorb_prepare / forward_normal_prepare: self.rotary_emb(positions, q_pe,
        # k_pe)) and Megatron (MLASelfAttention.get_query_key_value_tensors:
        # apply_rotary_pos_emb on q_pos_emb and k_pos_emb); TensorRT-LLM applies it inside
        # its MLA op (ENGINE_FUSED_OPS, gpu.py). Read 2026-12-06.
        ops.append(
            _memop("rope", OpKind.ELEMENTWISE, t * (h + 1) * spec.qk_rope_head_dim, 1, 1, dt.act, 3)
        )
        # One query token per sequence (decode): the engines run the absorbed form, the
        # latent attention reading the cached latent (``_attention`` with a latent head),
        # kv_b_proj's two halves as two batched GEMMs over the heads, one on the queries
        # before the attention (q_nope x W_UK) and one on its output after it (x W_UV):
        # vLLM MLACommonImpl._k_up / _v_up_proj (torch.bmm), SGLang DeepseekV2AttentionMLA
        # forward_absorb (torch.bmm with w_kc, then w_vc), TensorRT-LLM MLA
        # (fp8_block_scaling_bmm_out twice); AIConfigurator's mla_bmm tables time them
        # apart (mla_gen_pre / mla_gen_post). Read 2026-12-06.
        absorbed = absorbed and s == 1
        if absorbed:
            ops.append(_matmul("kv_up_k", t, spec.kv_lora_rank, spec.qk_nope_head_dim,
                               kept("kv_up"), batch=h))  # fmt: skip
        else:
            ops.append(
                _matmul("kv_up", t, h * (spec.qk_nope_head_dim + v), spec.kv_lora_rank,
                        kept("kv_up"))
            )  # fmt: skip
        if spec.uses_dsa:
            # DeepSeek Sparse Attention: the indexer picks each query's index_topk keys, so
            # the attention sees at most that many (as a window of that width would)
            ops += indexer_ops(spec, b=b, s=s, kv_len=kv_len, dt=dt, weights=kept("q_up"))
            window = min(window, spec.index_topk) if window else spec.index_topk
        if flash:
            ops.append(_attention("attention", b, s, kv_len, h, h, qk, v, spec, dt, window))
        else:
            ops += unfused_attention(b, s, kv_len, h, qk, v, dt)
        if absorbed:
            ops.append(_matmul("kv_up_v", t, v, spec.kv_lora_rank, kept("kv_up"), batch=h))
        ops += _fp8_cast("o_proj_cast", t * h * v, kept("o_proj"))
        ops.append(_matmul("o_proj", t, d, h * v, kept("o_proj")))
    else:
        dh = spec.head_dim
        # an output gate (attn_output_gate) widens q_proj by one more value per query channel
        gate = h if spec.attn_output_gate else 0
        ops.append(_matmul("qkv_proj", t, (h + gate + 2 * hkv) * dh, d, kept("qkv_proj")))
        ops += qk_norm_ops(spec, t, h, hkv, dt)
        if not spec.learned_positions:
            # rotary embedding of q and k; a model with a learned position table (GPT-2,
            # OPT, MPT, Megatron GPT) adds positions once at the input instead
            ops.append(_memop("rope", OpKind.ELEMENTWISE, t * (h + hkv) * dh, 1, 1, dt.act, 3))
        if flash:
            ops.append(_attention("attention", b, s, kv_len, h, hkv, dh, dh, spec, dt, window))
        else:
            ops += unfused_attention(b, s, kv_len, h, dh, dh, dt)
        if gate:
            # o * sigmoid(gate): reads both, writes the gated output
            ops.append(_memop("attn_gate", OpKind.ELEMENTWISE, t * h * dh, 2, 1, dt.act, 4))
        ops += _fp8_cast("o_proj_cast", t * h * dh, kept("o_proj"))
        ops.append(_matmul("o_proj", t, d, h * dh, kept("o_proj")))
    ops += post_norm_ops("attn_post_norm", spec, t_sp, dt)
    ops.append(_memop("attn_residual", OpKind.ELEMENTWISE, t_sp * d, 2, 1, dt.act))
    return ops


# Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024, arXiv 2412.06464), as Qwen3-Next and
# Qwen3.5 run it in vLLM and SGLang (vllm/model_executor/models/qwen3_next.py
# Qwen3NextGatedDeltaNet): in_proj_qkvz and in_proj_ba GEMMs, a causal depthwise conv1d
# with SiLU over q, k and v, the gates (g = -exp(A) softplus(a + dt_bias), beta =
# sigmoid(b)), the gated delta rule, an RMSNorm of the output gated by SiLU(z), and
# out_proj. Heads split over tensor parallelism like attention heads.
# Prefill runs the delta rule chunked (flash-linear-attention's chunk_gated_delta_rule,
# chunks of GDN_CHUNK_TOKENS tokens): per chunk and value head, K K^T and its triangular inverse,
# the W and U products, the state pass (v_new = U - W S, S' = decay S + K^T v_new) and the
# output (Q S + masked Q K^T v_new): 6 C dk dv + 2 C^2 (3 dk + 2 dv) + 2 C^3 / 3 FLOPs on
# the tensor cores (tl.dot), and through HBM each token's q, k, v, o plus the chunk's
# intermediates (A in fp32, W, U, v_new, one state per chunk): ``_gdn_chunk_bytes``.
# Decode runs the recurrence (fused_recurrent_gated_delta_rule): each sequence's state is
# read and written once per step, ~7 dk dv FLOPs per value head (decay, k^T S, the rank-1
# update, q S). The state is held in the dtype the checkpoint's config names
# (mamba_ssm_dtype: Qwen3.5's "float32"), else the activation dtype (vLLM's
# MambaStateDtypeCalculator with mamba_ssm_cache_dtype "auto"), with the convolution's last
# kernel-1 inputs beside it in the model dtype (GDN_CONV_STATE_DTYPE, bf16), whatever the
# recurrent state's: vLLM's MambaStateDtypeCalculator.gated_delta_net_state_dtype
# (vllm/model_executor/layers/mamba/mamba_utils.py, _mamba_state_dtype: conv =
# mamba_cache_dtype "auto" = the model dtype, temporal = mamba_ssm_cache_dtype) and SGLang's
# mamba2_state_dtype (python/sglang/srt/configs/mamba_utils.py: conv =
# SGLANG_MAMBA_CONV_DTYPE, default bfloat16; temporal = the config's mamba_ssm_dtype).
# The chunked kernels' rate and fixed time are fitted per architecture on measured kernels
# (gpu.py, efficiency.toml GDN-CHUNK): chunk_fwd_h walks a sequence's chunks one after
# another on a grid of only (value heads x dv blocks), so the pipeline runs far below the
# roofline of the FLOPs and bytes counted here.
GDN_CHUNK_TOKENS = 64
GDN_STATE_DTYPE = "bf16"
GDN_CONV_STATE_DTYPE = "bf16"  # the checkpoints' torch_dtype (bfloat16); see above
GDN_RECURRENT_FLOPS = 7.0  # per state element per decode token
GDN_RECURRENT = "gdn_recurrent"
GDN_CHUNK = "gdn_chunk"


def _gdn_chunk_bytes(dk: int, dv: int, act: float) -> tuple[float, float]:
    """(read, written) HBM bytes per token and value head of the chunked delta rule: q, k, v
    read and o written; A (GDN_CHUNK_TOKENS fp32 values), W and U, v_new and the chunk's state (dk x
    dv per GDN_CHUNK_TOKENS tokens) each written once and read back once."""
    between = GDN_CHUNK_TOKENS * 4.0 + (dk + dv) * act + dv * act + dk * dv * act / GDN_CHUNK_TOKENS
    return (2 * dk + dv) * act + between, dv * act + between


def recurrent_state_bytes(spec: TransformerSpec, tp: int, layers: int) -> float:
    """Bytes of one sequence's linear-attention state on one chip over ``layers`` decoder
    layers (their share of the linear ones, as ``kv_cached_tokens`` shares the pattern):
    the delta rule's dk x dv matrix per value head and the convolution's last kernel-1
    inputs, the one in ``state_dtype``, the other in ``GDN_CONV_STATE_DTYPE`` (0 without
    linear attention)."""
    if not spec.uses_linear_attention:
        return 0.0
    nk, nv = linear_heads_per_rank(spec, tp)
    dk, dv = spec.linear_k_head_dim, spec.linear_v_head_dim
    state = nv * dk * dv * dtype_bytes(state_dtype(spec))
    conv_inputs = (spec.linear_conv_kernel - 1) * (2 * nk * dk + nv * dv)
    conv = conv_inputs * dtype_bytes(GDN_CONV_STATE_DTYPE)
    return float(spec.n_linear_layers * (state + conv) * layers / spec.n_layers)


def state_dtype(spec: TransformerSpec) -> str:
    """The dtype a linear-attention layer's recurrent state is held in: the checkpoint's
    own (``linear_state_dtype``) or ``GDN_STATE_DTYPE``."""
    return spec.linear_state_dtype or GDN_STATE_DTYPE


def linear_heads_per_rank(spec: TransformerSpec, tp: int) -> tuple[int, int]:
    """(key heads, value heads) of a Gated DeltaNet layer one tensor-parallel rank holds."""
    if spec.linear_v_heads % tp:
        raise PlanError(
            f"tp={tp} does not divide {spec.name}'s {spec.linear_v_heads} linear-attention "
            "value heads"
        )
    return max(1, spec.linear_k_heads // tp), spec.linear_v_heads // tp


def linear_attention_ops(spec: TransformerSpec, *, b: int, s: int, shard: Shard, dt: Dtypes,
                         decode: bool = False) -> list[Op]:  # fmt: skip
    """A Gated DeltaNet block for ``b`` sequences of ``s`` new tokens on one rank (see
    above): the chunked delta rule, or with ``decode`` the one-token recurrence over each
    sequence's state (``GDN_RECURRENT``, which a serving step times per sequence)."""
    d = spec.d_model
    nk, nv = linear_heads_per_rank(spec, shard.tp)
    dk, dv = spec.linear_k_head_dim, spec.linear_v_head_dim
    key, value = nk * dk, nv * dv
    conv = 2 * key + value
    t = b * s
    t_sp = max(1, t // shard.tp)
    a = dtype_bytes(dt.act)
    ops = [
        _memop("attn_norm", OpKind.NORM, t_sp * d, 1, 1, dt.act, flops_per_element=4),
        _matmul("qkvz_proj", t, conv + value, d, dt),
        _matmul("ba_proj", t, 2 * nv, d, dt),
        # causal depthwise conv (kernel taps) and SiLU over q, k and v
        _memop(
            "gdn_conv",
            OpKind.ELEMENTWISE,
            t * conv,
            1,
            1,
            dt.act,
            flops_per_element=2 * spec.linear_conv_kernel + 1,
        ),
        _memop("gdn_gates", OpKind.ELEMENTWISE, t * nv, 2, 2, dt.act, flops_per_element=8),
        # the delta rule's L2 norm of each q and k head
        _memop("gdn_qk_l2norm", OpKind.NORM, t * 2 * key, 1, 1, dt.act, flops_per_element=4),
    ]
    if decode:
        state = b * nv * dk * dv
        sb = dtype_bytes(state_dtype(spec))
        ops.append(
            Op(
                name=GDN_RECURRENT,
                kind=OpKind.ELEMENTWISE,
                dtype=dt.act,
                flops=GDN_RECURRENT_FLOPS * state,
                bytes_read=state * sb + t * (conv + 2 * nv) * a,
                bytes_written=state * sb + t * value * a,
                shape=(b, nv, dk, dv),
            )
        )
    else:
        c = GDN_CHUNK_TOKENS
        per_chunk = 6 * c * dk * dv + 2 * c * c * (3 * dk + 2 * dv) + 2 * c**3 / 3
        chunks = b * -(-s // c)
        read, written = _gdn_chunk_bytes(dk, dv, a)
        ops.append(
            Op(
                name=GDN_CHUNK,
                kind=OpKind.MATMUL,  # tl.dot tiles on the tensor cores; no single GEMM shape
                dtype=dt.act,
                flops=float(chunks * nv * per_chunk),
                bytes_read=t * nv * read,
                bytes_written=t * nv * written,
                shape=(b, s, nv, dv),
            )
        )
    ops += [
        # RMSNorm of the output gated by SiLU(z): reads o and z, writes one
        _memop("gdn_out_norm", OpKind.NORM, t * value, 2, 1, dt.act, flops_per_element=6),
        _matmul("gdn_out_proj", t, d, value, dt),
    ]
    ops += post_norm_ops("attn_post_norm", spec, t_sp, dt)
    ops.append(_memop("attn_residual", OpKind.ELEMENTWISE, t_sp * d, 2, 1, dt.act))
    return ops


def is_sequence_op(op: Op) -> bool:
    """Whether ``op``'s cost follows the sequences in a step, not its tokens: attention (the
    KV cache each sequence reads) and the linear-attention recurrence (each sequence's
    state), which a serving step times apart from the token-proportional ops."""
    return op.kind is OpKind.ATTENTION or op.name == GDN_RECURRENT


# DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2; deepseek-ai/DeepSeek-V3.2-Exp
# inference/model.py Indexer). Per token it projects the q latent to index_n_heads queries of
# index_head_dim (wq_b) and the hidden state to one key (wk) and per-head weights
# (weights_proj); the key is LayerNorm-ed and cached in fp8 with one fp32 scale per 128
# values (vLLM's and SGLang's indexer caches: ue8m0 scales, quant block 128). Each query
# then scores every cached key (ReLU(q.k) weighted over the heads: an fp8 MQA-logits
# kernel, DeepGEMM fp8_mqa_logits / fp8_paged_mqa_logits), writing fp32 logits that a
# top-k kernel reads back to choose index_topk keys. The serving engines replicate the
# indexer on every tensor-parallel rank (vLLM and SGLang build wq_b, wk and weights_proj as
# ReplicatedLinear: "no tensor parallel, just replicated"), so it is not split over tp.
INDEXER = "indexer"  # the scorer op's name
INDEX_SCALE_BYTES = 4  # one fp32 scale per INDEX_QUANT_BLOCK cached index-key values
INDEX_QUANT_BLOCK = 128
INDEX_LOGIT_BYTES = 4  # fp32 logits, written by the scorer and read by the top-k


def index_cache_bytes_per_token(spec: TransformerSpec) -> float:
    """Bytes of the indexer's key cache per token per layer (0 without sparse attention)."""
    if not spec.uses_dsa:
        return 0.0
    groups = -(-spec.index_head_dim // INDEX_QUANT_BLOCK)
    return float(spec.index_head_dim + groups * INDEX_SCALE_BYTES)


def indexer_ops(spec: TransformerSpec, *, b: int, s: int, kv_len: int, dt: Dtypes,
                weights: Dtypes) -> list[Op]:  # fmt: skip
    """The lightning indexer for ``b`` sequences of ``s`` new tokens over ``kv_len`` keys
    (see above): its projections in the checkpoint's ``weights`` dtypes, the key's norm,
    and the scorer (``indexer``: an attention-kind op whose MMAs take fp8 operands, carried
    on ``weight``; its logits pass HBM twice, written and read back by the top-k)."""
    t = b * s
    ih, idh = spec.index_n_heads, spec.index_head_dim
    pairs = causal_pairs(s, kv_len, causal=spec.causal)
    return [
        _matmul("index_q_up", t, ih * idh, spec.q_lora_rank or spec.d_model, weights),
        _matmul("index_k_proj", t, idh + ih, spec.d_model, weights),
        _memop("index_k_norm", OpKind.NORM, t * idh, 1, 1, dt.act, 4),
        _index_scorer(spec, b=b, s=s, kv_len=kv_len, pairs=pairs, act=dt.act),
    ]


def _index_scorer(spec: TransformerSpec, *, b: int, s: int, kv_len: int, pairs: float,
                  act: str) -> Op:  # fmt: skip
    """The indexer's scorer: ``b`` sequences' ``s`` queries against ``kv_len`` cached index
    keys over ``pairs`` query-key pairs each."""
    ih, idh = spec.index_n_heads, spec.index_head_dim
    return Op(
        name=INDEXER,
        kind=OpKind.ATTENTION,
        dtype=act,
        weight="fp8",
        # the q.k products of every head, then ReLU, the head weight and the sum over heads
        flops=(2.0 * idh + 3.0) * b * ih * pairs,
        bytes_read=b * (s * ih * idh + kv_len * index_cache_bytes_per_token(spec))
        + b * pairs * INDEX_LOGIT_BYTES,
        bytes_written=b * pairs * INDEX_LOGIT_BYTES,
        shape=(b, ih, s, idh),  # (width as a head: not an MLA latent read, gpu.py)
        mnk=(s, kv_len, idh),
        batch=b * ih,
        causal=spec.causal,
    )


# The two ops of a qk-norm (``TransformerSpec.qk_norm``): the queries' and the keys' RMSNorm.
QK_NORM_OPS = ("q_head_norm", "k_head_norm")


def qk_norm_ops(spec: TransformerSpec, t: int, heads: int, kv_heads: int, dt: Dtypes) -> list[Op]:
    """The RMSNorm of the ``t`` tokens' queries and keys one rank holds before attention
    (``TransformerSpec.qk_norm``): each reads and writes its tensor once (a norm's four FLOPs
    per element), two kernels as the models' code runs them (a ``q_norm`` and a ``k_norm``
    module; the engines that run them as one are in gpu.py ``ENGINE_FUSED_OPS``). A norm over
    the whole projection ("proj": OLMo-2, MiniMax-M2) moves the same bytes; under tp > 1 its
    statistics need the other ranks' partial sums, a collective not modelled here."""
    if not spec.qk_norm:
        return []
    dh = spec.head_dim
    q_name, k_name = QK_NORM_OPS
    return [
        _memop(q_name, OpKind.NORM, t * heads * dh, 1, 1, dt.act, flops_per_element=4),
        _memop(k_name, OpKind.NORM, t * kv_heads * dh, 1, 1, dt.act, flops_per_element=4),
    ]


def _mlp(prefix: str, t: int, d: int, width: int, gated: bool, dt: Dtypes,
         *, batch: int = 1) -> list[Op]:  # fmt: skip
    """Up (and gate) projection, activation, down projection; ``batch`` groups (experts)."""
    up_n = width * (2 if gated else 1)
    act = _memop(
        f"{prefix}_act",
        OpKind.ELEMENTWISE,
        batch * t * width,
        2 if gated else 1,
        1,
        dt.act,
        flops_per_element=8,
    )
    if prefix == "expert" and dt.weight:
        # the experts' stored weight dtype: a W4A16 fused-MoE kernel that applies the
        # activation in its up-projection's epilogue runs no kernel of its own for it
        # (gpu.py _W4A16_FUSED_OPS)
        act = replace(act, weight=dt.weight)
    return [
        _matmul(f"{prefix}_up", t, up_n, d, dt, batch=batch),
        act,
        _matmul(f"{prefix}_down", t, d, width, dt, batch=batch),
    ]


# Where SGLang folds a DeepSeek-V3/R1 layer's shared expert into its fused MoE as one more,
# always-routed expert (``num_fused_shared_experts``: the experts grid gets E + 1 experts and
# top-k + 1, and no ``shared_experts`` MLP is built). DeepseekV2ForCausalLM.
# determine_num_fused_shared_experts (python/sglang/srt/models/deepseek_v2.py; the ROCm
# branch from sglang PR #12201 "[FEAT][ROCM] enable fused shared expert for Rocm", reviewed
# 2025-11-06) keeps it on for a DeepseekV3ForCausalLM checkpoint of 256 routed experts and 1
# shared expert unless --disable-shared-experts-fusion, a DeepEP all-to-all or a w4afp8
# checkpoint: on ROCm at compute capability >= 9.4 (gfx942: MI300X/MI325X; gfx950: MI355X)
# under any expert parallelism; on CUDA at capability >= 8.0 and ep = 1 only, and not under
# --moe-runner-backend flashinfer_trtllm (server_args._handle_moe_kernel_config then sets
# --disable-shared-experts-fusion), which SGLang picks by itself on sm100 for a DeepSeek
# fp8/fp4 checkpoint with no all-to-all (_handle_model_specific_adjustments: "Use
# flashinfer_trtllm as MoE runner backend on sm100 for DeepseekV3ForCausalLM"; the
# InferenceMAX B200 fp8 launches also pass it). Hopper's default Triton fused MoE fuses.
# AMD's ATOM always does, for any checkpoint with shared experts: FusedMoE counts
# ``config.n_shared_experts`` as fused experts whenever is_rocm_aiter_fusion_shared_expert_
# enabled(), which returns True (ROCm/ATOM atom/model_ops/moe.py and topK.py at 8ccc65c0,
# 2026-01-14).
SGLANG_SHARED_FUSION_ROCM = frozenset({"cdna3", "cdna4"})
SGLANG_SHARED_FUSION_CUDA = frozenset(
    {"ampere", "ampere-ga10x", "ada", "hopper", "blackwell", "blackwell-rtx"}
)
# sm100 parts whose default MoE runner for a DeepSeek fp8/fp4 checkpoint is flashinfer_trtllm
SGLANG_TRTLLM_MOE_ARCHITECTURES = frozenset({"blackwell"})
SGLANG_TRTLLM_MOE_PRECISIONS = frozenset({"fp8", "fp4"})
SGLANG_SHARED_FUSION_EXPERTS = (256, 1)  # (routed, shared) experts of DeepSeek-V3/R1


def engine_fuses_shared_experts(spec: TransformerSpec, *, engine: str, architecture: str,
                                precision: str, ep: int) -> bool:  # fmt: skip
    """Whether ``engine`` on a chip of ``architecture`` runs ``spec``'s shared expert inside
    the fused MoE at ``precision`` and expert parallelism ``ep`` (module comment above)."""
    if engine == "atom":
        return spec.is_moe and spec.n_shared_experts > 0
    if engine != "sglang" or not (spec.is_moe and spec.uses_mla):
        return False
    if (spec.n_experts, spec.n_shared_experts) != SGLANG_SHARED_FUSION_EXPERTS:
        return False
    if architecture in SGLANG_SHARED_FUSION_ROCM:
        return True
    if architecture not in SGLANG_SHARED_FUSION_CUDA or ep > 1:
        return False
    return not (
        architecture in SGLANG_TRTLLM_MOE_ARCHITECTURES
        and precision in SGLANG_TRTLLM_MOE_PRECISIONS
    )


def mlp_ops(spec: TransformerSpec, *, b: int, s: int, shard: Shard, dt: Dtypes,
            moe: bool, fused_shared: bool = False) -> list[Op]:  # fmt: skip
    """Norm, dense MLP or MoE (router, dispatch, experts, shared experts), residual add;
    ``fused_shared``: the shared experts run as always-routed experts of the fused MoE
    (``engine_fuses_shared_experts``), not as dense GEMMs of their own."""
    d = spec.d_model
    t = b * s
    t_sp = max(1, t // shard.tp)
    ops = [_memop("mlp_norm", OpKind.NORM, t_sp * d, 1, 1, dt.act, flops_per_element=4)]
    if not moe:
        ops += _mlp("mlp", t, d, _split(spec.d_ff, shard.tp, "d_ff"), spec.gated_mlp, dt)
    else:
        e, k = spec.n_experts, spec.experts_per_token
        width = spec.moe_d_ff or spec.d_ff
        if e % shard.ep:
            raise PlanError(f"ep={shard.ep} does not divide {spec.name}'s {e} experts")
        local_experts = e // shard.ep
        etp = shard.expert_tp
        # Tokens this rank routes: under sequence parallelism each tensor-parallel rank holds
        # t / tp of them, gathered over the etp ranks that split one expert (Megatron's
        # token dispatcher); etp = tp gives all t.
        routed = max(1, t * etp // shard.tp)
        # Balanced routing: each rank receives as many token-expert pairs as it sends. With
        # few tokens (decode) not every expert is hit: t tokens choosing k of E uniformly
        # touch E (1 - (1 - k/E)^t) distinct experts in expectation, and only those
        # experts' weights are read (grouped GEMMs skip empty groups).
        active = active_experts(local_experts, routed * shard.ep, k, e)
        # fused shared experts: each is one more expert of the grid that every token this
        # rank routes picks (its weights split over etp like a routed expert's, read once)
        shared_n = spec.n_shared_experts if fused_shared else 0
        pairs = routed * (k + shared_n)
        per_expert = max(1, round(pairs / (active + shared_n)))
        # router logits in the activation dtype (Megatron's default moe_router_dtype)
        ops.append(_matmul("router", t, e, d, Dtypes(matmul=dt.act, act=dt.act)))
        ops.append(_memop("router_topk", OpKind.SORT, t * e, 1, 0.1, dt.act, 4))
        # dispatch: an indexed gather of each token's k copies into expert order; combine: a
        # weighted scatter-add back (Megatron's token permutation, MaxText's sort/unsort)
        permute = _memop("moe_permute", OpKind.GATHER, pairs * d, 1, 1, dt.act, 0)
        # the expert GEMMs carry the routing that loads them (the kernels pad each
        # expert's rows to their row tile: gpu.py), the dispatch and combine the routing
        # they move rows for (tpu.py: an engine that moves every token's rows on every rank)
        routing = ExpertRouting(tokens=routed * shard.ep, topk=k, experts=e, local=local_experts,
                                shared=shared_n, shared_rows=routed)  # fmt: skip
        # the experts' stored weight dtype: a W4A16 fused-MoE kernel that gathers its rows in
        # the up-projection's prologue writes no permuted copy (gpu.py _W4A16_FUSED_OPS)
        ops.append(replace(permute, weight=expert_dtypes(spec, dt).weight, routing=routing))
        experts = _mlp(
            "expert",
            per_expert,
            d,
            _split(width, etp, "moe_d_ff"),
            spec.gated_mlp,
            expert_dtypes(spec, dt),
            batch=active + shared_n,
        )
        experts = [
            replace(op, routing=routing) if op.kind is OpKind.MATMUL else op for op in experts
        ]
        if spec.fp8_weight_block:
            # a block-scaled fp8 checkpoint's experts keep their per-block scales at fp8
            experts = [
                replace(op, block_scaled=True) if op.kind is OpKind.MATMUL and op.dtype == "fp8"
                else op for op in experts
            ]  # fmt: skip
        ops += experts
        unpermute = _memop("moe_unpermute", OpKind.SCATTER, pairs * d, 1, 1, dt.act, 1)
        ops.append(replace(unpermute, routing=routing))
        if spec.n_shared_experts and not shared_n:
            shared = _split(spec.n_shared_experts * width, shard.tp, "shared experts")
            ops += _mlp("shared_expert", t, d, shared, spec.gated_mlp, dt)
    ops += post_norm_ops("mlp_post_norm", spec, t_sp, dt)
    ops.append(_memop("mlp_residual", OpKind.ELEMENTWISE, t_sp * d, 2, 1, dt.act))
    return ops


def post_norm_ops(name: str, spec: TransformerSpec, t_sp: int, dt: Dtypes) -> list[Op]:
    """The RMSNorm a sandwich-norm model (``TransformerSpec.post_norms``: Gemma 2 and 3) runs
    on a block's output before its residual add, over the ``t_sp`` tokens the rank holds: a
    kernel of its own: vLLM's Gemma3DecoderLayer.forward (vllm/model_executor/models/
    gemma3.py) calls ``post_attention_layernorm(hidden_states)`` and
    ``post_feedforward_layernorm`` without the residual, which the next pre-norm adds
    (``ENGINE_FUSED_OPS``)."""
    if not spec.post_norms:
        return []
    return [_memop(name, OpKind.NORM, t_sp * spec.d_model, 1, 1, dt.act, flops_per_element=4)]


# Eager kernels of the gpt-oss GLU clamp (``unfused_expert_epilogues``): the gate half's
# clamp, the linear half's clamp and the ``torch.cat`` (weighted_bias_quick_geglu_impl,
# megatron/core/fusions/fused_bias_geglu.py); its backward is timed from the same op.
GLU_CLAMP_KERNELS = 3


def unfused_expert_epilogues(ops: tuple[Op, ...], spec: TransformerSpec) -> tuple[Op, ...]:
    """Forward ops with the memory passes Megatron-Core's TEGroupedMLP runs outside any fused
    kernel for gpt-oss's experts (a GLU clamp, expert biases) inserted where they run.

    Sources (github:NVIDIA/Megatron-LM, the same code at 92c8482e, 8f1c2f8a, 44151194, d1410e15
    and 24bad8e6: the Megatron-Core of the NeMo 25.11 to 26.08 containers):

    * clamp (``glu_clamp``): ``weighted_bias_quick_geglu_impl`` (megatron/core/fusions/
      fused_bias_geglu.py) clamps the fc1 output's gate half (``max=limit``) and linear half
      (+-limit) and ``torch.cat``s them back before the torch.compile'd quick-GeGLU, three
      eager kernels: the [rows, 2F] tensor is read and written twice (reads 2, writes 2).
      Their backward (autograd's clamp masks and ``where`` per half, then the cat of the
      halves' gradients) is about twice that, the module's generic rule.
    * fc2 bias (``expert_bias``): ``TEGroupedMLP`` builds fc2 with ``skip_bias_add=True`` and
      adds the bias itself in ``_apply_bias`` (megatron/core/transformer/moe/experts.py): per
      local expert ``t + b * p`` (the bias times each row's routing prob, bf16 like the
      router's logits: an [rows, D] product written, then added to fc2's output) and a
      ``torch.cat`` of the experts' results: reads 3, writes 3 of [rows, D]. Backward: mul's
      two reductions (grad x p summed over rows for the bias, grad x b over D for the probs:
      3 passes each) and split's cat of the experts' gradients (2): 8 passes, 4/3 of the
      forward (``_BACKWARD_BYTES_RATIO``).
    * fc1 bias: none of its own. fc1 keeps ``skip_bias_add=False``, so Transformer Engine's
      GroupedLinear adds it in the GEMM and fuses its gradient with the wgrad GEMM (bf16) or
      the dY quantisation (``tex.bgrad_quantize``, fp8; transformer_engine/pytorch/module/
      grouped_linear.py @5671fd36).

    Serving engines and Transformer Engine's fused grouped MLP (``ScaledClampedQGeGLU`` and
    GroupedLinear ``scale_bias``, Megatron's ``use_transformer_engine_op_fuser``) fuse both;
    callers apply this only to the unfused path."""
    if not (spec.glu_clamp or spec.expert_bias):
        return ops
    out: list[Op] = []
    act_dtype = ""
    for op in ops:
        if op.name == "expert_act":
            act_dtype = op.dtype
            if spec.glu_clamp and spec.gated_mlp:
                # the GLU's input: rows x 2F, twice the activation's rows x F output
                glu_in = 2.0 * op.shape[0]
                clamp = _memop("expert_glu_clamp", OpKind.ELEMENTWISE, glu_in, 2, 2, op.dtype)
                out.append(replace(clamp, kernels=GLU_CLAMP_KERNELS))
        out.append(op)
        if op.name == "expert_down" and spec.expert_bias and op.mnk is not None and act_dtype:
            rows, d, _ = op.mnk
            bias = _memop("expert_bias", OpKind.ELEMENTWISE, float(op.batch * rows * d), 3, 3,
                          act_dtype)  # fmt: skip
            # per local expert a product and an add, then one cat of the experts' results
            out.append(replace(bias, kernels=2 * op.batch + 1))
    return tuple(out)


def active_experts(local_experts: int, tokens: int, k: int, n_experts: int) -> int:
    """Experts of ``local_experts`` one rank runs for ``tokens`` tokens each routed to ``k``
    of ``n_experts`` (uniform routing: the expected number of distinct experts hit)."""
    miss = (1.0 - k / n_experts) ** tokens
    return max(1, min(local_experts, round(local_experts * (1.0 - miss) + 0.499)))


def _split(n: int, parts: int, what: str) -> int:
    if n % parts:
        raise PlanError(f"tp={parts} does not divide {what}={n}; choose a tp that divides it")
    return n // parts


def attention_dtypes(spec: TransformerSpec, dt: Dtypes) -> Dtypes:
    """The dtypes of the attention projections: bf16 when a checkpoint that quantises only
    its experts (``TransformerSpec.expert_quant``) runs in its 4-bit format, else ``dt``."""
    if spec.expert_quant and dtype_bytes(dt.weight_dtype) < 1:
        return Dtypes.for_precision("bf16")
    return dt


def expert_dtypes(spec: TransformerSpec, dt: Dtypes) -> Dtypes:
    """The dtypes of the routed experts: stored in the checkpoint's own 4-bit format
    (``expert_quant``, e.g. MXFP4's 4.25 bits) when ``dt`` runs them at 4 bits."""
    if spec.expert_quant in DTYPE_BYTES and dtype_bytes(dt.weight_dtype) < 1:
        return replace(dt, weight=spec.expert_quant)
    return dt


def layer_ops(spec: TransformerSpec, *, b: int, seq_len: int, shard: Shard, precision: str,
              moe: bool, sliding: bool | None = None,
              flash: bool = True, serving: bool = False,
              fused_shared: bool = False) -> tuple[Op, ...]:  # fmt: skip
    """Forward ops of one decoder layer for a micro-batch of ``b`` sequences on one chip;
    ``sliding`` picks a sliding-window or a global layer (``None``: the first layer's);
    ``flash`` False runs the attention core unfused (``unfused_attention``); ``serving``:
    as a serving engine runs the layer (``attention_ops`` fused_qkv_a); ``fused_shared``:
    the shared experts inside the fused MoE (``engine_fuses_shared_experts``)."""
    if seq_len % shard.cp:
        raise PlanError(f"cp={shard.cp} does not divide seq_len={seq_len}")
    dt = Dtypes.for_precision(precision)
    s = seq_len // shard.cp
    # Under cp each chip's s/cp queries meet all S keys; causal_pairs(S/cp, S) = S^2/(2 cp),
    # exactly its share of the causal work (load-balanced ring, Liu et al. 2023).
    window = layer_window(spec, sliding)
    if is_linear_kind(spec, sliding):
        ops = linear_attention_ops(spec, b=b, s=s, shard=shard, dt=attention_dtypes(spec, dt))
    else:
        ops = attention_ops(spec, b=b, s=s, shard=shard, dt=attention_dtypes(spec, dt),
                            s_kv=seq_len, window=window, flash=flash,
                            fused_qkv_a=serving)  # fmt: skip
    ops += mlp_ops(spec, b=b, s=s, shard=shard, dt=dt, moe=moe, fused_shared=fused_shared)
    return block_scaled_ops(spec, ops)


def block_scaled_ops(spec: TransformerSpec, ops: list[Op]) -> tuple[Op, ...]:
    """``ops`` with every fp8 GEMM of a block-scaled fp8 checkpoint (``fp8_weight_block``:
    DeepSeek-V3/R1's 128 x 128 weight blocks) marked ``block_scaled``: its dense projections
    run the same per-block-scale kernels as its experts (gpu.py)."""
    if not spec.fp8_weight_block:
        return tuple(ops)
    return tuple(
        replace(op, block_scaled=True)
        if op.kind is OpKind.MATMUL and op.dtype == "fp8" and not op.block_scaled
        else op
        for op in ops
    )


def embedding_ops(spec: TransformerSpec, *, b: int, seq_len: int, shard: Shard,
                  precision: str) -> tuple[Op, ...]:  # fmt: skip
    """Token embedding look-up (a gather of T rows of D)."""
    dt = Dtypes.for_precision(precision)
    t = b * seq_len // shard.cp
    return (_memop("embedding", OpKind.GATHER, t * spec.d_model, 1, 1, dt.act, 0),)


def head_ops(spec: TransformerSpec, *, b: int, seq_len: int, shard: Shard, precision: str,
             loss: bool = True, quantised_checkpoint: bool = False) -> tuple[Op, ...]:  # fmt: skip
    """Final norm, LM head (vocab split over tp) and the fp32 cross-entropy loss; a served
    ``quantised_checkpoint`` keeps its LM head in bf16 (``head_dtypes``)."""
    dt = Dtypes.for_precision(precision)
    t = b * seq_len // shard.cp
    v = -(-spec.vocab_size // shard.tp)
    ops = [
        _memop("final_norm", OpKind.NORM, max(1, t // shard.tp) * spec.d_model, 1, 1, dt.act, 4),
        _matmul(
            "lm_head", t, v, spec.d_model, head_dtypes(precision) if quantised_checkpoint else dt
        ),
    ]
    if loss:
        # Upcast logits, softmax, log, gather the target: ~read twice, write once in fp32.
        ops.append(_memop("loss", OpKind.SOFTMAX, t * v, 2, 1, LOSS_DTYPE, 5))
    return tuple(ops)


# A quantised checkpoint keeps its LM head in bf16: ModelOpt's fp8/NVFP4 and llm-compressor's
# recipes exclude lm_head (ignore=["lm_head"]), AWQ/GPTQ leave it unquantised. The embedding
# is a bf16 table as well (serving memory counts both at 2 bytes). (Megatron's fp8 training
# also leaves its output layer, a plain ColumnParallelLinear, in bf16; training still times
# it in fp8 until the fitted sustained_tensor_fraction is refitted with it.)
HEAD_WEIGHT_BYTES = 2.0


def head_dtypes(precision: str) -> Dtypes:
    """The dtypes of the LM head at ``precision``: bf16 unless the model runs wider."""
    dt = Dtypes.for_precision(precision)
    if dtype_bytes(dt.weight_dtype) >= HEAD_WEIGHT_BYTES and dt.matmul == dt.weight_dtype:
        return dt
    return Dtypes.for_precision("bf16")


def backward_ops(forward: tuple[Op, ...]) -> tuple[Op, ...]:
    """The backward of a forward op list: dgrad and wgrad for each matmul (same FLOPs each),
    2.5x for flash attention, twice the traffic for memory-bound ops."""
    out: list[Op] = []
    for op in forward:
        if op.kind is OpKind.MATMUL and op.mnk is not None:
            m, n, k = op.mnk
            a = op.bytes_read / max(1, op.batch) / max(1, m * k + k * n)  # input bytes/elem
            o = op.bytes_written / max(1, op.batch) / max(1, m * n)
            dgrad = replace(
                op,
                name=f"{op.name}_dgrad",
                mnk=(m, k, n),
                shape=(m, k),
                backward=True,
                bytes_read=op.batch * (m * n + n * k) * a,
                bytes_written=op.batch * m * k * o,
            )
            wgrad = replace(
                op,
                name=f"{op.name}_wgrad",
                mnk=(k, n, m),
                shape=(k, n),
                backward=True,
                bytes_read=op.batch * (m * k + m * n) * a,
                bytes_written=op.batch * k * n * o,
            )
            if op.dtype == "fp8":
                # dY arrives in bf16 from the next op's backward: quantise it (and its
                # transpose) for the dgrad and wgrad fp8 GEMMs
                act = Dtypes(matmul="fp8", act="bf16")
                out += _fp8_cast(f"{op.name}_dy_cast", op.batch * m * n, act)
            out += [dgrad, wgrad]
        elif op.kind is OpKind.ATTENTION:
            out.append(
                replace(
                    op,
                    name=f"{op.name}_bwd",
                    backward=True,
                    flops=op.flops * ATTENTION_BACKWARD_FLOPS_RATIO,
                    # reads Q, K, V, O, dO; writes dQ, dK, dV
                    bytes_read=op.bytes_read + 2 * op.bytes_written,
                    bytes_written=op.bytes_read,
                )
            )
        elif op.kind is OpKind.GATHER:
            # embedding backward: scatter-add of T rows into the table
            out.append(replace(op, name=f"{op.name}_bwd", kind=OpKind.SCATTER, backward=True))
        else:
            r = _BACKWARD_BYTES_RATIO.get(op.name, ELEMENTWISE_BACKWARD_BYTES_RATIO)
            out.append(
                replace(
                    op,
                    name=f"{op.name}_bwd",
                    backward=True,
                    flops=op.flops * r,
                    bytes_read=op.bytes_read * r,
                    bytes_written=op.bytes_written * r,
                )
            )
    return tuple(out)


def selective_recompute_ops(forward: tuple[Op, ...]) -> tuple[Op, ...]:
    """What selective activation recomputation re-runs: the attention core and the cheap
    memory-bound ops (norms, activation functions, rope), not the projections
    (Korthikanti et al. 2022 §5; MaxText's 'minimal' remat policy keeps matmul outputs)."""
    return tuple(op for op in forward if op.kind is not OpKind.MATMUL or is_attention_core(op))


# What Megatron-Core's ``recompute_modules`` layernorm and moe_act re-run in the backward
# (``recompute_granularity selective``; CheckpointWithoutOutput around the input and pre-MLP
# layernorms and around TEGroupedMLP's activation function, megatron/core/transformer/
# transformer_layer.py and moe/experts.py): the two norms and the experts' activation with
# the GLU clamp it runs inside (gpt-oss). Megatron-Bridge's gpt-oss recipes on GB200, B200
# and H100 set it (gpt_oss_workload_base_configs.py @00b7660be0 and @df0289c180).
NORM_ACT_RECOMPUTE_OPS = frozenset({"attn_norm", "mlp_norm", "expert_glu_clamp", "expert_act"})


def norm_act_recompute_ops(forward: tuple[Op, ...]) -> tuple[Op, ...]:
    """What norm + MoE-activation recomputation (plan recompute=norm_act) re-runs: the
    layer's two norms and its experts' activation function (``NORM_ACT_RECOMPUTE_OPS``)."""
    return tuple(op for op in forward if op.name in NORM_ACT_RECOMPUTE_OPS)


def decode_layer_ops(spec: TransformerSpec, *, batch: int, context: int, shard: Shard,
                     precision: str, kv_dtype: str, moe: bool,
                     sliding: bool | None = None,
                     fused_shared: bool = False) -> tuple[Op, ...]:  # fmt: skip
    """One decode step of one layer: ``batch`` new tokens attending to ``context`` cached
    tokens each (at most the window in a sliding layer). Projections are skinny GEMMs
    (M = batch) that read every weight; attention reads the layer's whole KV cache."""
    dt = Dtypes.for_precision(precision)
    if is_linear_kind(spec, sliding):
        ops = linear_attention_ops(spec, b=batch, s=1, shard=shard,
                                   dt=attention_dtypes(spec, dt), decode=True)  # fmt: skip
        ops += mlp_ops(spec, b=batch, s=1, shard=shard, dt=dt, moe=moe,
                       fused_shared=fused_shared)  # fmt: skip
        return block_scaled_ops(spec, ops)
    window = layer_window(spec, sliding)
    ctx = min(context, window) if window else context
    ops = attention_ops(spec, b=batch, s=1, shard=shard, dt=attention_dtypes(spec, dt), s_kv=ctx,
                        fused_qkv_a=True, absorbed=True)  # fmt: skip
    ops = [_decode_indexer(op, spec, batch, ctx) if op.name == INDEXER else
           _decode_attention(op, spec, batch, _attended(spec, ctx), shard, kv_dtype)
           if op.kind is OpKind.ATTENTION else op for op in ops]  # fmt: skip
    ops += mlp_ops(spec, b=batch, s=1, shard=shard, dt=dt, moe=moe, fused_shared=fused_shared)
    return block_scaled_ops(spec, ops)


def projection_op(name: str, tokens: int, n: int, k: int, precision: str) -> Op:
    """A dense projection of ``tokens`` tokens from ``k`` to ``n`` features at ``precision``
    (a speculative-decoding drafter's fusing layer, perf/step/serve.py)."""
    return _matmul(name, tokens, n, k, Dtypes.for_precision(precision))


def kv_cached_tokens(spec: TransformerSpec, context: int, layers: int) -> float:
    """Token-layers of KV cache one sequence of ``context`` tokens holds over ``layers``
    decoder layers: a sliding layer keeps only its last ``sliding_window`` tokens (vLLM and
    TensorRT-LLM free the rest) and a linear-attention layer none (its state is
    ``recurrent_state_bytes``); layers share the pattern in proportion."""
    n_local = spec.n_local_layers
    if not n_local:
        return float(context * layers)
    windowed = min(context, spec.sliding_window)
    per_layer = (n_local * windowed + (spec.n_layers - n_local) * context) / spec.n_layers
    return per_layer * layers


def kv_bytes_per_token_per_layer(spec: TransformerSpec, tp: int, kv_dtype: str) -> float:
    """KV-cache bytes one chip holds per token per layer (MLA caches the shared latent;
    sparse attention adds its indexer's keys, ``index_cache_bytes_per_token``)."""
    return attention_cache_bytes_per_token(spec, tp, kv_dtype) + index_cache_bytes_per_token(spec)


def attention_cache_bytes_per_token(spec: TransformerSpec, tp: int, kv_dtype: str) -> float:
    """The attention's own KV-cache bytes per token per layer on one chip."""
    b = dtype_bytes(kv_dtype)
    if spec.uses_mla:
        return (spec.kv_lora_rank + spec.qk_rope_head_dim) * b
    _, hkv = heads_per_rank(spec, tp)
    return 2 * hkv * spec.head_dim * b


def _attended(spec: TransformerSpec, context: int) -> int:
    """Cached tokens one decode query's attention reads: sparse attention's top-k at most."""
    return min(context, spec.index_topk) if spec.uses_dsa else context


def _decode_indexer(op: Op, spec: TransformerSpec, batch: int, context: int) -> Op:
    """The indexer of a decode step: each sequence's one query scores all its ``context``
    cached index keys (``causal_pairs`` counts half of them, a whole prompt's average)."""
    return _index_scorer(spec, b=batch, s=1, kv_len=context, pairs=context, act=op.dtype)


def _decode_attention(op: Op, spec: TransformerSpec, batch: int, context: int, shard: Shard,
                      kv_dtype: str) -> Op:  # fmt: skip
    """Decode attention is a read of the cache: memory-bound, flops 4 x ctx x heads x Dh
    (``context`` is what this layer attends to: already cut to its window). The cache's
    stored dtype rides on ``weight`` (the operand the kernel reads in a dtype of its own:
    an fp8 cache may be multiplied in fp8, ``GpuModel``)."""
    h, _ = heads_per_rank(spec, shard.tp)
    ctx = context
    cache = batch * ctx * attention_cache_bytes_per_token(spec, shard.tp, kv_dtype)
    dh = spec.head_dim if not spec.uses_mla else spec.kv_lora_rank + spec.qk_rope_head_dim
    return replace(
        op,
        flops=4.0 * batch * ctx * h * dh,
        bytes_read=cache + op.bytes_written,
        mnk=(1, ctx, dh),
        batch=batch * h,
        weight=kv_dtype if kv_dtype != op.dtype else "",
        window=0,  # the read is already cut to what the query attends to
    )


# ---- parameter counts per layer (for memory and weight traffic) ----------------------


def attention_params(spec: TransformerSpec) -> float:
    """Parameters of one attention block (unsharded)."""
    d = spec.d_model
    if spec.uses_mla:
        qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        v = spec.v_head_dim or spec.head_dim
        h = spec.n_heads
        q = (d * spec.q_lora_rank + spec.q_lora_rank * h * qk) if spec.q_lora_rank else d * h * qk
        kv = d * (spec.kv_lora_rank + spec.qk_rope_head_dim)
        kv += spec.kv_lora_rank * h * (spec.qk_nope_head_dim + v)
        return float(q + kv + h * v * d + indexer_params_per_layer(spec))
    full = attention_params_per_layer(spec)  # q, k, v, o and an output gate
    if not spec.uses_linear_attention:
        return full
    # a hybrid's layers differ: the mean over its full and linear-attention layers
    linear = spec.n_linear_layers
    return (full * (spec.n_layers - linear) + linear * linear_attention_params_per_layer(spec)) / (
        spec.n_layers
    )


def mlp_params(spec: TransformerSpec, *, moe: bool) -> tuple[float, float]:
    """(dense-or-shared params, routed-expert params) of one MLP block (unsharded)."""
    mats = 3 if spec.gated_mlp else 2
    d = spec.d_model
    if not moe:
        return float(mats * d * spec.d_ff), 0.0
    width = spec.moe_d_ff or spec.d_ff
    shared = mats * d * width * spec.n_shared_experts + d * spec.n_experts  # + router
    return float(shared), float(mats * d * width * spec.n_experts)


def embedding_params(spec: TransformerSpec) -> tuple[float, float]:
    """(input embedding, LM head) parameters; the head is shared when tied."""
    e = float(spec.vocab_size * spec.d_model)
    return e, 0.0 if spec.tied_embeddings else e
