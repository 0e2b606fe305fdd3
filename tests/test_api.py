"""The notebook API: ids and strings in, the stages' own results out."""

from __future__ import annotations

import pytest

import chipwise
from chipwise.perf import Predictor


def test_predict_takes_a_zoo_id_and_a_chip_alias() -> None:
    p = chipwise.predict("llama3-8b", chip="h100", chips=8)
    assert isinstance(p, chipwise.TrainPrediction)
    assert p.chip_id == "h100-sxm" and p.chips == 8 and p.plan.chips == 8
    wl = chipwise.load_workload("llama3-8b")
    assert p == Predictor(wl, "h100-sxm").train(8)


def test_predict_serving_and_a_partial_plan_string() -> None:
    s = chipwise.predict("llama3-8b", chip="h100", chips=2, phase="infer", batch=8)
    assert isinstance(s, chipwise.InferPrediction) and s.batch == 8
    t = chipwise.predict("llama3-8b", chip="h100", chips=8, plan="tp=2")
    assert t.plan.tp == 2 and t.plan.chips == 8


def test_load_workload_builds_each_phase_and_refuses_an_unknown_one() -> None:
    assert isinstance(chipwise.load_workload("llama3-8b").phase, chipwise.Training)
    served = chipwise.load_workload("llama3-8b", phase="infer", input_len=512)
    assert isinstance(served.phase, chipwise.Inference) and served.phase.input_len == 512
    with pytest.raises(chipwise.WorkloadError, match="phase"):
        chipwise.load_workload("llama3-8b", phase="tune")


def test_advise_ranks_the_chips_asked_for() -> None:
    rec = chipwise.advise("llama3-8b", chips=("h100", "a100-sxm-80gb"), tokens=1e9)
    assert isinstance(rec, chipwise.Recommendation)
    assert rec.pick is not None and rec.pick.chip.id in ("h100-sxm", "a100-sxm-80gb")
