"""Predict microbenchmark primitives: a matmul, an HBM copy, an all-reduce.

Counting conventions, chosen to match what the published benchmarks report:

- ``matmul:MxNxK`` — FLOPs = 2 M N K on one chip (mamf-finder, jax matmul benchmarks).
- ``copy:BYTES`` — BYTES is the size of ONE array; a copy reads it and writes it, so
  ``n_bytes`` (and ``achieved_bytes_per_s``) counts 2 x BYTES, the STREAM/BabelStream
  convention (``2 * sizeof(T) * ARRAY_SIZE / time``) also used by tpu-recipes'
  benchmark_hbm.py (``2 * tensor_bytes / time``).
- ``allreduce:BYTES`` — BYTES is the buffer on each chip; ``bus_bytes`` = 2 (n-1)/n x BYTES
  (NCCL busBw; the accelerator-microbenchmarks psum uses the same definition).
"""

from __future__ import annotations

from chipwise.errors import PlanError, WorkloadError
from chipwise.hardware.chip import Chip
from chipwise.perf.base import PrimitivePrediction
from chipwise.perf.comm.collectives import collective_time
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.ops.models import model_for
from chipwise.perf.ops.roofline import matmul_bytes
from chipwise.workload.ir import Op, OpKind, Primitive


def predict_primitive(
    p: Primitive, chip: Chip, chips: int = 1, efficiency: Efficiency | None = None
) -> PrimitivePrediction:
    """Time ``p`` on ``chip`` (``chips`` of them for an all-reduce).

    Raises:
        WorkloadError: an unknown primitive kind or a non-positive size.
        PlanError: an all-reduce on fewer than 2 chips, or a matmul/copy on more than 1.
        UnsupportedOpError: a matmul dtype the chip has no rate for.
    """
    if p.kind == "allreduce":
        return _allreduce(p, chip, chips, efficiency)
    if chips != 1:
        raise PlanError(f"{p.name} runs on one chip; got chips={chips} (drop --chips)")
    model = model_for(chip, efficiency)
    if p.kind == "matmul":
        m, n, k = p.mnk
        if min(m, n, k) <= 0:
            raise WorkloadError(
                f"{p.name}: M, N and K must be positive, e.g. matmul:4096x4096x4096"
            )
        n_bytes = matmul_bytes(m, n, k, 1, p.dtype)
        op = Op(
            name=p.name,
            kind=OpKind.MATMUL,
            dtype=p.dtype,
            flops=2.0 * m * n * k,
            mnk=(m, n, k),
            shape=(m, n),
        )
        t = model.op_time(op)
        return PrimitivePrediction(
            workload=p.name,
            chip_id=chip.id,
            chips=1,
            time_s=t.seconds,
            flops=op.flops,
            n_bytes=n_bytes,
            bound=t.bound,
            assumptions=model.assumptions(),
        )
    if p.kind == "copy":
        if p.n_bytes <= 0:
            raise WorkloadError(f"{p.name}: copy size must be positive, e.g. copy:1e9")
        op = Op(
            name=p.name,
            kind=OpKind.COPY,
            dtype=p.dtype,
            bytes_read=p.n_bytes,
            bytes_written=p.n_bytes,
        )
        t = model.op_time(op)
        return PrimitivePrediction(
            workload=p.name,
            chip_id=chip.id,
            chips=1,
            time_s=t.seconds,
            n_bytes=2.0 * p.n_bytes,  # read + write (STREAM convention)
            bound=t.bound,
            assumptions=model.assumptions(),
        )
    raise WorkloadError(
        f"unknown primitive {p.kind!r}; use matmul:MxNxK, copy:BYTES, allreduce:BYTES"
    )


def _allreduce(
    p: Primitive, chip: Chip, chips: int, efficiency: Efficiency | None
) -> PrimitivePrediction:
    if chips < 2:
        raise PlanError(f"{p.name} needs at least 2 chips; pass --chips N")
    if p.n_bytes <= 0:
        raise WorkloadError(f"{p.name}: all-reduce size must be positive, e.g. allreduce:1e9")
    c = collective_time("all-reduce", p.n_bytes, chips, chip, efficiency=efficiency)
    return PrimitivePrediction(
        workload=p.name,
        chip_id=chip.id,
        chips=chips,
        time_s=c.seconds,
        n_bytes=p.n_bytes,
        bus_bytes=c.bus_bytes,
        bound="communication",
        assumptions=c.assumptions,
    )
