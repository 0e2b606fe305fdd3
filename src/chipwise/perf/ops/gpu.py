"""GPU (and GEMM-engine ASIC) op times: the roofline refined by how GEMMs map onto SMs.

Legend: M, N, K = GEMM dims ((M x K) @ (K x N)); tm x tn = the output tile one SM (CTA)
computes; tk = the K step of its main loop; SMs = ``chip.units``.

Refinements over the plain roofline (``roofline.py``), each a named constant or an
``Efficiency`` parameter:

- **Achievable peak.** Tensor-core ops run at ``gemm_peak_fraction`` of the dtype's dense peak
  (the measured MAMF of the generation; ``fp8_gemm_peak_fraction`` for fp8 where measured);
  fused attention at ``attention_peak_fraction``, its backward at ``attention_backward_ratio``
  of that; a sliding window pays for every ``FLASH_BLOCK`` tile its band crosses; a prefill
  (context) attention kernel pays ``attention_tile_blocks`` key blocks of fixed work per
  128-row query tile and query head (``attention_tile_flops``).
- **Tile quantisation.** A GEMM is cut into ceil(M/tm) x ceil(N/tn) x batch tiles; a partial
  tile costs a full one.
- **Wave quantisation.** Tiles run in waves of ``SMs``: waves = ceil(tiles / SMs), and the
  last wave may leave SMs idle (utilisation = tiles / (waves x SMs)).
- **Pipeline fill.** Each tile's K loop pays a prologue and epilogue worth ``K_FILL`` extra
  K elements: efficiency K / (K + K_FILL).
- **Kernel choice.** Like cuBLAS's and hipBLASLt's heuristics, the model takes the fastest
  of a few tile shapes and split-K factors (``plan_gemm``). A tile reuses each operand
  element it loads intensity(tile) = tm tn / (tm + tn) times; the tensor units run at full
  rate only while the L2 -> SM operand feed keeps up, i.e. intensity(tile) >= the
  architecture's *balance* = MACs per clock per SM / operand elements per clock per SM
  from L2 (``balance_intensity``; vendor-stated L2 bandwidths in ``_L2_FEED_BYTES_PER_CLK``).
  A tile below the balance runs at intensity / balance of the rate (``tile_rate_factor``).
  Where no L2 figure is published, the balance is taken as the intensity of the largest tile
  the vendor libraries use for peak-rate GEMMs (a library sizes that tile to keep the tensor
  units fed), so the feed figure only ever refines it downward; a part whose tensor cores are
  throttled per clock (H20, half-rate GeForce) scales it down by its rate
  (``tensor_throttle``). Split-K adds fp32 partial-sum traffic, which reaches HBM only for
  the part that does not stay in L2 (``SPLIT_K_L2_SHARE``). This makes skinny GEMMs
  (decode, GEMV) stream their weights near HBM bandwidth on every vendor, as the small-M
  kernels of cuBLAS/hipBLASLt do.
- **Soft knee (CDNA3).** A dense GEMM's time is the slower of its tensor time and operand
  stream (the hard roofline) where the kernel hides one under the other (NVIDIA: TMA /
  cp.async producers feed the tensor cores); on an architecture with a
  ``gemm_overlap_exponent`` p it is their p-norm (``roofline.combine``), and the kernel
  choice minimises that. CDNA3 (p = 2, fitted on the MI325X hipBLASLt fp8 table): its
  kernels issue global loads and MFMAs from the same waves, so near the ridge (M ~ 100-1000
  for 8K-wide projections) each waits on the other; the hard roofline was a median 14 %
  fast there. MoE expert GEMMs keep the hard roofline (their kernels' own rates).
- **Memory-bound ops** stream at ``hbm_fraction`` of HBM bandwidth; non-tensor FLOPs run on
  the CUDA cores / vector units (``vector_flops_per_s``). A GEMM's operand traffic streams at
  ``gemm_hbm_fraction`` where the vendor library's skinny GEMMs were measured below a large
  copy's rate (CDNA3: hipBLASLt fp8 decode projections at ~2.95 of 5.3 TB/s), else at
  ``hbm_fraction``; block-scaled fp4 math at ``fp4_gemm_hbm_fraction`` where measured apart
  (Blackwell: NVFP4 GEMMs at decode M stream ~2.4 of 8 TB/s). Under a serving engine whose
  own NVFP4 linear was timed (``fp4_gemm_latency_s`` for vLLM/SGLang's FlashInfer CuteDSL
  kernel; ``trtllm_fp4_gemm_*`` for TensorRT-LLM where set) a dense fp4 GEMM instead streams
  its weights at ``hbm_fraction`` and pays a fixed latency plus one per 1024 of K: at decode
  M each CTA walks the whole K serially (``_engine_fp4_latency_s``); TensorRT-LLM's on
  Blackwell takes the engine's measured kernel grid at every M (``kernels.measured_grid_gemm_s``,
  data/kernels/trtllm-fp4-gemm.csv). A dense block-scaled
  fp8 GEMM (``op.block_scaled``: DeepSeek's 128 x 128 weight blocks) takes at least
  ``blockscale_gemm_k_latency_s`` per 1024 of K where set (CDNA3: AITER's
  tuned CK block-scale kernels have no split-K, so at decode M a handful of tiles each walk
  all of K, ~19 us at K = 7168 whatever N, against ~1-4 us of weight stream; Hopper:
  DeepGEMM's and TensorRT-LLM's kernels, 11-14 us at K = 7168, with
  ``blockscale_gemm_latency_s`` in place of the per-tensor ``fp8_gemm_latency_s``;
  ``_blockscale_k_serial_s``; under SGLang, whose ROCm build runs AITER's Triton block-scale
  GEMM instead, ``sglang_blockscale_gemm_k_latency_s`` per wave of 128 x 128 tiles, its
  untuned gfx942 default); a fused-MoE engine's block-scaled fp8 expert GEMMs likewise take
  ``blockscale_expert_k_latency_s`` per 1024 of K where set (AITER's CK two-stage MoE: its
  first stage over K = 7168 takes ~45 us at 1-4 tokens, whatever the experts they touch).
  At compute-bound M such a dense GEMM runs at ``blockscale_gemm_peak_fraction`` of the fp8
  peak where set, not the per-tensor fp8 GEMM's ``fp8_gemm_peak_fraction``: every 128-deep
  K block's partial product is multiplied by its activation and weight scales on the
  vector ALUs before it is accumulated (CDNA4: AITER's tuned CK kernels, 0.7-1.4 PFLOP/s at
  M = 1024-16384 for DeepSeek-V3's TP8 projections on MI355X, where a per-tensor fp8 GEMM
  reaches 3.3).
- **Decode attention** (one query token per sequence reading its paged KV cache) streams
  at ``decode_attention_hbm_fraction`` where one is set (CDNA3: ROCm vLLM's fp8-KV paged
  attention, bound by dequantising the cache; Hopper and Blackwell: the measured rate of
  the engines' kernels at GB-sized caches), else at ``hbm_fraction``. Its fixed cost is
  ``decode_attention_floor_s`` where set, not one launch: the op is several kernels (KV
  append, split-KV partials, the combine), each waiting on its DRAM round trips, measured at
  batch 1 and context 1 (~9-15 us on A100-B200, against a 3 us launch); an absorbed-MLA
  op (``is_latent_decode_attention``) takes ``mla_decode_attention_floor_s`` instead where
  its own kernel was timed (CDNA: AITER's assembly MLA decode and its reduce kernel, 12-16
  us at batch 1, short context). Beyond the floor
  each sequence costs SM work (CTA set-up, query load, KV append, combine) of
  ``decode_attention_element_s`` per element of a cached token's K/V row, which overlaps the
  cache read (the op takes the longer): ~0.1 us per sequence of a GQA 32/8 model on B200,
  ~0.2 on Hopper, what sets the op at large batch and short context. On an fp8 cache
  (``op.weight``) where ``fp8_kv_attention_peak_fraction`` is set (Blackwell: trtllm-gen's
  FP8 MLA/XQA quantise the query), its MMAs run at that share of the fp8 peak, not at the
  activation dtype's ``attention_peak_fraction``: DeepSeek MLA at 128 heads per rank is
  compute-bound at the bf16 rate (Hopper dequantises and stays there). A prefill attention
  op in fp8 (``layers.fp8_context_attention``: TensorRT-LLM's FP8 context FMHA) runs at
  ``fp8_context_attention_peak_fraction`` of the fp8 peak where measured, else at the 16-bit
  kernel's rate (the fp8 kernels are 1.25-1.33x the bf16 ones at long prompts, not 2x).
- **Launch overhead** ``launch_overhead_s`` per kernel (op instance); an fp8 GEMM call
  (not a fused-MoE one) also pays ``fp8_gemm_latency_s`` where measured: the engines'
  scaled fp8 GEMMs take ~4 us more than a bf16 GEMM at decode M.
- **Grouped GEMMs of MoE experts** (``op.grouped``): one GEMM per expert, as Transformer
  Engine's GroupedLinear runs them (a cuBLAS call per expert), so tile padding applies per
  expert (tokens per expert = T k / E rows). Transformer Engine issues those GEMMs round-robin
  on ``TE_GEMM_STREAMS`` CUDA streams, so that many run at once and share the SMs: waves
  are counted over the tiles of each such set of experts, and each set pays one launch.
  Serving engines run the experts as one fused kernel instead (their ops stay batched: one
  grid of every expert's tiles, each expert's rows padded to the tile on its own load under
  the op's routing, ``routed_row_tiles``: Binomial loads under the served steps' random
  routing, the mean under the kernel tables' balanced one; the tile is chosen by its
  expected time over those loads, as the engines' tuned configs are, not at the mean load:
  AIConfigurator's power-law columns, a harsher skew than random routing, are 1.02-2.0x the
  balanced ones at >= 1024 tokens and never follow the hottest expert); under vLLM's and
  SGLang's Triton ``fused_moe`` (``fused_moe``) experts run at the kernel's own measured
  rates, ``fused_moe_fp8_gemm_peak_fraction`` (block-scaled fp8) and
  ``fused_moe_gemm_peak_fraction`` (bf16 math), where they are measured. With fp8 math the
  kernel's input is quantised by a kernel of its own before each of the two expert GEMMs
  (``FUSED_MOE_FP8_INPUT_QUANT``): one more launch per expert GEMM. 4-bit experts on fp4
  tensor cores (NVFP4, MXFP4 x MXFP8 on Blackwell), under any serving engine, run at their
  fused-MoE kernel's measured rates: ``fp4_expert_peak_fraction`` of the fp4 peak,
  weights streamed at ``fp4_expert_hbm_fraction`` (not the dense decode-M GEMV's
  ``fp4_gemm_hbm_fraction``), and ``fp4_expert_latency_s`` fixed per expert GEMM (CUTLASS
  NVFP4). Under AITER's fused MoE (``AITER_ENGINES``) where ``fp4_expert_routed_peak_fraction``
  is set (CDNA4) the routed rows' own FLOPs run at no more than that share of the fp4 peak,
  a ceiling beside the tile plan: at prefill token counts the kernels' gather, block scales
  and stage-2 accumulation, not their MFMAs, set the time (1-2 PFLOP/s on MI355X). An MXFP4
  checkpoint's experts (gpt-oss, ``op.weight`` "mxfp4") under
  ``Inference.moe_backend`` "trtllm-gen" (``TRTLLM_GEN_MOE``: TRT-LLM-Gen's MXFP4 x MXFP8
  fused MoE, as TensorRT-LLM's TRTLLM MoE backend and vLLM's FlashInfer MXFP4 x MXFP8
  backend run them on Blackwell) take the ``mxfp4_expert_*`` values where the architecture
  has them: its small token tiles keep the weight stream the bound at decode loads where
  the CUTLASS tiles pay their padding (1.3-1.8x the kernel's time at ep 1). Those are
  swap-AB tiles of 8-32 tokens (``swap_ab_expert_compute_s``: the longer of the MMA and the
  shared-memory operand feed, so the serving step's sustained stretch leaves them under the
  weight stream), and under vLLM the experts' dimensions are padded to multiples of 256
  (``vllm_mxfp4_padded``). Under the same
  backend an NVFP4 checkpoint's experts (DeepSeek-R1-FP4) and a block-scaled fp8
  checkpoint's (DeepSeek-R1), as SGLang's --moe-runner-backend flashinfer_trtllm runs them
  (FlashInfer trtllm_fp4_block_scale_moe / trtllm_fp8_block_scale_moe), take that kernel's
  own measured values, ``trtllm_gen_fp4_expert_*`` / ``trtllm_gen_fp8_expert_*``, where the
  architecture has them (TG-NVFP4-MOE, TG-FP8-MOE in data/efficiency.toml).
- **4-bit experts with bf16 math** (``op.weight`` MXFP4/INT4 on an expert GEMM: gpt-oss on
  Hopper and Ampere, which have no fp4 tensor cores), under any serving engine, on the
  architectures with a ``w4a16_expert_dequant_fraction``: the engines' W4A16 fused-MoE kernel
  (Hopper: triton_kernels matmul_ogs; Ampere: Marlin-MoE) dequantises each expert's weights
  on the CUDA cores once per row slice (``_W4A16_EXPERT_TILE``), at that share of the FP32
  vector rate, then runs the MMA on the padded rows at ``gemm_peak_fraction``; the two add,
  and each expert GEMM pays ``w4a16_expert_latency_s``. Each expert's rows are padded on
  their own, in expectation over its load under the op's routing (``w4a16_routed_rows``:
  Binomial loads under random routing, the mean under the kernel tables' balanced one). On
  Hopper the kernel also gathers the routed rows in its prologue and applies the SwiGLU in
  its epilogue (``_W4A16_FUSED_OPS``). TensorRT-LLM's own MoE op (which permutes and
  activates in kernels of their own) runs the MMA at ``trtllm_w4a16_expert_peak_fraction``
  of the bf16 peak where measured. Under ``Inference.moe_backend`` "marlin" (``MARLIN_MOE``:
  vLLM's Marlin-MoE, ``VLLM_MXFP4_USE_MARLIN=1`` on Hopper) the experts run Marlin's 64-row
  slices at ``marlin_expert_peak_fraction`` of the bf16 peak (mma.sync, no warpgroup MMA)
  and ``marlin_expert_dequant_fraction`` of the FP32 rate where measured, each slice's K loop
  paying the pipeline fill ``K_FILL`` (the kernel's narrow-K down projections at moe_tp 8-16
  run 12-27 % slower than the bare rates): ~2x the Triton kernel's time at prefill sizes.
- **Weight-only dense GEMMs under a serving engine** (``op.weight``: W4A16/W8A16) on the
  architectures with a ``marlin_relative_rate`` (Ampere, Ada): vLLM and SGLang run them
  with Marlin, whose tile is 16 to 64 rows; a batch over 64 rows runs as ceil(M/64) 64-row
  slices, each dequantising the weights again, at the 64-row kernel's measured rate, a share
  ``marlin_relative_rate`` of the chip's bf16 GEMM rate. Elsewhere (Hopper's Machete,
  training) the bf16 GEMM plan applies.
- **Measured kernels** (``kernels.py``): a dense GEMM whose (chip, dtype, N, K) a submitter
  timed with its own tuned kernels (MI355X MXFP4 llama2-70b projections, AMD's AITER table
  of its MLPerf v6.0 run) takes that time instead of the tile plan's compute time. The tile
  plan at M = 352..576 was 17-28 % faster than those kernels, and 11 % slower at M = 8192.
  MI325X FP8 (hipBLASLt override tables of AMD's MLPerf v5.1 llama2-70b configs): a forward's
  four projections take 2-28 % longer than the plan's time at M = 64..576 (most at 192-256),
  the same at 16 and 832, 3-7 % less at 1024..8192.

- **Engine fusion** (``for_engine``, ``ENGINE_FUSED_OPS``): a serving engine on a GPU runs
  some of the layer's elementwise ops inside a neighbouring kernel, so they pay no launch of
  their own and only the traffic the fused kernel adds: every engine adds the residual into
  the next RMSNorm (``fused_add_rms_norm``: the residual read and the updated residual
  written beside the norm's own pass); TensorRT-LLM also applies RoPE inside its attention
  op (no traffic: the attention kernel reads q and k anyway) and, under tp > 1, each RMSNorm
  inside the all-reduce before it (``TP_FUSED_OPS``, ``with_tp_fusion``: only the normed
  output written).

Otherwise no fusion is modelled: eager PyTorch launches each op as its own kernel. L2 reuse
across kernels is ignored (the model errs slow for small working sets).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import NamedTuple, final

from chipwise.hardware.chip import Chip
from chipwise.limits import CACHE_ENTRIES
from chipwise.perf.base import Assumption, OpTime, PerfModel
from chipwise.perf.efficiency import Efficiency, a8w4_block_m, efficiency_for, pow2_tile
from chipwise.perf.ops.kernels import measured_gemm_s, measured_grid_gemm_s
from chipwise.perf.ops.layers import GDN_CHUNK, INDEXER, block_overcount, is_fp8_context_attention
from chipwise.perf.ops.roofline import Roof, combine, compute_rate, op_bytes, op_flops, timed
from chipwise.perf.ops.tpu import is_decode_attention
from chipwise.units import DTYPE_BYTES, dtype_bytes
from chipwise.workload.ir import ExpertRouting, Op, OpKind

# Output tile (tm, tn) per SM of the largest GEMM kernels, by architecture. Sources:
# CUTLASS 3 default sm90 TMA warp-specialized GEMM tile 128x256x64 (Hopper); Blackwell's
# 2-SM UMMA 256x256 = 128x256 per SM; CUTLASS 2 DefaultGemmConfiguration<OpClassTensorOp,
# Sm80> for 16-bit inputs: threadblock 128x256x64, 3 stages (include/cutlass/gemm/device/
# default_gemm_configuration.h; cuBLAS ships the same ampere_*_128x256 kernels); 128x128 for
# Turing/Volta and unknown parts; hipBLASLt MT256x256x64 macro tiles for large bf16 GEMMs on
# CDNA3/4;
# Gaudi's MME is a 256x256 array (hardware.md "Intel Gaudi MME").
_LARGEST_TILE: dict[str, tuple[int, int]] = {
    "hopper": (128, 256),
    "blackwell": (128, 256),
    "ampere": (128, 256),
    "ada": (128, 128),
    "turing": (128, 128),
    "volta": (128, 128),
    "cdna2": (256, 256),
    "cdna3": (256, 256),
    "cdna4": (256, 256),
    "gaudi": (256, 256),
    "gaudi2": (256, 256),
    "gaudi3": (256, 256),
}
DEFAULT_TILE = (128, 128)  # CUTLASS's generic default; used for architectures not above
# Smaller tiles cuBLAS-like libraries also ship, tried when they are faster. The 16-row
# tiles are the skinny-GEMM kernels (decode, M = batch): 16 is the smallest M of a tensor
# core instruction (mma.sync m16n8k16 on NVIDIA, 16x16x16 MFMA on CDNA), so a GEMM with
# M = 1 does 16 rows of work, not 64 or 128, and is bound by reading its weights.
_SMALL_TILES: tuple[tuple[int, int], ...] = (
    (128, 128), (64, 128), (128, 64), (64, 64), (16, 128), (16, 256),
)  # fmt: skip
# Operand feed from L2 to the SMs/CUs, bytes per clock per SM (CU), where the vendor states
# it. Sources: NVIDIA A100 Tensor Core GPU Architecture white paper (2020): L2 read bandwidth
# 5120 B/clk on A100 (108 SMs) vs 2048 B/clk on V100 (80 SMs); AMD CDNA 3 white paper
# (2023): each XCD's 4 MB L2 has 16 channels delivering 2 KB/clk to its 38 CUs (34.4 TB/s
# aggregate on MI300X/MI325X); AMD CDNA 2 white paper (2021): a GCD's 8 MB L2 has 32
# channels of 128 B/clk (4 KB/clk) for its 110 CUs; CDNA 4 (MI350X/MI355X) keeps the 4 MB
# 16-channel L2 per XCD (ROCm "AMD GPU specifications", 2025) for 32 CUs: assumed the same
# 2 KB/clk per XCD as CDNA 3 (no separate figure stated). Hopper, Blackwell, Ada, Gaudi:
# no per-clock L2 figure published; the largest-tile rule applies (module doc).
_L2_FEED_BYTES_PER_CLK: dict[str, float] = {
    "volta": 2048.0 / 80,
    "ampere": 5120.0 / 108,
    "cdna2": 4096.0 / 110,
    "cdna3": 2048.0 / 38,
    "cdna4": 2048.0 / 32,
}
# Tensor-to-FP32 rate ratio of each architecture's full-rate part, from its datasheet's dense
# 16-bit tensor and non-tensor FP32 figures (catalog: H100 SXM 989.4 / 66.9 TF; B200 2250 /
# 80 TF; L40S 362.05 / 91.6 TF; RTX PRO 6000 Blackwell 503.8 / 125.95 TF). Both rates scale
# with the same SM clock, so a part whose ratio is lower has tensor cores throttled per clock
# (H20: 148 / 44 TF, a quarter of Hopper's; GeForce Ada and Blackwell at half rate with fp32
# accumulate) and a proportionally lower balance intensity: the same L2 feed keeps a slower
# MMA pipe busy with a smaller tile. Ratios within ``FULL_RATE_TOLERANCE`` of the reference
# are the same silicon quoted at slightly different clocks (H100 PCIe, GB200).
_FULL_RATE_TENSOR_TO_FP32: dict[str, float] = {
    "hopper": 989.4 / 66.9,
    "blackwell": 2250.0 / 80.0,
    "ada": 362.05 / 91.6,
    "blackwell-rtx": 503.8 / 125.95,
}
FULL_RATE_TOLERANCE = 0.9
# Split-K partial sums (serial split-K accumulates into the output tile in turn; stream-K
# exchanges partial tiles through a workspace: CUTLASS gemm/kernel/gemm_universal and
# sm90_tile_scheduler_stream_k) are written and read back within the kernel, so they stay in
# L2 while they fit. The share of L2 they may use (the rest holds the streamed operands) is
# a round estimate, not a fitted value.
SPLIT_K_L2_SHARE = 0.5
TILE_K = 64  # K step of one main-loop iteration (CUTLASS tk for 16-bit types); K pads to it
# Prologue + epilogue of a tile in K elements: ~one main-loop step waiting on global memory
# latency (~1 us HBM round trip ~= one 64-deep step on H100/A100) plus one step of epilogue
# (converting and storing the accumulators). An estimate, not a fitted value.
K_FILL = 2 * TILE_K
SPLIT_K_FACTORS = (1, 2, 3, 4, 6, 8, 12, 16)
PARTIAL_SUM_BYTES = 4.0  # split-K partial products are fp32
# Concurrent per-expert GEMMs: Transformer Engine's grouped GEMM (GroupedLinear ->
# general_grouped_gemm -> nvte_multi_stream_cublas_gemm) puts GEMM i on compute stream
# i mod 4 (transformer_engine/common/util/multi_stream.cpp: get_num_compute_streams()
# returns the constant num_compute_streams = 4), so up to 4 experts' tiles fill the SMs
# together instead of each expert's last wave running alone.
TE_GEMM_STREAMS = 4
# Serving engines that run MoE experts with a fused-MoE kernel: vLLM's and SGLang's
# Triton fused_moe (vllm/model_executor/layers/fused_moe/fused_moe.py: one launch over the
# tokens sorted by expert, each expert's rows padded to BLOCK_SIZE_M by
# moe_align_block_size; sglang/srt/layers/moe/fused_moe_triton the same kernel). TensorRT-
# LLM runs its own MoE op (TRTLLM_MOE_ENGINE below). AMD's ATOM runs AITER's fused MoE
# (aiter fused_moe / rocm_aiter_fused_moe: one grid over the sorted, padded tokens; ROCm/ATOM
# atom/model_ops/moe.py at 8ccc65c0), the kernel vLLM's and SGLang's ROCm builds call.
FUSED_MOE_ENGINES = frozenset({"vllm", "sglang", "atom"})
# The ROCm engines whose fused MoE is AITER's for every checkpoint they serve here (SGLang's
# ROCm MoE runner, ATOM's FusedMoE): aiter fused_moe_ -> fused_moe_2stages (aiter/fused_moe.py
# at ROCm/aiter@3b97805, 2025-12-30, the release the Dec 2025 - Jan 2026 SGLang and ATOM ROCm
# images ship) runs one MoE layer as these kernels, not as the per-op model's gather /
# activation / combine passes (``_AITER_MOE_OPS``, ``GpuModel._aiter_moe_op_time``):
# * moe_sorting (CK; ``aiter_moe_sorting_s``, AITER-SORT in data/efficiency.toml) buckets the
#   routed (token, expert) pairs by expert, pads each expert's rows to the stage's row block
#   and zeroes the output buffer; the first stage reads the tokens through the sorted ids, so
#   no permuted copy is written (``moe_permute`` takes the sorting kernel's time);
# * the activations' quantisation before each stage, a kernel of its own (block fp8:
#   per-1x128 quant; MXFP4 a4w4, Quark's DeepSeek-R1 checkpoint: fused_dynamic_mxfp4_quant_
#   moe_sort, which also sorts the 1x32 scales): one launch per expert GEMM
#   (``FUSED_MOE_FP8_INPUT_QUANT``, ``AITER_MXFP4_INPUT_QUANT``); bf16 activations into
#   MXFP4 weights (gpt-oss) are not quantised;
# * stage 1, the gate/up GEMM with the SiLU in its epilogue (``expert_act`` is no kernel);
# * stage 2, the down GEMM, which applies the routing weight and accumulates into that zeroed
#   buffer (``moe_unpermute`` launches nothing; its bytes stay, the accumulation's reads and
#   writes).
# The same engines run their dense bf16 linears through AITER's tuned GEMM (aiter.tuned_gemm
# tgemm.mm: ATOM's LinearBase for unquantised layers, atom/model_ops/linear.py at 8ccc65c0;
# SGLang's under SGLANG_USE_AITER=1, which InferenceMAX's MI300X/MI325X/MI355X DeepSeek-R1
# launch scripts export), whose decode-M kernels pay ``aiter_bf16_gemm_latency_s`` per call
# (AITER-BF16 in data/efficiency.toml).
# AITER's tuned fused-MoE tables (BS-MOE, FP4-MOE-CDNA4) time the two stages alone, on inputs
# the tuner sorted and quantised once (hsa/gfx942/fmoe_2stages/tune.py gen_2stages_task ->
# generate_data_2stages, the gfx950 tuner's parent), so those values exclude all three.
# vLLM's ROCm build calls AITER's fused MoE only under VLLM_ROCM_USE_AITER=1, which the
# rows do not state: it keeps the Triton fused_moe's ops. Read 2026-12-06.
AITER_ENGINES = frozenset({"sglang", "atom"})
_AITER_MOE_OPS = frozenset({"moe_permute", "expert_act", "moe_unpermute"})
AITER_MXFP4_INPUT_QUANT = 1
# HBM bytes per input element of the MXFP4 quantisation before a dense a4w4 GEMM whose time
# is AITER's tuned table's (kernels.py, data/kernels/mi355x-fp4-gemm.csv): read the bf16
# activation (2 B), write the packed E2M1 values (0.5 B) and one E8M0 scale per 32 (1/32 B).
# The tuner quantises its input once before timing the kernel (ROCm/aiter
# csrc/ck_gemm_a4w4_blockscale/gemm_a4w4_blockscale_tune.py generate_data), while vLLM's
# Quark OCP-MX linear (vllm/model_executor/layers/quantization/quark/schemes/quark_ocp_mx.py,
# gemm_with_dynamic_quant under VLLM_ROCM_USE_AITER_FP4_ASM_GEMM=1, which AMD's MLPerf v6.0
# llama2-70b configs set) runs per_1x32_f4_quant_hip first on every call (both M paths), inside a
# registered custom op that torch.compile cannot fuse into the norm or activation before it:
# four such kernels per Llama layer. Read 2026-12-07.
MXFP4_INPUT_QUANT_BYTES = 2.0 + 0.5 + 1.0 / 32
# AITER's Triton block-scale fp8 GEMM's default ("any") config on gfx942 at the images of
# Dec 2025 - Jan 2026 (aiter/ops/triton/configs/gemm/gfx942-GEMM-A8W8_BLOCKSCALE.json,
# ROCm/aiter@3b97805, 2025-12-30): BLOCK_SIZE_M = BLOCK_SIZE_N = 128, NUM_KSPLIT 1.
TRITON_BLOCKSCALE_TILE = 128
# TensorRT-LLM runs the experts as its own MoE op (CUTLASS grouped GEMMs, moe_torch_flow_
# cutlass in AIConfigurator's tables): block-scaled fp8 experts (``Op.block_scaled``) at
# trtllm_fp8_expert_peak_fraction where measured (TRTLLM-FP8-MOE in data/efficiency.toml);
# per-tensor fp8 experts run at the dense fp8 rate in the same tables; else the training path.
TRTLLM_MOE_ENGINE = "trtllm"
# ``Inference.moe_backend`` naming TRT-LLM-Gen's fused MoE (TensorRT-LLM moe_config backend
# TRTLLM; vLLM's FlashInfer MXFP4 x MXFP8 backend, VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1;
# SGLang --moe-runner-backend flashinfer_trtllm, which also runs NVFP4 and block-scaled fp8
# experts on it: ``GpuModel._trtllm_gen_dtype``). Each engine's default is its own kernels:
# TensorRT-LLM's CUTLASS MoE, vLLM's FlashInfer MXFP4 x BF16 on Blackwell, which the
# CUTLASS-fitted fp4_expert_* values time within the tables' spread (efficiency.toml
# MXFP4-MOE).
TRTLLM_GEN_MOE = "trtllm-gen"
# TRT-LLM-Gen's fused MoE runs its expert GEMMs transposed ("swap-AB": the batched GEMM's
# transposeMmaOutput): an expert's weight rows fill the 128-row M side of the tcgen05 MMA and
# its tokens the N side, in a token tile picked from the mean load: the next power of two of
# tokens x topk / experts, clamped to "the range supported by the kernel", 8-64
# (calculate_tile_tokens_dim, vllm-project/vllm vllm/model_executor/layers/fused_moe/utils.py;
# flashinfer-ai/flashinfer csrc/trtllm_fused_moe_kernel_launcher.cu; read 2026-12-07). At
# decode loads (4 rows an expert at 128 tokens over 128 experts top-4) a tile's SM time is
# then the MMA's or the shared-memory operand feed's, whichever is longer
# (``swap_ab_expert_compute_s``), well under its weight stream, where the model's 16-row
# tile at a large tile's operand reuse made the served expert GEMM compute-bound. The
# 8-32-token tiles only: AIConfigurator 0.12.0's TensorRT-LLM 1.3.0rc20 w4a8_mxfp4_mxfp8
# table (b200_sxm, gpt-oss shape, ep 1, balanced) streams the weights at 64-1024 tokens
# (275-312 us a block) but runs 1536-4096 tokens, the 64-token tile, at 0.21-0.37 of the fp8
# peak (434 us at 2048), below this feed bound and near the tile plan's rate, which keeps it.
# vLLM's FlashInfer TRT-LLM-Gen MXFP4 backends (SM100_FI_MXFP4_MXFP8_TRTLLM, ..._BF16) pad
# each expert's hidden size and its per-rank intermediate size up to a multiple of 256 when
# they create the weights (Mxfp4MoEMethod.create_weights, vllm-project/vllm
# vllm/model_executor/layers/quantization/mxfp4.py, read 2026-12-07): gpt-oss's 2880 runs
# as 3072 and its tp8 shard of 360 as 512, weights and MMAs alike (``vllm_mxfp4_padded``).
VLLM_MXFP4_PAD = 256
# The activations around those padded experts: vLLM's FusedMoE layer pads the hidden states
# to the padded hidden size before the MoE (F.pad, ``constant_pad_nd``) and slices its output
# back to the model's (``[..., :hidden]``, a copy where the slice feeds the all-reduce or the
# fused add + RMSNorm), two elementwise kernels of their own each MoE layer beside the fused
# MoE's (vllm-project/vllm PR #28841, 2025-11-17, shows both in gpt-oss's compiled graph on
# B200: ``constant_pad_nd`` into ``moe_forward``, ``slice`` after it). PR #30647 ("Eliminate
# padding and slicing op for GPT-OSS with Flashinfer MXFP4 MXFP8 MoE", opened 2025-12-14,
# merged 2026-03-18) folded the pad into the MXFP8 quantisation (its alignment argument) and
# has the MoE write the unpadded output, as TensorRT-LLM's own MXFP4 x MXFP8 MoE does
# (mxfp8_quantize with ``alignment``, the runner writing ``hidden_size`` columns:
# tensorrt_llm/_torch/modules/fused_moe/fused_moe_trtllm_gen.py, read 2026-12-07), whose
# measured MoE op the mxfp4_expert_* values were fitted on. SGLang's same change on the same
# kernel (sgl-project/sglang PR #15731, 2025-12-24: the slice op alone) took gpt-oss-120b's
# median TPOT at tp 8 and 8 clients from 3.07 to 2.94 ms, 3.6 us a layer for that one kernel.
# Each is timed as one launch (``launch_overhead_s``) and its traffic; an engine dated from
# that merge on runs neither (``vllm_moe_pads_activations``).
VLLM_MXFP4_PAD_FUSED_DATE = "2026-03-18"
SWAP_AB_WEIGHT_ROWS = 128
SWAP_AB_TOKEN_TILES = (8, 16, 32)
SWAP_AB_TILE_RANGE = (8, 64)
# Shared memory delivers 32 banks x 32 bits a clock to each SM (CUDA C++ Programming Guide,
# "Shared Memory" of compute capabilities 5.x-10.x), which the MMA reads both operands from.
SMEM_BYTES_PER_CLK = 128.0
# The MXFP4 x MXFP8 MMA (tcgen05 kind::mxf8f6f4) takes fp4 weights in shared memory in 8-bit
# containers (PTX ISA, tcgen05 "packed and unpacked" f8f6f4 operand formats), as it takes the
# fp8 activations: one byte an element of either operand.
SWAP_AB_OPERAND_BYTES = 1.0
# ``Inference.moe_backend`` "marlin": the engines' Marlin-MoE kernel for 4-bit experts with
# bf16 math where a run picks it over the architecture's own W4A16 kernel (vLLM
# ``VLLM_MXFP4_USE_MARLIN=1`` on Hopper: vllm/model_executor/layers/quantization/mxfp4.py
# get_mxfp4_backend returns MARLIN, and fused_marlin_moe runs the experts): Marlin's
# 64-row tiles (``MARLIN_MAX_M``, not triton_kernels' block_m up to 128), each dequantising
# the expert's weights again, and its activation as a kernel of its own
# (``_W4A16_FUSED_OPS``); its MMA (Ampere-style mma.sync) and dequantisation run at its
# own measured rates where the architecture has them (``marlin_expert_peak_fraction``,
# ``marlin_expert_dequant_fraction``: Hopper, MARLIN-MOE in data/efficiency.toml), each
# slice's K loop paying the pipeline fill (``K_FILL``), else at the architecture's W4A16
# values. No validation row runs it yet (docs/performance.md, known issues).
MARLIN_MOE = "marlin"
# Under fp8 math (w8a8: DeepSeek-V3/R1's and Qwen3-*-FP8's block-scaled checkpoints) the
# Triton fused_moe path quantises each expert GEMM's input with a kernel of its own: the
# hidden states before the up/gate GEMM and the activated intermediate before the down GEMM
# (vllm/model_executor/layers/fused_moe/fused_moe.py and its modular TritonExperts.apply:
# ``moe_kernel_quantize_input`` -> per_token_group_quant_fp8 / scaled_fp8_quant, then the
# fused_moe kernel; SGLang's fused_moe_triton the same), so the fused-MoE block launches 8
# kernels (top-k, align, 2 x quant, 2 GEMMs, activation, sum), not 6. The quantisation's
# traffic (bf16 activations read, the fp8 copy written) is a few KB at decode and a few %
# of the GEMM's at prefill, so only its launch is counted. Known gap: at 1-512 tokens the
# GEMMs' rate here (the kernel's fraction times a starved tile's feed) gives 1.4-2x the
# engines' own benchmark_moe.py times in a CUDA graph (vLLM PR #24700, 2025-09-11, H100,
# Qwen3-30B-A3B fp8: 40/78/165/237/286 us at 1/4/16/64/512 tokens; the model 56/136/322/
# 459/662 us); taking the slower of the two instead reproduces them (37/73/161/234/276 us)
# but leaves served DeepSeek/Qwen3/GLM fp8 steps too fast, so the engines' other per-step
# costs must be modelled first (branch h68-moedecode-explore, CHANGELOG). NVIDIA
# AIConfigurator 0.12.0's measured MoE layers (tests/perf/data/aiconfigurator-moe.csv) agree:
# block-fp8 Triton fused_moe on H100 1.3-2.4x faster than the model from 64 tokens on, while
# bf16 Triton (A100, H100, H200) and TensorRT-LLM's CUTLASS (bf16, fp8) lie within 0.6-1.35x
# of the measured times (group medians 0.89-1.01).
FUSED_MOE_FP8_INPUT_QUANT = 1
# A dense block-scaled fp8 linear (DeepSeek-V3/R1's and Qwen3-*-FP8's 128 x 128 weight
# blocks) under SGLang or vLLM quantises its bf16 input per token and 128-wide group in a
# kernel of its own before the GEMM: SGLang's deepgemm_w8a8_block_fp8_linear_with_fallback
# calls sglang_per_token_group_quant_fp8 and then DeepGEMM (python/sglang/srt/layers/
# quantization/fp8_utils.py), vLLM's W8A8BlockFp8LinearOp.apply its input_quant_op
# (per_token_group_quant_fp8) and then the CUTLASS / DeepGEMM block GEMM
# (vllm/model_executor/layers/quantization/utils/fp8_utils.py). AIConfigurator's SGLang
# table, which sets the GEMM's own time on Hopper (BS-HOPPER), times DeepGEMM alone on an
# input quantised before the CUDA graph is captured (collector/sglang/collect_gemm.py
# run_gemm, gemm_type fp8_block), so the quantisation is one launch more (its traffic,
# a few KB at decode, is not counted). TensorRT-LLM's table times its linear with its
# fp8_quantize_1x128 inside, so nothing is added there.
BLOCKSCALE_INPUT_QUANT = 1
# The layer's elementwise ops each serving engine runs inside a neighbouring kernel on a GPU
# (``for_engine``), so they launch nothing of their own (read 2026-12-06):
# * ``attn_residual`` / ``mlp_residual``: every engine's decoder layers call their RMSNorm
#   with the residual (``input_layernorm(hidden_states, residual)``), which adds it in the
#   norm's kernel: vLLM RMSNorm.forward_cuda -> ops.fused_add_rms_norm, on ROCm the same or
#   AITER's rmsnorm2d_fwd_with_add (vllm/model_executor/layers/layernorm.py @00cba797);
#   SGLang RMSNorm.forward_cuda -> sgl_kernel.fused_add_rmsnorm, forward_hip the same
#   (python/sglang/srt/layers/layernorm.py @000fc1a8); TensorRT-LLM's PyTorch backend
#   RMSNorm.forward -> flashinfer_fused_add_rmsnorm (tensorrt_llm/_torch/modules/
#   rms_norm.py @0419019a). The fused kernel reads the branch output and the residual and
#   writes the normed activations and the new residual: the norm's own pass plus one read
#   and one write (``_FUSED_TRAFFIC``).
# * ``rope`` under TensorRT-LLM: its Attention module applies RoPE inside the attention op
#   whenever the backend supports it ("If rope_fusion is not specified, enable if the
#   attention backend supports it": rope_fusion = attn_cls.support_fused_rope(), the TRTLLM
#   backend's default; tensorrt_llm/_torch/modules/attention.py), so it adds no pass. vLLM
#   and SGLang run rotary_embedding as a kernel of its own before attention (vLLM's
#   torch.compile'd graph fuses it with the qkv split, still one kernel), so it stays.
# * ``k_head_norm`` (the keys' half of a qk-norm, layers.qk_norm_ops) under SGLang and
#   TensorRT-LLM, which run it beside or inside the queries' norm so that one launch sits on
#   the critical path; its bytes are still read and written (``fused_traffic``). SGLang
#   v0.5.3-v0.5.5 (the GPUStack rows' versions) normalises k on an alternate stream while q's
#   norm runs whenever it captures a CUDA graph (python/sglang/srt/models/qwen3.py
#   _apply_qk_norm, alt_stream under get_is_capture_mode; later versions' shared apply_qk_norm
#   in models/utils.py runs one fused_inplace_qknorm kernel for both, PR #15835).
#   TensorRT-LLM's QKNormRoPEAttention (tensorrt_llm/_torch/modules/qk_norm_attention.py,
#   Qwen3, Qwen3-MoE; fuse_qk_norm_rope=True by default since PR #4611, 2025-05-27) runs
#   torch.ops.trtllm.fused_qk_norm_rope: q's and k's norms and RoPE in one kernel over the
#   packed qkv (so ``rope`` stays costless there too); with Gemma's norm it runs q and k on
#   two streams (maybe_execute_in_parallel). vLLM keeps both: before v0.11.1 Inductor
#   compiles q-norm and k-norm as kernels of their own (vLLM PR #26682, 2025-10-14: "5
#   kernels" after qkv_proj for Qwen3 until Inductor's combo kernels merged them into one
#   qk-norm and one rope kernel), and the GPUStack vLLM rows ran v0.11.0; the later merge
#   is not keyed by version here.
# Not modelled here: ATOM's all-reduce + RMSNorm fusion in DeepSeek layers under tp > 1
# (ATOM_ENABLE_ALLREDUCE_RMSNORM_FUSION=1; atom/models/deepseek_v2.py at 8ccc65c0), the
# fused-MoE kernels' own fusions (their fitted values time the MoE block's separate ops:
# MXFP4-MOE, W4A16-MOE) and fp8 activation quantisation fused into the norm.
_RESIDUAL_FUSION = frozenset({"attn_residual", "mlp_residual"})
_QK_NORM_FUSION = frozenset({"k_head_norm"})
ENGINE_FUSED_OPS: dict[str, frozenset[str]] = {
    "vllm": _RESIDUAL_FUSION,
    "sglang": _RESIDUAL_FUSION | _QK_NORM_FUSION,
    "trtllm": _RESIDUAL_FUSION | {"rope"} | _QK_NORM_FUSION,
    # ATOM: AITER's rmsnorm2d_fwd_with_add (atom/model_ops/layernorm.py) and, by default,
    # one qk-norm + RoPE kernel (ATOM_ENABLE_QK_NORM_ROPE_FUSION=1, atom/utils/envs.py;
    # both at 8ccc65c0)
    "atom": _RESIDUAL_FUSION | _QK_NORM_FUSION,
}
# Under tensor parallelism TensorRT-LLM also runs each RMSNorm inside the all-reduce before
# it: its decoder layers pass AllReduceParams(fusion_op=AllReduceFusionOp.RESIDUAL_RMS_NORM,
# residual=..., norm_weight=...) to the attention's and the MLP's all-reduce, which return
# the normed activations and the new residual (tensorrt_llm/_torch/models/modeling_llama.py
# and modeling_gpt_oss.py, the layers' forward under tp > 1; read 2026-12-06), so the norm
# launches nothing of its own and writes only its output (``fused_traffic``). The all-reduce
# itself stays as measured without fusion (AIConfigurator times it with fusion_op NONE).
_NORM_IN_ALL_REDUCE = frozenset({"attn_norm", "mlp_norm"})
TP_FUSED_OPS: dict[str, frozenset[str]] = {"trtllm": _NORM_IN_ALL_REDUCE}
# Sort on GPU: CUB's onesweep radix sort makes one pass per 8-bit digit over the keys
# (Adinets & Merrill 2022), 4 passes for 32-bit keys.
RADIX_SORT_PASSES = 4
# Fused attention tiles: FlashAttention-2's forward runs 128 x 128 (query x key) blocks for
# head dims 32 and 64 (Dao-AILab/flash-attention csrc/flash_attn/src/
# flash_fwd_launch_template.h, run_mha_fwd_hdim64: Flash_fwd_kernel_traits<64, 128, 128,
# ...>); a block its mask leaves one pair of is computed whole (layers.block_pairs).
FLASH_BLOCK = 128
# Marlin's M tiling (IST-DASLab/marlin marlin_cuda_kernel.cu and vLLM csrc/quantization/
# gptq_marlin: thread_m_blocks of 16 rows, at most 4; a larger batch is cut into 64-row
# problems run one after another within the launch, "parallel" = prob_m / 64).
MARLIN_M_BLOCK = 16
MARLIN_MAX_M = 64


# Row tiles of the serving engines' W4A16 fused-MoE kernels (4-bit experts, bf16 math) by
# architecture: (largest tile in rows, whether smaller tiles are powers of two). Hopper:
# vLLM's MXFP4 MoE runs OpenAI's triton_kernels matmul_ogs (vLLM mxfp4.py
# get_mxfp4_backend: Triton on compute capability 9.x, Marlin below), whose routing picks
# block_m = max(16, min(next_power_of_2(tokens_per_expt), 128)) (triton-lang/triton
# python/triton_kernels/triton_kernels/routing.py); TensorRT-LLM's TRITON MoE backend, the
# one its perf overview runs gpt-oss with on Hopper, is the same kernel. Ampere and Ada:
# Marlin-MoE (vLLM marlin_moe_wna16, the same 16-row blocks and 64-row tile as dense
# Marlin, MARLIN_MAX_M). A batch over the largest tile runs as whole tiles of rows, each
# dequantising the expert's weights again.
_W4A16_EXPERT_TILE: dict[str, tuple[int, bool]] = {
    "hopper": (128, True),
    "ampere": (MARLIN_MAX_M, False),
    "ada": (MARLIN_MAX_M, False),
}


# What the Hopper W4A16 fused-MoE kernel does inside its expert GEMMs, so the per-op model's
# separate MoE ops around them cost nothing of their own there (``w4a16_fused_op``). vLLM's
# gpt-oss Triton MoE (vllm/model_executor/layers/fused_moe/gpt_oss_triton_kernels_moe.py
# triton_kernel_fused_experts; TensorRT-LLM's triton_mxfp4_moe and SGLang's triton_kernels
# runner call it the same way) runs two matmul_ogs kernels:
# * the up-projection as matmul_ogs(x, w13, ..., gather_indx=..., fused_activation=
#   FusedActivation(FnSpecs("swiglu", swiglu_fn, ("alpha", "limit")), ...)): it reads each
#   expert's rows through the routing index in its prologue (no permuted copy of the tokens
#   is written: ``moe_permute`` keeps only the launch of the kernel that builds the gather/
#   scatter index) and applies the clamped SwiGLU in its epilogue (``expert_act`` is no
#   kernel of its own);
# * the down projection as matmul_ogs(..., scatter_indx=..., gammas=gate_scal); the combine
#   (``moe_unpermute``) stays a pass.
# Ampere's Marlin-MoE also reads its rows through moe_align_block_size's index, but runs
# silu_and_mul as a kernel of its own (vLLM fused_marlin_moe); its W4A16-MOE values were
# fitted with the gather timed as a pass (efficiency.toml), so it is left so. Read 2026-12-05.
_W4A16_FUSED_OPS: dict[str, frozenset[str]] = {
    "hopper": frozenset({"moe_permute", "expert_act"}),
    # vLLM's fused_marlin_moe: moe_align_block_size builds the sorted row index the Marlin
    # GEMMs read through (no permuted copy); silu_and_mul runs as a kernel of its own
    MARLIN_MOE: frozenset({"moe_permute"}),
}


def fused_traffic(op: Op) -> float:
    """HBM bytes an op fused into a neighbouring kernel (``ENGINE_FUSED_OPS``) still adds:
    a residual add fused into the next RMSNorm reads the residual and writes the new one
    (the branch output is the norm's own read; its own write is the norm's input, not
    written apart); RoPE fused into attention adds nothing; the keys' qk-norm run beside or
    inside the queries' still reads and writes the keys."""
    if op.name in _RESIDUAL_FUSION:
        return op.bytes_read / 2 + op.bytes_written
    if op.name in _QK_NORM_FUSION:
        return op.bytes_read + op.bytes_written
    if op.name in _NORM_IN_ALL_REDUCE:
        # inside the all-reduce (``TP_FUSED_OPS``): the normed activations written
        return op.bytes_written
    return 0.0


def w4a16_fused_op(op: Op, architecture: str) -> bool:
    """Whether ``op`` (an MoE op beside 4-bit experts: its ``weight`` is theirs) runs inside
    the W4A16 fused-MoE kernel's expert GEMMs on ``architecture`` (``_W4A16_FUSED_OPS``)."""
    return (
        op.kind is not OpKind.MATMUL
        and op.weight in DTYPE_BYTES
        and dtype_bytes(op.weight) < 1
        and op.name in _W4A16_FUSED_OPS.get(architecture, frozenset())
    )


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def w4a16_expert_rows(m: int, architecture: str) -> tuple[int, int]:
    """(rows computed, row slices) of a W4A16 fused-MoE expert GEMM with ``m`` rows per
    expert: padded to the kernel's row tile (``_W4A16_EXPERT_TILE``), whole tiles beyond it."""
    largest, pow2 = _W4A16_EXPERT_TILE.get(architecture, (MARLIN_MAX_M, False))
    if m > largest:
        slices = _ceil_div(m, largest)
        return slices * largest, slices
    if pow2:
        return max(MARLIN_M_BLOCK, 1 << (m - 1).bit_length()), 1
    return _ceil_div(m, MARLIN_M_BLOCK) * MARLIN_M_BLOCK, 1


# Points of a binomial's pmf kept exactly; a wider support (sd > ~170: a prefill of ~10^5
# tokens over 8 experts, or any hostile batch) is sampled at this many evenly spaced loads,
# each weighing its pmf x the spacing (renormalised), so a call stays bounded: the expected
# tile count over it moves by well under a tile where the mean is thousands of rows.
_PMF_POINTS = 4096


def _binomial_pmf(trials: int, p: float) -> tuple[tuple[int, float], ...]:
    """(n, P(n)) of a Binomial(trials, p) over its support's non-negligible part (12
    standard deviations either side of the mean; the rest is below 1e-30), at most
    ``_PMF_POINTS`` loads."""
    if p >= 1.0:
        return ((trials, 1.0),)
    mean = trials * p
    sd = math.sqrt(mean * (1.0 - p))
    lo, hi = max(0, math.floor(mean - 12 * sd - 2)), min(trials, math.ceil(mean + 12 * sd + 2))
    lg = math.lgamma(trials + 1)
    lp, lq = math.log(p), math.log1p(-p)

    def pmf(n: int) -> float:
        return math.exp(lg - math.lgamma(n + 1) - math.lgamma(trials - n + 1)
                        + n * lp + (trials - n) * lq)  # fmt: skip

    if hi - lo + 1 <= _PMF_POINTS:
        return tuple((n, pmf(n)) for n in range(lo, hi + 1))
    points = sorted({round(lo + k * (hi - lo) / (_PMF_POINTS - 1)) for k in range(_PMF_POINTS)})
    weights = [pmf(n) for n in points]
    total = sum(weights)
    return tuple((n, w / total) for n, w in zip(points, weights, strict=True))


def expert_loads(routing: ExpertRouting) -> tuple[tuple[int, float], ...]:
    """The distribution of one expert's rows (token-expert pairs) under ``routing``, as
    (rows, probability) pairs. Uniform random routing: each of the ``tokens`` tokens picks
    ``topk`` distinct experts of ``experts``, so one expert's load is Binomial(tokens,
    topk / experts) (mean ``tokens * topk / experts``). Balanced routing (the kernel
    benchmarks'): the pairs spread evenly, q + 1 rows on the r experts left over by
    divmod(pairs, experts), q on the rest."""
    pairs = routing.tokens * routing.topk
    if routing.balanced:
        q, r = divmod(pairs, routing.experts)
        share = r / routing.experts
        return tuple((n, w) for n, w in ((q + 1, share), (q, 1.0 - share)) if w > 0)
    return _binomial_pmf(routing.tokens, routing.topk / routing.experts)


@lru_cache(maxsize=CACHE_ENTRIES)
def w4a16_routed_rows(routing: ExpertRouting, architecture: str) -> tuple[float, float]:
    """(rows computed, row slices) of a W4A16 fused-MoE expert GEMM over the rank's
    ``routing.local`` experts, in expectation over their loads (``expert_loads``): each
    expert's rows are padded to the kernel's row tile on their own and an empty expert
    runs nothing. Hopper's triton_kernels picks one block_m for the whole launch from the
    mean load (``_W4A16_EXPERT_TILE``), so an expert above the mean runs whole extra tiles,
    each dequantising its weights again: under random routing the expected tile count
    exceeds the balanced one most where the mean sits at a power of two (16 rows of 128
    experts top-4 at 512 tokens: ~1.4 tiles per expert, not 1)."""
    largest, pow2 = _W4A16_EXPERT_TILE.get(architecture, (MARLIN_MAX_M, False))
    mean = max(1, routing.tokens * routing.topk // routing.experts)
    block = pow2_tile(mean, MARLIN_M_BLOCK, largest) if pow2 else 0

    def padded(n: int) -> tuple[int, int]:
        """(rows computed, row slices) of one expert with ``n`` rows under this launch."""
        if pow2:
            tiles = _ceil_div(n, block)
            return tiles * block, tiles
        return w4a16_expert_rows(n, architecture)

    rows = slices = 0.0
    for n, w in expert_loads(routing):
        if n == 0:
            continue
        r, t = padded(n)
        rows += w * r
        slices += w * t
    rows, slices = routing.local * rows, routing.local * slices
    if routing.shared and routing.shared_rows:
        # fused shared experts: every token's rows, padded on their own
        r, t = padded(routing.shared_rows)
        rows, slices = rows + routing.shared * r, slices + routing.shared * t
    return rows, slices


@lru_cache(maxsize=CACHE_ENTRIES)
def routed_row_tiles(routing: ExpertRouting, tile_m: int) -> float:
    """Row tiles of ``tile_m`` rows a fused-MoE kernel runs over the rank's ``routing.local``
    experts, in expectation over their loads (``expert_loads``): each expert's rows are
    padded to the tile on their own (vLLM's moe_align_block_size, CUTLASS's grouped GEMM per
    group) and an empty expert runs none. Under random routing an expert above the mean
    runs a whole extra tile, so the expected count exceeds the mean load's where the mean
    sits at or just under a multiple of the tile (256 experts top-8 at 2048 tokens: 64 rows
    each on the mean, 1.0 64-row tiles balanced but ~1.5 at random)."""
    loads = expert_loads(routing)
    # normalised: the truncated pmf's weights sum to 1 only within rounding
    tiles = sum(w * _ceil_div(n, tile_m) for n, w in loads) / sum(w for _, w in loads)
    # fused shared experts: every token's rows, padded on their own
    return routing.local * tiles + routing.shared * _ceil_div(routing.shared_rows, tile_m)


def vllm_mxfp4_padded(name: str, n: int, k: int) -> tuple[int, int]:
    """(N, K) of an MXFP4 expert GEMM as vLLM's TRT-LLM-Gen backend pads it
    (``VLLM_MXFP4_PAD``): K and N each to the multiple, the fused gate/up GEMM's
    (``expert_up``) N as two padded halves."""
    halves = 2 if name == "expert_up" else 1
    n_pad = halves * _ceil_div(n // halves, VLLM_MXFP4_PAD) * VLLM_MXFP4_PAD
    return n_pad, _ceil_div(k, VLLM_MXFP4_PAD) * VLLM_MXFP4_PAD


def vllm_moe_pads_activations(engine: str, engine_date: str) -> bool:
    """Whether ``engine`` of ``engine_date`` ("" = the newest) pads the MoE's input and slices
    its output in kernels of their own around MXFP4 experts (``VLLM_MXFP4_PAD_FUSED_DATE``)."""
    return engine == "vllm" and bool(engine_date) and engine_date < VLLM_MXFP4_PAD_FUSED_DATE


def swap_ab_token_tile(routing: ExpertRouting) -> int:
    """The token tile TRT-LLM-Gen's fused MoE picks for ``routing``: the next power of two
    of the mean rows an expert, clamped to ``SWAP_AB_TILE_RANGE``."""
    return pow2_tile(routing.tokens * routing.topk // max(routing.experts, 1), *SWAP_AB_TILE_RANGE)


def swap_ab_expert_compute_s(
    chip: Chip, n: int, k: int, routing: ExpertRouting, sm_flops_per_s: float
) -> float | None:
    """SM time of TRT-LLM-Gen's swap-AB expert GEMM over ``routing``'s experts (N ``n``, K
    ``k``; ``sm_flops_per_s``: one SM's MMA rate) in its token tile (``swap_ab_token_tile``):
    each tile the longer of its MMA and its shared-memory operand feed
    (``SMEM_BYTES_PER_CLK``), whole waves over the SMs. None outside ``SWAP_AB_TOKEN_TILES``
    or without the chip's clock."""
    tokens = swap_ab_token_tile(routing)
    if tokens not in SWAP_AB_TOKEN_TILES or not chip.clock_hz or sm_flops_per_s <= 0.0:
        return None
    depth = _k_pad(k, 1) + K_FILL
    mma_s = 2.0 * SWAP_AB_WEIGHT_ROWS * tokens * depth / sm_flops_per_s
    feed_bytes = (SWAP_AB_WEIGHT_ROWS + tokens) * depth * SWAP_AB_OPERAND_BYTES
    feed_s = feed_bytes / (SMEM_BYTES_PER_CLK * chip.clock_hz)
    tiles = math.ceil(routed_row_tiles(routing, tokens) * _ceil_div(n, SWAP_AB_WEIGHT_ROWS) - 1e-6)
    return _ceil_div(tiles, max(chip.units, 1)) * max(mma_s, feed_s)


def marlin_rows(m: int) -> int:
    """Rows Marlin computes for a batch of ``m``: padded to its 16-row blocks up to one
    64-row tile, and to whole 64-row slices beyond (each slice re-dequantises the weights)."""
    if m <= MARLIN_MAX_M:
        return _ceil_div(m, MARLIN_M_BLOCK) * MARLIN_M_BLOCK
    return _ceil_div(m, MARLIN_MAX_M) * MARLIN_MAX_M


def dense_gemm_exponent(eff: Efficiency, batch: int, *, expert: bool = False) -> float:
    """How a GEMM's tensor time and operand stream combine (``roofline.combine``): the
    architecture's ``gemm_overlap_exponent`` for a dense GEMM (one problem, the vendor
    library's kernel it was fitted on), the hard roofline (0) for MoE experts (``batch`` > 1
    or ``expert``: grouped and fused-MoE kernels, timed at their own measured rates)."""
    return eff.gemm_overlap_exponent if batch == 1 and not expert else 0.0


def _intensity(tile: tuple[int, int]) -> float:
    """Operand reuse of a tile: output elements per operand element loaded per K step."""
    tm, tn = tile
    return tm * tn / (tm + tn)


def balance_intensity(chip: Chip) -> float:
    """Tile intensity (MACs per operand element) at which the L2 feed just keeps the tensor
    units of one SM busy: MACs/clk/SM over operand elements/clk/SM from L2, in 16-bit terms
    (an fp8 or fp4 rate is 2x or 4x the 16-bit one for 1/2 or 1/4 the bytes, so the balance
    is the same). Capped by the largest tile's intensity, and that intensity where the
    vendor states no L2 bandwidth or the catalog no clock (module doc)."""
    largest = _intensity(_LARGEST_TILE.get(chip.architecture, DEFAULT_TILE))
    feed = _L2_FEED_BYTES_PER_CLK.get(chip.architecture)
    dtype = "bf16" if chip.supports("bf16") else "fp16"
    if feed is None or not chip.clock_hz or not chip.units or not chip.supports(dtype):
        return largest * tensor_throttle(chip)
    macs_per_clk = chip.peak_flops_per_s(dtype) / 2.0 / chip.units / chip.clock_hz
    return min(largest, macs_per_clk / (feed / 2.0))


def tensor_throttle(chip: Chip) -> float:
    """Per-clock tensor rate of ``chip``'s SMs relative to its architecture's full-rate part
    (1 where unknown or within ``FULL_RATE_TOLERANCE``), from its tensor-to-FP32 rate ratio."""
    reference = _FULL_RATE_TENSOR_TO_FP32.get(chip.architecture)
    dtype = "bf16" if chip.supports("bf16") else "fp16"
    if reference is None or not chip.supports(dtype) or not chip.supports("fp32"):
        return 1.0
    ratio = chip.peak_flops_per_s(dtype) / chip.peak_flops_per_s("fp32") / reference
    return 1.0 if ratio >= FULL_RATE_TOLERANCE else ratio


def tile_rate_factor(chip: Chip, tile: tuple[int, int], balance: float | None = None) -> float:
    """Share of the tensor rate a tile sustains: 1 at or above the balance intensity, else
    intensity(tile) / balance (the SM waits on its operands). ``balance``:
    ``balance_intensity(chip)`` where the caller holds it (``plan_gemm``: once per GEMM, not
    per candidate), else computed."""
    if balance is None:
        balance = balance_intensity(chip)
    return min(1.0, _intensity(tile) / balance)


@dataclass(frozen=True, slots=True, kw_only=True)
class GemmPlan:
    """The kernel the model picked for a GEMM, and what it costs."""

    tile: tuple[int, int]
    split_k: int
    tiles: int
    waves: int
    utilisation: float  # useful output elements / (waves x SMs x tile)
    k_efficiency: float
    rate_factor: float
    compute_s: float
    memory_s: float
    seconds: float  # the two combined (roofline.combine, Efficiency.gemm_overlap_exponent)


class _Rates(NamedTuple):
    """What every kernel choice for one GEMM shares (``_gemm_rates``)."""

    sms: int  # the chip's SMs (CUs; at least 1)
    sm_flops_per_s: float  # one SM's share of the achievable peak, at a full-rate tile
    bytes_per_s: float  # the operand stream's achievable HBM rate
    exponent: float  # how compute and memory combine (dense_gemm_exponent)
    balance: float  # the chip's balance intensity (tile_rate_factor)
    l2_partials_bytes: float  # split-K partial sums that stay in L2 (SPLIT_K_L2_SHARE)


def _gemm_rates(
    chip: Chip,
    eff: Efficiency,
    batch: int,
    peak: float,
    fraction: float | None,
    dtype: str,
    expert: bool,
) -> _Rates:
    frac = eff.gemm_peak_fraction if fraction is None else fraction
    sms = max(chip.units, 1)
    return _Rates(
        sms=sms,
        sm_flops_per_s=peak * frac / sms,
        bytes_per_s=chip.hbm_bytes_per_s * eff.gemm_memory_fraction(dtype, expert=expert),
        exponent=dense_gemm_exponent(eff, batch, expert=expert),
        balance=balance_intensity(chip),
        l2_partials_bytes=SPLIT_K_L2_SHARE * (chip.l2_bytes or 0.0),
    )


class _Cost(NamedTuple):
    """What one kernel choice costs (``_candidate_cost``), before it is a ``GemmPlan``."""

    tiles: int
    waves: int
    k_pad: int
    rate_factor: float
    compute_s: float
    memory_s: float
    seconds: float


def _k_pad(k: int, split: int) -> int:
    """K of one split-K slice, padded to the main loop's step."""
    return _ceil_div(_ceil_div(k, split), TILE_K) * TILE_K


def _candidate_cost(
    gemm: tuple[int, int, int, int],
    tile: tuple[int, int],
    split: int,
    n_bytes: float,
    rates: _Rates,
    rate_factor: float,
    k_pad: int,
    routing: ExpertRouting | None = None,
) -> _Cost:
    """``gemm_candidate``'s figures, without the ``GemmPlan`` (``plan_gemm`` builds one for
    the winner only); ``rate_factor`` is ``tile``'s (``tile_rate_factor``) and ``k_pad``
    ``split``'s (``_k_pad``), which ``plan_gemm`` works out once for all the candidates."""
    m, n, _, batch = gemm
    tm, tn = tile
    per_sm_flops_per_s = rates.sm_flops_per_s * rate_factor
    if routing is None:
        tiles = _ceil_div(m, tm) * _ceil_div(n, tn) * batch * split
    else:
        # the expected tile count (the grid is launched for the worst case; tiles past the
        # padded rows exit at once), rounded up to whole tiles
        tiles = math.ceil(routed_row_tiles(routing, tm) * _ceil_div(n, tn) * split - 1e-6)
    waves = _ceil_div(tiles, rates.sms)
    compute_s = waves * 2.0 * tm * tn * (k_pad + K_FILL) / per_sm_flops_per_s
    partials = 0.0
    if split > 1:
        # written once and read back once; only what spills out of L2 reaches HBM
        workspace = batch * m * n * split * PARTIAL_SUM_BYTES
        partials = 2.0 * max(0.0, workspace - rates.l2_partials_bytes)
    memory_s = (n_bytes + partials) / rates.bytes_per_s
    seconds = combine(compute_s, memory_s, rates.exponent)
    return _Cost(tiles, waves, k_pad, rate_factor, compute_s, memory_s, seconds)


def _as_plan(
    chip: Chip, gemm: tuple[int, int, int, int], tile: tuple[int, int], split: int, c: _Cost
) -> GemmPlan:
    m, n, k, batch = gemm
    tm, tn = tile
    return GemmPlan(
        tile=tile,
        split_k=split,
        tiles=c.tiles,
        waves=c.waves,
        utilisation=m * n * batch / (c.waves * max(chip.units, 1) * tm * tn),
        k_efficiency=k / (split * (c.k_pad + K_FILL)),
        rate_factor=c.rate_factor,
        compute_s=c.compute_s,
        memory_s=c.memory_s,
        seconds=c.seconds,
    )


def gemm_candidate(
    chip: Chip,
    eff: Efficiency,
    gemm: tuple[int, int, int, int],
    tile: tuple[int, int],
    split: int,
    peak: float,
    n_bytes: float,
    fraction: float | None = None,
    dtype: str = "",
    *,
    expert: bool = False,
    routing: ExpertRouting | None = None,
) -> GemmPlan:
    """Cost of one kernel choice (``tile``, split-K ``split``) for ``gemm`` = (M, N, K, batch);
    ``fraction`` is the achievable share of ``peak`` (default: ``eff.gemm_peak_fraction``);
    ``dtype`` the math's dtype and ``expert`` a serving engine's fused-MoE expert GEMM (its
    operands stream at ``eff.gemm_memory_fraction(dtype, expert=expert)``). ``routing``: a
    fused-MoE grid's experts, whose rows are padded to the tile each on its own load
    (``routed_row_tiles``) rather than all on the mean ``M`` of ``batch`` experts."""
    rates = _gemm_rates(chip, eff, gemm[3], peak, fraction, dtype, expert)
    rate_factor = tile_rate_factor(chip, tile, rates.balance)
    cost = _candidate_cost(gemm, tile, split, n_bytes, rates, rate_factor,
                           _k_pad(gemm[2], split), routing)  # fmt: skip
    return _as_plan(chip, gemm, tile, split, cost)


def plan_gemm(
    chip: Chip,
    eff: Efficiency,
    m: int,
    n: int,
    k: int,
    batch: int,
    peak: float,
    n_bytes: float,
    fraction: float | None = None,
    dtype: str = "",
    *,
    expert: bool = False,
    routing: ExpertRouting | None = None,
) -> GemmPlan:
    """The fastest of the candidate kernels (tile shapes x split-K) for one GEMM whose math
    runs in ``dtype`` (``expert``: a serving engine's fused-MoE expert GEMM). ``routing``: a
    fused-MoE grid's experts under that routing, so the tile is chosen by its expected
    time over their random loads (``routed_row_tiles``), as the engines' tuned configs are
    chosen on randomly routed benchmarks, not by the mean load's time."""
    largest = _LARGEST_TILE.get(chip.architecture, DEFAULT_TILE)
    tiles = (largest, *(t for t in _SMALL_TILES if _intensity(t) < _intensity(largest)))
    gemm = (m, n, k, batch)
    rates = _gemm_rates(chip, eff, batch, peak, fraction, dtype, expert)
    splits = [
        (split, _k_pad(k, split))
        for split in SPLIT_K_FACTORS
        if split == 1 or _ceil_div(k, split) >= 2 * TILE_K
    ]
    # ``_candidate_cost``'s arithmetic, operation for operation, inlined over the candidates
    # (a planner search plans thousands of distinct GEMMs); the winner's ``_Cost`` is built
    # by ``_candidate_cost`` itself. The operand stream depends on the split only.
    streams = []
    for split, k_pad in splits:
        partials = 0.0
        if split > 1:
            workspace = batch * m * n * split * PARTIAL_SUM_BYTES
            partials = 2.0 * max(0.0, workspace - rates.l2_partials_bytes)
        streams.append((split, k_pad, (n_bytes + partials) / rates.bytes_per_s))
    exponent = rates.exponent
    best = (math.inf, math.inf)
    choice = (tiles[0], *splits[0], 0.0)
    for tile in tiles:
        tm, tn = tile
        rate = tile_rate_factor(chip, tile, rates.balance)
        per_sm_flops_per_s = rates.sm_flops_per_s * rate
        grid = _ceil_div(m, tm) * _ceil_div(n, tn) * batch
        routed = 0.0 if routing is None else routed_row_tiles(routing, tm) * _ceil_div(n, tn)
        for split, k_pad, memory_s in streams:
            count = grid * split if routing is None else math.ceil(routed * split - 1e-6)
            waves = _ceil_div(count, rates.sms)
            compute_s = waves * 2.0 * tm * tn * (k_pad + K_FILL) / per_sm_flops_per_s
            seconds = combine(compute_s, memory_s, exponent)
            # among kernels equally fast, the one with the least tensor work (the most slack
            # under the memory stream), so a memory-bound GEMM stays memory-bound at a lower
            # tensor rate (the first of any still tied)
            if (seconds, compute_s) < best:
                best, choice = (seconds, compute_s), (tile, split, k_pad, rate)
    tile, split, k_pad, rate = choice
    cost = _candidate_cost(gemm, tile, split, n_bytes, rates, rate, k_pad, routing)
    return _as_plan(chip, gemm, tile, split, cost)


@final
class GpuModel(PerfModel):
    """Per-op times on an NVIDIA/AMD GPU or a GEMM-engine ASIC (Gaudi, Trainium)."""

    def __init__(
        self,
        chip: Chip,
        efficiency: Efficiency | None = None,
        *,
        fused_moe: bool = False,
        trtllm_moe: bool = False,
        fused_ops: frozenset[str] = frozenset(),
        engine: str = "",
        engine_date: str = "",
    ) -> None:
        super().__init__(chip)
        # the serving engine whose kernels time the ops ("" outside one): SGLang's ROCm
        # block-scale fp8 GEMM is its own choice of kernel (``_blockscale_k_serial_s``)
        self.engine = engine
        # that engine's release date ("" = the newest): its dated kernel choices
        self.engine_date = engine_date
        # the elementwise ops a serving engine runs inside a neighbouring kernel
        # (``ENGINE_FUSED_OPS``): no launch of their own, only the traffic they add
        self.fused_ops = fused_ops if chip.kind == "gpu" else frozenset()
        self.efficiency = efficiency if efficiency is not None else efficiency_for(chip)
        # a serving engine's kernels (module doc): MoE experts as its fused-MoE kernel runs
        # them, weight-only dense GEMMs as Marlin where the architecture has its rate
        self.fused_moe = fused_moe
        # TensorRT-LLM's MoE: fp8 experts at its CUTLASS grouped GEMM's measured rate
        self.trtllm_moe = trtllm_moe
        # TRT-LLM-Gen's fused MoE chosen over the engine's default (``with_moe_backend``):
        # an MXFP4 checkpoint's experts at the mxfp4_expert_* values
        self.trtllm_gen_moe = False
        # the engine's Marlin-MoE kernel for W4A16 experts (``MARLIN_MOE``)
        self.marlin_moe = False
        # plan_gemm is pure in its numbers: a planner search meets the same GEMM shapes
        # (an expert's GEMM at each layout with the same tokens per expert) many times
        self._gemms: dict[
            tuple[int, int, int, int, float, float, float | None, str, bool,
                  ExpertRouting | None],
            GemmPlan,
        ] = {}  # fmt: skip
        # op_time is pure in (this model, op): a planner search times the same op (an
        # attention at one micro-batch and tp, a norm) for every layout that shares it
        self._op_times: dict[Op, OpTime] = {}

    def _plan_gemm(
        self, m: int, n: int, k: int, batch: int, peak: float, n_bytes: float,
        fraction: float | None, dtype: str, *, expert: bool = False,
        routing: ExpertRouting | None = None,
    ) -> GemmPlan:  # fmt: skip
        key = (m, n, k, batch, peak, n_bytes, fraction, dtype, expert, routing)
        g = self._gemms.get(key)
        if g is None:
            g = plan_gemm(
                self.chip, self.efficiency, m, n, k, batch, peak, n_bytes, fraction, dtype,
                expert=expert, routing=routing,
            )  # fmt: skip
            self._gemms[key] = g
        return g

    def _engine_fp4_latency_s(self, op: Op) -> float | None:
        """A serving engine's dense block-scaled fp4 GEMM: its fixed time beyond a launch
        plus its serial K loop's (``fp4_gemm_*latency_s`` under vLLM/SGLang,
        ``trtllm_fp4_gemm_*latency_s`` under TensorRT-LLM); None where no engine runs it
        or its latency was not measured (the engine-less fp4 weight stream applies)."""
        eff = self.efficiency
        if op.dtype != "fp4" or op.batch != 1 or op.routed_expert or op.mnk is None:
            return None
        if self.trtllm_moe:
            fixed, per_k = eff.trtllm_fp4_gemm_latency_s, eff.trtllm_fp4_gemm_k_latency_s
        elif self.fused_moe:
            fixed, per_k = eff.fp4_gemm_latency_s, eff.fp4_gemm_k_latency_s
        else:
            return None
        if not (fixed or per_k):
            return None
        return fixed + per_k * op.mnk[2] / 1024.0

    def _blockscale_input_quant(self, op: Op) -> bool:
        """Whether a dense block-scaled fp8 GEMM ``op`` launches its input's per-token-group
        quantisation on its own (``BLOCKSCALE_INPUT_QUANT``): under SGLang or vLLM where the
        GEMM's own time comes from a kernel table that leaves it out (Hopper: BS-HOPPER).
        A batched matmul (MLA's absorbed W_UK / W_UV) is not a block-fp8 linear."""
        return (
            op.batch == 1 and self.fused_moe
            and self.chip.vendor == "nvidia" and self.efficiency.blockscale_gemm_latency_s > 0.0
        )  # fmt: skip

    def _blockscale_k_serial_s(self, op: Op) -> float:
        """A block-scaled fp8 GEMM's serial K loop where the architecture's kernels were timed:
        a dense one's ``blockscale_gemm_k_latency_s`` per 1024 of K, a fused-MoE expert GEMM's
        ``blockscale_expert_k_latency_s`` (one pass, as fitted at decode M, where the grid is
        smaller than the chip; at large M the MMAs take longer anyway); 0 elsewhere."""
        eff = self.efficiency
        if op.dtype != "fp8" or not op.block_scaled or op.mnk is None:
            return 0.0
        m, n, k = op.mnk
        if op.routed_expert:
            per_k = eff.blockscale_expert_k_latency_s if self.fused_moe else 0.0
        elif op.batch != 1:
            per_k = 0.0
        elif self.engine == "sglang" and eff.sglang_blockscale_gemm_k_latency_s:
            # SGLang's ROCm build runs AITER's Triton block-scale GEMM (sglang PR #13617)
            # on its default config: 128 x 128 output tiles, no split-K, so each wave of
            # tiles over the chip's CUs walks all of K (efficiency.toml SG-TRITON-BS)
            tiles = -(-m // TRITON_BLOCKSCALE_TILE) * -(-n // TRITON_BLOCKSCALE_TILE)
            waves = -(-tiles // max(self.chip.units, 1))
            return waves * eff.sglang_blockscale_gemm_k_latency_s * k / 1024.0
        else:
            per_k = eff.blockscale_gemm_k_latency_s
        return per_k * k / 1024.0

    def _trtllm_gen_dtype(self, op: Op) -> str:
        """ "tg-fp4" / "tg-fp8" where ``op`` (a routed expert GEMM) runs in TRT-LLM-Gen's
        fused MoE (``Inference.moe_backend`` "trtllm-gen") on an NVFP4 / block-scaled fp8
        checkpoint's experts and the architecture has that kernel's measured values; ""
        elsewhere (an MXFP4 checkpoint's experts take the ``mxfp4_expert_*`` values)."""
        eff = self.efficiency
        if not self.trtllm_gen_moe or op.weight == "mxfp4":
            return ""
        if op.dtype == "fp4" and eff.trtllm_gen_fp4_expert_peak_fraction:
            return "tg-fp4"
        if op.dtype == "fp8" and op.block_scaled and eff.trtllm_gen_fp8_expert_peak_fraction:
            return "tg-fp8"
        return ""

    def _aiter_moe(self) -> bool:
        """Whether the routed experts run as AITER's fused MoE (``AITER_ENGINES``) where
        its sorting kernel was timed on this architecture."""
        return (
            self.fused_moe
            and self.engine in AITER_ENGINES
            and self.efficiency.aiter_moe_sorting_s > 0.0
        )

    def _aiter_moe_op_time(self, op: Op, peak: float) -> OpTime:
        """The gather, activation and combine beside AITER's fused-MoE stages
        (``AITER_ENGINES``): the gather is its moe_sorting kernel (the op's traffic at
        the HBM rate after ``aiter_moe_sorting_s``), the activation runs in stage 1's
        epilogue (nothing), the combine in stage 2's accumulation (its traffic, no launch)."""
        chip, eff = self.chip, self.efficiency
        bandwidth = chip.hbm_bytes_per_s * eff.hbm_fraction
        n_bytes = op_bytes(op)
        if op.name == "moe_permute":
            r = Roof(compute_s=0.0, memory_s=n_bytes / bandwidth,
                     overhead_s=eff.aiter_moe_sorting_s)  # fmt: skip
            note = f"AITER moe_sorting: {eff.aiter_moe_sorting_s * 1e6:.1f} us fixed"
        elif op.name == "expert_act":
            n_bytes = 0.0
            r = Roof(compute_s=0.0, memory_s=0.0, overhead_s=0.0)
            note = "expert activation in AITER's stage-1 epilogue: no kernel of its own"
        else:
            r = Roof(compute_s=0.0, memory_s=n_bytes / bandwidth, overhead_s=0.0)
            note = "combine accumulated by AITER's stage 2 into the zeroed buffer: no launch"
        return timed(op, r, flops=0.0, n_bytes=n_bytes, peak=peak,
                     bandwidth=chip.hbm_bytes_per_s, notes=(note,))  # fmt: skip

    def sustained_tensor_fraction(self) -> float:
        return self.efficiency.sustained_tensor_fraction

    def serving_sustained_fraction(self, dtype: str) -> float:
        return self.efficiency.serving_sustained_fraction(dtype)

    def serving_expert_sustained_fraction(self, dtype: str, weight: str = "") -> float:
        # the Triton fused_moe's fp8 rate (FUSED-MOE-FP8) was fitted at the per-op rate on
        # the same kernel tables as the dense fp8 GEMMs' serving share, so it keeps that
        # share; other expert kernels keep the training step's. TG-NVFP4-MOE, TG-FP8-MOE and
        # MARLIN-MOE were fitted with it; FP4-MOE and MXFP4-MOE (Blackwell's 4-bit experts)
        # at the per-op rate, yet keep it too: taken off them, the 469 Blackwell fp4 serving
        # rows went 11.5 -> 13.0 % median |error| (MLPerf throughput 7.9 -> 17.7 %; tried
        # 2026-12-06, docs/performance.md), so under a sustained serving load it stands in
        # for clocks below the kernel microbenchmarks'.
        # TensorRT-LLM's own W4A16 MoE (TRTLLM-W4A16-MOE) was fitted at the per-op rate on
        # the engine's kernel table (tests/perf/aic_moe.py modelled_us: op_time, no
        # sustained share) and takes no sustained share on top.
        if self.fused_moe:
            return self.efficiency.serving_sustained_fraction(dtype)
        if self._trtllm_w4a16_measured() and self._w4a16_weight(weight):
            return 1.0
        return self.efficiency.sustained_tensor_fraction

    def for_engine(self, engine: str, engine_date: str = "") -> PerfModel:
        if engine == TRTLLM_MOE_ENGINE and not self.trtllm_moe:
            eff = self.efficiency
            if eff.trtllm_attention_tile_blocks:
                # TensorRT-LLM's own context attention: its per-query-tile work (ATTN-TILE)
                eff = replace(eff, attention_tile_blocks=eff.trtllm_attention_tile_blocks)
            return GpuModel(self.chip, eff, trtllm_moe=True,
                            fused_ops=ENGINE_FUSED_OPS[engine])  # fmt: skip
        if engine not in FUSED_MOE_ENGINES or (self.fused_moe and engine_date == self.engine_date):
            return self
        return GpuModel(self.chip, self.efficiency, fused_moe=True,
                        fused_ops=ENGINE_FUSED_OPS.get(engine, frozenset()),
                        engine=engine, engine_date=engine_date)  # fmt: skip

    def with_tp_fusion(self, tp: int) -> PerfModel:
        extra = TP_FUSED_OPS.get(TRTLLM_MOE_ENGINE, frozenset()) if self.trtllm_moe else frozenset()
        if tp <= 1 or not self.fused_ops or extra <= self.fused_ops:
            return self
        clone = copy.copy(self)
        clone.fused_ops = self.fused_ops | extra
        clone._gemms, clone._op_times = {}, {}
        return clone

    def with_moe_backend(self, backend: str) -> PerfModel:
        gen, marlin = backend == TRTLLM_GEN_MOE, backend == MARLIN_MOE
        if gen == self.trtllm_gen_moe and marlin == self.marlin_moe:
            return self
        clone = copy.copy(self)
        clone.trtllm_gen_moe, clone.marlin_moe = gen, marlin
        clone._gemms, clone._op_times = {}, {}
        return clone

    def _vllm_moe_pad_io_s(self, op: Op, n: int, k: int, k_pad: int) -> float:
        """Seconds of vLLM's pad of the MoE's input (before the first expert GEMM, ``k`` its
        hidden size, ``k_pad`` padded) or slice of its output (after the second, ``n``): one
        elementwise kernel over the step's tokens (``VLLM_MXFP4_PAD_FUSED_DATE``); 0 where
        the engine has none."""
        routing = op.routing
        if routing is None or not vllm_moe_pads_activations(self.engine, self.engine_date):
            return 0.0
        act = dtype_bytes("bf16")
        if op.name == "expert_up":
            n_bytes = routing.tokens * (k + k_pad) * act
        elif op.name == "expert_down":
            n_bytes = routing.tokens * 2 * n * act
        else:
            return 0.0
        eff = self.efficiency
        return eff.launch_overhead_s + n_bytes / (self.chip.hbm_bytes_per_s * eff.hbm_fraction)

    def _w4a16_kernel(self) -> str:
        """The key of the W4A16 fused-MoE kernel's row tiling and fused ops: Marlin-MoE's
        under ``MARLIN_MOE``, else the architecture's own kernel's."""
        return MARLIN_MOE if self.marlin_moe else self.chip.architecture

    def _w4a16_weight(self, weight: str) -> bool:
        """Whether experts stored as ``weight`` run this chip's W4A16 fused-MoE kernel model
        (4-bit weights, bf16 math, its dequantisation measured)."""
        return (
            weight in DTYPE_BYTES
            and dtype_bytes(weight) < 1
            and self.efficiency.w4a16_expert_dequant_fraction > 0
            and bool(self.chip.vector_flops_per_s)
        )

    def _trtllm_w4a16_measured(self) -> bool:
        """Whether the W4A16 experts run TensorRT-LLM's own MoE op at its measured MMA rate
        (``trtllm_w4a16_expert_peak_fraction``, a per-op fit: TRTLLM-W4A16-MOE)."""
        return self.trtllm_moe and self.efficiency.trtllm_w4a16_expert_peak_fraction > 0

    def _marlin_measured(self) -> bool:
        """Whether the W4A16 experts run Marlin-MoE at its own measured rates
        (``marlin_expert_peak_fraction``, ``marlin_expert_dequant_fraction``)."""
        return (
            self._w4a16_kernel() == MARLIN_MOE and self.efficiency.marlin_expert_peak_fraction > 0
        )

    def op_time(self, op: Op) -> OpTime:
        t = self._op_times.get(op)
        if t is None:
            t = self._op_times[op] = self._op_time(op)
        return t

    def _op_time(self, op: Op) -> OpTime:
        chip, eff = self.chip, self.efficiency
        flops = op_flops(op)
        n_bytes = op_bytes(op)
        peak = compute_rate(chip, op) if (flops or op.tensor_op) else 0.0
        bandwidth = chip.hbm_bytes_per_s * eff.hbm_fraction
        notes: list[str] = []
        measured: float | None = None
        if (
            eff.w4a16_expert_dequant_fraction > 0
            and not self.trtllm_moe
            and w4a16_fused_op(op, self._w4a16_kernel())
        ):
            # done inside the W4A16 fused-MoE kernel's expert GEMMs (``_W4A16_FUSED_OPS``):
            # the gather leaves its index kernel's launch, the activation nothing
            index = op.kind is OpKind.GATHER
            what = "its routing-index kernel only" if index else "no kernel of its own"
            r = Roof(compute_s=0.0, memory_s=0.0,
                     overhead_s=eff.launch_overhead_s if index else 0.0)  # fmt: skip
            note = f"{op.name} inside the W4A16 fused-MoE expert GEMMs: {what}"
            return timed(op, r, flops=0.0, n_bytes=0.0, peak=peak,
                         bandwidth=chip.hbm_bytes_per_s, notes=(note,))  # fmt: skip
        if op.name == GDN_CHUNK and eff.gdn_chunk_peak_fraction > 0:
            # the chunked delta rule's Triton pipeline (layers.linear_attention_ops) at its
            # measured rate and fixed time (GDN-CHUNK, efficiency.toml)
            frac = eff.gdn_chunk_peak_fraction
            r = Roof(compute_s=flops / (peak * frac), memory_s=n_bytes / bandwidth,
                     overhead_s=max(eff.gdn_chunk_latency_s, eff.launch_overhead_s))  # fmt: skip
            note = f"chunked delta rule at {frac:.1%} of the {op.dtype} peak (fitted kernel)"
            # fitted to the kernels' own times: no sustained-rate stretch (timing._sustain)
            return timed(op, r, flops=flops, n_bytes=n_bytes, peak=peak,
                         bandwidth=chip.hbm_bytes_per_s, notes=(note,), measured=True)  # fmt: skip
        if op.name in _AITER_MOE_OPS and self._aiter_moe():
            return self._aiter_moe_op_time(op, peak)
        if op.name in self.fused_ops and not op.tensor_op:
            # run inside a neighbouring kernel by the engine (``ENGINE_FUSED_OPS``)
            added = fused_traffic(op)
            r = Roof(compute_s=0.0, memory_s=added / bandwidth, overhead_s=0.0)
            note = f"{op.name} fused into a neighbouring kernel: no launch, {added:.0f} B added"
            return timed(op, r, flops=0.0, n_bytes=added, peak=peak,
                         bandwidth=chip.hbm_bytes_per_s, notes=(note,))  # fmt: skip
        if op.grouped and op.batch > 1 and op.mnk is not None and all(op.mnk):
            # MoE experts: one GEMM per expert (Transformer Engine's GroupedLinear issues a
            # cuBLAS GEMM per expert), each cut into its own tiles and waves: a small expert
            # leaves SMs idle in its last wave and pays its own launch
            m, n, k = op.mnk
            e = op.batch
            frac = eff.gemm_fraction(op.dtype)
            g = self._plan_gemm(m, n, k, 1, peak, n_bytes / e, frac, op.dtype)
            # the kernel cuBLAS picks for one expert, run TE_GEMM_STREAMS experts at a time
            full, rest = divmod(e, TE_GEMM_STREAMS)
            sets = [(TE_GEMM_STREAMS, full)] + ([(rest, 1)] if rest else [])
            compute_s = 0.0
            for width, count in sets:
                if count:
                    c = gemm_candidate(chip, eff, (m, n, k, width), g.tile, g.split_k, peak,
                                       width * n_bytes / e, frac, op.dtype)  # fmt: skip
                    compute_s += count * c.compute_s
            launches = full + (1 if rest else 0)
            r = Roof(compute_s=compute_s, memory_s=e * g.memory_s,
                     overhead_s=launches * eff.launch_overhead_s)  # fmt: skip
            notes.append(
                f"grouped GEMM, {e} experts of {m}x{n}x{k}: tile {g.tile[0]}x{g.tile[1]}, "
                f"{g.tiles} tiles each, {min(e, TE_GEMM_STREAMS)} experts at a time "
                f"({TE_GEMM_STREAMS} streams)"
            )
        elif op.kind in (OpKind.MATMUL, OpKind.CONV) and op.mnk is not None and all(op.mnk):
            m, n, k = op.mnk
            # the routed experts (layers.mlp_ops), which a fused-MoE engine runs as this one
            # grid (module doc)
            expert = op.routed_expert
            fused = self.fused_moe and expert
            # every serving engine runs 4-bit experts on fp4 tensor cores as one fused-MoE
            # grouped GEMM at its own measured weight stream and fixed cost (module doc)
            expert4 = expert and op.dtype == "fp4"
            # an MXFP4 checkpoint's experts (gpt-oss) run TRT-LLM-Gen's MXFP4 x MXFP8 fused
            # MoE at its own measured values where fitted (module doc)
            mx4 = (
                expert4
                and self.trtllm_gen_moe
                and op.weight == "mxfp4"
                and eff.mxfp4_expert_peak_fraction > 0
            )
            # the activations' pad and slice kernels around them (VLLM_MXFP4_PAD_FUSED_DATE)
            pad_io_s = 0.0
            if mx4 and self.engine == "vllm":
                # vLLM pads the experts' dimensions to its backend's multiple (VLLM_MXFP4_PAD)
                n_pad, k_pad = vllm_mxfp4_padded(op.name, n, k)
                pad_io_s = self._vllm_moe_pad_io_s(op, n, k, k_pad)
                if pad_io_s:
                    notes.append(
                        f"vLLM FusedMoE {'input pad' if op.name == 'expert_up' else 'output slice'}"
                        f" kernel: {pad_io_s * 1e6:.1f} us"
                    )
                if (n_pad, k_pad) != (n, k):
                    notes.append(f"vLLM MXFP4 experts padded to {n_pad}x{k_pad}")
                    n_bytes *= n_pad * k_pad / (n * k)
                    n, k = n_pad, k_pad
            if mx4 and chip.supports("fp8"):
                # MXFP8 activations x MXFP4 weights: Blackwell's mixed f8f6f4 MMA runs at the
                # fp8 rate (B300's larger fp4 rate is FP4 x FP4 only)
                peak = chip.peak_flops_per_s("fp8")
            trtllm = self.trtllm_moe and expert and op.block_scaled
            # an NVFP4 or block-scaled fp8 checkpoint's experts under TRT-LLM-Gen's fused MoE
            # (SGLang's flashinfer_trtllm runner) at its own measured values where fitted
            tg = self._trtllm_gen_dtype(op) if expert and not mx4 else ""
            # the kernel's rates by its dtype ("mxfp4": the MXFP4-checkpoint expert kernel;
            # "tg-fp4" / "tg-fp8": TRT-LLM-Gen's NVFP4 / block-scaled fp8 one)
            kernel_dtype = "mxfp4" if mx4 else (tg or op.dtype)
            frac = eff.grouped_gemm_fraction(
                kernel_dtype, fused_moe=fused, expert=expert4, trtllm_moe=trtllm
            )
            # a dense (not routed-expert) block-scaled fp8 GEMM: its own rate, weight stream
            # and input quantisation below
            dense_block_fp8 = op.block_scaled and op.dtype == "fp8" and not expert
            if dense_block_fp8:
                # a dense block-scaled fp8 GEMM at its kernels' own rate where measured (module
                # doc): each K block's partial product is scaled on the vector ALUs
                frac = eff.blockscale_gemm_peak_fraction or frac
                if self.trtllm_moe and eff.trtllm_blockscale_gemm_peak_fraction:
                    # TensorRT-LLM's own block-scale GEMM at its measured rate (BS-TRTLLM)
                    frac = eff.trtllm_blockscale_gemm_peak_fraction
            # a serving engine's dense NVFP4 linear: its fixed and per-K latency (module doc)
            fp4_lat = self._engine_fp4_latency_s(op)
            # TensorRT-LLM's dense NVFP4 linear (input quantisation + CUTLASS NVFP4 GEMM) at
            # its measured kernel grid on Blackwell where it ships (kernels.py,
            # data/kernels/trtllm-fp4-gemm.csv): at decode M its kernels stream the weights
            # at ~4.5 of 8 TB/s, not the engine-less fp4 rate (FP4-GEMV), and at M >= 1024
            # run 4.2-4.4 PFLOP/s on B200
            trtllm_fp4_s = (
                measured_grid_gemm_s(chip.id, TRTLLM_MOE_ENGINE, "fp4", m, n, k)
                if self.trtllm_moe and op.dtype == "fp4" and not expert and not op.weight
                and op.batch == 1
                else None
            )  # fmt: skip
            if trtllm_fp4_s is not None:
                fp4_lat = None  # the measured kernel holds its fixed and K-serial time
            # its weights then stream at the copy rate ("" = not the engine-less fp4 rate)
            mem_dtype = "" if fp4_lat is not None or trtllm_fp4_s is not None else kernel_dtype
            w4_expert = expert and self._w4a16_weight(op.weight or "")
            # a fused-MoE grid (Triton fused_moe, TensorRT-LLM's CUTLASS MoE, the fp4 expert
            # kernels) pads each expert's rows on its own load under the op's routing
            # (``routed_row_tiles``); the W4A16 kernel counts its own (``w4a16_routed_rows``)
            grid_routing = (
                op.routing
                if (fused or (self.trtllm_moe and expert) or expert4) and not w4_expert
                else None
            )
            g = self._plan_gemm(m, n, k, op.batch, peak, n_bytes, frac, mem_dtype,
                                expert=expert4, routing=grid_routing)  # fmt: skip
            compute_s = g.compute_s
            if mx4 and grid_routing is not None:
                # TRT-LLM-Gen's swap-AB token tiles where faster (SWAP_AB_TOKEN_TILES)
                swap_s = swap_ab_expert_compute_s(
                    chip, n, k, grid_routing, peak * frac / max(chip.units, 1)
                )
                if swap_s is not None and swap_s < compute_s:
                    compute_s = swap_s
                    notes.append(f"swap-AB token tiles: {swap_s * 1e6:.1f} us of SM time")
            routed_frac = eff.fp4_expert_routed_peak_fraction
            if expert4 and not (mx4 or tg) and routed_frac > 0.0 and self._aiter_moe():
                # AITER's fused MXFP4 MoE (SGLang, ATOM: AITER_ENGINES) at its own rate on its
                # routed rows at prefill token counts (FP4-MOE-CDNA4-PREFILL in
                # data/efficiency.toml), a ceiling beside the tile plan, which keeps the
                # decode-size grids; vLLM's ROCm build runs AITER's Triton a8w4 MoE instead,
                # not timed at these sizes
                routed_s = flops / (peak * routed_frac)
                if routed_s > compute_s:
                    compute_s = routed_s
                    notes.append(
                        f"fused MXFP4 MoE on its routed rows: {routed_frac:.0%} of the fp4 peak"
                    )
            if self.fused_moe and op.weight and op.batch == 1 and eff.marlin_relative_rate:
                # a serving engine's weight-only dense GEMM: Marlin (module doc)
                rows = marlin_rows(m)
                rate = peak * eff.gemm_fraction(op.dtype) * eff.marlin_relative_rate
                compute_s = 2.0 * rows * n * k / rate
                notes.append(
                    f"Marlin {op.weight} x {op.dtype}: {_ceil_div(rows, MARLIN_MAX_M)} "
                    f"slice(s) of <= {MARLIN_MAX_M} rows at {eff.marlin_relative_rate:.0%} "
                    f"of the {op.dtype} GEMM rate"
                )
            if w4_expert:
                # a serving engine's W4A16 fused-MoE kernel (module doc): every row slice
                # dequantises the expert's weights on the CUDA cores, then runs the MMA on
                # its padded rows; the two add (the same warps do both)
                kernel = self._w4a16_kernel()
                if op.routing is not None:
                    # each expert's rows padded on their own under the routing's loads
                    all_rows, all_slices = w4a16_routed_rows(op.routing, kernel)
                else:
                    rows, slices = w4a16_expert_rows(m, kernel)
                    all_rows, all_slices = float(op.batch * rows), float(op.batch * slices)
                marlin = self._marlin_measured()
                dequant_rate = (chip.vector_flops_per_s or 0.0) * (
                    eff.marlin_expert_dequant_fraction
                    if marlin
                    else eff.w4a16_expert_dequant_fraction
                )
                dequant_s = all_slices * n * k / dequant_rate
                mma_frac = eff.gemm_fraction(op.dtype)
                if self._trtllm_w4a16_measured():
                    # TensorRT-LLM's own W4A16 MoE op: its measured MMA rate (module doc)
                    mma_frac = eff.trtllm_w4a16_expert_peak_fraction
                elif marlin:
                    # Marlin-MoE's mma.sync slices: its measured rates (module doc)
                    mma_frac = eff.marlin_expert_peak_fraction
                mma_s = 2.0 * all_rows * n * k / (peak * mma_frac)
                compute_s = dequant_s + mma_s
                if marlin:
                    # each slice's K loop pays the pipeline's prologue and epilogue
                    compute_s *= (k + K_FILL) / k
                notes.append(
                    f"W4A16 fused-MoE experts ({op.weight}"
                    f"{', Marlin-MoE' if kernel == MARLIN_MOE else ''}): "
                    f"{all_slices:.1f} row slices, {all_rows:.0f} rows over {op.batch} experts; "
                    f"dequant {dequant_s * 1e6:.1f} us + MMA {mma_s * 1e6:.1f} us, "
                    f"{eff.w4a16_expert_latency_s * 1e6:.1f} us fixed"
                )
            # the weight stream of a block-scaled fp8 GEMM whose tiles each walk all of K
            # serially: latency-bound below the chip's rate at decode M (module doc)
            memory_s = g.memory_s
            a8w4_frac = eff.a8w4_expert_fraction(m) if expert4 and fused else 0.0
            if self.engine == "vllm" and a8w4_frac > 0.0:
                # vLLM's ROCm build runs MXFP4 experts on AITER's Triton a8w4 MoE GEMM,
                # whose weight stream falls short of the copy rate, the more so on the
                # taller row tiles its routing picks above 16 rows an expert (A8W4-MOE in
                # data/efficiency.toml)
                stream_s = op_bytes(op) / (chip.hbm_bytes_per_s * a8w4_frac)
                if stream_s > memory_s:
                    memory_s = stream_s
                    notes.append(
                        f"Triton a8w4 MoE (block_m {a8w4_block_m(m)}): weights at "
                        f"{a8w4_frac:.0%} of HBM"
                    )
            if dense_block_fp8 and eff.blockscale_gemm_stream_fraction:
                # a dense block-scaled fp8 GEMM streams its weights below the dense GEMM's
                # rate (its scales loaded, each 128-deep K step promoted: BS-STREAM)
                memory_s /= eff.blockscale_gemm_stream_fraction
            k_serial = self._blockscale_k_serial_s(op)
            if k_serial > memory_s:
                memory_s = k_serial
                notes.append(f"block-scaled fp8 GEMM: K-serial main loop {k_serial * 1e6:.1f} us")
            measured = trtllm_fp4_s
            if measured is None and op.batch == 1:
                measured = measured_gemm_s(chip.id, op.dtype, m, n, k)
            # AITER's tuned bf16 GEMM (tgemm) under SGLang / ATOM: split-K kernels with fp32
            # accumulation that stream their operands below the copy rate (AITER-BF16)
            aiter_bf16 = (
                op.dtype == "bf16"
                and not expert
                and op.batch == 1
                and measured is None
                and self.engine in AITER_ENGINES
                and eff.aiter_bf16_gemm_hbm_fraction > 0.0
            )
            if aiter_bf16:
                stream_s = n_bytes / (chip.hbm_bytes_per_s * eff.aiter_bf16_gemm_hbm_fraction)
                memory_s = max(memory_s, stream_s)
                notes.append(
                    f"AITER bf16 GEMM: operands at {eff.aiter_bf16_gemm_hbm_fraction:.0%} of HBM, "
                    f"{eff.aiter_bf16_gemm_latency_s * 1e6:.1f} us fixed per call"
                )
            quant_s = 0.0
            if measured is not None:
                # the submitter's own tuned kernel, timed on this chip (kernels.py)
                compute_s = measured
                notes.append(f"measured {op.dtype} kernel time for {n}x{k} at M={m} (kernels.py)")
                if op.dtype == "fp4" and not expert and chip.vendor == "amd":
                    # AITER's a4w4 tuner (the AMD fp4 tables' source) times the GEMM on an
                    # input it quantised once up front; a served linear first quantises its
                    # bf16 input in a kernel of its own (MXFP4_INPUT_QUANT_BYTES)
                    quant_s = m * k * MXFP4_INPUT_QUANT_BYTES / bandwidth
                    notes.append(
                        f"MXFP4 input quantisation kernel: {quant_s * 1e6:.1f} us + one launch"
                    )
            # AIConfigurator's TensorRT-LLM table times the linear (its quantisation and GEMM
            # kernels) replayed back to back in a CUDA graph (collector/helper.py
            # benchmark_with_power): its launches and ramps are in the time already
            launches = 0 if trtllm_fp4_s is not None else (2 if quant_s else 1)
            if fused and op.dtype == "fp8":
                launches += FUSED_MOE_FP8_INPUT_QUANT
                notes.append("fused-MoE fp8 input quantised by its own kernel (one launch)")
            elif dense_block_fp8 and self._blockscale_input_quant(op):
                launches += BLOCKSCALE_INPUT_QUANT
                notes.append("block-scaled fp8 input quantised per 1x128 group by its own kernel")
            elif fused and op.dtype == "fp4" and not op.weight and self._aiter_moe():
                # AITER's a4w4 MoE quantises each stage's input to MXFP4 (AITER_ENGINES)
                launches += AITER_MXFP4_INPUT_QUANT
                notes.append("AITER MXFP4 MoE input quantised and sorted by its own kernel")
            overhead = launches * eff.launch_overhead_s + pad_io_s + quant_s
            expert_lat = eff.mxfp4_expert_latency_s if mx4 else eff.fp4_expert_latency_s
            if tg:
                expert_lat = (
                    eff.trtllm_gen_fp4_expert_latency_s
                    if tg == "tg-fp4"
                    else eff.trtllm_gen_fp8_expert_latency_s
                )
            routing = op.routing
            if (
                tg == "tg-fp4"
                and op.name == "expert_up"
                and routing is not None
                and routing.local < routing.experts
                and eff.trtllm_gen_fp4_expert_ep_token_s
            ):
                # under expert parallelism each rank's TRT-LLM-Gen block runs over every
                # token's routing, not its local rows: a cost per token of the step that
                # the rank's share of the experts does not shrink (TG-NVFP4-EP in
                # data/efficiency.toml), once a block
                ep_token_s = eff.trtllm_gen_fp4_expert_ep_token_s * routing.tokens
                overhead += ep_token_s
                notes.append(
                    f"TRT-LLM-Gen NVFP4 MoE under EP: {ep_token_s * 1e6:.1f} us over "
                    f"{routing.tokens} tokens' routing"
                )
            if tg == "tg-fp8":
                overhead += expert_lat
                notes.append(
                    f"TRT-LLM-Gen block-scaled fp8 experts: {expert_lat * 1e6:.1f} us fixed, "
                    f"{frac:.0%} of the fp8 peak, weights at "
                    f"{eff.gemm_memory_fraction(mem_dtype, expert=True):.0%} of HBM"
                )
            elif expert4 and (expert_lat or mx4 or tg):
                overhead += expert_lat
                kernel = (
                    "TRT-LLM-Gen MXFP4 x MXFP8"
                    if mx4
                    else ("TRT-LLM-Gen NVFP4" if tg else "fused-MoE fp4")
                )
                notes.append(
                    f"{kernel} experts: {expert_lat * 1e6:.1f} us fixed, "
                    f"{frac:.0%} of the fp4 peak, weights at "
                    f"{eff.gemm_memory_fraction(mem_dtype, expert=True):.0%} of HBM"
                )
            if w4_expert:
                overhead += eff.w4a16_expert_latency_s
            if fp4_lat is not None:
                overhead += fp4_lat
                notes.append(
                    f"engine NVFP4 GEMM: {fp4_lat * 1e6:.1f} us fixed and K-serial, weights at "
                    f"{eff.gemm_memory_fraction():.0%} of HBM"
                )
            if aiter_bf16:
                overhead += eff.aiter_bf16_gemm_latency_s
            fp8_fixed = eff.fp8_gemm_latency_s
            if op.block_scaled and eff.blockscale_gemm_latency_s:
                # a block-scaled fp8 GEMM's own fixed cost where its kernels were timed
                # (per-1x128-group activation quantisation; its K loop: k_serial above)
                fp8_fixed = eff.blockscale_gemm_latency_s
            if op.dtype == "fp8" and not fused and fp8_fixed:
                # the fp8 call's fixed cost: activation scale and cast, scaled epilogue
                overhead += fp8_fixed
                notes.append(f"fp8 GEMM: {fp8_fixed * 1e6:.1f} us fixed per call")
            # a measured kernel time is the whole kernel's: nothing combines with it
            exponent = 0.0 if measured is not None else dense_gemm_exponent(eff, op.batch)
            r = Roof(compute_s=compute_s, memory_s=memory_s, overhead_s=overhead,
                     exponent=exponent)  # fmt: skip
            if fused and frac != eff.gemm_fraction(op.dtype):
                notes.append(f"fused-MoE kernel: {frac:.0%} of the {op.dtype} peak")
            notes.append(
                f"tile {g.tile[0]}x{g.tile[1]} split-k {g.split_k}: {g.tiles} tiles in "
                f"{g.waves} wave(s) on {chip.units} {chip.unit_name}s, "
                f"utilisation {g.utilisation:.2f}, K efficiency {g.k_efficiency:.2f}"
            )
        elif op.tensor_op:
            frac = (
                eff.attention_fraction(backward=op.backward)
                if op.kind is OpKind.ATTENTION
                else eff.gemm_fraction(op.dtype)
            )
            if op.name == INDEXER and op.weight == "fp8" and chip.supports("fp8"):
                # sparse attention's indexer scores with fp8 MMAs (layers.indexer_ops)
                peak = chip.peak_flops_per_s("fp8")
            if is_fp8_context_attention(op):
                # TensorRT-LLM's FP8 context FMHA (serve.EngineStepTimer): its own measured
                # share of the fp8 peak (FP8-CTX), else the 16-bit kernel's rate
                if eff.fp8_context_attention_peak_fraction:
                    frac = eff.fp8_context_attention_peak_fraction
                    notes.append(f"fp8 context attention: {frac:.0%} of the fp8 peak")
                else:
                    peak = chip.peak_flops_per_s("bf16")
            blocks = block_overcount(op, FLASH_BLOCK)
            if blocks > 1.0001:
                notes.append(f"flash blocks of {FLASH_BLOCK}: {blocks:.2f}x the FLOPs")
            tile_flops = attention_tile_flops(op, eff)
            attention_flops = flops * blocks + tile_flops
            if tile_flops:
                notes.append(
                    f"prefill attention: {eff.attention_tile_blocks:.1f} key blocks of fixed "
                    f"work per {FLASH_BLOCK}-row query tile (+{tile_flops / flops:.0%} FLOPs)"
                )
                critical = attention_critical_flops(op, eff, chip.units)
                if critical > attention_flops:
                    attention_flops = critical
                    notes.append(
                        f"prefill attention: fewer query tiles than {chip.unit_name}s, the "
                        f"longest tile's key blocks set the time"
                    )
            kv_bandwidth = bandwidth
            overhead_s = eff.launch_overhead_s
            if is_decode_attention(op) and eff.decode_attention_hbm_fraction:
                kv_bandwidth = chip.hbm_bytes_per_s * eff.decode_attention_fraction()
                notes.append(
                    f"decode attention: the paged KV-cache read streams at "
                    f"{eff.decode_attention_fraction():.0%} of HBM bandwidth"
                )
            if (
                is_decode_attention(op)
                and op.weight == "fp8"
                and eff.fp8_kv_attention_peak_fraction
            ):
                # the kernel quantises the query and multiplies the fp8 cache in fp8 (FP8-MLA)
                peak = chip.peak_flops_per_s("fp8")
                frac = eff.fp8_kv_attention_peak_fraction
                notes.append(
                    f"decode attention on an fp8 cache: fp8 MMAs at {frac:.0%} of the fp8 peak"
                )
            floor_s = eff.decode_attention_floor_s
            if is_latent_decode_attention(op) and eff.mla_decode_attention_floor_s:
                # the architecture's own MLA decode kernel, timed apart (AITER-MLA)
                floor_s = eff.mla_decode_attention_floor_s
            if is_decode_attention(op) and floor_s > overhead_s:
                # a split-KV decode kernel's fixed cost: KV append, partials, combine (DAF)
                overhead_s = floor_s
                notes.append(
                    f"decode attention: {overhead_s * 1e6:.1f} us fixed (launches, KV append, "
                    f"split-KV combine) before the cache read"
                )
            vllm_mla = eff.vllm_mla_decode_latency_s
            if self.engine == "vllm" and vllm_mla and is_latent_decode_attention(op):
                # vLLM's MLA decode module beyond the modelled ops, timed whole (VLLM-MLA)
                overhead_s += vllm_mla
                notes.append(
                    f"vLLM MLA decode module: {vllm_mla * 1e6:.1f} us beyond the modelled ops"
                )
            memory_s = n_bytes / kv_bandwidth
            per_sequence_s = decode_attention_sequence_s(op, eff)
            if per_sequence_s > memory_s:
                # the SMs' per-sequence work outlasts the cache stream it overlaps (DAE)
                memory_s = per_sequence_s
                notes.append(
                    f"decode attention: per-sequence work ({per_sequence_s * 1e6:.1f} us) "
                    f"outlasts the cache read"
                )
            r = Roof(
                compute_s=attention_flops / (peak * frac) if flops else 0.0,
                memory_s=memory_s,
                overhead_s=overhead_s,
            )
        else:
            traffic = n_bytes
            if op.kind is OpKind.SORT:
                traffic *= RADIX_SORT_PASSES
                notes.append(f"radix sort: {RADIX_SORT_PASSES} passes over the data")
            if op.kind is OpKind.COLLECTIVE:
                notes.append("only local memory traffic timed; see collectives.collective_time")
            frac = eff.gemm_peak_fraction if op.kind is OpKind.FP64 and op.mnk else 1.0
            r = Roof(
                compute_s=flops / (peak * frac) if flops else 0.0,
                memory_s=traffic / bandwidth,
                overhead_s=eff.launch_overhead_s,
            )
        return timed(
            op, r, flops=flops, n_bytes=n_bytes, peak=peak, bandwidth=chip.hbm_bytes_per_s,
            notes=tuple(notes), measured=measured is not None,
        )  # fmt: skip

    def assumptions(self) -> tuple[Assumption, ...]:
        tile = _LARGEST_TILE.get(self.chip.architecture, DEFAULT_TILE)
        return (
            *self.efficiency.assumptions(),
            Assumption(
                name="gemm_tile",
                value=f"{tile[0]}x{tile[1]}",
                source="largest CTA tile per generation (CUTLASS/hipBLASLt defaults)",
            ),
            Assumption(
                name="k_fill",
                value=K_FILL,
                source="estimate: one K step of HBM latency + one of epilogue per tile",
            ),
        )


def attention_tile_flops(op: Op, eff: Efficiency) -> float:
    """The fixed work of a prefill (context) flash-attention op's query tiles, as FLOPs at
    the attention rate: ``attention_tile_blocks`` blocks of ``FLASH_BLOCK`` x
    ``FLASH_BLOCK`` query-key pairs per ``FLASH_BLOCK``-row query tile of each sequence and
    query head (ATTN-TILE, efficiency.toml). A causal sequence of s tokens computes s^2 / 2
    pairs per head and ceil(s / 128) tiles: the fixed work is k x 128 x 128 x s / 128
    pairs, a share 256 k / s of the logical ones, so it dominates short prompts (k = 5, s =
    256: 6x) and fades by 16K tokens (8 %). Measured in the serving engines' context
    attention (NVIDIA AIConfigurator's tables); 0 for decode attention (its own model) and
    the backward (not measured)."""
    k = eff.attention_tile_blocks
    if (
        not k
        or op.kind is not OpKind.ATTENTION
        or op.backward
        or op.mnk is None
        or is_decode_attention(op)
        or not op.shape
    ):
        return 0.0
    s_q, _, qk_dim = op.mnk
    v_dim = op.shape[-1]
    # op.batch = sequences x query heads; a few query tokens a sequence (a speculative
    # verify step, a short chunk) share a tile with other heads' rows (the generation
    # kernels pack a KV group's query heads into one tile): their share of a tile's work
    tiles = op.batch * (_ceil_div(s_q, FLASH_BLOCK) if s_q >= FLASH_BLOCK else s_q / FLASH_BLOCK)
    return tiles * k * 2.0 * FLASH_BLOCK * FLASH_BLOCK * (qk_dim + v_dim)


def attention_critical_flops(op: Op, eff: Efficiency, units: int) -> float:
    """The prefill attention op's critical path as FLOPs over all ``units`` SMs: each query
    tile runs on one SM, so the op takes at least its longest tile (the last of a causal
    sequence, which meets every key; under a window the band's blocks), plus the tile's
    fixed work, however few tiles there are. It sets the time where the grid is smaller than
    the SMs (one prompt under tensor parallelism: 8 query heads x 8 tiles of a 1024-token
    prompt fill 64 of 132 SMs): AIConfigurator's A100/H200 rows at 8/1 heads, batch 1, 1024
    tokens take 54-59 / 24-29 us, this path 54 / 25. 0 where ``attention_tile_flops`` is,
    and for fewer query tokens than a tile (a speculative verify step: the generation kernels
    split the keys over the SMs)."""
    if not attention_tile_flops(op, eff) or op.mnk is None or not op.shape:
        return 0.0
    s_q, s_kv, qk_dim = op.mnk
    if s_q < FLASH_BLOCK:  # packed rows, split over the keys (FlashDecoding): not one tile
        return 0.0
    keys = min(s_kv, op.window + FLASH_BLOCK) if op.window else s_kv
    blocks = _ceil_div(keys, FLASH_BLOCK) + eff.attention_tile_blocks
    return units * blocks * 2.0 * FLASH_BLOCK * FLASH_BLOCK * (qk_dim + op.shape[-1])


def is_latent_decode_attention(op: Op) -> bool:
    """An absorbed-MLA decode attention (``layers._decode_attention``): every query head reads
    the one shared latent row (K = kv_lora_rank + rope, 576 for DeepSeek-V3), wider than the
    head it writes (v_head_dim, 128); a GQA/MHA op reads and writes heads of one width."""
    if not is_decode_attention(op) or op.mnk is None or len(op.shape) != 4:
        return False
    return op.mnk[2] > op.shape[3]


def decode_attention_sequence_s(op: Op, eff: Efficiency) -> float:
    """The decode-attention kernel's per-sequence work: ``decode_attention_element_s`` per
    element of one cached token's K/V row (per layer, per rank) for each sequence, after the
    floor (the tables' linear fits over batch start near the batch-1 time: B200 GQA 32/8 10.5
    against 10.65 us). It runs on the SMs beside the cache stream, so the op takes the longer
    of the two: AIConfigurator's
    tables at batch 2048 take the same time at context 2 as at 128 (B200 GQA 197 and 201 us,
    H200 600 and 609 us), where a sum would add the 1 GB read (150 / 240 us)."""
    if not (is_decode_attention(op) and eff.decode_attention_element_s) or op.mnk is None:
        return 0.0
    if not op.shape:  # no output shape: the sequences are unknown
        return 0.0
    sequences, context = op.shape[0], op.mnk[1]
    cache_bytes = op.bytes_read - op.bytes_written  # the query is the size of the output
    if sequences <= 0 or context <= 0 or cache_bytes <= 0:
        return 0.0
    elements = cache_bytes / (sequences * context * dtype_bytes(op.weight or op.dtype))
    return sequences * elements * eff.decode_attention_element_s


def gemm_efficiency(chip: Chip, m: int, n: int, k: int, dtype: str = "bf16") -> float:
    """Achieved / dense peak the model predicts for one GEMM (a convenience for reports)."""
    op = Op(name="gemm", kind=OpKind.MATMUL, dtype=dtype, mnk=(m, n, k))
    t = GpuModel(chip).op_time(op)
    return 2.0 * m * n * k / t.seconds / chip.peak_flops_per_s(dtype) if t.seconds else 0.0


__all__ = [
    "ENGINE_FUSED_OPS",
    "TP_FUSED_OPS",
    "GemmPlan",
    "GpuModel",
    "balance_intensity",
    "dense_gemm_exponent",
    "expert_loads",
    "fused_traffic",
    "gemm_candidate",
    "gemm_efficiency",
    "marlin_rows",
    "plan_gemm",
    "routed_row_tiles",
    "tensor_throttle",
    "tile_rate_factor",
    "w4a16_expert_rows",
    "w4a16_fused_op",
    "w4a16_routed_rows",
]
