"""How close to its datasheet a chip gets: a handful of measured fractions per generation.

The per-op models (``gpu.py``, ``tpu.py``) and the collectives (``collectives.py``) start
from the datasheet peaks in the catalog and multiply by these. Each value lives in
``data/efficiency.toml`` with the measurement it comes from, and is looked up, most specific
first, by chip id, then ``chip.architecture``, then vendor, then kind::

    [chip.<id>]  ->  [architecture.<arch>]  ->  [vendor.<vendor>]  ->  [kind.<kind>]

An entry may give only some parameters; the rest come from the next, less specific, level.
A chip whose architecture has no entry gets its vendor's or kind's defaults, and
``Efficiency.basis`` says so (it appears in every estimate's assumptions).

``chipwise calibrate`` replaces values fitted from local measurements with
``Efficiency.with_values(source=..., gemm_peak_fraction=...)`` (or ``dataclasses.replace``).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chipwise.errors import CatalogError
from chipwise.hardware.chip import Chip
from chipwise.limits import CACHE_ENTRIES
from chipwise.perf.base import Assumption

# The parameters every Efficiency has, in the order reports list them.
PARAMETERS: tuple[str, ...] = (
    "gemm_peak_fraction",
    "attention_peak_fraction",
    "hbm_fraction",
    "launch_overhead_s",
    "scale_up_fraction",
    "scale_out_fraction",
    "collective_latency_s",
    "nvls_fraction",
    "sustained_tensor_fraction",
    "serving_fp8_sustained_fraction",
    "attention_backward_ratio",
    "fp8_gemm_peak_fraction",
    "fp4_gemm_peak_fraction",
    "decode_attention_hbm_fraction",
    "decode_attention_floor_s",
    "mla_decode_attention_floor_s",
    "vllm_mla_decode_latency_s",
    "decode_attention_element_s",
    "fp8_kv_attention_peak_fraction",
    "fp8_context_attention_peak_fraction",
    "gemm_hbm_fraction",
    "fp4_gemm_hbm_fraction",
    "fused_moe_gemm_peak_fraction",
    "fused_moe_fp8_gemm_peak_fraction",
    "marlin_relative_rate",
    "fp8_gemm_latency_s",
    "fp4_gemm_latency_s",
    "fp4_gemm_k_latency_s",
    "trtllm_fp4_gemm_latency_s",
    "trtllm_fp4_gemm_k_latency_s",
    "blockscale_gemm_k_latency_s",
    "blockscale_gemm_latency_s",
    "sglang_blockscale_gemm_k_latency_s",
    "blockscale_expert_k_latency_s",
    "blockscale_gemm_peak_fraction",
    "trtllm_blockscale_gemm_peak_fraction",
    "blockscale_gemm_stream_fraction",
    "aiter_moe_sorting_s",
    "aiter_bf16_gemm_latency_s",
    "aiter_bf16_gemm_hbm_fraction",
    "fp4_expert_peak_fraction",
    "fp4_expert_hbm_fraction",
    "fp4_expert_latency_s",
    "fp4_expert_routed_peak_fraction",
    "a8w4_expert_hbm_fraction",
    "a8w4_expert_wide_hbm_fraction",
    "mxfp4_expert_peak_fraction",
    "mxfp4_expert_hbm_fraction",
    "mxfp4_expert_latency_s",
    "trtllm_gen_fp4_expert_peak_fraction",
    "trtllm_gen_fp4_expert_hbm_fraction",
    "trtllm_gen_fp4_expert_latency_s",
    "trtllm_gen_fp4_expert_ep_token_s",
    "trtllm_gen_fp8_expert_peak_fraction",
    "trtllm_gen_fp8_expert_hbm_fraction",
    "trtllm_gen_fp8_expert_latency_s",
    "w4a16_expert_dequant_fraction",
    "w4a16_expert_latency_s",
    "trtllm_fp8_expert_peak_fraction",
    "trtllm_w4a16_expert_peak_fraction",
    "marlin_expert_peak_fraction",
    "marlin_expert_dequant_fraction",
    "gdn_chunk_peak_fraction",
    "gdn_chunk_latency_s",
    "gemm_overlap_exponent",
    "attention_tile_blocks",
    "trtllm_attention_tile_blocks",
)

# AITER's Triton a8w4 MoE (vLLM's ROCm MXFP4 experts) picks its row tile from the routed
# rows an expert: max(16, min(next_power_of_2(tokens x top_k // experts), 128))
# (aiter/ops/triton/moe_routing/routing.py at ROCm/aiter@6af8b6874, the MLPerf v6.0 build),
# and its configs by that tile (moe_op_gemm_a8w4.get_kernel_config).
A8W4_MIN_BLOCK_M = 16
A8W4_MAX_BLOCK_M = 128


def pow2_tile(rows: int, low: int, high: int) -> int:
    """The tile a fused-MoE kernel picks from the mean rows an expert: the next power of two
    of ``rows`` (at least 1), clamped to ``[low, high]`` (AITER's and triton_kernels'
    next_power_of_2 rule, TRT-LLM-Gen's calculate_tile_tokens_dim)."""
    return max(low, min(1 << (max(1, rows) - 1).bit_length(), high))


def a8w4_block_m(rows_per_expert: float) -> int:
    """The row tile AITER's a8w4 MoE routing picks at ``rows_per_expert`` routed rows."""
    return pow2_tile(int(rows_per_expert), A8W4_MIN_BLOCK_M, A8W4_MAX_BLOCK_M)


_FRACTIONS = frozenset(PARAMETERS) - {
    "launch_overhead_s",
    "collective_latency_s",
    "decode_attention_floor_s",
    "mla_decode_attention_floor_s",
    "vllm_mla_decode_latency_s",
    "decode_attention_element_s",
    "fp8_gemm_latency_s",
    "fp4_gemm_latency_s",
    "fp4_gemm_k_latency_s",
    "trtllm_fp4_gemm_latency_s",
    "trtllm_fp4_gemm_k_latency_s",
    "blockscale_gemm_k_latency_s",
    "blockscale_gemm_latency_s",
    "sglang_blockscale_gemm_k_latency_s",
    "blockscale_expert_k_latency_s",
    "aiter_moe_sorting_s",
    "aiter_bf16_gemm_latency_s",
    "fp4_expert_latency_s",
    "mxfp4_expert_latency_s",
    "trtllm_gen_fp4_expert_latency_s",
    "trtllm_gen_fp4_expert_ep_token_s",
    "trtllm_gen_fp8_expert_latency_s",
    "w4a16_expert_latency_s",
    "gdn_chunk_latency_s",
    "gemm_overlap_exponent",
    "attention_tile_blocks",
    "trtllm_attention_tile_blocks",
}
# Parameters a chip may leave unresolved: they have a default in ``Efficiency``.
_OPTIONAL = frozenset(
    {"nvls_fraction", "sustained_tensor_fraction", "serving_fp8_sustained_fraction",
     "attention_backward_ratio",
     "fp8_gemm_peak_fraction", "fp4_gemm_peak_fraction", "decode_attention_hbm_fraction",
     "decode_attention_floor_s", "mla_decode_attention_floor_s", "decode_attention_element_s",
     "vllm_mla_decode_latency_s",
     "fp8_kv_attention_peak_fraction", "fp8_context_attention_peak_fraction", "gemm_hbm_fraction",
     "fp4_gemm_hbm_fraction", "fused_moe_gemm_peak_fraction", "fused_moe_fp8_gemm_peak_fraction",
     "marlin_relative_rate", "fp8_gemm_latency_s", "fp4_gemm_latency_s",
     "fp4_gemm_k_latency_s", "trtllm_fp4_gemm_latency_s", "trtllm_fp4_gemm_k_latency_s",
     "blockscale_gemm_k_latency_s", "blockscale_gemm_latency_s",
     "sglang_blockscale_gemm_k_latency_s",
     "blockscale_expert_k_latency_s", "aiter_moe_sorting_s", "aiter_bf16_gemm_latency_s",
     "aiter_bf16_gemm_hbm_fraction", "blockscale_gemm_peak_fraction",
     "trtllm_blockscale_gemm_peak_fraction", "blockscale_gemm_stream_fraction",
     "fp4_expert_peak_fraction",
     "fp4_expert_hbm_fraction", "fp4_expert_latency_s", "fp4_expert_routed_peak_fraction",
     "a8w4_expert_hbm_fraction", "a8w4_expert_wide_hbm_fraction", "mxfp4_expert_peak_fraction",
     "mxfp4_expert_hbm_fraction", "mxfp4_expert_latency_s", "w4a16_expert_dequant_fraction",
     "trtllm_gen_fp4_expert_peak_fraction", "trtllm_gen_fp4_expert_hbm_fraction",
     "trtllm_gen_fp4_expert_latency_s", "trtllm_gen_fp4_expert_ep_token_s",
     "trtllm_gen_fp8_expert_peak_fraction",
     "trtllm_gen_fp8_expert_hbm_fraction", "trtllm_gen_fp8_expert_latency_s",
     "w4a16_expert_latency_s", "trtllm_fp8_expert_peak_fraction",
     "trtllm_w4a16_expert_peak_fraction", "marlin_expert_peak_fraction",
     "marlin_expert_dequant_fraction", "gemm_overlap_exponent", "attention_tile_blocks",
     "trtllm_attention_tile_blocks", "gdn_chunk_peak_fraction", "gdn_chunk_latency_s"}
)  # fmt: skip
# Fractions where 0 means "none" (no in-switch reduction) or "not measured: use the bf16 one".
_ZERO_OK = frozenset(
    {"nvls_fraction", "serving_fp8_sustained_fraction", "fp8_gemm_peak_fraction",
     "fp4_gemm_peak_fraction",
     "decode_attention_hbm_fraction", "fp8_kv_attention_peak_fraction",
     "fp8_context_attention_peak_fraction", "gemm_hbm_fraction",
     "fp4_gemm_hbm_fraction", "fused_moe_gemm_peak_fraction", "fused_moe_fp8_gemm_peak_fraction",
     "marlin_relative_rate", "aiter_bf16_gemm_hbm_fraction", "blockscale_gemm_peak_fraction",
     "trtllm_blockscale_gemm_peak_fraction", "blockscale_gemm_stream_fraction",
     "fp4_expert_peak_fraction", "fp4_expert_hbm_fraction", "fp4_expert_routed_peak_fraction",
     "a8w4_expert_hbm_fraction", "a8w4_expert_wide_hbm_fraction", "mxfp4_expert_peak_fraction",
     "mxfp4_expert_hbm_fraction", "w4a16_expert_dequant_fraction",
     "trtllm_gen_fp4_expert_peak_fraction", "trtllm_gen_fp4_expert_hbm_fraction",
     "trtllm_gen_fp8_expert_peak_fraction", "trtllm_gen_fp8_expert_hbm_fraction",
     "trtllm_fp8_expert_peak_fraction", "trtllm_w4a16_expert_peak_fraction",
     "marlin_expert_peak_fraction", "marlin_expert_dequant_fraction",
     "gdn_chunk_peak_fraction"}
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Efficiency:
    """Achievable fractions of datasheet peaks, and fixed overheads, for one chip generation.

    Attributes:
        gemm_peak_fraction: best achievable fraction of the dense peak for a large GEMM
            (the measured "MAMF" on GPUs). Shape losses (tiles, waves, short K) come on top.
        attention_peak_fraction: fused flash/splash attention FLOP/s as a fraction of peak.
        hbm_fraction: achievable fraction of HBM bandwidth for a large streaming copy.
        launch_overhead_s: fixed device time per kernel (launch, ramp-up, tail) that a
            back-to-back stream of kernels still pays.
        scale_up_fraction: achievable fraction of the scale-up link rate (NVLink, ICI,
            Infinity Fabric) for ring collectives at large sizes.
        scale_out_fraction: the same for the scale-out network (InfiniBand, EFA, DCN).
        collective_latency_s: per-step latency (alpha) of a collective algorithm step.
        nvls_fraction: all-reduce algorithm bandwidth with in-switch reduction (NVLink
            SHARP) as a fraction of the link rate; 0 where the fabric has none.
        sustained_tensor_fraction: the share of the per-op tensor rates above that a whole
            training or prefill step sustains (minutes at the power limit, clocks below
            boost, cold caches, collectives sharing HBM and SMs). The per-op fractions come
            from seconds-long single-kernel benchmarks; this one is fitted to published
            step throughput (``data/efficiency.toml`` says on which rows). 1 = none.
        serving_fp8_sustained_fraction: the same for a serving step's dense fp8 GEMMs
            where the engines' kernel tables show they keep more of the per-op rate than a
            training step does; 0 = the ``sustained_tensor_fraction``.
        attention_backward_ratio: fused attention backward FLOP/s as a fraction of the
            forward's (FlashAttention-2: the backward reaches a lower share of peak, with
            more non-matmul work and atomic dQ accumulation). 1 = the same.
        fp8_gemm_peak_fraction: ``gemm_peak_fraction`` for fp8 GEMMs where it was measured
            separately (fp8 MAMF is a lower share of its doubled peak); 0 = not measured,
            use ``gemm_peak_fraction``.
        fp4_gemm_peak_fraction: the same for block-scaled fp4 GEMMs (NVFP4/MXFP4: a scale
            per 16 or 32 elements read and applied beside the tensor-core math, so the share
            of the doubled peak is lower again); 0 = not measured, use ``gemm_peak_fraction``.
        decode_attention_hbm_fraction: the share of HBM bandwidth a decode step's paged
            KV-cache read (the decode attention kernel) reaches; 0 = as ``hbm_fraction``.
        decode_attention_floor_s: the time of one decode-attention op that reads almost no
            cache (batch 1, context 1): its kernel launches (KV append, split-KV partials,
            combine) and their dependent DRAM round trips; 0 = one launch overhead.
        mla_decode_attention_floor_s: the same for an absorbed-MLA decode attention (the
            query heads read one shared latent, ``gpu.is_latent_decode_attention``) where
            its own kernel was timed apart (CDNA: AITER's assembly MLA decode, a split-KV
            stage and a reduce kernel); 0 = as ``decode_attention_floor_s``.
        vllm_mla_decode_latency_s: under vLLM, the device time its MLA attention module's
            decode step (DeepseekV2MLAAttention in a CUDA graph) takes beyond the per-op
            model's projections, norms, rope, absorbed GEMMs and latent attention at the same
            shape, measured on the module as a whole and charged to the latent decode
            attention op; 0 = not measured.
        decode_attention_element_s: the kernel's per-sequence work (its CTAs per sequence
            and KV head: set-up, query load, KV append, partial and combine) in seconds per
            element of one cached token's K/V row (per layer, per rank): a sequence of a GQA
            model with 8 KV heads of 128 costs 2048 of them, DeepSeek MLA 576. It overlaps
            the cache read (the op takes the longer of the two); 0 = not modelled.
        fp8_kv_attention_peak_fraction: the share of the fp8 dense peak at which a decode
            attention kernel reading an fp8 KV cache runs its QK and PV MMAs, where the
            engines' kernels quantise the query to fp8 and multiply in fp8 (Blackwell's
            trtllm-gen MLA/XQA); 0 = the cache is dequantised and the MMAs run in the
            activation dtype at ``attention_peak_fraction`` (Hopper, measured so).
        fp8_context_attention_peak_fraction: the share of the fp8 dense peak at which
            TensorRT-LLM's FP8 context (prefill) FMHA runs: Q, K and V in fp8, its MMAs in
            fp8, where the engine turns it on (an fp8 KV cache feeding a quantised o_proj,
            ``EngineStepTimer``); 0 = not measured, the op is timed at the 16-bit rate.
        gemm_hbm_fraction: the share of HBM bandwidth at which a memory-bound GEMM (a
            skinny decode projection, M = batch) streams its weights through the vendor
            library's kernels, where measured below a large copy's; 0 = as ``hbm_fraction``.
        fp4_gemm_hbm_fraction: the same for block-scaled fp4 GEMMs (NVFP4/MXFP4 math on
            fp4 tensor cores), where measured apart: their small-M kernels stream the packed
            weights and scales well below an fp8 or bf16 GEMM's rate; 0 = as
            ``gemm_hbm_fraction``.
        fused_moe_gemm_peak_fraction: the share of the 16-bit dense peak the serving
            engines' fused-MoE kernel (vLLM's and SGLang's Triton ``fused_moe``) reaches
            with bf16 math (bf16 experts, and weight-only experts dequantised to bf16), as
            the per-op model's tiles, waves and K fill reproduce its measured kernel time;
            0 = not measured, use ``gemm_fraction``. Serving only.
        fused_moe_fp8_gemm_peak_fraction: the share of the fp8 dense peak the serving
            engines' fused-MoE kernel (vLLM's and SGLang's Triton ``fused_moe`` with fp8
            weights and activations, block-scaled as the fp8 MoE checkpoints ship) reaches:
            each K block's scales are applied to the accumulator beside the tensor-core
            math, so it falls far below an fp8 cuBLAS GEMM; 0 = not measured, use
            ``gemm_fraction``. Serving only (``GpuModel(fused_moe=True)``).
        marlin_relative_rate: the serving engines' Marlin kernel (weight-only W4A16/W8A16
            GEMMs, weights dequantised in registers) once compute-bound, as a share of the
            same chip's 16-bit GEMM rate: it tiles at most 64 rows and runs a larger batch
            as repeated 64-row slices, each dequantising the weights again; 0 = not
            measured or not Marlin (Hopper runs Machete): the bf16 GEMM plan applies.
            Serving only (``GpuModel(fused_moe=True)``: the same engines).
        fp8_gemm_latency_s: fixed device time an fp8 GEMM call pays beyond a kernel launch
            (the activations' scale and cast, the scaled epilogue): what keeps a decode-M
            fp8 projection from streaming its weights at the copy rate; 0 = not measured.
        fp4_gemm_latency_s: under vLLM or SGLang (their FlashInfer CuteDSL NVFP4 linear), a
            dense block-scaled fp4 GEMM's fixed device time beyond a launch; where set, its
            weights stream at ``hbm_fraction`` (the copy rate), not
            ``fp4_gemm_hbm_fraction`` (the engine-less kernel's). 0 = not measured.
        fp4_gemm_k_latency_s: the same kernel's serial main-loop time per 1024 elements of
            K (at decode M each CTA walks the whole K with no split, at a per-step latency
            that does not shrink with the grid). 0 = not measured.
        trtllm_fp4_gemm_latency_s, trtllm_fp4_gemm_k_latency_s: the same two under
            TensorRT-LLM (its torch-flow NVFP4 linear: input quantisation + CUTLASS GEMM).
        blockscale_gemm_k_latency_s: a dense block-scaled fp8 GEMM's (128 x 128 weight
            blocks) serial main-loop time per 1024 elements of K where
            the architecture's kernels have no split-K (CDNA3: AITER's CK block-scale GEMM);
            the kernel takes at least that long. 0 = not measured.
        blockscale_gemm_latency_s: the same kernel's fixed device time beyond a launch
            (the activations' per-1x128-group quantisation and the scaled epilogue), in
            place of ``fp8_gemm_latency_s`` (fitted on per-tensor fp8 GEMMs) where set;
            0 = not measured: ``fp8_gemm_latency_s`` applies.
        sglang_blockscale_gemm_k_latency_s: the same under SGLang where its ROCm build runs
            AITER's Triton block-scale GEMM (sglang PR #13617) on a default config with no
            split-K (CDNA3: 128 x 128 output tiles, so each wave of tiles walks all of K at
            this rate); 0 = SGLang runs the architecture's ``blockscale_gemm_k_latency_s``.
        blockscale_expert_k_latency_s: the same for a fused-MoE engine's block-scaled fp8
            expert GEMMs (CDNA: AITER's CK two-stage fused MoE). 0 = not measured.
        blockscale_gemm_peak_fraction: the share of the fp8 peak a dense block-scaled fp8
            GEMM reaches at compute-bound M (its per-K-block scales applied to the
            accumulators on the vector ALUs), in place of ``fp8_gemm_peak_fraction``;
            0 = not measured: the per-tensor fp8 GEMM's fraction applies.
        trtllm_blockscale_gemm_peak_fraction: the same under TensorRT-LLM, whose own
            block-scale GEMM (fp8_block_scaling_gemm) is measured apart; 0 = not measured:
            ``blockscale_gemm_peak_fraction`` (or the per-tensor fraction) applies.
        blockscale_gemm_stream_fraction: the share of a dense GEMM's weight-stream rate
            (``gemm_memory_fraction``) a dense block-scaled fp8 GEMM's kernels reach where
            its weights stream (decode M: the scales loaded and each 128-deep K step
            promoted beside the stream); 0 = not measured: the dense GEMM's rate.
        aiter_moe_sorting_s: device time of AITER's moe_sorting kernel at decode token
            counts (it buckets the routed (token, expert) pairs by expert, pads each to the
            kernel's row block and zeroes the output buffer the second stage accumulates
            into), which the ROCm engines' fused MoE (SGLang, ATOM) runs before its expert
            GEMMs in place of a gather of the tokens; 0 = not measured (one launch).
        aiter_bf16_gemm_latency_s: fixed device time a dense bf16 GEMM call pays beyond a
            launch under AITER's tuned GEMM (tgemm, which SGLang's and ATOM's ROCm linear
            layers call): its decode-M kernels split K and accumulate in fp32; 0 = not
            measured.
        aiter_bf16_gemm_hbm_fraction: the share of HBM bandwidth at which that GEMM streams
            its operands (weights) at decode M; 0 = not measured: neither applies.
        fp4_expert_peak_fraction: the share of the fp4 dense peak a serving engine's
            fused-MoE kernel reaches with 4-bit expert weights on fp4 tensor cores (many
            small per-expert GEMMs, each padded to its tile, with the block scales applied);
            0 = not measured, as ``gemm_fraction``. Serving only.
        fp4_expert_hbm_fraction: the share of HBM bandwidth at which a serving engine's
            fused-MoE kernel streams 4-bit expert weights into fp4 tensor-core math (NVFP4,
            MXFP4 x MXFP8: one grouped GEMM over every local expert, not a dense GEMV);
            0 = not measured, as ``fp4_gemm_hbm_fraction``. Serving only.
        fp4_expert_latency_s: fixed device time of one such 4-bit expert GEMM beyond a
            launch (the activations' fp4 quantisation, the per-expert tile schedule, the
            routed rows' gather); 0 = not measured.
        fp4_expert_routed_peak_fraction: the share of the fp4 dense peak at which AITER's
            fused-MoE kernel (SGLang, ATOM) runs the routed rows' own FLOPs (no tile
            padding) at prefill token counts, a ceiling beside its tile plan: the gather
            through the sorted ids, the 1x32 block scales and stage 2's accumulation keep it
            at 1-2 PFLOP/s on MI355X where a dense MXFP4 GEMM reaches 5; 0 = no ceiling.
        a8w4_expert_hbm_fraction: the share of HBM bandwidth at which AITER's Triton a8w4
            MoE GEMM (fp8 activations x MXFP4 experts, which vLLM's ROCm build runs) streams
            the expert weights on its 16-row tiles (<= 16 routed rows an expert); 0 = not
            measured, as ``gemm_memory_fraction``. vLLM only.
        a8w4_expert_wide_hbm_fraction: the same on its taller row tiles (17 or more routed
            rows an expert); 0 = as ``a8w4_expert_hbm_fraction``.
        mxfp4_expert_peak_fraction, mxfp4_expert_hbm_fraction, mxfp4_expert_latency_s: the
            same three for an MXFP4 checkpoint's experts (gpt-oss) on fp4 tensor cores, which
            the engines run with TRT-LLM-Gen's MXFP4 x MXFP8 fused MoE (small token tiles:
            the activations quantised to MXFP8, the token dimension the MMA's narrow side)
            rather than the CUTLASS NVFP4 grouped GEMM the ``fp4_expert_*`` values time;
            0 = not measured, as the ``fp4_expert_*`` ones. Serving only.
        trtllm_gen_fp4_expert_peak_fraction, trtllm_gen_fp4_expert_hbm_fraction,
        trtllm_gen_fp4_expert_latency_s: the same three for an NVFP4 checkpoint's experts
            under TRT-LLM-Gen's fused MoE (``Inference.moe_backend`` "trtllm-gen": SGLang's
            --moe-runner-backend flashinfer_trtllm, FlashInfer trtllm_fp4_block_scale_moe),
            of the fp4 peak; 0 = not measured, as the ``fp4_expert_*`` ones. Serving only.
        trtllm_gen_fp4_expert_ep_token_s: seconds per token of the step that kernel adds
            under expert parallelism whatever the ranks' share of the experts (each rank's
            block runs over every token's routing, not its local rows); 0 = none.
        trtllm_gen_fp8_expert_peak_fraction, trtllm_gen_fp8_expert_hbm_fraction,
            trtllm_gen_fp8_expert_latency_s: the same for a block-scaled fp8 checkpoint's
            experts under that backend (FlashInfer trtllm_fp8_block_scale_moe), of the fp8
            peak; 0 = not measured: the engine's fused-MoE fp8 values apply.
        w4a16_expert_dequant_fraction: a serving engine's fused-MoE kernel with 4-bit
            experts and bf16 math (W4A16: MXFP4/INT4 weights dequantised in registers, on
            chips without fp4 tensor cores): weights it dequantises per second as a share
            of the chip's FP32 vector FLOP/s (the dequantisation runs on the CUDA cores, once
            per row slice of the expert) before its MMA on the padded rows at the bf16
            ``gemm_peak_fraction``; 0 = not measured: the bf16 GEMM plan applies.
        w4a16_expert_latency_s: fixed device time of one such expert GEMM beyond a launch
            (tile schedule, the routed rows' gather); 0 = not measured.
        trtllm_fp8_expert_peak_fraction: TensorRT-LLM's CUTLASS fp8 MoE on a block-scaled
            checkpoint's experts (DeepSeek-V3/R1: per-128 x 128 weight scales) as a share of
            the fp8 peak, in place of the dense fp8 GEMM's; 0 = not measured.
        trtllm_w4a16_expert_peak_fraction: TensorRT-LLM's W4A16 MoE (4-bit experts, bf16
            math) runs its MMA at this share of the bf16 peak, in place of
            ``gemm_peak_fraction`` in the W4A16 expert model above; 0 = not measured.
        marlin_expert_peak_fraction: the serving engines' Marlin-MoE kernel on 4-bit experts
            with bf16 math where a run picks it (``Inference.moe_backend`` "marlin"; vLLM's
            ``VLLM_MXFP4_USE_MARLIN=1`` on Hopper) runs its MMA (Ampere-style mma.sync on
            slices of at most 64 rows, no warpgroup MMA) at this share of the bf16 peak, in
            place of ``gemm_peak_fraction`` in the W4A16 expert model above; 0 = not
            measured: the architecture's W4A16 kernel's values apply.
        marlin_expert_dequant_fraction: that kernel's dequantisation (once per 64-row slice)
            as a share of the FP32 vector FLOP/s, in place of
            ``w4a16_expert_dequant_fraction``; its fixed time stays
            ``w4a16_expert_latency_s``. Used only where ``marlin_expert_peak_fraction`` is set.
        gdn_chunk_peak_fraction: the chunked Gated DeltaNet prefill kernels
            (flash-linear-attention's chunk_gated_delta_rule, ``layers.linear_attention_ops``)
            run their FLOPs at this share of the bf16 peak; 0 = not measured: the GEMM
            fraction.
        gdn_chunk_latency_s: their fixed time a layer (the pipeline's six or so kernels) in
            place of one launch; used only where ``gdn_chunk_peak_fraction`` is set.
        gemm_overlap_exponent: how a GEMM's tensor time and operand stream combine
            (``roofline.combine``): 0 = the slower of the two (the kernel hides one under
            the other, as Hopper's TMA producer warps do); p > 0 = their p-norm, where the
            same waves issue the loads and the matrix instructions and neither keeps its
            full rate near the ridge (CDNA3's hipBLASLt kernels).
        attention_tile_blocks: the fixed work of one 128-row query tile of a prefill
            (context) flash-attention kernel, per query head, in 128 x 128 key blocks at the
            attention rate: loading the Q tile, the pipeline's fill and drain, the softmax
            rescale and the output's normalise-and-store, and the causal diagonal block the
            mask half wastes. It makes short prompts run far below the saturated rate
            (``gpu.attention_tile_flops``); 0 = not modelled. Fitted on the FlashAttention
            and FlashInfer kernels vLLM and SGLang run.
        trtllm_attention_tile_blocks: the same for TensorRT-LLM's own context attention
            (its FMHA with the QKV/RoPE/KV-cache-append kernel), whose fixed work per tile
            is 1.6-4.5x theirs; it replaces ``attention_tile_blocks`` under that engine
            (``GpuModel.for_engine``); 0 = not measured (``attention_tile_blocks`` applies).
    """

    gemm_peak_fraction: float
    attention_peak_fraction: float
    hbm_fraction: float
    launch_overhead_s: float
    scale_up_fraction: float
    scale_out_fraction: float
    collective_latency_s: float
    nvls_fraction: float = 0.0
    sustained_tensor_fraction: float = 1.0
    serving_fp8_sustained_fraction: float = 0.0
    attention_backward_ratio: float = 1.0
    fp8_gemm_peak_fraction: float = 0.0
    fp4_gemm_peak_fraction: float = 0.0
    decode_attention_hbm_fraction: float = 0.0
    decode_attention_floor_s: float = 0.0
    mla_decode_attention_floor_s: float = 0.0
    vllm_mla_decode_latency_s: float = 0.0
    decode_attention_element_s: float = 0.0
    fp8_kv_attention_peak_fraction: float = 0.0
    fp8_context_attention_peak_fraction: float = 0.0
    gemm_hbm_fraction: float = 0.0
    fp4_gemm_hbm_fraction: float = 0.0
    fused_moe_gemm_peak_fraction: float = 0.0
    fused_moe_fp8_gemm_peak_fraction: float = 0.0
    marlin_relative_rate: float = 0.0
    fp8_gemm_latency_s: float = 0.0
    fp4_gemm_latency_s: float = 0.0
    fp4_gemm_k_latency_s: float = 0.0
    trtllm_fp4_gemm_latency_s: float = 0.0
    trtllm_fp4_gemm_k_latency_s: float = 0.0
    blockscale_gemm_k_latency_s: float = 0.0
    blockscale_gemm_latency_s: float = 0.0
    sglang_blockscale_gemm_k_latency_s: float = 0.0
    blockscale_expert_k_latency_s: float = 0.0
    blockscale_gemm_peak_fraction: float = 0.0
    trtllm_blockscale_gemm_peak_fraction: float = 0.0
    blockscale_gemm_stream_fraction: float = 0.0
    aiter_moe_sorting_s: float = 0.0
    aiter_bf16_gemm_latency_s: float = 0.0
    aiter_bf16_gemm_hbm_fraction: float = 0.0
    fp4_expert_peak_fraction: float = 0.0
    fp4_expert_hbm_fraction: float = 0.0
    fp4_expert_latency_s: float = 0.0
    fp4_expert_routed_peak_fraction: float = 0.0
    a8w4_expert_hbm_fraction: float = 0.0
    a8w4_expert_wide_hbm_fraction: float = 0.0
    mxfp4_expert_peak_fraction: float = 0.0
    mxfp4_expert_hbm_fraction: float = 0.0
    mxfp4_expert_latency_s: float = 0.0
    trtllm_gen_fp4_expert_peak_fraction: float = 0.0
    trtllm_gen_fp4_expert_hbm_fraction: float = 0.0
    trtllm_gen_fp4_expert_latency_s: float = 0.0
    trtllm_gen_fp4_expert_ep_token_s: float = 0.0
    trtllm_gen_fp8_expert_peak_fraction: float = 0.0
    trtllm_gen_fp8_expert_hbm_fraction: float = 0.0
    trtllm_gen_fp8_expert_latency_s: float = 0.0
    w4a16_expert_dequant_fraction: float = 0.0
    w4a16_expert_latency_s: float = 0.0
    trtllm_fp8_expert_peak_fraction: float = 0.0
    trtllm_w4a16_expert_peak_fraction: float = 0.0
    marlin_expert_peak_fraction: float = 0.0
    marlin_expert_dequant_fraction: float = 0.0
    gdn_chunk_peak_fraction: float = 0.0
    gdn_chunk_latency_s: float = 0.0
    gemm_overlap_exponent: float = 0.0
    attention_tile_blocks: float = 0.0
    trtllm_attention_tile_blocks: float = 0.0
    basis: str = ""  # which catalog entries these came from, e.g. "architecture hopper"
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    # ``assumptions()`` once built (every collective timed cites them: thousands of times in
    # one SLO search); a copy (``dataclasses.replace``) starts empty
    _assumptions: list[tuple[Assumption, ...]] = field(
        default_factory=list, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        for name in PARAMETERS:
            value = getattr(self, name)
            if name in _FRACTIONS:
                low_ok = value >= 0 if name in _ZERO_OK else value > 0
                if not (low_ok and value <= 1):
                    raise ValueError(f"efficiency {name} must be in (0, 1], got {value}")
            elif value < 0:
                raise ValueError(f"efficiency {name} must be >= 0 seconds, got {value}")

    def serving_sustained_fraction(self, dtype: str) -> float:
        """The share of the per-op tensor rate a serving step's dense GEMMs in ``dtype``
        keep: ``serving_fp8_sustained_fraction`` for fp8 where measured, else the training
        step's ``sustained_tensor_fraction``."""
        if dtype == "fp8" and self.serving_fp8_sustained_fraction:
            return self.serving_fp8_sustained_fraction
        return self.sustained_tensor_fraction

    def gemm_fraction(self, dtype: str) -> float:
        """The achievable share of the dense peak for a GEMM in ``dtype``."""
        if dtype == "fp8" and self.fp8_gemm_peak_fraction:
            return self.fp8_gemm_peak_fraction
        if dtype == "fp4" and self.fp4_gemm_peak_fraction:
            return self.fp4_gemm_peak_fraction
        return self.gemm_peak_fraction

    def grouped_gemm_fraction(
        self, dtype: str, *, fused_moe: bool, expert: bool = False, trtllm_moe: bool = False
    ) -> float:
        """The achievable share of the dense peak for an MoE expert GEMM in ``dtype``: under
        a serving engine's fused-MoE kernel (``fused_moe``) the kernel's own fp8 or 16-bit
        one where measured, 4-bit experts on fp4 tensor cores (``expert``, any serving
        engine) their fused-MoE kernel's, fp8 experts under TensorRT-LLM's MoE
        (``trtllm_moe``) its own where measured, else as ``gemm_fraction``; ``dtype`` "mxfp4":
        fp4 math on an MXFP4 checkpoint's experts (``mxfp4_expert_peak_fraction``); "tg-fp4" /
        "tg-fp8": NVFP4 / block-scaled fp8 experts under TRT-LLM-Gen's fused MoE
        (``trtllm_gen_fp4_expert_peak_fraction`` / ``trtllm_gen_fp8_expert_peak_fraction``)."""
        if dtype == "tg-fp4" and self.trtllm_gen_fp4_expert_peak_fraction:
            return self.trtllm_gen_fp4_expert_peak_fraction
        if dtype == "tg-fp8" and self.trtllm_gen_fp8_expert_peak_fraction:
            return self.trtllm_gen_fp8_expert_peak_fraction
        if expert and dtype == "mxfp4" and self.mxfp4_expert_peak_fraction:
            return self.mxfp4_expert_peak_fraction
        if expert and dtype in ("fp4", "mxfp4") and self.fp4_expert_peak_fraction:
            return self.fp4_expert_peak_fraction
        if trtllm_moe and dtype == "fp8" and self.trtllm_fp8_expert_peak_fraction:
            return self.trtllm_fp8_expert_peak_fraction
        if fused_moe and dtype == "fp8" and self.fused_moe_fp8_gemm_peak_fraction:
            return self.fused_moe_fp8_gemm_peak_fraction
        if fused_moe and dtype in ("bf16", "fp16") and self.fused_moe_gemm_peak_fraction:
            return self.fused_moe_gemm_peak_fraction
        return self.gemm_fraction(dtype)

    def decode_attention_fraction(self) -> float:
        """The achievable share of HBM bandwidth for a decode step's KV-cache read."""
        return self.decode_attention_hbm_fraction or self.hbm_fraction

    def gemm_memory_fraction(self, dtype: str = "", *, expert: bool = False) -> float:
        """The achievable share of HBM bandwidth for the operand and output traffic of a
        GEMM whose math runs in ``dtype`` ("" = not fp4; "mxfp4": fp4 math on an MXFP4
        checkpoint's experts; "tg-fp4" / "tg-fp8": TRT-LLM-Gen's fused MoE on NVFP4 /
        block-scaled fp8 experts); ``expert``: a serving engine's fused-MoE expert GEMM."""
        if dtype == "tg-fp4" and self.trtllm_gen_fp4_expert_hbm_fraction:
            return self.trtllm_gen_fp4_expert_hbm_fraction
        if dtype == "tg-fp8" and self.trtllm_gen_fp8_expert_hbm_fraction:
            return self.trtllm_gen_fp8_expert_hbm_fraction
        if expert and dtype == "mxfp4" and self.mxfp4_expert_hbm_fraction:
            return self.mxfp4_expert_hbm_fraction
        if expert and dtype in ("fp4", "mxfp4") and self.fp4_expert_hbm_fraction:
            return self.fp4_expert_hbm_fraction
        if dtype == "fp4" and self.fp4_gemm_hbm_fraction:
            return self.fp4_gemm_hbm_fraction
        return self.gemm_hbm_fraction or self.hbm_fraction

    def a8w4_expert_fraction(self, rows_per_expert: float) -> float:
        """The weight-stream share of AITER's Triton a8w4 MoE GEMM at ``rows_per_expert``
        routed rows an expert (its routing's ``block_m``: ``a8w4_block_m``); 0 = none."""
        if a8w4_block_m(rows_per_expert) > A8W4_MIN_BLOCK_M:
            return self.a8w4_expert_wide_hbm_fraction or self.a8w4_expert_hbm_fraction
        return self.a8w4_expert_hbm_fraction

    def attention_fraction(self, *, backward: bool) -> float:
        """The achievable share of the dense peak for fused attention, forward or backward."""
        ratio = self.attention_backward_ratio if backward else 1.0
        return self.attention_peak_fraction * ratio

    def with_values(self, *, source: str, **values: float) -> Efficiency:
        """A copy with ``values`` replaced, each now citing ``source`` (e.g. a calibration)."""
        unknown = sorted(set(values) - set(PARAMETERS))
        if unknown:
            raise ValueError(f"unknown efficiency parameter(s) {unknown}; known: {PARAMETERS}")
        sources = dict(self.sources) | dict.fromkeys(values, source)
        return dataclasses.replace(self, sources=sources, **values)  # type: ignore[arg-type]

    def assumptions(self) -> tuple[Assumption, ...]:
        """Every parameter as a named, sourced assumption."""
        if not self._assumptions:
            prefix = f"[{self.basis}] " if self.basis else ""
            self._assumptions.append(
                tuple(
                    Assumption(
                        name=name,
                        value=getattr(self, name),
                        source=prefix + self.sources.get(name, "set in code"),
                    )
                    for name in PARAMETERS
                )
            )
        return self._assumptions[0]


# ---- the data file (pydantic at the edge) --------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Value(_Frozen):
    value: Annotated[float, Field(ge=0)]
    source: str = Field(min_length=3)


class _Entry(_Frozen):
    gemm_peak_fraction: _Value | None = None
    attention_peak_fraction: _Value | None = None
    hbm_fraction: _Value | None = None
    launch_overhead_s: _Value | None = None
    scale_up_fraction: _Value | None = None
    scale_out_fraction: _Value | None = None
    collective_latency_s: _Value | None = None
    nvls_fraction: _Value | None = None
    sustained_tensor_fraction: _Value | None = None
    serving_fp8_sustained_fraction: _Value | None = None
    attention_backward_ratio: _Value | None = None
    fp8_gemm_peak_fraction: _Value | None = None
    fp4_gemm_peak_fraction: _Value | None = None
    decode_attention_hbm_fraction: _Value | None = None
    decode_attention_floor_s: _Value | None = None
    mla_decode_attention_floor_s: _Value | None = None
    vllm_mla_decode_latency_s: _Value | None = None
    decode_attention_element_s: _Value | None = None
    fp8_kv_attention_peak_fraction: _Value | None = None
    fp8_context_attention_peak_fraction: _Value | None = None
    gemm_hbm_fraction: _Value | None = None
    fp4_gemm_hbm_fraction: _Value | None = None
    fused_moe_gemm_peak_fraction: _Value | None = None
    fused_moe_fp8_gemm_peak_fraction: _Value | None = None
    marlin_relative_rate: _Value | None = None
    fp8_gemm_latency_s: _Value | None = None
    fp4_gemm_latency_s: _Value | None = None
    fp4_gemm_k_latency_s: _Value | None = None
    trtllm_fp4_gemm_latency_s: _Value | None = None
    trtllm_fp4_gemm_k_latency_s: _Value | None = None
    blockscale_gemm_k_latency_s: _Value | None = None
    blockscale_gemm_latency_s: _Value | None = None
    sglang_blockscale_gemm_k_latency_s: _Value | None = None
    blockscale_expert_k_latency_s: _Value | None = None
    blockscale_gemm_peak_fraction: _Value | None = None
    trtllm_blockscale_gemm_peak_fraction: _Value | None = None
    blockscale_gemm_stream_fraction: _Value | None = None
    aiter_moe_sorting_s: _Value | None = None
    aiter_bf16_gemm_latency_s: _Value | None = None
    aiter_bf16_gemm_hbm_fraction: _Value | None = None
    fp4_expert_peak_fraction: _Value | None = None
    fp4_expert_hbm_fraction: _Value | None = None
    fp4_expert_latency_s: _Value | None = None
    fp4_expert_routed_peak_fraction: _Value | None = None
    a8w4_expert_hbm_fraction: _Value | None = None
    a8w4_expert_wide_hbm_fraction: _Value | None = None
    mxfp4_expert_peak_fraction: _Value | None = None
    mxfp4_expert_hbm_fraction: _Value | None = None
    mxfp4_expert_latency_s: _Value | None = None
    trtllm_gen_fp4_expert_peak_fraction: _Value | None = None
    trtllm_gen_fp4_expert_hbm_fraction: _Value | None = None
    trtllm_gen_fp4_expert_latency_s: _Value | None = None
    trtllm_gen_fp4_expert_ep_token_s: _Value | None = None
    trtllm_gen_fp8_expert_peak_fraction: _Value | None = None
    trtllm_gen_fp8_expert_hbm_fraction: _Value | None = None
    trtllm_gen_fp8_expert_latency_s: _Value | None = None
    w4a16_expert_dequant_fraction: _Value | None = None
    w4a16_expert_latency_s: _Value | None = None
    trtllm_fp8_expert_peak_fraction: _Value | None = None
    trtllm_w4a16_expert_peak_fraction: _Value | None = None
    marlin_expert_peak_fraction: _Value | None = None
    marlin_expert_dequant_fraction: _Value | None = None
    gdn_chunk_peak_fraction: _Value | None = None
    gdn_chunk_latency_s: _Value | None = None
    gemm_overlap_exponent: _Value | None = None
    attention_tile_blocks: _Value | None = None
    trtllm_attention_tile_blocks: _Value | None = None
    note: str = ""


class _EfficiencyFile(_Frozen):
    kind: dict[str, _Entry]
    vendor: dict[str, _Entry] = {}
    architecture: dict[str, _Entry] = {}
    chip: dict[str, _Entry] = {}


class _Entries(NamedTuple):
    """What ``EfficiencyTable.lookup`` reads of a chip: the keys of its entries (``own``: the
    chip entry's, its base chip's for a derived one) and its id for errors."""

    id: str
    kind: str
    vendor: str
    architecture: str
    own: str

    @classmethod
    def of(cls, chip: Chip) -> _Entries:
        """``chip``'s keys (a derived chip keeps its base chip's entry)."""
        return cls(chip.id, chip.kind, chip.vendor, chip.architecture, chip.based_on or chip.id)


@dataclass(frozen=True, slots=True)
class EfficiencyTable:
    """The parsed ``efficiency.toml``: entries by level and key."""

    kind: Mapping[str, Mapping[str, tuple[float, str]]]
    vendor: Mapping[str, Mapping[str, tuple[float, str]]]
    architecture: Mapping[str, Mapping[str, tuple[float, str]]]
    chip: Mapping[str, Mapping[str, tuple[float, str]]]

    def lookup(self, chip: Chip) -> Efficiency:
        """Merge kind <- vendor <- architecture <- chip entries for ``chip``."""
        return self.lookup_entries(_Entries.of(chip))

    def lookup_entries(self, chip: _Entries) -> Efficiency:
        """``lookup`` of a chip by the keys its entries are found under."""
        if chip.kind not in self.kind:
            raise CatalogError(
                f"efficiency.toml has no [kind.{chip.kind}] defaults for {chip.id}; "
                f"add one (kinds present: {', '.join(sorted(self.kind))})"
            )
        values: dict[str, float] = {}
        sources: dict[str, str] = {}
        basis = [f"kind {chip.kind}"]
        levels = (
            ("kind", chip.kind, self.kind),
            ("vendor", chip.vendor, self.vendor),
            ("architecture", chip.architecture, self.architecture),
            ("chip", chip.own, self.chip),  # a derived chip: its base's
        )
        for level, key, table in levels:
            entry = table.get(key)
            if entry is None:
                continue
            if level != "kind":
                basis.append(f"{level} {key}")
            for name, (value, source) in entry.items():
                values[name] = value
                sources[name] = source
        own = chip.own  # a derived chip keeps its base chip's entry
        if chip.architecture not in self.architecture and own not in self.chip:
            basis.append(f"(no entry for architecture {chip.architecture!r}: defaults)")
        missing = [p for p in PARAMETERS if p not in values and p not in _OPTIONAL]
        if missing:
            raise CatalogError(f"efficiency.toml: {chip.id} resolves no value for {missing}")
        return Efficiency(basis=", ".join(basis), sources=sources, **values)


def _entries(table: Mapping[str, _Entry]) -> dict[str, dict[str, tuple[float, str]]]:
    out: dict[str, dict[str, tuple[float, str]]] = {}
    for key, entry in table.items():
        out[key] = {
            name: (v.value, v.source)
            for name in PARAMETERS
            if (v := getattr(entry, name)) is not None
        }
    return out


def parse_efficiency_table(raw: Mapping[str, object]) -> EfficiencyTable:
    """Validate the TOML content of an efficiency file."""
    try:
        file = _EfficiencyFile.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise CatalogError(f"efficiency.toml: {loc}: {first['msg']}") from err
    table = EfficiencyTable(
        kind=_entries(file.kind),
        vendor=_entries(file.vendor),
        architecture=_entries(file.architecture),
        chip=_entries(file.chip),
    )
    for level in (table.kind, table.vendor, table.architecture, table.chip):
        for key, entry in level.items():
            for name, (value, _) in entry.items():
                if name in _FRACTIONS and value > 1:
                    raise CatalogError(f"efficiency.toml: {key}.{name} = {value} is above 1")
    return table


@cache
def default_efficiency_table() -> EfficiencyTable:
    """The packaged ``data/efficiency.toml``, read once."""
    path = resources.files("chipwise.perf").joinpath("data/efficiency.toml")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"efficiency.toml: not valid TOML: {err}") from err
    return parse_efficiency_table(raw)


def efficiency_for(chip: Chip) -> Efficiency:
    """The packaged efficiency parameters for ``chip`` (most specific entry wins)."""
    return _packaged(_Entries.of(chip))


@lru_cache(maxsize=CACHE_ENTRIES)
def _packaged(chip: _Entries) -> Efficiency:
    """``efficiency_for``, merged once per chip: a serving search times thousands of
    collectives, each asking for its chip's parameters (and citing them, which
    ``Efficiency.assumptions`` builds once per object)."""
    return default_efficiency_table().lookup_entries(chip)


def fabric_collective_latency_s(chip: Chip) -> float:
    """The per-step latency of the chip's fabric alone: the ``[kind.<kind>]`` default of
    ``collective_latency_s``. An architecture entry may raise it to what its collective
    library measures (RCCL on CDNA3); a kernel that bypasses the library (a serving
    engine's custom all-reduce) pays only this."""
    value, _ = default_efficiency_table().kind[chip.kind]["collective_latency_s"]
    return value
