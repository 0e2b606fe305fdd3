"""The ops a LoRA / QLoRA fine-tune adds to and removes from a training step.

Shape legend as in ``layers.py``; r = LoRA rank. For a frozen projection W (K x N) run on
M tokens, LoRA (Hu et al. 2021, §4.2) changes the step as follows:

* backward: the weight gradient (wgrad) GEMM of every frozen matmul is skipped; the input
  gradient (dgrad) still runs, since adapters below need it. Frozen matmuls cost forward +
  dgrad = 4 of full training's 6 FLOPs per parameter and token (the "2/3" of full
  fine-tuning; the LoRA paper measured a 25 % training speed-up on GPT-3 175B, §4.2);
* adapters: x @ A (M x r x K) then (x A) @ B (M x N x r) forward, their dgrad and wgrad
  backward: 3 x 2 x M x r x (K + N) FLOPs per adapted projection;
* QLoRA (Dettmers et al. 2023, §3): base weights are stored in 4-bit NF4 and dequantised
  to bf16 before each use (forward and dgrad; bitsandbytes' ``dequantize_4bit`` kernel
  writes the bf16 copy, the GEMM then reads it): a memory-bound op per frozen matmul per
  pass reading ``QLORA_WEIGHT_BYTES`` and writing 2 bytes per weight.
* the frozen embedding and LM head get no weight gradient either; the optimizer steps only
  the adapters.
"""

from __future__ import annotations

from dataclasses import replace

from chipwise.units import dtype_bytes
from chipwise.workload.ir import Op, OpKind, Training, TransformerSpec

# NF4 storage (QLoRA §3): 4 bits per weight, plus double-quantised block constants: fp8
# constants per 64-weight block and fp32 constants per 256 of those (8/64 + 32/(64*256) =
# 0.127 bits per weight). 4.127 bits = 0.516 bytes per weight.
QLORA_BLOCK = 64  # weights per absmax (bitsandbytes blocksize for 4-bit)
QLORA_ABSMAX_BLOCK = 256  # absmax values per second-level fp32 constant (double quantisation)
QLORA_WEIGHT_BYTES = (4 + 8 / QLORA_BLOCK + 32 / (QLORA_BLOCK * QLORA_ABSMAX_BLOCK)) / 8
# Dequantisation: a table look-up and a scale multiply per weight.
DEQUANT_FLOPS_PER_WEIGHT = 2.0
# LoRA adapter weights are kept in fp32 (PEFT upcasts adapters by default,
# ``autocast_adapter_dtype=True``, since PEFT 0.12): 4 B weight + 4 B grad + 8 B Adam m, v.
# QLoRA keeps them in bf16 (Dettmers et al. 2023 §3, "BFloat16 ... LoRA adapters";
# artidoro/qlora qlora.py casts the LoRA layers to bf16 under --bf16) with fp32 Adam
# states: 2 + 2 + 8.
ADAPTER_WEIGHT_BYTES = {"lora": 4.0, "qlora": 2.0}
ADAPTER_GRAD_BYTES = {"lora": 4.0, "qlora": 2.0}
ADAPTER_OPTIMIZER_BYTES = 8.0

# Which LoRA target modules sit on which base matmul of ``layers.py``, and the share of
# the matmul's N (output width) each one covers. Fused ops (qkv_proj, a gated MLP's up
# projection) hold several targets.
_FUSED_TARGETS: dict[str, tuple[str, ...]] = {
    "mlp_up": ("gate_proj", "up_proj"),
    "expert_up": ("gate_proj", "up_proj"),
    "shared_expert_up": ("gate_proj", "up_proj"),
}
_SINGLE_TARGET: dict[str, str] = {
    "q_proj": "q_proj",
    "q_down": "q_proj",
    "q_up": "q_proj",
    "kv_down": "k_proj",
    "kv_up": "v_proj",
    "o_proj": "o_proj",
    "mlp_down": "down_proj",
    "expert_down": "down_proj",
    "shared_expert_down": "down_proj",
}
FROZEN_WEIGHTLESS = frozenset({OpKind.ATTENTION})  # activations x activations: no weights


def _targets_of(op: Op, spec: TransformerSpec, gated: bool) -> list[tuple[str, int]]:
    """(target, output width N_t) of each adapter on the base matmul ``op``."""
    assert op.mnk is not None
    _, n, _ = op.mnk
    if op.name == "qkv_proj":
        # (h + 2 hkv) * dh, split as q : k : v = h : hkv : hkv (tp-sharded alike)
        h, hkv = spec.n_heads, spec.n_kv_heads
        unit = n / (h + 2 * hkv)
        return [("q_proj", int(unit * h)), ("k_proj", int(unit * hkv)), ("v_proj", int(unit * hkv))]
    if op.name in _FUSED_TARGETS:
        names = _FUSED_TARGETS[op.name] if gated else ("up_proj",)
        return [(t, n // len(names)) for t in names]
    if op.name in _SINGLE_TARGET:
        return [(_SINGLE_TARGET[op.name], n)]
    return []  # lm_head, router: never adapted


def _gemm(name: str, m: int, n: int, k: int, batch: int, dtype: str) -> Op:
    b = dtype_bytes(dtype)
    return Op(
        name=name,
        kind=OpKind.MATMUL,
        dtype=dtype,
        flops=2.0 * batch * m * n * k,
        bytes_read=batch * (m * k + k * n) * b,
        bytes_written=batch * m * n * b,
        shape=(m, n),
        mnk=(m, n, k),
        batch=batch,
    )


def adapter_forward_ops(
    forward: tuple[Op, ...], spec: TransformerSpec, training: Training
) -> tuple[Op, ...]:
    """The adapter GEMMs (x @ A, then @ B) beside each adapted base matmul of ``forward``."""
    if not training.adapters:
        return ()
    r = training.lora_rank
    out: list[Op] = []
    for op in forward:
        if op.kind is not OpKind.MATMUL or op.mnk is None:
            continue
        m, _, k = op.mnk
        for target, n_t in _targets_of(op, spec, spec.gated_mlp):
            if target not in training.lora_targets:
                continue
            dt = "bf16" if op.dtype in ("fp8", "int8", "int4") else op.dtype
            out.append(_gemm(f"lora_{target}_a", m, r, k, op.batch, dt))
            out.append(_gemm(f"lora_{target}_b", m, n_t, r, op.batch, dt))
    return tuple(out)


def dequant_ops(forward: tuple[Op, ...], training: Training) -> tuple[Op, ...]:
    """QLoRA: one NF4 -> bf16 dequantisation per frozen base matmul (4-bit weights only;
    the LM head stays in bf16, bitsandbytes skips it).

    With double quantisation the absmax constants are themselves 8-bit, so each
    dequantisation is three kernels (bitsandbytes 0.43 ``functional.dequantize_4bit``:
    ``dequantize_blockwise`` of the absmax codes to fp32, ``absmax += offset``, then the NF4
    kernel): two small ops before each weight's dequantisation, each paying a launch.
    Check: bitsandbytes' own benchmark (benchmarking/README.md, v0.45.0 vs v0.44.1, Llama
    3.1 8B on an RTX 4090, batch 8) times NF4+DQ 1.5-1.8 ms per forward above NF4, i.e.
    7-8 us for each of the 224 quantised matrices: two launches and their tiny traffic. The
    same table puts NF4 18.6 ms above BF16 (42.5 vs 23.9 ms), what 2.5 more bytes per weight
    (read 0.5 B NF4, write and re-read 2 B bf16) cost at the card's 1 TB/s.
    """
    if training.method != "qlora":
        return ()
    out: list[Op] = []
    for op in forward:
        if (
            op.kind is not OpKind.MATMUL
            or op.mnk is None
            or op.name in ("lm_head", "router")
            or op.name.startswith("lora_")
        ):
            continue
        _, n, k = op.mnk
        weights = float(op.batch * n * k)
        blocks = weights / QLORA_BLOCK
        out.append(  # 8-bit absmax codes (+ fp32 second-level constants) -> fp32 absmax
            Op(
                name=f"{op.name}_absmax_dequant",
                kind=OpKind.ELEMENTWISE,
                dtype="fp32",
                flops=blocks,
                bytes_read=blocks * (1 + 4 / QLORA_ABSMAX_BLOCK),
                bytes_written=4.0 * blocks,
                shape=(int(blocks),),
            )
        )
        out.append(  # absmax += offset (in place)
            Op(
                name=f"{op.name}_absmax_offset",
                kind=OpKind.ELEMENTWISE,
                dtype="fp32",
                flops=blocks,
                bytes_read=4.0 * blocks,
                bytes_written=4.0 * blocks,
                shape=(int(blocks),),
            )
        )
        out.append(
            Op(
                name=f"{op.name}_dequant",
                kind=OpKind.ELEMENTWISE,
                dtype="bf16",
                flops=DEQUANT_FLOPS_PER_WEIGHT * weights,
                bytes_read=QLORA_WEIGHT_BYTES * weights,
                bytes_written=2.0 * weights,
                shape=(int(weights),),
            )
        )
    return tuple(out)


def frozen_backward(backward: tuple[Op, ...], training: Training) -> tuple[Op, ...]:
    """``backward`` without the weight gradients of frozen weights (every base matmul's
    wgrad and the embedding's scatter-add) when only adapters train."""
    if not training.adapters:
        return backward
    return tuple(
        op
        for op in backward
        if not (op.name.endswith("_wgrad") and not op.name.startswith("lora_"))
        and op.name != "embedding_bwd"
    )


def with_dequant(ops: tuple[Op, ...], training: Training, *, backward: bool) -> tuple[Op, ...]:
    """Forward (or dgrad) ops with QLoRA's dequantisation of each frozen weight first."""
    if training.method != "qlora":
        return ops
    fwd = tuple(
        replace(op, name=op.name.removesuffix("_dgrad")) if backward else op
        for op in ops
        if op.kind is OpKind.MATMUL and (not backward or op.name.endswith("_dgrad"))
    )
    # dgrad shapes are (M, K, N): swap back to the forward (M, N, K) to count the weights
    if backward:
        fwd = tuple(
            replace(op, mnk=(op.mnk[0], op.mnk[2], op.mnk[1])) if op.mnk else op for op in fwd
        )
    return dequant_ops(fwd, training) + ops


def adapter_params_bytes(params: float, method: str = "lora") -> tuple[float, float, float]:
    """(weights, grads, optimizer) bytes of ``params`` adapter parameters."""
    return (
        params * ADAPTER_WEIGHT_BYTES.get(method, 4.0),
        params * ADAPTER_GRAD_BYTES.get(method, 4.0),
        params * ADAPTER_OPTIMIZER_BYTES,
    )
