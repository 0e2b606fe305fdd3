"""``Predictor``: one workload, one chip, any count; ``predict`` is one call on it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.errors import PlanError, UnsupportedOpError, WorkloadError
from chipwise.hardware import chip
from chipwise.perf import (
    InferPrediction,
    Plan,
    Predictor,
    ServeChoice,
    TrainChoice,
    TrainPrediction,
    memory_floor_bytes,
    predict,
    step_floor_s,
)
from chipwise.workload.ir import Inference, Training, TransformerSpec, Workload
from chipwise.workload.load import load_workload_model
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
SPEC = TransformerSpec(
    name="tiny", n_layers=8, d_model=1024, n_heads=16, n_kv_heads=4, head_dim=64,
    d_ff=4096, vocab_size=32000,
)  # fmt: skip
TRAIN = Workload(model=SPEC, phase=Training(seq_len=2048, global_batch=64))
SERVE = Workload(model=SPEC, phase=Inference(batch=8, input_len=512, output_len=128))


def test_train_equals_predict_and_notes_the_planners_reason_first() -> None:
    p = Predictor(TRAIN, "h100", "bf16")
    got = p.train(8)
    want = predict(TRAIN, H100, 8, "bf16")
    assert isinstance(got, TrainPrediction) and got == want
    assert got.assumptions[0].name == "plan" and "planner chose" in str(got.assumptions[0].value)


def test_one_predictor_reuses_its_step_model_across_counts() -> None:
    p = Predictor(TRAIN, H100)
    a = p.step_model()
    p.train(2)
    p.train(4)
    assert p.step_model() is a
    assert p.train(4) == predict(TRAIN, H100, 4)


def test_a_given_plan_is_used_as_is_without_a_planner_note() -> None:
    plan = Plan(dp=2, tp=2, microbatch=4)
    got = Predictor(TRAIN, H100).train(4, plan=plan)
    assert got.plan == plan and got.assumptions[0].name != "plan"


def test_plan_returns_the_planners_answer_for_each_phase() -> None:
    t = Predictor(TRAIN, H100).plan(8)
    s = Predictor(SERVE, H100).plan(2)
    assert isinstance(t, TrainChoice) and t.prediction.chips == 8
    assert isinstance(s, ServeChoice) and s.prediction.chips == 2


def test_serve_equals_predict() -> None:
    got = Predictor(SERVE, H100).serve(2)
    assert isinstance(got, InferPrediction) and got == predict(SERVE, H100, 2)


def test_the_wrong_phase_is_a_clear_error() -> None:
    with pytest.raises(WorkloadError, match="use serve"):
        Predictor(SERVE, H100).train(2)
    with pytest.raises(WorkloadError, match="use train"):
        Predictor(TRAIN, H100).serve(2)


def test_bad_inputs_are_errors_naming_the_value() -> None:
    with pytest.raises(UnsupportedOpError, match="fp7"):
        Predictor(TRAIN, H100, "fp7")
    with pytest.raises(PlanError, match="chips must be >= 1"):
        Predictor(TRAIN, H100).train(0)


def test_bounds_are_the_perf_lower_bounds_and_none_for_a_primitive() -> None:
    p = Predictor(TRAIN, H100)
    assert p.memory_floor_bytes(4) == memory_floor_bytes(SPEC, H100, 4, "bf16", training=True)
    assert p.step_floor_s(4) == step_floor_s(SPEC, TRAIN.phase, H100, 4, "bf16")  # type: ignore[arg-type]
    assert p.step_floor_s(4) < p.train(4).step_time_s  # type: ignore[operator]
    assert Predictor(SERVE, H100).step_floor_s(1) is None
    matmul = load_workload_model("matmul:4096x4096x4096")
    prim = Workload(model=matmul, phase=Training(seq_len=1, global_batch=1))
    assert Predictor(prim, H100).memory_floor_bytes(1) is None


def test_serving_layer_op_times_cover_prefill_and_decode() -> None:
    p = Predictor(Workload(model=load_preset("llama3-8b"), phase=SERVE.phase), H100)
    pred = p.serve(1)
    prefill, decode = p.serving_layer_op_times(pred)
    assert prefill and decode
    assert sum(t.op.flops for t in prefill) > sum(t.op.flops for t in decode)


def test_a_predictor_for_another_phase_shares_the_serving_model_and_predicts_the_same() -> None:
    model = load_workload_model("llama3-8b")
    colocated = Predictor(Workload(model=model, phase=Inference(load="rps", rps=4.0)), "h100-sxm")
    colocated.serve(2)
    phase = Inference(load="rps", rps=4.0, disaggregated=True)
    shared = colocated.for_phase(phase)
    assert shared.serve_model() is colocated.serve_model()
    fresh = Predictor(Workload(model=model, phase=phase), "h100-sxm")
    assert shared.serve(2, plan_keys={"tp": 1, "dp": 2}) == fresh.serve(
        2, plan_keys={"tp": 1, "dp": 2}
    )


def test_fp4_on_a_chip_without_fp4_serves_weight_only_and_says_so() -> None:
    p = Predictor(SERVE, H100, "fp4")
    got, want = p.serve(1), Predictor(SERVE, H100, "int4").serve(1)
    assert p.precision == "int4" and replace(got, assumptions=want.assumptions) == want
    assert got.assumptions[:-1] == want.assumptions
    assert got.assumptions[-1].name == "precision" and "W4A16" in str(got.assumptions[-1].value)
    # a chip with fp4 tensor cores runs it as W4A4; training fp4 on h100 stays an error
    assert Predictor(SERVE, "b200", "fp4").precision == "fp4"
    with pytest.raises(UnsupportedOpError, match="no fp4 rate"):
        Predictor(TRAIN, H100, "fp4").train(1)
