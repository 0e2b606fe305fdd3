"""SGLang runs a prompt's forward eagerly (CUDA graphs for decode only): the host issues
every kernel of the forward while the device runs them, so a step carrying prompt tokens
takes at least the host's launches (``serve.EAGER_LAUNCH_HOST_S`` per kernel)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import chipwise.perf.step.serve as serve_mod
from chipwise.hardware import chip
from chipwise.hardware.chip import Chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.serve import (
    EAGER_LAUNCH_HOST_S,
    EAGER_PREFILL_ENGINES,
    HOST_STEP_S,
    SGLANG_PIECEWISE_DEFAULT_DATE,
    BatchingStep,
    ServeModel,
    runs_prefill_eagerly,
)
from chipwise.workload.ir import Inference
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
H200 = chip("h200-sxm")


def _serve(preset: str, precision: str, hw: Chip = H100, engine: str = "sglang") -> ServeModel:
    return ServeModel(load_preset(preset), hw, precision, model_for(hw), Network(hw), engine=engine)


def test_only_sglang_before_its_piecewise_default_runs_its_prompts_eagerly() -> None:
    assert frozenset({"sglang"}) == EAGER_PREFILL_ENGINES
    assert 10e-6 < EAGER_LAUNCH_HOST_S < 100e-6
    assert runs_prefill_eagerly("sglang", "2025-12-31")
    assert not runs_prefill_eagerly("sglang", SGLANG_PIECEWISE_DEFAULT_DATE)
    assert not runs_prefill_eagerly("sglang")  # the newest release graphs its prompts
    assert not runs_prefill_eagerly("vllm", "2025-12-31")


def test_a_step_with_prompt_tokens_waits_for_the_hosts_launches() -> None:
    timer = _serve("llama3-8b", "bf16").engine_timer(Plan(), "bf16")
    host = timer.eager_host_s()
    assert host == pytest.approx(timer.eager_launches() * EAGER_LAUNCH_HOST_S)
    eager = BatchingStep(timer=timer, overlap=True, eager_host_s=host)
    graphed = BatchingStep(timer=timer, overlap=True)
    # a short prompt: the device is done before the host has issued the forward
    assert timer.device_s(4, 300, 64, 64) < host
    assert eager(4, 300, 64, 64) == pytest.approx(host)
    assert graphed(4, 300, 64, 64) < host
    # a decode-only step replays its CUDA graph: no eager floor
    assert eager(4, 300, 0, 0) == graphed(4, 300, 0, 0)
    # a long prompt's device time hides the launches
    assert eager(0, 0, 8192, 8192) == graphed(0, 0, 8192, 8192)
    # without the overlap loop the step's own host work stays in series
    serial = BatchingStep(timer=timer, overlap=False, eager_host_s=host)
    assert serial(4, 300, 64, 64) == pytest.approx(host + HOST_STEP_S)


def test_fp8_projections_launch_their_activation_quantisation() -> None:
    """Each fp8 GEMM of an eager forward quantises its input in a kernel of its own (one
    per projection: qkv, o (already its own cast op), up, down)."""
    bf16 = _serve("llama3-8b", "bf16").engine_timer(Plan(), "bf16").eager_launches()
    fp8 = _serve("llama3-8b", "fp8").engine_timer(Plan(), "bf16").eager_launches()
    layers = load_preset("llama3-8b").n_layers
    assert fp8 - bf16 == 4 * layers


def test_tensor_parallel_adds_two_all_reduces_a_layer() -> None:
    sv = _serve("llama3-70b", "bf16", H200)
    one = sv.engine_timer(Plan(tp=1), "bf16").eager_launches()
    eight = sv.engine_timer(Plan(tp=8), "bf16").eager_launches()
    assert eight - one == 2 * load_preset("llama3-70b").n_layers


def test_deepseeks_layers_launch_more_than_a_dense_models() -> None:
    """MLA (its norms, up-projections, rope) and the MoE (router, top-k, permute, expert
    GEMMs and their quantisation) launch more kernels a layer than a dense GQA layer."""
    ds = _serve("deepseek-v3", "fp8", H200).engine_timer(Plan(tp=8), "bf16")
    dense = _serve("llama3-70b", "fp8", H200).engine_timer(Plan(tp=8), "bf16")
    per_layer_ds = ds.eager_launches() / load_preset("deepseek-v3").n_layers
    per_layer_dense = dense.eager_launches() / load_preset("llama3-70b").n_layers
    assert per_layer_ds > per_layer_dense + 5


def test_sglangs_short_prompt_ttft_holds_the_eager_forward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sv = _serve("llama3-8b", "fp8")
    phase = Inference(input_len=128, output_len=128, engine="sglang", load="concurrency",
                      concurrency=4, engine_date="2025-12-31")  # fmt: skip
    eager = sv.serve_engine(Plan(), phase).engine
    later = replace(phase, engine_date=SGLANG_PIECEWISE_DEFAULT_DATE)
    piecewise = _serve("llama3-8b", "fp8").serve_engine(Plan(), later).engine
    assert eager is not None and piecewise is not None
    assert eager.ttft_p50_s > piecewise.ttft_p50_s
    monkeypatch.setattr(serve_mod, "EAGER_PREFILL_ENGINES", frozenset())
    sv2 = _serve("llama3-8b", "fp8")
    graphed = sv2.serve_engine(Plan(), phase).engine
    assert eager is not None and graphed is not None
    assert eager.ttft_p50_s > graphed.ttft_p50_s
