"""Roofline data (no plotly): a workload's ops under one chip's roofline."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from chipwise.advise.option import Option
from chipwise.errors import ChipwiseError
from chipwise.perf import (
    InferPrediction,
    OpTime,
    Plan,
    Predictor,
    TrainPrediction,
    compute_dtype,
)
from chipwise.workload.ir import Inference, TransformerSpec, Workload

# where a roofline's points come from
Basis = Literal["op-times", "recomputed-ops", "whole-step", "none"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflinePoint:
    """One op (all its repetitions) under a chip's roofline."""

    name: str
    flops: float  # one instance
    bytes_moved: float  # one instance
    achieved_flops_per_s: float
    bound: str

    @property
    def intensity_flops_per_byte(self) -> float:
        return self.flops / self.bytes_moved


@dataclass(frozen=True, slots=True, kw_only=True)
class Roofline:
    """A chip's roofs at one precision and the workload's ops placed under them."""

    chip_id: str
    chip_name: str
    precision: str
    peak_flops_per_s: float
    hbm_bytes_per_s: float
    points: tuple[RooflinePoint, ...]
    basis: Basis
    basis_text: str  # one sentence: where the points come from
    skipped: int = 0  # ops with no FLOPs or no bytes: they have no place on a log-log plot

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the bandwidth slope meets the compute roof."""
        return self.peak_flops_per_s / self.hbm_bytes_per_s

    def attainable_flops_per_s(self, intensity_flops_per_byte: float) -> float:
        return min(self.peak_flops_per_s, self.hbm_bytes_per_s * intensity_flops_per_byte)

    def above_roof(self, tolerance: float = 0.01) -> tuple[RooflinePoint, ...]:
        """Points faster than the roof allows for their counted bytes (fused ops)."""
        return tuple(
            p
            for p in self.points
            if p.achieved_flops_per_s
            > self.attainable_flops_per_s(p.intensity_flops_per_byte) * (1 + tolerance)
        )


def plan_text(plan: Plan) -> str:
    """A plan without its trivial keys: ``fsdp=2,tp=4,mb=1`` (full form in the JSON)."""
    parts = [
        f"{k}={getattr(plan, k)}"
        for k in ("dp", "fsdp", "tp", "pp", "cp", "ep", "vp")
        if getattr(plan, k) > 1
    ]
    parts.append(f"mb={plan.microbatch}")
    if plan.recompute != "none":
        parts.append(f"recompute={plan.recompute}")
    return ",".join(parts)


def _points(times: Iterable[OpTime], suffix: str = "") -> tuple[list[RooflinePoint], int]:
    points: list[RooflinePoint] = []
    skipped = 0
    for t in times:
        op = t.op
        if op.flops <= 0 or op.bytes_moved <= 0 or t.seconds <= 0:
            skipped += 1
            continue
        tag = " (backward)" if op.backward else suffix
        points.append(
            RooflinePoint(
                name=f"{op.name}{tag}",
                flops=op.flops,
                bytes_moved=op.bytes_moved,
                achieved_flops_per_s=op.flops * op.count / t.seconds,
                bound=t.bound,
            )
        )
    return points, skipped


def _serving_op_times(
    option: Option, workload: Workload
) -> tuple[tuple[OpTime, ...], tuple[OpTime, ...]]:
    """Per-op times of one prefill layer and one decode layer, recomputed by
    ``perf.Predictor.serving_layer_op_times`` for the prediction's plan
    (``InferPrediction`` keeps none)."""
    pred = option.prediction
    spec, phase = workload.model, workload.phase
    if not isinstance(pred, InferPrediction) or not isinstance(spec, TransformerSpec):
        return (), ()
    if not isinstance(phase, Inference):
        return (), ()
    predictor = Predictor(workload, option.chip, pred.precision)
    return predictor.serving_layer_op_times(pred)


def roofline_of(option: Option, workload: Workload) -> Roofline:
    """Place ``workload``'s ops under the roofline of ``option``'s chip at its precision.

    Training predictions carry per-op times of one layer (forward and backward); those are
    used as they are. Serving predictions carry none, so one prefill and one decode layer
    are recomputed with ``chipwise.perf.ops.layers`` for the prediction's plan. Anything else
    gets one point for the whole step: model FLOPs against weights + activations bytes per
    chip, and ``basis_text`` says so.
    """
    chip, pred = option.chip, option.prediction
    base: dict[str, Any] = {
        "chip_id": chip.id,
        "chip_name": chip.name,
        "precision": pred.precision,
        # weight-only int4/w8a16 do their math in bf16: that is the roof
        "peak_flops_per_s": chip.peak_flops_per_s(compute_dtype(pred.precision)),
        "hbm_bytes_per_s": chip.hbm_bytes_per_s,
    }
    if isinstance(pred, TrainPrediction) and pred.op_times:
        points, skipped = _points(pred.op_times)
        return Roofline(
            **base,
            points=tuple(points),
            skipped=skipped,
            basis="op-times",
            basis_text=(
                f"Ops of one transformer layer (forward and backward, one micro-batch under "
                f"plan {plan_text(pred.plan)}), timed by the {chip.kind.upper()} model."
            ),
        )
    if isinstance(pred, InferPrediction):
        try:
            prefill, decode = _serving_op_times(option, workload)
        except ChipwiseError as err:  # the per-op model cannot time this chip: say so
            return Roofline(**base, points=(), basis="none", basis_text=f"No ops to place: {err}.")
        if prefill or decode:
            p_points, p_skipped = _points(prefill, " (prefill)")
            d_points, d_skipped = _points(decode, " (decode)")
            return Roofline(
                **base,
                points=(*p_points, *d_points),
                skipped=p_skipped + d_skipped,
                basis="recomputed-ops",
                basis_text=(
                    f"Ops of one prefill layer and one decode layer under plan "
                    f"{plan_text(pred.plan)}, "
                    "recomputed with chipwise.perf.ops.layers (serving predictions keep no per-op "
                    "times)."
                ),
            )
    if isinstance(pred, TrainPrediction):
        flops = pred.model_flops_per_token * pred.tokens_per_step / pred.chips
        n_bytes = pred.memory.weights_bytes + pred.memory.activations_bytes
        points = []
        if flops > 0 and n_bytes > 0 and pred.step_time_s > 0:
            points.append(
                RooflinePoint(
                    name="whole step",
                    flops=flops,
                    bytes_moved=n_bytes,
                    achieved_flops_per_s=flops / pred.step_time_s,
                    bound="compute" if flops / n_bytes >= 1 else "memory",
                )
            )
        return Roofline(
            **base,
            points=tuple(points),
            basis="whole-step",
            basis_text=(
                "One point for the whole step: model FLOPs per chip against weights + "
                "activations bytes per chip (the prediction carries no per-op times)."
            ),
        )
    return Roofline(
        **base,
        points=(),
        basis="none",
        basis_text="No ops to place: the prediction carries no per-op times.",
    )
