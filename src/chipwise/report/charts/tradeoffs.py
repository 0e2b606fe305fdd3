"""Time, cost and the Pareto front of a recommendation's options (no plotly)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from chipwise.advise.option import Option
from chipwise.advise.recommend import Recommendation
from chipwise.perf import InferPrediction
from chipwise.report.charts.common import (
    GPU_COLOUR,
    OTHER_COLOUR,
    PICK_COLOUR,
    TPU_COLOUR,
    esc,
)
from chipwise.workload.ir import Inference


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


def colour_of(option_kind: str, is_pick: bool) -> str:
    if is_pick:
        return PICK_COLOUR
    return {"gpu": GPU_COLOUR, "tpu": TPU_COLOUR}.get(option_kind, OTHER_COLOUR)


def chart_title(rec: Recommendation, what: str) -> str:
    wl = rec.request.workload
    phase = "training" if is_training(rec) else "serving"
    return f"{what}: {esc(wl.name)} {phase}"
