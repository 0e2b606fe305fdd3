"""The engine limits ``trtllm-bench throughput`` picks when it is not told them.

A TensorRT-LLM max-throughput run (``trtllm-bench throughput``, the tool behind NVIDIA's
perf-overview tables; MLPerf Offline runs of TensorRT-LLM size theirs the same way) does
not run at TensorRT-LLM's defaults: without ``--max_batch_size`` / ``--max_num_tokens`` it
sizes both from the model, the GPUs' memory and the dataset's mean lengths
(``tensorrt_llm/bench/build/tuning.py`` ``calc_engine_setting`` and ``finetune_setting``,
called from ``bench/benchmark/utils/general.py`` ``get_settings`` for the PyTorch
backend):

* KV bytes per token ``2 x layers x max(tp, kv_heads) x head_size x kv_bytes`` (every TP
  rank keeps at least one KV head), from the HF config as ``bench/build/dataclasses.py``
  ``ModelConfig`` reads it: ``num_key_value_heads`` and ``head_dim``, or
  ``hidden_size / num_attention_heads`` where the config has no ``head_dim``. The tool has
  no MLA case: a DeepSeek-V3/R1 config states 128 KV heads and no ``head_dim``, so it
  sizes 2 x 61 x 128 x 56 bytes a token (not the 576-wide latent the engine stores);
* the whole group's memory (``tp x pp`` GPUs, each its total HBM) less the weights
  (``param_count x bytes per weight``: 1 for fp8, 0.5 for nvfp4, 2 otherwise), times the
  KV free-memory fraction, holds ``R = cache / (bytes per token x (ISL + OSL))`` requests.
  ``param_count`` is the checkpoint's safetensors element count, in which an NVFP4 weight
  is half a uint8 element plus a 1/16 fp8 scale;
* ``max_batch_size`` is ``min(R, 4096) / pp`` rounded up (to 32 below 256, at least 64;
  to 128 below 1024; else to 256); ``max_num_tokens`` is
  ``min(that batch x (1 + ISL / OSL), 32768)`` rounded up (to 256 below 4096, at least
  2048; to 512 below 8192; else to 1024);
* chunked prefill is off by default, so a prompt must fit one step: ``max_num_tokens`` is
  raised to at least ``max ISL + max_batch_size``.

Under attention data parallelism every rank runs its own scheduler with these limits.
Quantisations trtllm-bench has no tuning for (``bench/build/build.py`` ``TUNED_QUANTS``:
NVFP4, FP8, FP8 block scales, none) get TensorRT-LLM's ``BuildConfig`` defaults, 2048
sequences and 8192 tokens (the token budget then raised for the longest prompt as above):
weight-only int4, w8a16, and gpt-oss's MXFP4 experts
(``_torch/model_config.py`` ``get_mxfp4_quant_algo``: W4A16_MXFP4 on Hopper,
W4A8_MXFP4_MXFP8 / W4A8_MXFP4_FP8 on Blackwell).
"""

from __future__ import annotations

import math

from chipwise.perf.ops.layers import excluded_params
from chipwise.workload.accounting import matmul_params, params_total
from chipwise.workload.ir import TransformerSpec

_GIB = 1024**3
# trtllm-bench's BYTES_PER_ELEM by quantization (QuantAlgo FP8 / FP8_BLOCK_SCALES 1.0,
# NVFP4 0.5, NO_QUANT 2.0)
_BYTES_PER_WEIGHT = {"fp8": 1.0, "fp4": 0.5, "bf16": 2.0, "fp16": 2.0}
# Safetensors elements an NVFP4 matmul weight counts per parameter (what ``param_count``
# sums: ``get_safetensors_metadata(...).parameter_count``): two 4-bit values packed in one
# uint8 element plus one fp8 scale per 16 (ModelOpt's NVFP4 export). So
# nvidia/DeepSeek-R1-0528-NVFP4-v2 lists 393.6B parameters for DeepSeek-R1's 685B
# (llmrun.dev/model/nvidia-deepseek-r1-0528-nvfp4-v2, read 2026-12-05); this rule gives
# 378B for the 671B main model (the 14B MTP module is not in chipwise's spec).
_NVFP4_ELEMENTS_PER_PARAM = 0.5 + 1 / 16
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


def _checkpoint_elements(spec: TransformerSpec, precision: str) -> float:
    """The checkpoint's safetensors element count, trtllm-bench's ``param_count``: NVFP4
    packs the matmul weights (embeddings and head stay bf16, and so do the attention
    projections the checkpoint excludes, ``TransformerSpec.quant_exclude``)."""
    if precision != "fp4":
        return params_total(spec)
    packed = matmul_params(spec) - spec.n_layers * excluded_params(spec)
    return params_total(spec) - packed + packed * _NVFP4_ELEMENTS_PER_PARAM


def _kv_head_size(spec: TransformerSpec) -> int:
    """The head size trtllm-bench reads: ``head_dim``, or hidden / heads where the HF config
    has none (DeepSeek's MLA configs state qk_nope/qk_rope/v widths, no ``head_dim``)."""
    return spec.d_model // spec.n_heads if spec.uses_mla else spec.head_dim


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
    if per_weight is None or spec.expert_quant == "mxfp4":
        max_bs, max_tokens = BUILD_DEFAULT_MAX_BATCH, BUILD_DEFAULT_MAX_TOKENS
    else:
        # calc_engine_setting + finetune_setting for a tuned quantisation (module docstring)
        kv_bytes = 1.0 if kv_dtype == "fp8" else 2.0
        kv_heads = max(tp, spec.n_kv_heads)
        per_token = 2 * spec.n_layers * kv_heads * _kv_head_size(spec) * kv_bytes / _GIB
        weights = _checkpoint_elements(spec, precision) * per_weight
        available = tp * pp * hbm_bytes / _GIB - weights / _GIB
        cache = max(0.0, available) * kv_free_fraction
        requests = cache / (per_token * max(1.0, mean_in + mean_out))
        raw_bs = min(requests, _MAX_BATCH_CAP) / pp
        raw_tokens = min(raw_bs * (1 + mean_in / max(1.0, mean_out)), _MAX_TOKENS_CAP)
        max_bs, max_tokens = _round_batch(raw_bs), _round_tokens(raw_tokens)
    # chunked prefill off (trtllm-bench's default): the longest prompt fits one step, on
    # either path (get_settings applies it after the tuned or the default limits)
    return max_bs, max(max_tokens, math.ceil(max_in) + max_bs)


__all__ = ["BUILD_DEFAULT_MAX_BATCH", "BUILD_DEFAULT_MAX_TOKENS", "trtllm_bench_limits"]
