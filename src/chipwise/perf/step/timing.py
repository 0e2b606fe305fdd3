"""What the training and serving steps share: summing op times by their limit, the
sustained tensor rate, and one constructor that caches per-shape timings.

``StepModel`` (``train.py``) and ``ServeModel`` (``serve.py``) both subclass ``StepTimer``:
one transformer on one chip type at one precision, timed by the chip's per-op model and
its ``Network``. The planner reuses one instance for every candidate plan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from chipwise.hardware.chip import Chip
from chipwise.perf.base import Bound, OpTime, PerfModel
from chipwise.perf.ops.graph import time_graph
from chipwise.perf.ops.layers import compute_dtype
from chipwise.perf.ops.roofline import combine
from chipwise.perf.plan.parallel import Network
from chipwise.workload.ir import Graph, Op, OpKind, TransformerSpec

# The sustained share of the per-op tensor throughput in a whole step is an ``Efficiency``
# parameter (``sustained_tensor_fraction`` in data/efficiency.toml, fitted per chip group
# to published training rows), so calibration can override it; see ``time_ops``.


@dataclass(frozen=True, slots=True)
class Cost:
    """Seconds of device time by what limits it."""

    compute_s: float = 0.0
    memory_s: float = 0.0
    overhead_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.compute_s + self.memory_s + self.overhead_s

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.compute_s + other.compute_s,
            self.memory_s + other.memory_s,
            self.overhead_s + other.overhead_s,
        )

    def scaled(self, k: float) -> Cost:
        return Cost(self.compute_s * k, self.memory_s * k, self.overhead_s * k)


def cost_of(times: list[OpTime]) -> Cost:
    """Sum op times: launch overheads apart, the rest by the op's limiting resource."""
    c = m = o = 0.0
    for t in times:
        o += t.overhead_s
        rest = t.seconds - t.overhead_s
        if t.bound == "compute":
            c += rest
        else:
            m += rest
    return Cost(c, m, o)


def _sustain(t: OpTime, fraction: float, *, compute_bound_only: bool = False) -> OpTime:
    """Stretch the compute time of a tensor op to the sustained rate (``compute_bound_only``:
    only an op whose compute at that rate outlasts its memory stream; one that streams
    longer runs at the HBM rate whatever its tensor rate). Testing the stretched time keeps
    an op's time continuous in its shape: testing the unstretched one made one more decode
    sequence up to 10 % faster where an op crossed over (1 / fraction at the crossing)."""
    if not t.op.tensor_op or fraction >= 1.0 or t.compute_s <= 0 or t.measured:
        # a measured kernel time is what the kernel took on the chip: the fitted stretch of
        # the per-op model's rate does not apply to it
        return t
    compute = t.compute_s / fraction
    if compute_bound_only and compute < t.memory_s and not t.overlap_exponent:
        # (where compute and memory combine softly, the tensor rate shows under the stream
        # too, and skipping the stretch there would make the time jump at the crossing)
        return t
    per = t.op.count or 1
    one = combine(compute, t.memory_s, t.overlap_exponent) / per + t.overhead_s / per
    bound: Bound = "compute" if compute >= t.memory_s else t.bound
    eff = t.efficiency * t.seconds / (one * per) if one else t.efficiency
    return replace(t, compute_s=compute, seconds=one * per, bound=bound, efficiency=eff)


def time_ops(
    ops: tuple[Op, ...],
    model: PerfModel,
    *,
    sustained: bool = True,
    compute_bound_only: bool = False,
) -> list[OpTime]:
    """Time an op sequence with the per-op model (its fusion rule applies, via
    ``graph.time_graph``; ``TpuModel`` pads attention head dims to the MXU side).
    ``sustained`` applies the model's ``sustained_tensor_fraction`` (training and prefill;
    decode is memory-bound and its skinny GEMMs are not limited by sustained tensor
    throughput). ``compute_bound_only`` limits it to the ops the per-op model finds
    compute-bound (serving: see ``ServeModel``)."""
    f = model.sustained_tensor_fraction() if sustained else 1.0
    return [
        _sustain(t, _serving_fraction(t.op, model) if sustained and compute_bound_only else f,
                 compute_bound_only=compute_bound_only)
        for t in time_graph(Graph(name="step", ops=ops), model).op_times
    ]  # fmt: skip


def _serving_fraction(op: Op, model: PerfModel) -> float:
    """The sustained share for one op of a serving step: a dense GEMM's by its dtype (the
    engines' fp8 GEMM kernels on Hopper keep more of the per-op rate than a training step
    does: ``serving_fp8_sustained_fraction``); a routed expert's as the engine's expert
    kernel was fitted (vLLM's and SGLang's Triton fused_moe: the dense share, FUSED-MOE-FP8;
    other kernels the training step's); attention keeps the training step's."""
    if op.kind == OpKind.MATMUL and op.routed_expert:
        return model.serving_expert_sustained_fraction(op.dtype, op.weight)
    if op.kind == OpKind.MATMUL:
        return model.serving_sustained_fraction(op.dtype)
    return model.sustained_tensor_fraction()


class StepTimer:
    """One transformer on one chip type at one precision: the shared constructor of
    ``StepModel`` and ``ServeModel``, and a cache of op-sequence costs."""

    def __init__(
        self,
        spec: TransformerSpec,
        chip: Chip,
        precision: str,
        model: PerfModel,
        network: Network,
    ) -> None:
        chip.peak_flops_per_s(compute_dtype(precision))  # raises early for a missing dtype
        self.spec = spec
        self.chip = chip
        self.precision = precision
        self.model = model
        self.network = network
        self.model_assumptions = model.assumptions()
        self._costs: dict[tuple[tuple[Op, ...], bool, PerfModel | None], Cost] = {}

    def time_ops(
        self, ops: tuple[Op, ...], *, sustained: bool = True, model: PerfModel | None = None
    ) -> list[OpTime]:
        """Times of an op sequence in execution order (the model's fusion rule applies;
        ``model`` replaces the timer's own, e.g. a plan's ``with_tp_fusion``)."""
        return time_ops(ops, model or self.model, sustained=sustained)

    def cost(
        self, ops: tuple[Op, ...], *, sustained: bool = True, model: PerfModel | None = None
    ) -> Cost:
        """The summed cost of an op sequence, cached by (ops, sustained, model)."""
        if model is self.model:
            model = None  # one entry whichever way the timer's own model is named
        key = (ops, sustained, model)
        cost = self._costs.get(key)
        if cost is None:
            cost = cost_of(self.time_ops(ops, sustained=sustained, model=model))
            self._costs[key] = cost
        return cost
