"""TPU op times: systolic MXUs, (8, 128) memory tiles, the VPU, XLA fusion and slow paths.

Legend: M, N, K = matmul dims; d = MXU side (``chip.matrix_unit_dim``: 128 through v5p,
256 on v6e and TPU7x); VPU = the 8 x 128 vector unit; VMEM = on-core vector memory.

Rules (S4 = jax-ml/scaling-book tpus.md; S5 = jax tpu_info.py; hardware.md):

- **MXU padding.** Matmul dims are padded to the MXU side d (S4: "matrix dimensions should be
  padded to 128 (256 on v6e)"): the MXU does the padded FLOPs, so a matmul costs
  2 x ceil(M/d)d x ceil(N/d)d x ceil(K/d)d / (peak x ``gemm_peak_fraction``). Dense peak is
  per chip, so megacore (v4, v5p) and TPU7x's two TensorCores are already in it.
- **Attention on the MXU.** Fused (splash/flash) attention runs QK^T, contracting over the
  qk head dim, and PV, producing the v head dim, on the MXUs: both head dims pad to d, so
  head_dim 64 costs 2x its FLOPs on a 128 MXU and 4x on a 256 MXU, head_dim 128 2x on 256.
  Splash computes whole ``SPLASH_BLOCK`` x ``SPLASH_BLOCK`` tiles (``SPLASH_BWD_BLOCK`` in
  the backward) wherever its mask leaves one pair: a sliding window narrower than a tile
  costs the tiles its band crosses, at most what causal attention would.
  Its backward runs at ``attention_backward_ratio`` of the forward's rate.
- **Decode attention.** A decode step's attention is a read of the paged KV cache by the
  ragged paged-attention Pallas kernel (vLLM TPU / tpu-inference RPA, JetStream), which
  streams it at ``decode_attention_hbm_fraction`` of HBM bandwidth (efficiency.toml), not at
  the ``hbm_fraction`` of a large copy. A dense decode attention (``Op.dense``: an XLA
  einsum over a contiguous cache array, jetstream-pytorch without ``ragged_mha``) streams
  that array like any XLA op, at ``hbm_fraction``.
- **Memory tiles.** Arrays live in HBM as (8, 128) tiles of their last two dims (S4), so
  traffic is that of the padded arrays.
- **VPU.** Element-wise, reduction, norm, softmax and sort FLOPs run on the VPU at
  ``chip.vector_flops_per_s``, else ``VPU_FRACTION_OF_MXU`` of the bf16 MXU peak.
- **XLA fusion.** An element-wise or norm op that consumes a matmul's output (directly or
  through a chain of such ops) is fused into it: it neither re-reads that output from HBM
  nor writes its own intermediate separately, and it is not a separate launch
  (``fused_op_time``; ``graph.time_graph`` applies it in op order).
- **Slow paths.** Gather/scatter, bitonic sort and dynamic shapes: see the constants below.
- **fp64** does not exist on TPUs: an ``UnsupportedOpError``, never an emulated rate.
"""

from __future__ import annotations

import copy
import math
from typing import final

from chipwise.errors import UnsupportedOpError
from chipwise.hardware.chip import Chip
from chipwise.perf.base import Assumption, OpTime, PerfModel
from chipwise.perf.efficiency import Efficiency, efficiency_for
from chipwise.perf.ops.layers import block_overcount, causal_pairs
from chipwise.perf.ops.roofline import Roof, op_bytes, op_flops, timed
from chipwise.units import DTYPE_BYTES
from chipwise.workload.ir import Op, OpKind

# Splash attention's query and key/value block sizes, forward and backward: MaxText's
# defaults sa_block_q = sa_block_kv = sa_block_q_dkv = ... = 512 (AI-Hypercomputer/maxtext
# src/MaxText/configs/base.yml @003b4169, "Splash attention block sizes"). The kernel skips
# only blocks its mask hides entirely (layers.block_pairs).
SPLASH_BLOCK = 512
# The backward's (fused dK/dV/dQ kernel, sa_use_fused_bwd_kernel=True) blocks: every
# Ironwood MaxText recipe that sets them uses sa_block_q_dkv = sa_block_kv_dkv =
# sa_block_kv_dkv_compute = 2048 (github:AI-Hypercomputer/tpu-recipes @c8cfe2f, 2026-08,
# training/ironwood/{gpt-oss-120b,deepseek3-671b,qwen3-235b-a22b}/*/xpk/run_recipe.sh),
# as do MaxText's own Trillium configs (e.g. mistral_7b in benchmarks/
# maxtext_trillium_model_configs.py @e591f30). Only the blocks a sliding window crosses
# depend on it (``block_overcount``): gpt-oss's 128-token window costs two 2048-key
# tiles per query block in the backward, not two 512-key ones.
SPLASH_BWD_BLOCK = 2048
DEFAULT_MXU_DIM = 128  # v2-v5p MXU side (hardware.md TPU table), if the catalog lacks it
TILE_SUBLANES = 8  # HBM/VMEM tile is (8, 128) 32-bit words (S4, "TPU memory layout")
TILE_LANES = 128
# S4's worked v5p example: VPU ~7e12 FLOP/s per core vs ~2e14 on the MXUs, ~30x less.
VPU_FRACTION_OF_MXU = 1.0 / 30.0
# Gather/scatter: XLA on the TensorCore moves (8, 128) tiles, so fetching one row of a
# table brings in the 8 rows of its tile: up to 8x read amplification for random rows.
# Scatter also writes the tile back (read-modify-write): 2 x 8. Physical reasoning from
# the tile layout; SparseCore offload (v5p+, embeddings) can avoid it but XLA uses it only
# for specific embedding ops.
GATHER_AMPLIFICATION = float(TILE_SUBLANES)
SCATTER_AMPLIFICATION = 2.0 * TILE_SUBLANES
# Bitonic sort (Batcher 1968): log2(n) (log2(n) + 1) / 2 compare-exchange stages; each
# element does a compare, a select of min and one of max per stage.
SORT_OPS_PER_ELEMENT_STAGE = 3.0
# Dynamic shapes: XLA compiles one program per shape. The usual fix is padding to
# power-of-two buckets; for sizes uniform within a bucket [b, 2b) the expected padded /
# actual size is 2 ln 2 ~= 1.39 (plus one compilation, seconds, per new bucket).
DYNAMIC_BUCKET_PAD = 2.0 * math.log(2.0)

# vLLM TPU (vllm-project/tpu-inference) before its SparseCore ragged gather (PR #2137,
# merged 2026-04-04) ran an expert-parallel MoE layer as GMM_EP (layers/common/
# fused_moe_gmm.py, read at 2f76400, 2026-03-29, the image of the Ironwood Qwen3-Coder
# recipe): every JAX device (a TensorCore: ``JAX_DEVICES_PER_CHIP``) holds all the step's
# tokens, sorts all tokens x top-k of them and gathers every one of those rows
# (``hidden_states_local[token_indices_sorted]``), runs the grouped GEMMs over its own
# experts only, then combines all the rows again, non-local ones masked, and all-reduces
# over the expert axis. So a chip's dispatch moves ``devices x ep`` times the rows of its own
# experts' share (the per-op model's ``moe_permute``), and so does its combine where that is
# the XLA gather: at most ``TPU_INFERENCE_SC_GATHER_REDUCE_ROWS`` rows; above, on TPU7x, a
# SparseCore gather-reduce kernel (kernels/gather/gather_reduce.py
# is_supported_by_sc_gather_reduce) whose time is left at the combine's own share. From
# #2137 on, the dispatch gathers only the device's own sorted range.
TPU_INFERENCE_LOCAL_PERMUTE_DATE = "2026-04-04"
TPU_INFERENCE_SC_GATHER_REDUCE_ROWS = 8192  # envs.SC_KERNEL_THRESHOLD default at 2f76400
# JAX devices per chip: TPU7x's two TensorCores are two devices (no megacore; the Ironwood
# recipes' --tensor-parallel-size 2 spans one chip, 8 spans 4); one elsewhere (v4 and v5p
# join theirs as one megacore device; v5e and v6e have one TensorCore)
JAX_DEVICES_PER_CHIP = {"tpu-v7": 2}

FUSIBLE_KINDS = frozenset({OpKind.ELEMENTWISE, OpKind.NORM})
FUSION_PRODUCERS = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION}) | FUSIBLE_KINDS

_NO_FP64 = (
    "TPUs have no fp64 units: op {name!r} needs fp64 ({kind}). Run it on a GPU with an fp64 "
    "rate (e.g. 'h100-sxm'), or cast to fp32 if the algorithm tolerates it"
)


def _pad(x: int, to: int) -> int:
    return -(-x // to) * to


def tiled_elements(shape: tuple[int, ...]) -> int:
    """Elements of ``shape`` once its last two dims are padded to (8, 128) tiles."""
    if not shape:
        return 1
    if len(shape) == 1:
        return _pad(shape[0], TILE_SUBLANES * TILE_LANES)
    lead = math.prod(shape[:-2])
    return lead * _pad(shape[-2], TILE_SUBLANES) * _pad(shape[-1], TILE_LANES)


def padding_factor(shape: tuple[int, ...]) -> float:
    """Tiled / logical elements of an array (>= 1)."""
    logical = math.prod(shape) if shape else 1
    return tiled_elements(shape) / logical if logical else 1.0


def is_decode_attention(op: Op) -> bool:
    """A decode step's attention: one query token per sequence reading its KV cache
    (``layers.decode_layer_ops`` gives it ``mnk = (1, context, head_dim)``)."""
    return op.kind is OpKind.ATTENTION and not op.backward and op.mnk is not None and op.mnk[0] == 1


def causal_ceiling(op: Op) -> float:
    """Causal / windowed logical pairs of a self-attention op: a window under tiles as wide
    as itself computes no more than causal attention over the same sequence would, whose
    diagonal tiles the efficiency's causal logical FLOPs already price (``block_overcount``).
    Infinite for other ops."""
    if op.kind is not OpKind.ATTENTION or op.mnk is None or not op.window or not op.causal:
        return math.inf
    s_q, s_kv = op.mnk[0], op.mnk[1]
    windowed = causal_pairs(s_q, s_kv, causal=True, window=op.window)
    return causal_pairs(s_q, s_kv, causal=True) / windowed if windowed > 0 else math.inf


def vpu_rate(chip: Chip) -> float:
    """The VPU's FLOP/s: the catalog's vector rate, else 1/30 of the bf16 MXU peak (S4)."""
    if chip.vector_flops_per_s:
        return chip.vector_flops_per_s
    return chip.peak_flops_per_s("bf16") * VPU_FRACTION_OF_MXU


def bitonic_stages(n: int) -> int:
    """Compare-exchange stages of a bitonic sorting network over ``n`` elements."""
    levels = max(1, math.ceil(math.log2(max(n, 2))))
    return levels * (levels + 1) // 2


@final
class TpuModel(PerfModel):
    """Per-op times on a Google TPU (one chip, all its TensorCores)."""

    fuses_elementwise = True

    def __init__(self, chip: Chip, efficiency: Efficiency | None = None) -> None:
        super().__init__(chip)
        self.efficiency = efficiency if efficiency is not None else efficiency_for(chip)
        self.mxu_dim = chip.matrix_unit_dim or DEFAULT_MXU_DIM
        self._op_times: dict[Op, OpTime] = {}  # op_time is pure in (model, op); see GpuModel
        # the serving engine moves every token's MoE rows on every device (GMM_EP before
        # TPU_INFERENCE_LOCAL_PERMUTE_DATE; ``for_engine``)
        self.replicated_moe_rows = False

    def sustained_tensor_fraction(self) -> float:
        return self.efficiency.sustained_tensor_fraction

    def for_engine(self, engine: str, engine_date: str = "") -> PerfModel:
        """vLLM TPU before ``TPU_INFERENCE_LOCAL_PERMUTE_DATE`` moves every token's MoE rows
        on every device (module constants); the same model otherwise."""
        replicated = engine == "vllm" and bool(engine_date)
        replicated = replicated and engine_date < TPU_INFERENCE_LOCAL_PERMUTE_DATE
        if replicated == self.replicated_moe_rows:
            return self
        clone = copy.copy(self)
        clone.replicated_moe_rows = replicated
        clone._op_times = {}
        return clone

    def moe_row_replicas(self, op: Op) -> float:
        """How many times the rows of its own experts' share (the op's bytes) a chip's MoE
        dispatch or combine moves: ``devices x ep`` under the replicated GMM_EP path
        (module constants), 1 otherwise."""
        routing = op.routing
        if not self.replicated_moe_rows or routing is None or routing.local >= routing.experts:
            return 1.0
        if op.kind is OpKind.SCATTER:
            # the SparseCore kernel takes over on TPU7x only (get_tpu_info().generation == 7)
            sparse_core = self.chip.architecture == "tpu-v7"
            if sparse_core and routing.tokens * routing.topk > TPU_INFERENCE_SC_GATHER_REDUCE_ROWS:
                return 1.0
        devices = JAX_DEVICES_PER_CHIP.get(self.chip.architecture, 1)
        return float(devices * routing.experts // routing.local)

    # -- one op ---------------------------------------------------------------------------

    def op_time(self, op: Op) -> OpTime:
        t = self._op_times.get(op)
        if t is None:
            t = self._op_times[op] = self._time(op, saved_bytes=0.0, fused_into=None)
        return t

    def fused_op_time(self, op: Op, producer: Op) -> OpTime:
        """``op`` fused into ``producer`` if it is element-wise/norm and the producer can host it.

        The fused op does not read the producer's output from HBM, and its output replaces the
        producer's (already counted) write; its own other inputs are still read.
        """
        if op.kind not in FUSIBLE_KINDS or producer.kind not in FUSION_PRODUCERS:
            return self.op_time(op)
        handoff = producer.bytes_written or op_bytes(producer) / 3.0
        saved = min(op.bytes_read, handoff) + min(op.bytes_written, handoff)
        return self._time(op, saved_bytes=saved, fused_into=producer)

    def _time(self, op: Op, *, saved_bytes: float, fused_into: Op | None) -> OpTime:
        chip, eff = self.chip, self.efficiency
        if op.kind is OpKind.FP64 or op.dtype == "fp64":
            raise UnsupportedOpError(_NO_FP64.format(name=op.name, kind=op.kind.value))
        flops = op_flops(op)
        n_bytes = op_bytes(op)
        bandwidth = chip.hbm_bytes_per_s * eff.hbm_fraction
        overhead = 0.0 if fused_into is not None else eff.launch_overhead_s
        notes: list[str] = []
        peak: float
        if op.tensor_op:
            peak = chip.peak_flops_per_s(op.dtype)
            work = flops
            traffic = n_bytes
            if op.kind is OpKind.ATTENTION:
                frac = eff.attention_fraction(backward=op.backward)
                if is_decode_attention(op) and not op.dense:
                    bandwidth = chip.hbm_bytes_per_s * eff.decode_attention_fraction()
                    notes.append(
                        "paged KV-cache read at "
                        f"{eff.decode_attention_fraction():.0%} of HBM bandwidth"
                    )
                block = SPLASH_BWD_BLOCK if op.backward else SPLASH_BLOCK
                blocks = min(block_overcount(op, block), causal_ceiling(op))
                work = flops * self.attention_padding(op) * blocks
                if blocks > 1.0001:
                    notes.append(f"splash blocks of {block}: {blocks:.2f}x the FLOPs")
            else:
                frac = eff.gemm_fraction(op.dtype)
                if op.mnk is not None and all(op.mnk):
                    work, traffic = self._padded_matmul(op, n_bytes)
            if work > flops * 1.0001:
                notes.append(f"MXU padding to {self.mxu_dim}: {work / flops:.2f}x the FLOPs")
            compute_s = work / (peak * frac) if work else 0.0
        else:
            peak = vpu_rate(chip)
            work = flops
            traffic = n_bytes * padding_factor(op.shape) if op.shape else n_bytes
            traffic = max(traffic - saved_bytes, 0.0)
            replicas = self.moe_row_replicas(op)
            if replicas > 1:
                traffic *= replicas
                notes.append(f"every device moves all tokens' MoE rows: {replicas:g}x")
            if op.kind is OpKind.GATHER:
                traffic *= GATHER_AMPLIFICATION
                notes.append(f"gather slow path: {GATHER_AMPLIFICATION:g}x tile traffic")
            elif op.kind is OpKind.SCATTER:
                traffic *= SCATTER_AMPLIFICATION
                notes.append(f"scatter slow path: {SCATTER_AMPLIFICATION:g}x tile traffic")
            elif op.kind is OpKind.SORT:
                work, passes = self._bitonic(op)
                traffic *= passes
                notes.append(f"bitonic sort on the VPU, {passes} pass(es) over HBM")
            elif op.kind is OpKind.COLLECTIVE:
                notes.append("only local memory traffic timed; see collectives.collective_time")
            compute_s = work / peak if work else 0.0
        memory_s = traffic / bandwidth if traffic else 0.0
        if fused_into is not None:
            notes.append(f"fused into {fused_into.name!r} by XLA")
        scale = 1.0
        if op.dynamic:
            scale = DYNAMIC_BUCKET_PAD
            notes.append(
                f"dynamic shape: padded to power-of-two buckets ({DYNAMIC_BUCKET_PAD:.2f}x); "
                "XLA recompiles once per new bucket (seconds each)"
            )
        r = Roof(compute_s=compute_s * scale, memory_s=memory_s * scale, overhead_s=overhead)
        return timed(
            op, r, flops=flops, n_bytes=n_bytes, peak=peak, bandwidth=chip.hbm_bytes_per_s,
            notes=tuple(notes),
        )  # fmt: skip

    # -- pieces ---------------------------------------------------------------------------

    def attention_padding(self, op: Op) -> float:
        """MXU FLOPs / logical FLOPs of fused attention: QK^T contracts over the qk head dim
        (``mnk[2]``) and PV produces the v head dim (``shape[-1]``); each pads to the MXU
        side (S4: dims pad to 128, 256 on v6e/TPU7x). 1 when the op lacks those dims."""
        if op.mnk is None or not op.shape:
            return 1.0
        qk, v = op.mnk[2], op.shape[-1]
        if qk <= 0 or v <= 0:
            return 1.0
        d = self.mxu_dim
        return (_pad(qk, d) + _pad(v, d)) / (qk + v)

    def _padded_matmul(self, op: Op, n_bytes: float) -> tuple[float, float]:
        """MXU FLOPs and (8, 128)-tiled HBM bytes of a matmul with known (M, N, K)."""
        assert op.mnk is not None
        m, n, k = op.mnk
        d = self.mxu_dim
        work = 2.0 * op.batch * _pad(m, d) * _pad(n, d) * _pad(k, d)
        if op.bytes_moved:
            # The importer counted the bytes; scale them by the tile padding of the operands.
            logical = m * k + k * n + m * n
            tiled = tiled_elements((m, k)) + tiled_elements((k, n)) + tiled_elements((m, n))
            return work, n_bytes * tiled / logical
        size = DTYPE_BYTES.get(op.dtype, 2.0)
        tiled = tiled_elements((m, k)) + tiled_elements((k, n)) + tiled_elements((m, n))
        return work, op.batch * tiled * size

    def _bitonic(self, op: Op) -> tuple[float, int]:
        """VPU FLOPs and HBM passes of a bitonic sort of the op's elements."""
        size = DTYPE_BYTES.get(op.dtype, 4.0)
        n = math.prod(op.shape) if op.shape else max(1, round(op.bytes_read / size))
        levels = max(1, math.ceil(math.log2(max(n, 2))))
        work = n * bitonic_stages(n) * SORT_OPS_PER_ELEMENT_STAGE
        vmem = self.chip.sram_per_unit_bytes or 0.0
        # Stages whose compare stride spans more than VMEM holds go through HBM; the rest
        # run on blocks held in VMEM, one pass per run of such stages (counted once here).
        passes = 1
        if n * size > vmem:
            passes += sum(1 for i in range(1, levels + 1) for j in range(i) if 2**j * size > vmem)
        return work, passes

    def assumptions(self) -> tuple[Assumption, ...]:
        return (
            *self.efficiency.assumptions(),
            Assumption(name="mxu_dim", value=self.mxu_dim, source="catalog matrix_unit_dim (S5)"),
            Assumption(
                name="vpu_fraction_of_mxu",
                value=VPU_FRACTION_OF_MXU,
                source="scaling-book tpus.md v5p example (used when the catalog has no VPU rate)",
            ),
            Assumption(
                name="gather_amplification",
                value=GATHER_AMPLIFICATION,
                source="(8, 128) tile layout: a random row fetch moves its 8-row tile",
            ),
            Assumption(
                name="dynamic_bucket_pad",
                value=round(DYNAMIC_BUCKET_PAD, 3),
                source="power-of-two shape buckets, sizes uniform in a bucket: 2 ln 2",
            ),
            Assumption(
                name="xla_fusion",
                value="element-wise/norm after matmul fused",
                source="XLA fuses element-wise consumers into the producing fusion",
            ),
        )
