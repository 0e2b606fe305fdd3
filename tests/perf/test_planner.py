"""The planner: fastest fitting plan, constraints kept, a clear error when nothing fits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.errors import DoesNotFitError, PlanError
from chipwise.hardware import chip
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.plan.planner import (
    _highest_passing,
    plan_constraints,
    plan_slo,
    plan_training,
)
from chipwise.perf.predict import predict
from chipwise.perf.step.serve import ServeModel
from chipwise.perf.step.train import StepModel
from chipwise.workload.ir import Inference, Training, TransformerSpec, Workload
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
SPEC = TransformerSpec(
    name="tiny", n_layers=8, d_model=1024, n_heads=16, n_kv_heads=4, head_dim=64,
    d_ff=4096, vocab_size=32000,
)  # fmt: skip


def _step(spec: TransformerSpec = SPEC, c=H100) -> StepModel:
    return StepModel(spec, c, "bf16", model_for(c), Network(c))


def test_planner_returns_a_fitting_plan_on_exactly_the_chips() -> None:
    choice = plan_training(_step(), chips=16, seq_len=2048, global_batch=64)
    p = choice.prediction
    assert p.fits and p.plan.chips == 16
    assert choice.fitting >= 1 and "fastest" in choice.reason


def test_planner_keeps_fixed_keys() -> None:
    choice = plan_training(
        _step(), chips=16, seq_len=2048, global_batch=64,
        fixed={"tp": 2, "recompute": "full"},
    )  # fmt: skip
    assert choice.prediction.plan.tp == 2
    assert choice.prediction.plan.recompute == "full"


def test_planner_prefers_no_recompute_when_it_fits() -> None:
    choice = plan_training(_step(), chips=8, seq_len=1024, global_batch=8)
    assert choice.prediction.plan.recompute == "none"


def test_big_model_on_few_chips_does_not_fit_and_says_how_much() -> None:
    with pytest.raises(DoesNotFitError, match="does not fit") as err:
        plan_training(_step(load_preset("llama3-70b")), chips=2, seq_len=4096, global_batch=8)
    assert err.value.needed_bytes > err.value.capacity_bytes == H100.hbm_capacity_bytes


def test_allow_unfit_returns_the_least_memory_plan_flagged() -> None:
    choice = plan_training(
        _step(load_preset("llama3-70b")), chips=2, seq_len=4096, global_batch=8,
        allow_unfit=True,
    )  # fmt: skip
    assert not choice.prediction.fits and "NO PLAN FITS" in choice.reason


def test_impossible_batch_is_a_plan_error() -> None:
    with pytest.raises(PlanError):
        plan_training(_step(), chips=8, seq_len=1024, global_batch=3, fixed={"dp": 8})


def test_predict_without_plan_says_the_planner_chose() -> None:
    w = Workload(model=SPEC, phase=Training(seq_len=1024, global_batch=16))
    pred = predict(w, "h100", 8)
    assert pred.assumptions[0].name == "plan"
    assert "planner chose" in str(pred.assumptions[0].value)


def test_long_sequences_without_tensor_parallelism_use_context_parallelism() -> None:
    spec = load_preset("llama3-8b")
    choice = plan_training(_step(spec), chips=8, seq_len=131072, global_batch=8,
                           fixed={"tp": 1})  # fmt: skip
    assert choice.prediction.plan.cp > 1 and choice.prediction.fits


def test_an_imported_graph_runs_data_parallel_across_chips() -> None:
    from chipwise.workload.ir import Graph, Op, OpKind

    mm = Op(name="mm", kind=OpKind.MATMUL, flops=2 * 4096**3, mnk=(4096, 4096, 4096),
            bytes_read=2 * 2 * 4096**2, bytes_written=2 * 4096**2)  # fmt: skip
    bwd = Op(name="mm_bwd", kind=OpKind.MATMUL, flops=4 * 4096**3, mnk=(4096, 4096, 8192),
             bytes_read=4 * 2 * 4096**2, bytes_written=2 * 2 * 4096**2, backward=True)  # fmt: skip
    g = Graph(name="toy", ops=(mm, bwd), params=4096 * 4096)
    w = Workload(model=g, phase=Training(seq_len=1024, global_batch=8))
    one, eight = predict(w, H100, 1), predict(w, H100, 8)
    assert one.step_time_s > 0 and eight.plan.dp == 8  # type: ignore[union-attr]
    assert eight.step_time_s >= one.step_time_s  # the same per-chip step plus an all-reduce


def test_a_non_ml_workload_is_not_timed_here() -> None:
    from chipwise.errors import UnsupportedOpError
    from chipwise.workload.load import load_workload_model

    w = Workload(model=load_workload_model("graphics"))
    with pytest.raises(UnsupportedOpError, match="not an ML workload"):
        predict(w, H100, 1)


def test_a_plan_key_given_twice_is_an_error_not_last_one_wins() -> None:
    from chipwise.perf.base import parse_plan

    with pytest.raises(PlanError, match="given twice"):
        parse_plan("tp=1,tp=2")


@pytest.mark.parametrize(
    "written", ["tp=4,pp=2", "TP4 PP2", "TP4xPP2", "tp4,pp2", "TP=4, PP=2", "Tp4 x pp2"]
)
def test_a_plan_is_read_as_publications_write_it(written: str) -> None:
    from chipwise.perf.base import parse_plan

    assert parse_plan(written) == parse_plan("tp=4,pp=2")


def test_a_shorthand_plan_keeps_the_key_rules() -> None:
    from chipwise.perf.base import parse_plan

    with pytest.raises(PlanError, match="given twice"):
        parse_plan("TP8 tp=4")
    with pytest.raises(PlanError, match="cannot read"):
        parse_plan("TP")


def test_a_plan_whose_axes_do_not_multiply_to_the_chips_says_so() -> None:
    from chipwise.perf.plan.planner import plan_constraints

    with pytest.raises(PlanError, match="--chips is 1"):
        plan_constraints("dp=2", 1)
    assert plan_constraints("dp=2,tp=4", 8)["dp"] == 2
    # the schedule is the planner's unless named: interleaving, micro-batch, recompute
    assert "vp" not in plan_constraints("tp=2,pp=2", 8)
    assert plan_constraints("tp=2,pp=2,vp=2", 8)["vp"] == 2


def test_a_server_search_with_no_plan_to_try_says_why() -> None:
    # tp=16 on single-chip PCIe domains: the network cannot carry the group; the miss names
    # that instead of an empty reason
    l40s = chip("l40s")
    serve = ServeModel(load_preset("llama3-8b"), l40s, "bf16", model_for(l40s), Network(l40s))
    phase = Inference(load="rps", rps=1.0, input_len=128, output_len=128)
    choice = plan_slo(serve, phase, chips=16, ttft_p99_s=2.0, tpot_p99_s=0.1, fixed={"tp": 16})
    assert choice.plan is None
    assert "16" in choice.missed and ("scale-out" in choice.missed or "domain" in choice.missed)
    # a tp that does not divide the heads leaves nothing to try, and says so
    choice = plan_slo(serve, phase, chips=6, ttft_p99_s=2.0, tpot_p99_s=0.1, fixed={"tp": 6})
    assert choice.plan is None and choice.missed.startswith("no serving plan")


@pytest.mark.parametrize(
    ("model", "chips", "batch", "plan", "says"),
    [
        ("llama3-70b", 8, 256, "ep=16,etp=1", "not an MoE"),
        ("deepseek-v2-lite", 8, 1024, "pp=8,vp=4", "exceeds"),
        ("llama3-8b", 64, 100, "tp=2", "multiple of its 32 data-parallel ranks"),
    ],
)
def test_a_plan_with_no_layout_names_its_own_fault(
    model: str, chips: int, batch: int, plan: str, says: str
) -> None:
    # the given plan's own fault (an expert axis on a dense model, more stages than layers)
    # or the batch that no layout divides, never a generic "no layout"
    with pytest.raises(PlanError, match=says):
        predict(
            Workload(model=load_preset(model), phase=Training(seq_len=2048, global_batch=batch)),
            chip("h100-sxm"),
            chips,
            "bf16",
            plan_keys=plan_constraints(plan, chips),
        )


def _bisected(passes, points: int) -> int:  # type: ignore[no-untyped-def]
    """The highest passing point by plain bisection (what the rate search used to run)."""
    if not passes(0):
        return -1
    lo, hi = 0, points
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    return lo


@settings(max_examples=200, deadline=None)
@given(
    capacity=st.floats(0.0005, 1.5),
    floor=st.floats(0.0, 2.0),
    power=st.floats(0.2, 3.0),
    tpot=st.booleans(),
)
def test_the_rate_search_finds_what_bisection_finds_in_fewer_probes(
    capacity: float, floor: float, power: float, tpot: bool
) -> None:
    """Regula falsi over the rate grid lands on bisection's point for any monotone margin:
    a queue's (floor + 1 / (1 - rate / capacity), saturating beyond it) or a smooth
    TPOT-like one (floor + rate^power), and needs fewer probes on a queue."""
    points, octaves = 1024, 10

    def margin(point: int) -> float:
        rate = 2.0 ** (octaves * (point / points - 1.0))
        if tpot:
            return floor + rate**power
        return math.inf if rate >= capacity else floor + 0.1 / (1.0 - rate / capacity)

    probes: list[int] = []

    def probe(point: int) -> tuple[str, float]:
        probes.append(point)
        m = margin(point)
        return ("miss" if m > 1 else ""), m

    found, why = _highest_passing(probe, points, octaves)
    assert found == _bisected(lambda p: margin(p) <= 1, points)
    assert (why == "miss") == (found < 0)
    assert len(set(probes)) == len(probes)  # no point probed twice
    assert len(probes) <= 2 * 11


def test_the_rate_search_probes_a_queue_a_few_times() -> None:
    """A queue-shaped margin (1 / (1 - rate / capacity)) is found in a handful of probes,
    where bisection over 1024 rates takes 11."""
    probes: list[int] = []

    def probe(point: int) -> tuple[str, float]:
        probes.append(point)
        rate = 2.0 ** (10 * (point / 1024 - 1.0))
        m = math.inf if rate >= 0.7 else 0.2 / (1.0 - rate / 0.7)
        return ("miss" if m > 1 else ""), m

    _highest_passing(probe, 1024, 10)
    assert len(probes) <= 5
