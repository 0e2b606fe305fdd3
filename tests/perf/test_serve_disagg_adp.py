"""Disaggregated serving with attention data parallelism in each pool (NVIDIA Dynamo on
TensorRT-LLM): a decode pool laid out by the serving plan beside a prefill pool of its own
(``Inference.prefill_pool``), whose chips add up to the deployment's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.errors import PlanError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.plan.planner import plan_constraints
from chipwise.perf.predict import predict
from chipwise.perf.predictor import decode_chips
from chipwise.perf.step.serve import ServeModel
from chipwise.workload.ir import Inference, PrefillPool, Workload
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
MOE = load_preset("qwen3-30b-a3b")
POOL = PrefillPool(instances=1, tp=2, ep=2, adp=1, max_num_tokens=8192)
RPS = Inference(load="rps", rps=20.0, input_len=1024, output_len=256, engine="trtllm",
                disaggregated=True, prefill_pool=POOL)  # fmt: skip


def _serve() -> ServeModel:
    return ServeModel(MOE, H100, "fp8", model_for(H100), Network(H100))


def test_pools_add_up_to_the_chips() -> None:
    pred = _serve().serve_engine(Plan(dp=3, tp=2, ep=2, adp=1), RPS)
    assert pred.engine is not None
    assert pred.chips == 3 * 2 + POOL.chips == 8
    assert pred.engine.prefill_chips == POOL.chips
    assert decode_chips(RPS, 8) == 6 and decode_chips(replace(RPS, prefill_pool=None), 8) == 8


def test_a_row_plan_lays_out_the_chips_the_prefill_pool_leaves() -> None:
    keys = plan_constraints("tp=2,ep=2,adp=1", decode_chips(RPS, 8))
    pred = predict(Workload(model=MOE, phase=RPS), H100, 8, "fp8", plan_keys=keys)
    assert pred.plan.dp == 3 and pred.plan.adp == 1 and pred.chips == 8


def test_a_pool_that_leaves_no_decode_chips_is_refused() -> None:
    big = replace(RPS, prefill_pool=PrefillPool(instances=4, tp=2, ep=2, adp=1))
    with pytest.raises(PlanError, match="none are left"):
        decode_chips(big, 8)


def test_a_larger_prefill_pool_queues_prompts_less() -> None:
    plan = Plan(dp=2, tp=2, ep=2, adp=1)
    load = replace(RPS, rps=20.0, input_len=4096)
    small = _serve().serve_engine(plan, load).engine
    large = (
        _serve().serve_engine(plan, replace(load, prefill_pool=replace(POOL, instances=3))).engine
    )
    assert small is not None and large is not None and not small.saturated
    assert large.ttft_p99_s < small.ttft_p99_s
    # the decode pool and its load are the same: so is its step
    assert large.tpot_p50_s == pytest.approx(small.tpot_p50_s, rel=1e-9)


def test_disaggregation_with_attention_dp_splits_instances_when_no_pool_is_given() -> None:
    load = replace(RPS, prefill_pool=None)
    pred = _serve().serve_engine(Plan(dp=4, tp=2, ep=2, adp=1), load)
    assert pred.engine is not None and pred.chips == 8
    assert pred.engine.prefill_chips in (2, 4, 6)


def test_the_prefill_pool_needs_its_experts_split_over_its_ranks() -> None:
    bad = replace(RPS, prefill_pool=PrefillPool(instances=1, tp=4, ep=2, adp=1))
    with pytest.raises(PlanError, match="etp x ep must equal tp"):
        _serve().serve_engine(Plan(dp=2, tp=2, ep=2, adp=1), bad)


def test_a_dense_models_prefill_pool_splits_no_experts() -> None:
    # MLPerf v6.0 llama3.1-405b on GB200 NVL72: 14 context servers of TP4 beside TP8 decode
    dense = ServeModel(load_preset("llama3-8b"), H100, "fp8", model_for(H100), Network(H100))
    load = replace(RPS, prefill_pool=PrefillPool(instances=1, tp=2, ep=2))
    plan = Plan(dp=3, tp=2)
    pred = dense.serve_engine(plan, load)
    same = dense.serve_engine(plan, replace(load, prefill_pool=PrefillPool(instances=1, tp=2)))
    assert pred.engine is not None and same.engine is not None
    assert pred.engine.ttft_p99_s == pytest.approx(same.engine.ttft_p99_s, rel=1e-12)
    assert pred.chips == 8
