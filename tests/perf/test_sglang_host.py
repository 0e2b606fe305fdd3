"""SGLang's normal (non-overlap) loop runs each step's per-request Python work in series with
the device (``serve.SGLANG_SERIAL_HOST_S_PER_REQUEST``); its overlap loop hides it. A Gated
DeltaNet hybrid in the default no_buffer mode is served by the normal loop."""

from __future__ import annotations

import pytest

from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.serve import (
    SGLANG_SERIAL_HOST_S_PER_REQUEST,
    VLLM_GDN_MIXED_HOST_S_PER_SEQ,
    BatchingStep,
    ServeModel,
    engine_overlaps_host,
    step_host_s_per_request,
)
from chipwise.workload.presets import load_preset

H200 = chip("h200-sxm")
HYBRID = load_preset("qwen3.5-35b-a3b")


def test_only_sglangs_normal_loop_pays_per_request_in_series() -> None:
    assert SGLANG_SERIAL_HOST_S_PER_REQUEST == VLLM_GDN_MIXED_HOST_S_PER_SEQ
    assert step_host_s_per_request("sglang", False, True) == SGLANG_SERIAL_HOST_S_PER_REQUEST
    assert step_host_s_per_request("sglang", True, True) == 0.0
    assert step_host_s_per_request("vllm", False, True) == 0.0
    # kept to the hybrids, the only SGLang runs the rows time without the overlap loop
    assert step_host_s_per_request("sglang", False) == 0.0
    # a hybrid without speculative decoding runs the normal loop (MambaRadixCache no_buffer)
    assert not engine_overlaps_host("sglang", "2026-03-20", linear_attention=True)


def test_a_hybrids_decode_step_grows_by_the_per_request_host_work() -> None:
    timer = ServeModel(HYBRID, H200, "bf16", model_for(H200), Network(H200)).engine_timer(
        Plan(tp=1), "bf16"
    )
    per_request = step_host_s_per_request("sglang", False, True)
    paying = BatchingStep(timer=timer, overlap=False, host_s_per_request=per_request)
    plain = BatchingStep(timer=timer, overlap=False)
    for seqs in (32.0, 156.0):
        added = paying(seqs, 600.0, 0.0, 0.0) - plain(seqs, 600.0, 0.0, 0.0)
        assert added == pytest.approx(seqs * SGLANG_SERIAL_HOST_S_PER_REQUEST, rel=1e-6)
