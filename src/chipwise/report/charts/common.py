"""What every chart module shares: colours, the plotly import and HTML escaping."""

from __future__ import annotations

import html
from typing import Any

from chipwise.errors import ChipwiseError

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
