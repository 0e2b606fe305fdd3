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

from chipwise.report.charts.common import (
    BOUND_COLOURS,
    GPU_COLOUR,
    MEMORY_PARTS,
    OTHER_COLOUR,
    PICK_COLOUR,
    TEMPLATE,
    TPU_COLOUR,
    WEB_EXTRA_HINT,
    ReportError,
    esc,
    require_plotly,
)
from chipwise.report.charts.figures import (
    Chart,
    charts_for,
    chips_of_interest,
    figure_json,
    memory_figure,
    pareto_figure,
    roofline_caption,
    roofline_figure,
    rooflines_for,
    time_cost_figure,
)
from chipwise.report.charts.roofline import (
    Roofline,
    RooflinePoint,
    plan_text,
    roofline_of,
)
from chipwise.report.charts.tradeoffs import (
    TradeOff,
    chart_title,
    colour_of,
    cost_axis_title,
    is_training,
    label_of,
    pareto_front,
    time_axis_title,
    time_of,
    tradeoffs,
)

__all__ = [
    "BOUND_COLOURS",
    "GPU_COLOUR",
    "MEMORY_PARTS",
    "OTHER_COLOUR",
    "PICK_COLOUR",
    "TEMPLATE",
    "TPU_COLOUR",
    "WEB_EXTRA_HINT",
    "Chart",
    "ReportError",
    "Roofline",
    "RooflinePoint",
    "TradeOff",
    "chart_title",
    "charts_for",
    "chips_of_interest",
    "colour_of",
    "cost_axis_title",
    "esc",
    "figure_json",
    "is_training",
    "label_of",
    "memory_figure",
    "pareto_figure",
    "pareto_front",
    "plan_text",
    "require_plotly",
    "roofline_caption",
    "roofline_figure",
    "roofline_of",
    "rooflines_for",
    "time_axis_title",
    "time_cost_figure",
    "time_of",
    "tradeoffs",
]
