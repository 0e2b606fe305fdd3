"""Charts: the numbers behind each figure (roofline, Pareto front, memory) and the figures."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.advise import Recommendation
from chipwise.hardware import Catalog, chip
from chipwise.perf.base import InferPrediction, TrainPrediction
from chipwise.perf.predict import predict
from chipwise.report.charts import (
    ReportError,
    TradeOff,
    charts_for,
    chips_of_interest,
    pareto_front,
    plan_text,
    require_plotly,
    roofline_of,
    tradeoffs,
)
from chipwise.units import GB
from chipwise.workload import load_workload_model
from chipwise.workload.ir import Inference, Training, Workload
from tests.report.factories import fixture_catalog, serving_recommendation, training_recommendation

pytest.importorskip("plotly")


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return fixture_catalog(tmp_path)


@pytest.fixture
def rec(catalog: Catalog) -> Recommendation:
    return training_recommendation(catalog)


def _p(label: str, time: float, usd: float) -> TradeOff:
    return TradeOff(label=label, chip_id=label, kind="gpu", time=time, usd=usd, is_pick=False)


@pytest.mark.parametrize(
    ("points", "front"),
    [
        ([("a", 1, 10), ("b", 2, 5), ("c", 3, 1)], ["a", "b", "c"]),  # a clean trade-off
        ([("a", 1, 10), ("b", 2, 12), ("c", 3, 1)], ["a", "c"]),  # b: slower and dearer than a
        ([("a", 1, 10), ("b", 1, 8)], ["b"]),  # same time: the cheaper one only
        ([("a", 2, 5), ("b", 2, 5)], ["a"]),  # exact ties: one of them
        ([("a", 1, 1), ("b", 2, 2), ("c", 3, 3)], ["a"]),  # a dominates everything
        ([], []),
    ],
)
def test_the_pareto_front_keeps_what_nothing_beats_on_both(
    points: list[tuple[str, float, float]], front: list[str]
) -> None:
    assert [p.label for p in pareto_front([_p(*x) for x in points])] == front


def test_tradeoffs_mark_the_pick_and_use_days_and_dollars(rec: Recommendation) -> None:
    points = {p.chip_id: p for p in tradeoffs(rec)}
    assert points["testtpu-v1"].is_pick and not points["testgpu-80"].is_pick
    tpu = next(o for o in rec.options if o.chip.id == "testtpu-v1")
    assert points["testtpu-v1"].time == tpu.days and points["testtpu-v1"].usd == tpu.usd


def test_chips_of_interest_are_the_pick_best_gpu_and_best_tpu_once_each(
    rec: Recommendation,
) -> None:
    assert [o.chip.id for o in chips_of_interest(rec)] == ["testtpu-v1", "testgpu-80"]


def test_without_op_times_the_roofline_has_one_whole_step_point(rec: Recommendation) -> None:
    option = rec.options[1]  # testgpu-80 x8, hand-set prediction without op times
    pred = option.prediction
    assert isinstance(pred, TrainPrediction) and not pred.op_times
    roof = roofline_of(option, rec.request.workload)
    assert roof.basis == "whole-step" and "whole step" in roof.basis_text
    (point,) = roof.points
    flops = 5.0e10 * 4096 * 256 / 8  # model FLOPs per token x tokens per step / chips
    assert point.flops == pytest.approx(flops)
    assert point.bytes_moved == pytest.approx((2 + 20) * GB)  # weights + activations
    assert point.achieved_flops_per_s == pytest.approx(flops / 20.0)
    assert roof.ridge_flops_per_byte == pytest.approx(1000e12 / 3.2e12)


def test_training_ops_come_from_the_predictions_op_times() -> None:
    wl = Workload(model=load_workload_model("llama3-8b"), phase=Training(seq_len=4096))
    pred = predict(wl, "h100-sxm", 8)
    assert isinstance(pred, TrainPrediction) and pred.op_times
    from chipwise.advise import Option

    option = Option(
        chip=chip("h100-sxm"),
        chips=8,
        prediction=pred,
        days=1.0,
        usd=None,
        price_label="",
        cost=None,
        energy=None,
        kwh=None,
    )
    roof = roofline_of(option, wl)
    assert roof.basis == "op-times"
    placed = [t for t in pred.op_times if t.op.flops > 0 and t.op.bytes_moved > 0]
    assert len(roof.points) == len(placed) and roof.skipped == len(pred.op_times) - len(placed)
    first = placed[0]
    assert roof.points[0].achieved_flops_per_s == pytest.approx(
        first.op.flops * first.op.count / first.seconds
    )
    # nothing runs faster than the chip's dense peak
    assert max(p.achieved_flops_per_s for p in roof.points) <= roof.peak_flops_per_s
    assert any("backward" in p.name for p in roof.points)


def test_serving_ops_are_recomputed_for_prefill_and_decode() -> None:
    wl = Workload(
        model=load_workload_model("llama3-8b"),
        phase=Inference(batch=16, input_len=1024, output_len=128),
    )
    pred = predict(wl, "h100-sxm", 1)
    assert isinstance(pred, InferPrediction)
    from chipwise.advise import Option

    option = Option(
        chip=chip("h100-sxm"),
        chips=1,
        prediction=pred,
        days=None,
        usd=None,
        price_label="",
        cost=None,
        energy=None,
        kwh=None,
    )
    roof = roofline_of(option, wl)
    assert roof.basis == "recomputed-ops"
    by_name = {p.name: p for p in roof.points}
    prefill, decode = by_name["qkv_proj (prefill)"], by_name["qkv_proj (decode)"]
    # decode reads every weight for 16 tokens: far lower intensity than a 16k-token prefill
    assert decode.intensity_flops_per_byte < prefill.intensity_flops_per_byte / 10
    assert decode.intensity_flops_per_byte < roof.ridge_flops_per_byte


def test_plan_text_drops_trivial_keys() -> None:
    from chipwise.perf.base import Plan

    assert plan_text(Plan(fsdp=8, tp=2, microbatch=2)) == "fsdp=8,tp=2,mb=2"
    assert plan_text(Plan(recompute="full")) == "mb=1,recompute=full"


def test_charts_for_a_recommendation_have_stable_ids(rec: Recommendation) -> None:
    ids = [c.id for c in charts_for(rec)]
    assert ids == ["roofline-testtpu-v1", "roofline-testgpu-80", "time-cost", "pareto", "memory"]


def test_the_roofline_figure_is_log_log_with_the_roof_and_the_ops(rec: Recommendation) -> None:
    fig = charts_for(rec)[0].figure
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    roof_trace = fig.data[0]
    # the roof: the bandwidth slope up to the ridge, then flat at the dense peak (TFLOP/s)
    assert roof_trace.x[1] == pytest.approx(500e12 / 2.8e12)
    assert roof_trace.y[1] == pytest.approx(500) and roof_trace.y[2] == pytest.approx(500)
    assert len(fig.data) >= 2


def test_the_memory_figure_stacks_every_part_and_shows_capacity(rec: Recommendation) -> None:
    fig = next(c.figure for c in charts_for(rec) if c.id == "memory")
    assert fig.layout.barmode == "stack"
    bars = [t for t in fig.data if t.type == "bar"]
    totals = [sum(t.y[i] for t in bars) for i in range(len(rec.options))]
    assert totals == pytest.approx([o.prediction.memory.total_bytes / GB for o in rec.options])
    capacity = next(t for t in fig.data if t.name == "HBM capacity")
    assert list(capacity.y) == pytest.approx([96, 80])


def test_the_pareto_figure_marks_the_pick(rec: Recommendation) -> None:
    fig = next(c.figure for c in charts_for(rec) if c.id == "pareto")
    pick = next(t for t in fig.data if t.name == "the pick")
    assert list(pick.text) == ["testtpu-v1 ×8"]
    assert any(t.name == "Pareto front" for t in fig.data)


def test_the_pareto_plot_shows_every_count_considered_not_only_each_chips_best(
    rec: Recommendation,
) -> None:
    best = rec.options[0]
    other_count = replace(best, chips=best.chips * 2, usd=(best.usd or 1.0) * 1.5)
    wider = replace(rec, considered=(*rec.options, other_count))
    points = tradeoffs(wider)
    assert len(points) == len(rec.options) + 1
    assert sum(p.is_pick for p in points) == (1 if rec.pick is not None else 0)


def test_serving_charts_use_seconds_per_request_and_dollars_per_day(catalog: Catalog) -> None:
    rec = serving_recommendation(catalog)
    fig = next(c.figure for c in charts_for(rec) if c.id == "pareto")
    assert fig.layout.xaxis.title.text == "seconds per request"
    assert fig.layout.yaxis.title.text == "USD per day"


def test_nothing_to_draw_gives_no_charts(rec: Recommendation) -> None:
    empty = replace(rec, options=(), pick=None, best_gpu=None, best_tpu=None)
    assert charts_for(empty) == ()


def test_user_text_in_charts_is_escaped(catalog: Catalog) -> None:
    rec = training_recommendation(catalog, name="<img src=x onerror=alert(1)>")
    titles = [c.figure.layout.title.text for c in charts_for(rec)]
    assert all("<img" not in t for t in titles)
    assert any("&lt;img src=x onerror=alert(1)&gt;" in t for t in titles)


def test_a_missing_plotly_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(ReportError, match=r"pip install 'chipwise\[web\]'"):
        require_plotly()
