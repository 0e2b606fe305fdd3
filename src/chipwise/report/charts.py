"""Charts of a ``Recommendation``: pure functions that return plotly figures.

Two layers, so the numbers are testable without plotly or a browser:

* data (no plotly): ``roofline_of(option, workload)`` places the workload's ops under one
  chip's roofline; ``pareto_front(points)`` keeps the options nothing beats on both time and
  cost;
* figures (plotly, the ``[web]`` extra, imported lazily): ``roofline_figure``,
  ``time_cost_figure``, ``pareto_figure``, ``memory_figure``, and ``charts_for(rec)``, every
  chart of one recommendation with a stable id (``roofline-<chip>``, ``time-cost``,
  ``pareto``, ``memory``).

Text that came from the user (workload names, uploaded file names) is HTML-escaped before it
goes into a figure: plotly renders a subset of HTML in titles and hover labels.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from chipwise.advise.candidates import Option
from chipwise.advise.recommend import Recommendation
from chipwise.errors import ChipwiseError
from chipwise.perf import InferPrediction, OpTime, Plan, Predictor, TrainPrediction
from chipwise.units import GB, TERA
from chipwise.workload.ir import Inference, TransformerSpec, Workload

if TYPE_CHECKING:  # plotly is optional: imported inside the functions that draw
    import plotly.graph_objects as go

WEB_EXTRA_HINT = "pip install 'chipwise[web]'"
# One look for every chart: plotly's white template (grid lines, no grey background).
TEMPLATE = "plotly_white"
PICK_COLOUR = "#d62728"
GPU_COLOUR = "#1f77b4"
TPU_COLOUR = "#2ca02c"
OTHER_COLOUR = "#9467bd"
BOUND_COLOURS = {
    "compute": "#1f77b4",
    "memory": "#ff7f0e",
    "overhead": "#7f7f7f",
    "communication": "#9467bd",
}
MEMORY_PARTS = (
    ("weights", "weights_bytes", "#1f77b4"),
    ("gradients", "grads_bytes", "#aec7e8"),
    ("optimizer", "optimizer_bytes", "#ff7f0e"),
    ("activations", "activations_bytes", "#2ca02c"),
    ("KV cache", "kv_cache_bytes", "#9467bd"),
    ("other", "other_bytes", "#c7c7c7"),
)

Basis = Literal["op-times", "recomputed-ops", "whole-step", "none"]


class ReportError(ChipwiseError):
    """A report cannot be drawn: a missing optional dependency or nothing to draw."""


def require_plotly() -> Any:
    """``plotly.graph_objects``, or a ``ReportError`` that says how to install it."""
    try:
        import plotly.graph_objects as go
    except ImportError as err:
        raise ReportError(f"charts need plotly, which is not installed; {WEB_EXTRA_HINT}") from err
    return go


def esc(text: object) -> str:
    """``html.escape`` for any value shown in a chart or page."""
    return html.escape(str(text), quote=True)


# ---- roofline data (no plotly) ----------------------------------------------------------------


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
        "peak_flops_per_s": chip.peak_flops_per_s(pred.precision),
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


# ---- time, cost and the Pareto front (no plotly) ----------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TradeOff:
    """One option on the time-cost plane."""

    label: str  # "h100-sxm ×8"
    chip_id: str
    kind: str
    time: float  # training: days of the run; serving: seconds per request
    usd: float  # training: the whole run; serving: per day
    is_pick: bool


def is_training(rec: Recommendation) -> bool:
    """Whether the recommendation is for a training run (else serving)."""
    return not isinstance(rec.request.workload.phase, Inference)


def time_of(option: Option) -> float:
    """Days of a training run, or seconds per serving request."""
    if option.days is not None:
        return option.days
    pred = option.prediction
    return pred.request_time_s if isinstance(pred, InferPrediction) else math.nan


def label_of(option: Option) -> str:
    return f"{option.chip.id} ×{option.total_chips}"


def tradeoffs(rec: Recommendation) -> tuple[TradeOff, ...]:
    """Every option ``rec`` considered (each chip at each count planned; its best options
    when it kept no others) with a finite time and a known price."""
    out = []
    for o in rec.considered or rec.options:
        t = time_of(o)
        if o.usd is None or not math.isfinite(t) or not math.isfinite(o.usd):
            continue
        out.append(
            TradeOff(
                label=label_of(o),
                chip_id=o.chip.id,
                kind=o.chip.kind,
                time=t,
                usd=o.usd,
                is_pick=rec.pick is not None
                and (o.chip.id, o.total_chips) == (rec.pick.chip.id, rec.pick.total_chips),
            )
        )
    return tuple(out)


def pareto_front(points: Sequence[TradeOff]) -> tuple[TradeOff, ...]:
    """The points no other point beats on both time and cost, fastest first.

    A point is on the front when every faster point costs more (ties on time keep the
    cheaper one only).
    """
    front: list[TradeOff] = []
    best_usd = math.inf
    for p in sorted(points, key=lambda p: (p.time, p.usd)):
        if p.usd < best_usd:
            front.append(p)
            best_usd = p.usd
    return tuple(front)


def time_axis_title(rec: Recommendation) -> str:
    return "days (whole run)" if is_training(rec) else "seconds per request"


def cost_axis_title(rec: Recommendation) -> str:
    return "USD (whole run)" if is_training(rec) else "USD per day"


def _colour(option_kind: str, is_pick: bool) -> str:
    if is_pick:
        return PICK_COLOUR
    return {"gpu": GPU_COLOUR, "tpu": TPU_COLOUR}.get(option_kind, OTHER_COLOUR)


def _title(rec: Recommendation, what: str) -> str:
    wl = rec.request.workload
    phase = "training" if is_training(rec) else "serving"
    return f"{what}: {esc(wl.name)} {phase}"


# ---- figures (plotly) -------------------------------------------------------------------------


def roofline_caption(roof: Roofline) -> str:
    """Where the roofline's points come from (and what could not be placed)."""
    text = f"{roof.chip_name}: {roof.basis_text}"
    if roof.skipped:
        text += f" {roof.skipped} ops without FLOPs or bytes are not shown."
    above = roof.above_roof()
    if above:
        text += (
            f" {len(above)} ops sit above the roof: fused into the op before them (XLA "
            "fusion), they move fewer bytes than their unfused count plotted here."
        )
    return text


def roofline_figure(roof: Roofline) -> go.Figure:
    """Log-log roofline: the compute roof, the HBM slope, and the ops under them."""
    go = require_plotly()
    xs = [p.intensity_flops_per_byte for p in roof.points]
    ridge = roof.ridge_flops_per_byte
    x_min = min([*xs, ridge / 100]) / 2
    x_max = max([*xs, ridge * 10]) * 2
    fig = go.Figure()
    roof_x = [x_min, ridge, x_max]
    fig.add_trace(
        go.Scatter(
            x=roof_x,
            y=[roof.attainable_flops_per_s(x) / TERA for x in roof_x],
            mode="lines",
            name=(
                f"roof: {roof.peak_flops_per_s / TERA:,.0f} TFLOP/s {roof.precision}, "
                f"{roof.hbm_bytes_per_s / TERA:,.2f} TB/s HBM"
            ),
            line={"color": "#333333", "width": 2},
            hovertemplate="intensity %{x:.3g} FLOP/B<br>attainable %{y:.4g} TFLOP/s<extra></extra>",
        )
    )
    for bound in sorted({p.bound for p in roof.points}):
        pts = [p for p in roof.points if p.bound == bound]
        fig.add_trace(
            go.Scatter(
                x=[p.intensity_flops_per_byte for p in pts],
                y=[p.achieved_flops_per_s / TERA for p in pts],
                mode="markers",
                name=f"{bound}-bound ops",
                marker={"color": BOUND_COLOURS.get(bound, OTHER_COLOUR), "size": 9},
                text=[esc(p.name) for p in pts],
                hovertemplate=(
                    "%{text}<br>intensity %{x:.3g} FLOP/B<br>achieved %{y:.4g} TFLOP/s"
                    "<extra></extra>"
                ),
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"Roofline: {esc(roof.chip_name)} ({roof.precision})"},
        xaxis={"type": "log", "dtick": 1, "title": {"text": "arithmetic intensity (FLOP/byte)"}},
        yaxis={"type": "log", "dtick": 1, "title": {"text": "attainable TFLOP/s"}},
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 60, "b": 40},
    )
    return fig


def time_cost_figure(rec: Recommendation) -> go.Figure:
    """Two bar charts side by side: each chip's best option, its time and its cost."""
    go = require_plotly()
    from plotly.subplots import make_subplots

    options = list(rec.options)
    labels = [label_of(o) for o in options]
    colours = [_colour(o.chip.kind, o is rec.pick) for o in options]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(f"time ({time_axis_title(rec)})", f"cost ({cost_axis_title(rec)})"),
    )
    fig.add_trace(
        go.Bar(
            x=labels,
            y=[time_of(o) for o in options],
            marker={"color": colours},
            name="time",
            hovertemplate="%{x}: %{y:.4g}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=labels,
            y=[o.usd for o in options],
            marker={"color": colours},
            name="cost",
            text=[o.price_label for o in options],
            hovertemplate="%{x}: $%{y:,.0f}<br>%{text}<extra></extra>",
            textposition="none",
        ),
        row=1,
        col=2,
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": _title(rec, "Time and cost per chip")},
        showlegend=False,
    )
    return fig


def pareto_figure(rec: Recommendation) -> go.Figure:
    """Cost against time for every option; the Pareto front joined, the pick marked."""
    go = require_plotly()
    points = tradeoffs(rec)
    front = pareto_front(points)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[p.time for p in points],
            y=[p.usd for p in points],
            mode="markers+text",
            name="options",
            # label the front and the pick; the rest are named on hover
            text=[p.label if p in front or p.is_pick else "" for p in points],
            customdata=[p.label for p in points],
            textposition="top right",
            marker={"color": [_colour(p.kind, False) for p in points], "size": 10},
            hovertemplate="%{customdata}<br>%{x:.4g}<br>$%{y:,.0f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[p.time for p in front],
            y=[p.usd for p in front],
            mode="lines",
            name="Pareto front",
            line={"color": "#555555", "dash": "dash"},
            hoverinfo="skip",
        )
    )
    picks = [p for p in points if p.is_pick]
    fig.add_trace(
        go.Scatter(
            x=[p.time for p in picks],
            y=[p.usd for p in picks],
            mode="markers",
            name="the pick",
            marker={"color": PICK_COLOUR, "size": 18, "symbol": "star"},
            text=[p.label for p in picks],
            hovertemplate="pick: %{text}<extra></extra>",
        )
    )
    log = len(points) > 1 and max(p.usd for p in points) > 10 * min(p.usd for p in points)
    x_axis: dict[str, Any] = {"title": {"text": time_axis_title(rec)}, "type": "log"}
    if points:  # room for the labels at both ends (log axes take log10 ranges)
        lo, hi = min(p.time for p in points), max(p.time for p in points)
        x_axis["range"] = [math.log10(lo) - 0.08, math.log10(hi) + 0.12]
    fig.update_layout(
        template=TEMPLATE,
        title={"text": _title(rec, "Cost against time")},
        xaxis=x_axis,
        yaxis={"title": {"text": cost_axis_title(rec)}, "type": "log" if log else "linear"},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def memory_figure(rec: Recommendation) -> go.Figure:
    """Bytes per chip by what they hold (stacked), with each chip's HBM capacity."""
    go = require_plotly()
    options = list(rec.options)
    labels = [label_of(o) for o in options]
    fig = go.Figure()
    for name, attr, colour in MEMORY_PARTS:
        values = [getattr(o.prediction.memory, attr) / GB for o in options]
        if not any(values):
            continue
        fig.add_trace(
            go.Bar(
                x=labels,
                y=values,
                name=name,
                marker={"color": colour},
                hovertemplate=f"{name}: %{{y:,.1f}} GB<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[o.prediction.capacity_bytes / GB for o in options],
            mode="markers",
            name="HBM capacity",
            marker={
                "symbol": "line-ew-open",
                "size": 60,
                "color": "#000000",
                "line": {"width": 3, "color": "#000000"},
            },
            hovertemplate="capacity %{y:,.0f} GB<extra></extra>",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        barmode="stack",
        title={"text": _title(rec, "Memory per chip")},
        yaxis={"title": {"text": "GB per chip"}},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    """One chart of a report: a stable id (also its HTML element id), a title, the figure."""

    id: str
    title: str
    figure: Any  # plotly.graph_objects.Figure
    caption: str = ""  # what the chart rests on, shown under it


def chips_of_interest(rec: Recommendation) -> tuple[Option, ...]:
    """The pick, the best GPU and the best TPU, each chip once."""
    seen: set[str] = set()
    out = []
    for o in (rec.pick, rec.best_gpu, rec.best_tpu):
        if o is not None and o.chip.id not in seen:
            seen.add(o.chip.id)
            out.append(o)
    return tuple(out)


def rooflines_for(rec: Recommendation) -> tuple[Roofline, ...]:
    return tuple(roofline_of(o, rec.request.workload) for o in chips_of_interest(rec))


def charts_for(rec: Recommendation) -> tuple[Chart, ...]:
    """Every chart of ``rec``: rooflines of the chips of interest, time and cost, Pareto,
    memory. Empty when there is no option to draw (no chip qualifies, non-ML workload)."""
    if not rec.options:
        return ()
    charts = [
        Chart(
            id=f"roofline-{roof.chip_id}",
            title=f"Roofline: {roof.chip_name}",
            figure=roofline_figure(roof),
            caption=roofline_caption(roof),
        )
        for roof in rooflines_for(rec)
    ]
    charts.append(
        Chart(
            id="time-cost",
            title="Time and cost",
            figure=time_cost_figure(rec),
            caption="Each chip's best option under the objective; red: the pick.",
        )
    )
    charts.append(
        Chart(
            id="pareto",
            title="Cost against time",
            figure=pareto_figure(rec),
            caption=(
                "Every option of the answer (each chip at its best count); dashed: the Pareto "
                "front, the options nothing beats on both time and cost; star: the pick."
            ),
        )
    )
    charts.append(
        Chart(
            id="memory",
            title="Memory per chip",
            figure=memory_figure(rec),
            caption="Bytes each chip holds, by what they are; black bar: its HBM capacity.",
        )
    )
    return tuple(charts)


def figure_json(figure: Any) -> dict[str, Any]:
    """A figure as plain JSON data (``{"data": [...], "layout": {...}}``)."""
    data: dict[str, Any] = json.loads(figure.to_json())
    return data
