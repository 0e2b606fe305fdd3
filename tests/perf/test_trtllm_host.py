"""TensorRT-LLM's PyTorch executor does per-request Python work every step on each rank's
process (``serve.TRTLLM_HOST_S_PER_REQUEST``): its overlap loop hides it behind the device
only while it is shorter, and plain tp carries all of an instance's requests on every
rank where attention DP splits them over the ranks."""

from __future__ import annotations

from dataclasses import replace

import pytest

import chipwise.perf.step.serve as serve_mod
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.serve import (
    HOST_STEP_S,
    TRTLLM_HOST_S_PER_REQUEST,
    BatchingStep,
    ServeModel,
    step_host_s_per_request,
)
from chipwise.workload.ir import Inference
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
MOE = load_preset("qwen3-30b-a3b")
DENSE = load_preset("llama3-8b")


def _serve(spec=MOE) -> ServeModel:  # type: ignore[no-untyped-def]
    return ServeModel(spec, H100, "fp8", model_for(H100), Network(H100))


def test_only_trtllms_overlapped_pytorch_executor_pays_per_request() -> None:
    # PR #10273: 45.11 ms a host-bound iteration at 1536 requests a rank
    assert pytest.approx(28e-6, rel=0.01) == TRTLLM_HOST_S_PER_REQUEST
    assert step_host_s_per_request("trtllm", True) == TRTLLM_HOST_S_PER_REQUEST
    # the C++ executor over a TensorRT engine (no overlap loop) is not this Python loop
    assert step_host_s_per_request("trtllm", False) == 0.0
    assert step_host_s_per_request("vllm", True) == 0.0
    assert step_host_s_per_request("sglang", True) == 0.0


def test_the_step_is_the_longer_of_device_and_host_with_its_requests() -> None:
    timer = _serve(DENSE).engine_timer(Plan(tp=8), "fp8")
    step = BatchingStep(timer=timer, overlap=True, host_s_per_request=TRTLLM_HOST_S_PER_REQUEST)
    plain = BatchingStep(timer=timer, overlap=True)
    many = 1024
    host = HOST_STEP_S + many * TRTLLM_HOST_S_PER_REQUEST
    assert timer.device_s(many, 300, 0, 0) < host  # a small model's step is the host's
    assert step(many, 300, 0, 0) == pytest.approx(host)
    assert plain(many, 300, 0, 0) < host
    # few requests: the device (or the fixed host work) binds, as before
    assert step(4, 300, 0, 0) == pytest.approx(plain(4, 300, 0, 0))
    # a prompt in the step is one more scheduled request
    with_prompt = step(many, 300, 512, 512)
    assert with_prompt >= HOST_STEP_S + (many + 1) * TRTLLM_HOST_S_PER_REQUEST - 1e-12
    # without the overlap loop the host's work is added, not hidden
    serial = BatchingStep(timer=timer, overlap=False, host_s_per_request=1e-6)
    device = timer.device_s(64, 300, 0, 0)
    assert serial(64, 300, 0, 0) == pytest.approx(device + HOST_STEP_S + 64e-6)


def test_plain_tp_carries_every_request_on_one_process_and_adp_a_ranks_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    phase = Inference(
        load="concurrency", concurrency=1024, input_len=128, output_len=512, engine="trtllm"
    )
    s = _serve()
    tp = s.serve_engine(Plan(tp=8, ep=8), phase)
    adp = s.serve_engine(Plan(tp=8, ep=8, adp=1), phase)
    monkeypatch.setattr(serve_mod, "TRTLLM_HOST_S_PER_REQUEST", 0.0)
    tp0 = s.serve_engine(Plan(tp=8, ep=8), phase)
    adp0 = s.serve_engine(Plan(tp=8, ep=8, adp=1), phase)
    # plain tp: hundreds of sequences on one Python loop, whose step is the host's
    assert tp.batch > 256
    assert tp.tpot_s > 1.2 * tp0.tpot_s
    assert tp.tpot_s == pytest.approx(HOST_STEP_S + tp.batch * TRTLLM_HOST_S_PER_REQUEST, rel=0.1)
    # attention DP: ~128 a rank, ~5.6 ms of host work, under the device's step
    assert adp.tpot_s == pytest.approx(adp0.tpot_s, rel=0.05)
    assert "host_s_per_request" in {a.name for a in tp.assumptions}
    # vLLM's loop is not this one
    vllm = replace(phase, engine="vllm")
    monkeypatch.setattr(serve_mod, "TRTLLM_HOST_S_PER_REQUEST", 1.0)
    assert s.serve_engine(Plan(tp=8, ep=8), vllm).tpot_s < 1.0
