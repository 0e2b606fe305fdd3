"""The roofline: an op takes as long as its slower resource, compute or memory.

Williams, Waterman and Patterson 2009 ("Roofline", CACM 52(4)): time = max(FLOPs / peak
FLOP/s, bytes / bandwidth). Where a kernel overlaps the two only in part, a ``Roof`` with an
``exponent`` p > 0 takes their p-norm instead (``combine``): the same as the slower one far
from the ridge, up to 2^(1/p) times it where the two are equal. ``GpuModel`` and
``TpuModel`` refine both terms (achievable fractions, tiles, padding, fusion); the helpers
here are shared by both, and ``RooflineModel`` is the unrefined bound (datasheet peaks, no
overheads), which every refined model must be at least as slow as.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from chipwise.errors import UnsupportedOpError
from chipwise.hardware.chip import Chip
from chipwise.perf.base import Assumption, Bound, OpTime, PerfModel
from chipwise.units import DTYPE_BYTES
from chipwise.workload.ir import Op, OpKind

# Ops that carry no double-precision work but whose dtype names fp64 data still need an fp64
# unit; element-wise fp32/bf16 work runs on the vector units whatever the catalog lists.
FP64 = "fp64"


def combine(compute_s: float, memory_s: float, exponent: float = 0.0) -> float:
    """The time of an op whose compute and memory streams take ``compute_s`` and ``memory_s``
    on their own: the slower of the two where they overlap fully (``exponent`` 0, the hard
    roofline), else their ``exponent``-norm (compute^p + memory^p)^(1/p), a soft knee: near
    the ridge neither stream keeps its full rate (``Efficiency.gemm_overlap_exponent``)."""
    if exponent <= 0 or compute_s <= 0 or memory_s <= 0:
        return max(compute_s, memory_s)
    big, small = max(compute_s, memory_s), min(compute_s, memory_s)
    return float(big * (1.0 + (small / big) ** exponent) ** (1.0 / exponent))


@dataclass(frozen=True, slots=True, kw_only=True)
class Roof:
    """The two roofs for one op, in seconds, plus a fixed overhead; ``exponent`` says how
    the two combine (``combine``: 0 = the slower of the two)."""

    compute_s: float
    memory_s: float
    overhead_s: float = 0.0
    exponent: float = 0.0

    @property
    def seconds(self) -> float:
        return combine(self.compute_s, self.memory_s, self.exponent) + self.overhead_s

    @property
    def bound(self) -> Bound:
        if self.overhead_s > max(self.compute_s, self.memory_s):
            return "overhead"
        return "compute" if self.compute_s >= self.memory_s else "memory"


def roof(
    flops: float, n_bytes: float, flops_per_s: float, bytes_per_s: float, overhead_s: float = 0.0
) -> Roof:
    """Compute and memory time of ``flops`` and ``n_bytes`` at the given rates."""
    if flops_per_s <= 0 and flops > 0:
        raise UnsupportedOpError("no compute rate for an op with FLOPs")
    compute_s = flops / flops_per_s if flops else 0.0
    memory_s = n_bytes / bytes_per_s if n_bytes else 0.0
    return Roof(compute_s=compute_s, memory_s=memory_s, overhead_s=overhead_s)


def arithmetic_intensity(op: Op) -> float:
    """FLOPs per byte of memory traffic (infinite for an op that moves nothing)."""
    return op.flops / op.bytes_moved if op.bytes_moved else float("inf")


def ridge_point(chip: Chip, dtype: str = "bf16") -> float:
    """FLOPs per byte above which an op is compute-bound at datasheet peaks."""
    return chip.peak_flops_per_s(dtype) / chip.hbm_bytes_per_s


def matmul_bytes(m: int, n: int, k: int, batch: int, dtype: str) -> float:
    """Minimum HBM traffic of a GEMM: read A (MxK) and B (KxN), write C (MxN), once each."""
    return float(batch * (m * k + k * n + m * n) * DTYPE_BYTES.get(dtype, 2.0))


def op_bytes(op: Op) -> float:
    """An op's HBM traffic per instance; for a GEMM that lists none, the minimum traffic."""
    if op.bytes_moved == 0 and op.mnk is not None:
        m, n, k = op.mnk
        return matmul_bytes(m, n, k, op.batch, op.dtype)
    return op.bytes_moved


def op_flops(op: Op) -> float:
    """An op's FLOPs per instance; for a GEMM that lists none, 2 x batch x M x N x K."""
    if op.flops == 0 and op.mnk is not None:
        m, n, k = op.mnk
        return 2.0 * op.batch * m * n * k
    return op.flops


def compute_rate(chip: Chip, op: Op) -> float:
    """Datasheet FLOP/s the op's work runs at: tensor units for GEMM-like ops, else vector.

    Raises ``UnsupportedOpError`` for a tensor op (or fp64 work) in a dtype the chip has no
    rate for. Element-wise work in other dtypes runs on the vector units (in fp32).
    """
    if op.kind is OpKind.FP64 or op.dtype == FP64:
        return chip.peak_flops_per_s(FP64)
    if op.tensor_op:
        return chip.peak_flops_per_s(op.dtype)
    return vector_rate(chip)


def vector_rate(chip: Chip) -> float:
    """Non-matrix FLOP/s: the catalog's vector rate, else its fp32 rate."""
    if chip.vector_flops_per_s:
        return chip.vector_flops_per_s
    if chip.supports("fp32"):
        return chip.peak_flops_per_s("fp32")
    raise UnsupportedOpError(
        f"{chip.id} lists no vector or fp32 rate; add compute.vector_flops_per_s to its "
        f"catalog file"
    )


def achieved_fraction(
    flops: float, n_bytes: float, seconds: float, roof_: Roof, peak: float, bandwidth: float
) -> float:
    """Achieved / peak for the op's limiting resource."""
    if seconds <= 0:
        return 0.0
    if roof_.bound == "memory":
        return n_bytes / seconds / bandwidth if bandwidth else 0.0
    return flops / seconds / peak if peak else 0.0


def timed(
    op: Op,
    r: Roof,
    *,
    flops: float,
    n_bytes: float,
    peak: float,
    bandwidth: float,
    notes: tuple[str, ...] = (),
    measured: bool = False,
) -> OpTime:
    """The ``OpTime`` of all ``op.count`` repetitions, from one instance's roof.

    ``flops`` and ``n_bytes`` are one instance's work as the model counts it (e.g. after
    padding); ``peak`` and ``bandwidth`` are the rates its efficiency is reported against.
    """
    one = r.seconds
    return OpTime(
        op=op,
        seconds=one * op.count,
        compute_s=r.compute_s * op.count,
        memory_s=r.memory_s * op.count,
        overhead_s=r.overhead_s * op.count,
        bound=r.bound,
        efficiency=achieved_fraction(flops, n_bytes, one, r, peak, bandwidth),
        notes=notes,
        measured=measured,
        overlap_exponent=r.exponent,
    )


@final
class RooflineModel(PerfModel):
    """The plain roofline at datasheet peaks, no overheads: a lower bound on op time."""

    def op_time(self, op: Op) -> OpTime:
        flops = op_flops(op)
        n_bytes = op_bytes(op)
        rate = compute_rate(self.chip, op) if flops else 0.0
        r = roof(flops, n_bytes, rate, self.chip.hbm_bytes_per_s)
        return timed(
            op, r, flops=flops, n_bytes=n_bytes, peak=rate, bandwidth=self.chip.hbm_bytes_per_s
        )

    def assumptions(self) -> tuple[Assumption, ...]:
        return (
            Assumption(
                name="roofline",
                value="datasheet peaks, no overheads",
                source="Williams, Waterman, Patterson 2009",
            ),
        )
