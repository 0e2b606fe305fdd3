"""The HTML summary of an exploration: what ran, cost vs time fronts, and sensitivities.

Two layers, as in ``report/charts/``: plain data (``fronts``, ``sensitivities``; no plotly) and
one self-contained page (``render_explore_html``; plotly.js inlined, the ``[web]`` extra).

* A **front** is, for one workload and phase, every (chip x count) point with a price, and
  the ones no other point beats on both time (training: days of the run; serving: seconds
  per output token) and cost (training: USD of the run; serving: USD per day).
* A **sensitivity** shows how a figure (training: step time; serving: TPOT and TTFT) moves
  with one chip parameter. Where the grid has derived chips, each is compared with its
  catalog base at the same workload, count and settings (both as ratios); otherwise the
  figure is plotted against the parameter across the grid's chips.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chipwise._version import __version__
from chipwise.explore import ExploreTable, Row
from chipwise.report.charts import TEMPLATE, ReportError, esc, require_plotly
from chipwise.report.html import DRAW_SCRIPT, STYLE, json_for_script, plotly_js

# The chip parameters a sensitivity can be plotted against (table column, axis label).
PARAMETERS: tuple[tuple[str, str], ...] = (
    ("chip_hbm_bytes_per_s", "memory bandwidth (B/s)"),
    ("chip_peak_flops_per_s", "peak FLOP/s at the precision"),
    ("chip_hbm_capacity_bytes", "memory capacity (bytes)"),
    ("chip_scale_up_bytes_per_s", "scale-up bandwidth (B/s)"),
)
_FIGURES = {"train": (("step_time_s", "step time"),),
            "infer": (("tpot_s", "TPOT"), ("ttft_s", "TTFT"))}  # fmt: skip
_SETTINGS = ("workload", "phase", "precision", "chips", "seq_len", "global_batch", "batch",
             "input_len", "output_len", "load")  # fmt: skip
MAX_FRONT_CHARTS = 12
MAX_LEGEND_SERIES = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontPoint:
    chip: str
    chips: int
    time: float
    usd: float
    on_front: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Front:
    workload: str
    phase: str
    points: tuple[FrontPoint, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SensitivityPoint:
    label: str  # "llama3-8b x8 h100-sxm:hbm_bandwidth*1.5"
    x: float
    y: float
    series: str = ""  # points of one workload, count and setting on one base chip: one line


@dataclass(frozen=True, slots=True, kw_only=True)
class Sensitivity:
    figure: str  # "TPOT"
    parameter: str  # "memory bandwidth (B/s)"
    relative: bool  # ratios to the base chip (derived chips) or absolute values
    points: tuple[SensitivityPoint, ...]


def _ok(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r["status"] == "ok"]


def _time(row: Row) -> float | None:
    value = row["run_days"] if row["phase"] == "train" else row["tpot_s"]
    return float(value) if isinstance(value, int | float) else None


def fronts(rows: Sequence[Row]) -> list[Front]:
    """Per workload and phase: the priced points, each marked on or off the front."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in _ok(rows):
        if isinstance(r["usd"], int | float) and _time(r) is not None:
            groups[(str(r["workload"]), str(r["phase"]))].append(r)
    out = []
    for (workload, phase), members in groups.items():
        ranked = sorted(members, key=lambda r: (_time(r), r["usd"]))
        best = math.inf
        points = []
        for r in ranked:
            usd = float(r["usd"])  # type: ignore[arg-type]
            on = usd < best
            best = min(best, usd)
            n = r["chips"]
            assert isinstance(n, int)
            points.append(FrontPoint(chip=str(r["chip"]), chips=n, time=_time(r) or 0.0,
                                     usd=usd, on_front=on))  # fmt: skip
        out.append(Front(workload=workload, phase=phase, points=tuple(points)))
    return out


def sensitivities(rows: Sequence[Row]) -> list[Sensitivity]:
    """How each figure moves with each chip parameter (see the module docstring)."""
    ok = _ok(rows)
    derived = [r for r in ok if r["chip_provenance"] and r["chip_base"] != r["chip"]]
    if derived:
        return _relative(ok, derived)
    return _absolute(ok)


def _key(row: Row, chip_column: str) -> tuple[Any, ...]:
    return (*(row[k] for k in _SETTINGS), row[chip_column])


def _relative(ok: list[Row], derived: list[Row]) -> list[Sensitivity]:
    base = {_key(r, "chip"): r for r in ok if not r["chip_provenance"]}
    found: dict[tuple[str, str], list[SensitivityPoint]] = defaultdict(list)
    for r in derived:
        ref = base.get(_key(r, "chip_base"))
        if ref is None:
            continue
        for column, label in PARAMETERS:
            x, x0 = r[column], ref[column]
            if not isinstance(x, float | int) or not isinstance(x0, float | int) or x == x0:
                continue
            for fig, name in _FIGURES[str(r["phase"])]:
                y, y0 = r[fig], ref[fig]
                if isinstance(y, float | int) and isinstance(y0, float | int) and y0 > 0:
                    tag = f"{r['workload']} x{r['chips']} {r['chip']}"
                    series = f"{r['workload']} x{r['chips']} on {r['chip_base']}"
                    if r["load"] and r["load"] != "batch":
                        series += f" ({r['load']})"
                    elif r["batch"] is not None:
                        series += f" (batch {r['batch']})"
                    pts = found[(name, label)]
                    if not any(p.series == series for p in pts):  # the base chip itself: (1, 1)
                        pts.append(SensitivityPoint(label=str(ref["chip"]), x=1.0, y=1.0,
                                                    series=series))  # fmt: skip
                    pts.append(SensitivityPoint(label=tag, x=x / x0, y=y / y0, series=series))
    return [
        Sensitivity(figure=f, parameter=p, relative=True, points=tuple(pts))
        for (f, p), pts in found.items()
    ]


def _absolute(ok: list[Row]) -> list[Sensitivity]:
    out = []
    for phase, figs in _FIGURES.items():
        rows = [r for r in ok if r["phase"] == phase]
        if len({r["chip"] for r in rows}) < 2:
            continue
        for fig, name in figs[:1]:
            for column, label in PARAMETERS[:2]:
                pts = tuple(
                    SensitivityPoint(label=f"{r['workload']} x{r['chips']} {r['chip']}",
                                     x=float(r[column]), y=float(r[fig]))  # type: ignore[arg-type]
                    for r in rows
                    if isinstance(r[column], float | int) and isinstance(r[fig], float | int)
                )  # fmt: skip
                if pts:
                    out.append(Sensitivity(figure=name, parameter=label, relative=False,
                                           points=pts))  # fmt: skip
    return out


# ---- figures (plotly) -----------------------------------------------------------------------


def _front_figure(front: Front) -> dict[str, Any]:
    go = require_plotly()
    fig = go.Figure()
    by_chip: dict[str, list[FrontPoint]] = defaultdict(list)
    for p in front.points:
        by_chip[p.chip].append(p)
    for chip, pts in by_chip.items():
        fig.add_trace(go.Scatter(
            x=[p.time for p in pts], y=[p.usd for p in pts], mode="markers+text",
            text=[f"×{p.chips}" for p in pts], textposition="top center", name=esc(chip),
        ))  # fmt: skip
    line = [p for p in front.points if p.on_front]
    fig.add_trace(go.Scatter(x=[p.time for p in line], y=[p.usd for p in line], mode="lines",
                             name="front", line={"color": "#333", "dash": "dot"}))  # fmt: skip
    train = front.phase == "train"
    fig.update_layout(
        template=TEMPLATE,
        title=esc(f"{front.workload} ({'training' if train else 'serving'}): cost vs time"),
        xaxis={"title": "days (whole run)" if train else "seconds per output token",
               "type": "log"},
        yaxis={"title": "USD (whole run)" if train else "USD per day", "type": "log"},
        height=420,
    )  # fmt: skip
    return dict(fig.to_plotly_json())


def _sensitivity_figure(s: Sensitivity) -> dict[str, Any]:
    go = require_plotly()
    fig = go.Figure()
    series: dict[str, list[SensitivityPoint]] = defaultdict(list)
    for p in s.points:
        series[p.series].append(p)
    legend = len(series) <= MAX_LEGEND_SERIES
    for name, pts in series.items():
        pts = sorted(pts, key=lambda p: p.x)
        fig.add_trace(go.Scatter(
            x=[p.x for p in pts], y=[p.y for p in pts], mode="lines+markers" if name else "markers",
            text=[esc(p.label) for p in pts], name=esc(name or "chips"), showlegend=legend,
        ))  # fmt: skip
    rel = " (relative to the base chip)" if s.relative else ""
    fig.update_layout(
        template=TEMPLATE,
        title=esc(f"sensitivity of {s.figure} to {s.parameter}"),
        xaxis={"title": esc(s.parameter + rel), "type": "linear" if s.relative else "log"},
        yaxis={"title": esc(s.figure + rel), "type": "linear" if s.relative else "log"},
        height=420,
    )
    return dict(fig.to_plotly_json())


def render_explore_html(table: ExploreTable) -> str:
    """The summary page (plotly.js inlined once).

    Raises:
        ReportError: plotly is not installed.
    """
    require_plotly()
    rows = list(table)
    statuses = Counter(str(r["status"]) for r in rows)
    user = sorted({str(r["chip"]) for r in rows if r["chip_provenance"]})
    charts = [
        (f"front-{i}", _front_figure(f)) for i, f in enumerate(fronts(rows)[:MAX_FRONT_CHARTS])
    ]
    sens = sensitivities(rows)
    charts += [(f"sensitivity-{i}", _sensitivity_figure(s)) for i, s in enumerate(sens)]
    parts = [
        f"<h1>chipwise explore: {len(rows):,} points</h1>",
        '<p class="sub">'
        + esc(", ".join(f"{n:,} {s}" for s, n in sorted(statuses.items())))
        + "</p>",
    ]
    if user:
        parts.append(
            "<p>User-supplied (hypothetical) chips, whose figures are not the catalog's cited "
            f"ones: {esc(', '.join(user))}</p>"
        )
    if not sens:
        parts.append(
            '<p class="muted">No sensitivity to plot: add derived chips to the grid, e.g. '
            "h100-sxm:hbm_bandwidth*1.5, or several chips.</p>"
        )
    for chart_id, fig in charts:
        parts.append(
            f'<div id="{chart_id}" class="chart"></div>'
            f'<script type="application/json" data-chart="{chart_id}">'
            f"{json_for_script(fig)}</script>"
        )
    parts.append(
        f"<footer>chipwise {esc(__version__)}: every row, with its plan, price and source, "
        "is in points.csv / points.parquet.</footer>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>chipwise explore</title><style>{STYLE}</style>"
        f"<script>{plotly_js()}</script></head>"
        f"<body><main>{''.join(parts)}</main><script>{DRAW_SCRIPT}</script></body></html>\n"
    )


def write_explore_html(table: ExploreTable, path: Path) -> Path:
    """Write ``render_explore_html(table)`` to ``path``."""
    page = render_explore_html(table)
    try:
        Path(path).write_text(page, encoding="utf-8")
    except OSError as err:
        raise ReportError(f"cannot write the summary to {path}: {err.strerror}") from err
    return Path(path)
