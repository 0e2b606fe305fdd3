"""The plotly figures of a recommendation (the ``[web]`` extra, imported lazily)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chipwise.advise.option import Option
from chipwise.advise.recommend import Recommendation
from chipwise.report.charts.common import (
    BOUND_COLOURS,
    MEMORY_PARTS,
    OTHER_COLOUR,
    PICK_COLOUR,
    TEMPLATE,
    esc,
    require_plotly,
)
from chipwise.report.charts.roofline import (
    Roofline,
    roofline_of,
)
from chipwise.report.charts.tradeoffs import (
    chart_title,
    colour_of,
    cost_axis_title,
    label_of,
    pareto_front,
    time_axis_title,
    time_of,
    tradeoffs,
)
from chipwise.units import GB, TERA

if TYPE_CHECKING:  # plotly is optional: imported inside the functions that draw
    import plotly.graph_objects as go


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
    colours = [colour_of(o.chip.kind, o is rec.pick) for o in options]
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
        title={"text": chart_title(rec, "Time and cost per chip")},
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
            marker={"color": [colour_of(p.kind, False) for p in points], "size": 10},
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
        title={"text": chart_title(rec, "Cost against time")},
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
        title={"text": chart_title(rec, "Memory per chip")},
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
