"""Time an imported graph (torch, jax, onnx) op by op on one chip.

Ops run one after another (no concurrency between kernels). A model that fuses element-wise
ops (``PerfModel.fuses_elementwise``, i.e. XLA on TPU) gets each element-wise/norm op that
directly follows a matmul, conv or attention, or another op fused into one, through
``fused_op_time``.
"""

from __future__ import annotations

from dataclasses import dataclass

from chipwise.perf.base import OpTime, PerfModel
from chipwise.workload.ir import Graph, Op, OpKind

_FUSIBLE = frozenset({OpKind.ELEMENTWISE, OpKind.NORM})
_PRODUCERS = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION})


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphTime:
    """A graph's time on one chip: the total and where it goes.

    ``compute_s`` is the time of compute-bound ops, ``memory_s`` of memory-bound ones (each
    without launch overhead), ``overhead_s`` all launch overheads; they sum to ``total_s``.
    ``tensor_share`` is the share of ``total_s`` spent in tensor-core/MXU ops.
    """

    total_s: float
    op_times: tuple[OpTime, ...]
    compute_s: float
    memory_s: float
    overhead_s: float
    tensor_share: float


def time_graph(graph: Graph, model: PerfModel) -> GraphTime:
    """Sum the op times of ``graph`` under ``model``, applying the model's fusion rule."""
    times: list[OpTime] = []
    producer: Op | None = None  # the op an element-wise chain would fuse into
    for op in graph.ops:
        if model.fuses_elementwise and producer is not None and op.kind in _FUSIBLE:
            times.append(model.fused_op_time(op, producer))
            continue  # the chain continues: the next element-wise op fuses too
        times.append(model.op_time(op))
        producer = op if op.kind in _PRODUCERS else None
    total = sum(t.seconds for t in times)
    overhead = sum(t.overhead_s for t in times)
    compute = sum(t.seconds - t.overhead_s for t in times if t.bound == "compute")
    memory = sum(t.seconds - t.overhead_s for t in times if t.bound in ("memory", "overhead"))
    tensor = sum(t.seconds for t in times if t.op.tensor_op)
    return GraphTime(
        total_s=total,
        op_times=tuple(times),
        compute_s=compute,
        memory_s=memory,
        overhead_s=overhead,
        tensor_share=tensor / total if total else 0.0,
    )
