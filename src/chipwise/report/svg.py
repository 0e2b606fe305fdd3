"""Charts as inline SVG, drawn in pure Python: the HTML report's fallback without plotly.

``chipwise advise --html`` works after a plain ``pip install .``: when plotly (the ``[web]``
extra) is missing, the report draws its two main charts here (cost against time with the
Pareto front, and memory per chip against capacity) as static SVG, and says how to get the
interactive ones. Every label is HTML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from chipwise.advise.recommend import Recommendation
from chipwise.report.charts import (
    cost_axis_title,
    esc,
    label_of,
    pareto_front,
    time_axis_title,
    tradeoffs,
)
from chipwise.units import GB

WIDTH, HEIGHT = 560, 380
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 48
PICK, GPU, TPU, OTHER = "#d62728", "#1f77b4", "#2ca02c", "#7f7f7f"
MEMORY_COLOURS = (
    ("weights", "weights_bytes", "#1f77b4"),
    ("gradients", "grads_bytes", "#ff7f0e"),
    ("optimizer", "optimizer_bytes", "#2ca02c"),
    ("activations", "activations_bytes", "#9467bd"),
    ("KV cache", "kv_cache_bytes", "#8c564b"),
    ("other", "other_bytes", "#7f7f7f"),
)


def _log_scale(values: Sequence[float], lo_px: float, hi_px: float) -> tuple[float, float, bool]:
    """(min, max, log?) of an axis: log when the values span more than 10x."""
    lo, hi = min(values), max(values)
    use_log = lo > 0 and hi / lo > 10
    if hi == lo:
        lo, hi = lo * 0.9 if lo else -1.0, hi * 1.1 if hi else 1.0
    return lo, hi, use_log


def _project(v: float, lo: float, hi: float, log: bool, a: float, b: float) -> float:
    if log:
        v, lo, hi = math.log10(v), math.log10(lo), math.log10(hi)
    return a + (v - lo) / (hi - lo) * (b - a) if hi != lo else (a + b) / 2


def _frame(title: str, x_title: str, y_title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" role="img" aria-label="{esc(title)}" font-family="sans-serif" '
        'font-size="11">',
        f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13">{esc(title)}</text>',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" '
        'stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
        f"{esc(x_title)}</text>",
        f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})">{esc(y_title)}</text>',
    ]


def _ticks(lo: float, hi: float, log: bool, horizontal: bool) -> list[str]:
    """A few labelled ticks: powers of ten on a log axis, five even steps otherwise."""
    if log:
        values = [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
        values = [v for v in values if lo <= v <= hi] or [lo, hi]
    else:
        values = [lo + (hi - lo) * i / 4 for i in range(5)]
    out = []
    for v in values:
        text = f"{v:,.3g}"
        if horizontal:
            x = _project(v, lo, hi, log, LEFT, WIDTH - RIGHT)
            out.append(
                f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">{text}</text>'
            )
        else:
            y = _project(v, lo, hi, log, HEIGHT - BOTTOM, TOP)
            out.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{text}</text>')
    return out


def cost_time_svg(rec: Recommendation) -> str:
    """Every planned option as a point (time, cost); the Pareto front dashed; the pick red."""
    points = tradeoffs(rec)
    if not points:
        return ""
    x_lo, x_hi, x_log = _log_scale([p.time for p in points], LEFT, WIDTH - RIGHT)
    y_lo, y_hi, y_log = _log_scale([p.usd for p in points], HEIGHT - BOTTOM, TOP)

    def xy(time: float, usd: float) -> tuple[float, float]:
        return (
            _project(time, x_lo, x_hi, x_log, LEFT + 8, WIDTH - RIGHT - 8),
            _project(usd, y_lo, y_hi, y_log, HEIGHT - BOTTOM - 8, TOP + 8),
        )

    out = _frame("Cost against time", time_axis_title(rec), cost_axis_title(rec))
    out += _ticks(x_lo, x_hi, x_log, True) + _ticks(y_lo, y_hi, y_log, False)
    front = pareto_front(points)
    if len(front) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(p.time, p.usd) for p in front))
        out.append(f'<polyline points="{path}" fill="none" stroke="#555" stroke-dasharray="4 3"/>')
    on_front = {p.label for p in front}
    for p in sorted(points, key=lambda p: p.is_pick):
        x, y = xy(p.time, p.usd)
        colour = PICK if p.is_pick else {"gpu": GPU, "tpu": TPU}.get(p.kind, OTHER)
        r = 6 if p.is_pick else 4
        out.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{colour}"><title>'
            f"{esc(p.label)}: {p.time:,.3g}, ${p.usd:,.0f}</title></circle>"
        )
        if p.is_pick or p.label in on_front:
            out.append(f'<text x="{x + 7:.1f}" y="{y - 5:.1f}">{esc(p.label)}</text>')
    out.append("</svg>")
    return "".join(out)


def memory_svg(rec: Recommendation) -> str:
    """Each option's bytes per chip, stacked by what they hold, with its capacity marked."""
    options = list(rec.options)[:12]
    if not options:
        return ""
    top = max(max(o.prediction.capacity_bytes, o.prediction.memory.total_bytes) for o in options)
    out = _frame("Memory per chip", "", "GB per chip")
    out += _ticks(0.0, top / GB, False, False)
    slot = (WIDTH - LEFT - RIGHT) / len(options)
    bar = slot * 0.6

    def y_of(n_bytes: float) -> float:
        return _project(n_bytes / GB, 0.0, top / GB, False, HEIGHT - BOTTOM, TOP)

    for i, o in enumerate(options):
        x = LEFT + i * slot + (slot - bar) / 2
        base = 0.0
        for name, attr, colour in MEMORY_COLOURS:
            value = float(getattr(o.prediction.memory, attr))
            if value <= 0:
                continue
            y0, y1 = y_of(base), y_of(base + value)
            out.append(
                f'<rect x="{x:.1f}" y="{y1:.1f}" width="{bar:.1f}" height="{y0 - y1:.1f}" '
                f'fill="{colour}"><title>{esc(label_of(o))} {name}: {value / GB:,.1f} GB'
                "</title></rect>"
            )
            base += value
        cap = y_of(o.prediction.capacity_bytes)
        out.append(
            f'<line x1="{x - 3:.1f}" y1="{cap:.1f}" x2="{x + bar + 3:.1f}" y2="{cap:.1f}" '
            'stroke="#000" stroke-width="2"/>'
        )
        out.append(
            f'<text x="{x + bar / 2:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle" '
            f'font-size="9">{esc(o.chip.id)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def svg_charts_section(rec: Recommendation, hint: str) -> str:
    """The report's charts without plotly: static SVG, and how to get the interactive ones."""
    charts = [c for c in (cost_time_svg(rec), memory_svg(rec)) if c]
    if not charts:
        return ""
    boxes = "".join(f'<figure class="chart-box">{c}</figure>' for c in charts)
    return (
        f'<h2>Charts</h2><p class="muted">{esc(hint)}</p>'
        f'<section id="charts" class="grid">{boxes}</section>'
    )
