"""Invariants of plans, memory and the planner (hypothesis)."""

from __future__ import annotations

from dataclasses import fields, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.errors import DoesNotFitError, PlanError
from chipwise.hardware import chip
from chipwise.perf.base import Plan, parse_plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.memory import train_memory
from chipwise.perf.plan.parallel import Network
from chipwise.perf.plan.planner import plan_training
from chipwise.perf.step.train import StepModel
from chipwise.workload.ir import TransformerSpec

H100 = chip("h100-sxm")
SPEC = TransformerSpec(
    name="tiny", n_layers=16, d_model=2048, n_heads=16, n_kv_heads=8, head_dim=128,
    d_ff=8192, vocab_size=32000,
)  # fmt: skip
POW2 = st.sampled_from([1, 2, 4])

plans = st.builds(
    Plan,
    dp=POW2, fsdp=POW2, tp=POW2, pp=POW2, cp=st.sampled_from([1, 2]),
    vp=st.just(1), microbatch=st.sampled_from([1, 2, 4]),
    recompute=st.sampled_from(["none", "selective", "full"]),
)  # fmt: skip


@given(plans)
def test_plan_text_round_trips(plan: Plan) -> None:
    assert parse_plan(str(plan)) == plan


@given(plans, st.sampled_from(["dp", "fsdp", "tp", "pp", "cp"]))
@settings(max_examples=200)
def test_more_chips_never_lower_total_memory_across_chips(plan: Plan, axis: str) -> None:
    bigger = replace(plan, **{axis: getattr(plan, axis) * 2})
    kw = {"seq_len": 4096, "microbatches": 8, "precision": "bf16", "chip": H100}
    small = train_memory(SPEC, plan, **kw).total_bytes * plan.chips
    big = train_memory(SPEC, bigger, **kw).total_bytes * bigger.chips
    assert big >= small * (1 - 1e-9)


@given(plans)
@settings(max_examples=60, deadline=None)
def test_a_plan_that_does_not_fit_is_never_reported_as_fitting(plan: Plan) -> None:
    model = StepModel(SPEC, H100, "bf16", model_for(H100), Network(H100))
    gb = plan.data_parallel * plan.microbatch * 2
    try:
        pred = model.train(plan, seq_len=4096, global_batch=gb)
    except PlanError:
        return
    assert pred.fits == (pred.memory.total_bytes <= H100.hbm_capacity_bytes)


@given(st.sampled_from([1, 2, 4, 8, 16, 32]), st.sampled_from([2048, 8192]),
       st.sampled_from([1, 4, 16]))  # fmt: skip
@settings(max_examples=25, deadline=None)
def test_planner_result_fits_and_uses_exactly_the_chips(chips: int, seq: int, per: int) -> None:
    model = StepModel(SPEC, H100, "bf16", model_for(H100), Network(H100))
    try:
        choice = plan_training(model, chips=chips, seq_len=seq, global_batch=chips * per)
    except DoesNotFitError as err:
        assert err.needed_bytes > err.capacity_bytes
        return
    p = choice.prediction
    assert p.fits and p.plan.chips == chips
    # within capacity, or "tight": inside the allocator's fragmentation allowance
    assert p.memory.total_bytes - p.memory.slack_bytes <= H100.hbm_capacity_bytes


def test_every_plan_field_is_in_its_text() -> None:
    text = str(Plan())
    # etp (experts' tensor parallelism) is shown only when set: 0 = automatic; states only
    # when not the default fp32; recipe settings (grad_reduce, a2a_overlap, attn_graph) and
    # attention data parallelism (adp) only when stated
    unstated = (
        "etp", "states", "grad_reduce", "a2a_overlap", "attn_graph", "full_graph", "end_slots",
        "flash", "dispatcher", "adp",
    )  # fmt: skip
    assert all(f"{f.name}=" in text for f in fields(Plan) if f.name not in unstated)
    assert "etp=1" in str(Plan(tp=2, ep=2, etp=1)) and "etp" not in text
    assert "states=bf16" in str(Plan(states="bf16")) and "states" not in text
    assert "a2a_overlap=0" in str(Plan(a2a_overlap=0)) and "a2a_overlap" not in text
    assert "attn_graph=1" in str(Plan(attn_graph=1)) and "attn_graph" not in text
    assert "full_graph=1" in str(Plan(full_graph=1)) and "full_graph" not in text
    assert "grad_reduce=fp32" in str(Plan(grad_reduce="fp32")) and "grad_reduce" not in text
    assert "adp=1" in str(Plan(tp=8, adp=1)) and "adp" not in text
    assert "end_slots=1" in str(Plan(pp=2, end_slots=1)) and "end_slots" not in text
    assert "dispatcher=alltoall" in str(Plan(ep=8, dispatcher="alltoall"))
    assert "dispatcher" not in text
    assert "flash=0" in str(Plan(flash=0)) and "flash" not in text
