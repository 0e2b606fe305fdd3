"""The engine limits ``trtllm-bench throughput`` picks when it is not told them.

A TensorRT-LLM max-throughput run (``trtllm-bench throughput``, the tool behind NVIDIA's
perf-overview tables; MLPerf Offline runs of TensorRT-LLM size theirs the same way) does
not run at TensorRT-LLM's defaults: without ``--max_batch_size`` / ``--max_num_tokens`` it
sizes both from the model, the GPUs' memory and the dataset's mean lengths
(``tensorrt_llm/bench/build/tuning.py`` ``calc_engine_setting`` and ``finetune_setting``,
called from ``bench/benchmark/utils/general.py`` ``get_settings`` for the PyTorch
backend):

* KV bytes per token ``2 x layers x max(tp, kv_heads) x head_dim x kv_bytes`` (every TP
  rank keeps at least one KV head);
* the whole group's memory (``tp x pp`` GPUs, each its total HBM) less the weights
  (``params x bytes per weight``: 1 for fp8, 0.5 for nvfp4, 2 otherwise), times the KV
  free-memory fraction, holds ``R = cache / (bytes per token x (ISL + OSL))`` requests;
* ``max_batch_size`` is ``min(R, 4096) / pp`` rounded up (to 32 below 256, at least 64;
  to 128 below 1024; else to 256); ``max_num_tokens`` is
  ``min(that batch x (1 + ISL / OSL), 32768)`` rounded up (to 256 below 4096, at least
  2048; to 512 below 8192; else to 1024);
* chunked prefill is off by default, so a prompt must fit one step: ``max_num_tokens`` is
  raised to at least ``max ISL + max_batch_size``.

Under attention data parallelism every rank runs its own scheduler with these limits.
Precisions trtllm-bench has no tuning for (weight-only int4, w8a16) get TensorRT-LLM's
``BuildConfig`` defaults, 2048 sequences and 8192 tokens.
"""

from __future__ import annotations

import math

from chipwise.workload.accounting import params_total
from chipwise.workload.ir import TransformerSpec

_GIB = 1024**3
# trtllm-bench's BYTES_PER_ELEM by quantization (QuantAlgo FP8 / FP8_BLOCK_SCALES 1.0,
# NVFP4 0.5, NO_QUANT 2.0)
_BYTES_PER_WEIGHT = {"fp8": 1.0, "fp4": 0.5, "bf16": 2.0, "fp16": 2.0}
# finetune_setting's caps: the decoder buffers (batch) and the activation buffer (tokens)
_MAX_BATCH_CAP = 4096
_MAX_TOKENS_CAP = 32768
# TensorRT-LLM BuildConfig defaults (used for precisions trtllm-bench does not tune)
BUILD_DEFAULT_MAX_BATCH = 2048
BUILD_DEFAULT_MAX_TOKENS = 8192


def _round_batch(raw: float) -> int:
    if raw < 256:
        return max(64, 32 * math.ceil(raw / 32))
    if raw < 1024:
        return 128 * math.ceil(raw / 128)
    return 256 * math.ceil(raw / 256)


def _round_tokens(raw: float) -> int:
    if raw < 4096:
        return max(2048, 256 * math.ceil(raw / 256))
    if raw < 8192:
        return 512 * math.ceil(raw / 512)
    return 1024 * math.ceil(raw / 1024)


def trtllm_bench_limits(
    spec: TransformerSpec,
    *,
    precision: str,
    kv_dtype: str,
    hbm_bytes: float,
    tp: int,
    pp: int,
    mean_in: float,
    mean_out: float,
    max_in: float,
    kv_free_fraction: float,
) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) trtllm-bench sets for ``spec`` on ``tp x pp`` GPUs of
    ``hbm_bytes`` each, for a dataset of mean lengths ``mean_in`` / ``mean_out`` and longest
    prompt ``max_in`` (see the module docstring)."""
    per_weight = _BYTES_PER_WEIGHT.get(precision)
    if per_weight is None:
        return BUILD_DEFAULT_MAX_BATCH, max(BUILD_DEFAULT_MAX_TOKENS, math.ceil(max_in))
    kv_bytes = 1.0 if kv_dtype == "fp8" else 2.0
    kv_heads = max(tp, spec.n_kv_heads)
    per_token = 2 * spec.n_layers * kv_heads * spec.head_dim * kv_bytes / _GIB
    gpus = tp * pp
    available = gpus * hbm_bytes / _GIB - params_total(spec) * per_weight / _GIB
    cache = max(0.0, available) * kv_free_fraction
    seq = max(1.0, mean_in + mean_out)
    requests = cache / (per_token * seq)
    raw_bs = min(requests, _MAX_BATCH_CAP) / pp
    raw_tokens = min(raw_bs * (1 + mean_in / max(1.0, mean_out)), _MAX_TOKENS_CAP)
    max_bs = _round_batch(raw_bs)
    max_tokens = _round_tokens(raw_tokens)
    # chunked prefill off (trtllm-bench's default): the longest prompt fits one step
    max_tokens = max(max_tokens, math.ceil(max_in) + max_bs)
    return max_bs, max_tokens


__all__ = ["BUILD_DEFAULT_MAX_BATCH", "BUILD_DEFAULT_MAX_TOKENS", "trtllm_bench_limits"]
