"""Parameters, FLOPs per token and memory of a ``TransformerSpec``: pure functions.

Shapes: L = decoder layers, D = width, H = heads, Hkv = KV heads, Dh = head dim,
F = MLP width, V = vocabulary, S = sequence length, E = routed experts, k = active experts.

Counting convention (the one ``validate/data/public/README.md`` uses, and Megatron-LM's
``num_floating_point_operations``; Narayanan et al. 2021, Sec. 5.1, without its vocabulary
padding):

    training FLOPs per token = 6 x (non-embedding matmul params + LM head params)
                             + 12 x L x S x (H x Dh)

* 6 = 2 FLOPs per multiply-add x 3 passes (forward; backward for activations; backward
  for weights). The forward pass alone is 1/3 of it.
* The attention term is QK^T plus PV, 2 x S x H x Dh FLOPs each per token forward, times 3
  for training. It is *non-causal*: every token is charged all S positions.
  ``causal_halving=True`` halves the causal self-attention part (the masked half skipped,
  as flash attention does; MaxText's count since 2023-11).
* The LM head counts even when tied to the input embedding: the matmul runs either way.
  The input embedding is a look-up and costs no FLOPs.
* MoE: the active matmul weights only: k of E routed experts, the shared experts, the
  router. MLA (DeepSeek): the low-rank projections count as matmuls, and attention uses
  Dqk = qk_nope + qk_rope for QK^T and Dv = v_head_dim for PV: 6 x L x S x H x (Dqk + Dv).
* Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): a linear-attention layer counts its
  projections (q, k, v, the output gate, beta and alpha, the conv taps, out_proj) and no
  attention term (its delta rule is linear in S, left out like norms); only the
  full-attention layers add the S-proportional term and cache tokens.
* Encoder-decoder (T5): per position of an input and a target sequence both S long;
  attention layers are encoder self + decoder self + decoder cross.
* Sliding-window and chunked attention are counted as full attention (as MaxText and
  Megatron-LM do), on every layer, whatever ``TransformerSpec.sliding_window_pattern``
  says: ``model_flops_per_token`` is the validation FLOP convention (published TFLOP/s are
  converted to tokens/s with it) and does not change. The performance model
  (``perf/ops/layers.py``) times what runs: a sliding layer's attention covers min(S, window)
  keys per query (in the kernel's whole tiles: ``layers.block_pairs``) and its KV cache
  holds min(context, window) tokens. Norms, activations,
  softmax and residual adds are not in the headline number (``vector_flops_per_token``
  estimates them for the op mix).

Parameters count the weights of matmuls and embeddings; biases and norm gains (< 0.1 %
of these models) are left out.
"""

from __future__ import annotations

from chipwise.errors import WorkloadError
from chipwise.units import DTYPE_BYTES
from chipwise.workload.ir import TransformerSpec

# Training memory per parameter with Adam in mixed precision: bf16/fp16 weights (2) and
# gradients (2) plus fp32 master weights, momentum and variance (4 + 4 + 4).
# Rajbhandari et al. 2020 (ZeRO), Sec. 3.1: "2Ψ + 2Ψ + KΨ" with K = 12, i.e. 16 bytes.
# Frameworks that keep an fp32 gradient accumulation buffer need 4 more (~18-20 B/param).
ADAM_MIXED_BYTES_PER_PARAM = 16.0

# Vector (non-tensor-core) work per element, forward; rough counts used only for the op
# mix, our own convention: one FLOP per elementwise arithmetic op.
NORM_FLOPS_PER_ELEMENT = 4.0  # RMSNorm: square, accumulate, scale by rsqrt, gain
RESIDUAL_FLOPS_PER_ELEMENT = 1.0  # one add per residual connection
ACTIVATION_FLOPS_PER_ELEMENT = 1.0  # GELU/SiLU as one op; the gate multiply is one more
SOFTMAX_FLOPS_PER_SCORE = 5.0  # scale, max, subtract, exp, divide


def _v_head_dim(spec: TransformerSpec) -> int:
    return spec.v_head_dim or spec.head_dim


def attention_params_per_layer(spec: TransformerSpec) -> float:
    """Matmul weights of one attention block (Q, K, V, O projections; MLA's low-rank ones)."""
    d, h = spec.d_model, spec.n_heads
    if spec.uses_mla:
        q_width = h * spec.head_dim  # head_dim = qk_nope + qk_rope for MLA
        q = d * spec.q_lora_rank + spec.q_lora_rank * q_width if spec.q_lora_rank else d * q_width
        kv_down = d * (spec.kv_lora_rank + spec.qk_rope_head_dim)
        kv_up = spec.kv_lora_rank * h * (spec.qk_nope_head_dim + _v_head_dim(spec))
        out = h * _v_head_dim(spec) * d
        return float(q + kv_down + kv_up + out) + indexer_params_per_layer(spec)
    # an output gate (attn_output_gate: Qwen3-Next, Qwen3.5) widens q_proj by H x Dh
    gate = d * h * spec.head_dim if spec.attn_output_gate else 0
    qo = 2 * d * h * spec.head_dim
    kv = 2 * d * spec.n_kv_heads * spec.head_dim
    return float(qo + kv + gate)


def linear_attention_params_per_layer(spec: TransformerSpec) -> float:
    """Weights of one Gated DeltaNet block (``TransformerSpec.full_attention_interval``):
    q, k, v and the output gate z (in_proj_qkvz), beta and alpha per value head
    (in_proj_ba), the depthwise convolution's taps and the output projection; 0 without
    linear attention."""
    if not spec.uses_linear_attention:
        return 0.0
    d = spec.d_model
    key = spec.linear_k_heads * spec.linear_k_head_dim
    value = spec.linear_v_heads * spec.linear_v_head_dim
    conv = (2 * key + value) * spec.linear_conv_kernel
    return float(d * (2 * key + 2 * value) + d * 2 * spec.linear_v_heads + conv + value * d)


def indexer_params_per_layer(spec: TransformerSpec) -> float:
    """Matmul weights of one layer's sparse-attention indexer (DeepSeek-V3.2: wq_b from the
    q latent, wk and weights_proj from the hidden state); 0 for dense attention."""
    if not spec.uses_dsa:
        return 0.0
    heads, width = spec.index_n_heads, spec.index_head_dim
    q_in = spec.q_lora_rank or spec.d_model
    return float(q_in * heads * width + spec.d_model * (width + heads))


def mlp_params(spec: TransformerSpec, width: int) -> float:
    """Matmul weights of one MLP of hidden width ``width`` (3 matrices if gated, else 2)."""
    return float((3 if spec.gated_mlp else 2) * spec.d_model * width)


def moe_params_per_layer(spec: TransformerSpec, *, active: bool = False) -> float:
    """Routed experts (all E, or the k active ones), shared experts and the router."""
    routed = spec.experts_per_token if active else spec.n_experts
    expert = mlp_params(spec, spec.moe_d_ff)
    router = spec.d_model * spec.n_experts
    return (routed + spec.n_shared_experts) * expert + router


def _matmul_params(spec: TransformerSpec, *, active: bool) -> float:
    attention = attention_params_per_layer(spec)
    linear = linear_attention_params_per_layer(spec)
    dense = mlp_params(spec, spec.d_ff)
    total = 0.0
    for layer in range(spec.n_layers):
        ffn = moe_params_per_layer(spec, active=active) if spec.is_moe_layer(layer) else dense
        total += (linear if spec.is_linear_layer(layer) else attention) + ffn
    if spec.n_encoder_layers:
        # Encoder layers (self-attention + MLP) and each decoder layer's cross-attention.
        total += spec.n_encoder_layers * (attention + dense) + spec.n_layers * attention
    return total


def matmul_params(spec: TransformerSpec) -> float:
    """Non-embedding matmul weights, every expert included."""
    return _matmul_params(spec, active=False)


def active_matmul_params(spec: TransformerSpec) -> float:
    """Non-embedding matmul weights one token uses (k of E routed experts)."""
    return _matmul_params(spec, active=True)


def embedding_params(spec: TransformerSpec) -> float:
    """Input token embedding plus a learned position table, if any."""
    return float((spec.vocab_size + spec.learned_positions) * spec.d_model)


def lm_head_params(spec: TransformerSpec) -> float:
    """Weights of the output projection (V x D), whether or not tied to the embedding."""
    return float(spec.vocab_size * spec.d_model)


def params_total(spec: TransformerSpec) -> float:
    """All parameters: embeddings, every matmul, and the LM head unless tied."""
    head = 0.0 if spec.tied_embeddings else lm_head_params(spec)
    return embedding_params(spec) + matmul_params(spec) + head


def params_active(spec: TransformerSpec) -> float:
    """Parameters one token uses: as ``params_total`` with only k of E routed experts.

    Embeddings count (as in Mistral's 12.9B for Mixtral 8x7B); OpenAI's gpt-oss figures
    leave the input embedding out.
    """
    head = 0.0 if spec.tied_embeddings else lm_head_params(spec)
    return embedding_params(spec) + active_matmul_params(spec) + head


def attention_flops_per_token(
    spec: TransformerSpec, seq_len: int, *, causal_halving: bool = False
) -> float:
    """Training FLOPs per token of QK^T and PV: 6 x S x H x (Dqk + Dv) per attention layer."""
    _check_seq_len(seq_len)
    per_layer = 6.0 * seq_len * spec.n_heads * (spec.head_dim + _v_head_dim(spec))
    self_scale = 0.5 if causal_halving and spec.causal else 1.0
    # linear-attention layers have no QK^T over the sequence (their delta rule's FLOPs
    # are linear in S and, like norms, left out of the convention)
    layers = (spec.n_layers - spec.n_linear_layers) * self_scale
    if spec.n_encoder_layers:
        layers += spec.n_encoder_layers + spec.n_layers  # encoder self + decoder cross
    return per_layer * layers


def model_flops_per_token(
    spec: TransformerSpec, seq_len: int, *, causal_halving: bool = False
) -> float:
    """Training (forward + backward) FLOPs per token, by the module's convention."""
    matmul = 6.0 * (active_matmul_params(spec) + lm_head_params(spec))
    return matmul + attention_flops_per_token(spec, seq_len, causal_halving=causal_halving)


def forward_flops_per_token(
    spec: TransformerSpec, seq_len: int, *, causal_halving: bool = False
) -> float:
    """Forward-only FLOPs per token: one third of ``model_flops_per_token``."""
    return model_flops_per_token(spec, seq_len, causal_halving=causal_halving) / 3.0


def vector_flops_per_token(spec: TransformerSpec, seq_len: int) -> float:
    """Rough forward FLOPs per token that run off the tensor cores / MXU.

    Norms (2 per layer + 1), residual adds (2 per layer), MLP activations (and gate
    multiplies), softmax over H x S scores per layer; the constants above say how much
    each element costs. Meant for the op mix, not for timing.
    """
    _check_seq_len(seq_len)
    d = spec.d_model
    act_per_width = ACTIVATION_FLOPS_PER_ELEMENT + (1.0 if spec.gated_mlp else 0.0)
    total = NORM_FLOPS_PER_ELEMENT * d  # final norm
    for layer in range(spec.n_layers):
        if spec.is_moe_layer(layer):
            active = spec.experts_per_token + spec.n_shared_experts
            mlp_width = active * spec.moe_d_ff
        else:
            mlp_width = spec.d_ff
        total += (2 * NORM_FLOPS_PER_ELEMENT + 2 * RESIDUAL_FLOPS_PER_ELEMENT) * d
        total += act_per_width * mlp_width
        total += SOFTMAX_FLOPS_PER_SCORE * spec.n_heads * seq_len
    if spec.n_encoder_layers:
        per_encoder_layer = (
            (2 * NORM_FLOPS_PER_ELEMENT + 2 * RESIDUAL_FLOPS_PER_ELEMENT) * d
            + act_per_width * spec.d_ff
            + SOFTMAX_FLOPS_PER_SCORE * spec.n_heads * seq_len
        )
        cross = (NORM_FLOPS_PER_ELEMENT + RESIDUAL_FLOPS_PER_ELEMENT) * d + (
            SOFTMAX_FLOPS_PER_SCORE * spec.n_heads * seq_len
        )
        total += spec.n_encoder_layers * per_encoder_layer + spec.n_layers * cross
    return total


def tensor_flops_share(spec: TransformerSpec, seq_len: int) -> float:
    """Share of forward FLOPs in matmuls and attention (tensor cores / MXU)."""
    tensor = forward_flops_per_token(spec, seq_len)
    return tensor / (tensor + vector_flops_per_token(spec, seq_len))


def kv_cache_bytes_per_token(spec: TransformerSpec, dtype: str = "bf16") -> float:
    """KV-cache bytes one token of context holds, over all decoder layers.

    GQA/MHA: 2 (K and V) x L x Hkv x Dh x bytes. MLA: L x (kv_lora_rank + qk_rope_head_dim)
    x bytes (the compressed latent plus the shared RoPE key). Encoder-only models keep no
    cache (0). Sliding windows are ignored here (an upper bound for long contexts; the
    serving memory model in ``perf`` keeps only the window in sliding layers); T5's
    cross-attention cache, which grows with the input, not the output, is left out.
    """
    if not spec.causal:
        return 0.0
    size = _dtype_size(dtype)
    if spec.uses_mla:
        return spec.n_layers * (spec.kv_lora_rank + spec.qk_rope_head_dim) * size
    # linear-attention layers cache no tokens (a fixed state per sequence instead)
    return 2.0 * (spec.n_layers - spec.n_linear_layers) * spec.n_kv_heads * spec.head_dim * size


def weight_bytes(spec: TransformerSpec, dtype: str = "bf16") -> float:
    """Bytes of all parameters stored in ``dtype``."""
    return params_total(spec) * _dtype_size(dtype)


def training_state_bytes(
    spec: TransformerSpec, bytes_per_param: float = ADAM_MIXED_BYTES_PER_PARAM
) -> float:
    """Weights, gradients and Adam state (no activations), default 16 bytes per parameter."""
    return params_total(spec) * bytes_per_param


def _dtype_size(dtype: str) -> float:
    if dtype not in DTYPE_BYTES:
        raise WorkloadError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def _check_seq_len(seq_len: int) -> None:
    if seq_len <= 0:
        raise WorkloadError(f"seq_len must be positive, got {seq_len}")
