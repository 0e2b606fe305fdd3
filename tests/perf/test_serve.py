"""Serving: prefill is compute-bound, decode reads weights and the KV cache every token."""

from __future__ import annotations

import pytest

from chipwise.errors import PlanError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.predict import predict
from chipwise.perf.step.serve import DECODE_STEP_OVERHEAD_S, ServeModel, kv_dtype_for
from chipwise.workload.ir import Inference, Workload
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
LLAMA8 = load_preset("llama3-8b")


def _serve(precision: str = "bf16") -> ServeModel:
    return ServeModel(LLAMA8, H100, precision, model_for(H100), Network(H100))


def test_decode_of_one_request_is_bounded_below_by_reading_the_weights() -> None:
    p = _serve().serve(Plan(), batch=1, input_len=128, output_len=128)
    weights_s = p.memory.weights_bytes / H100.hbm_bytes_per_s
    assert weights_s < p.tpot_s < 2 * weights_s + DECODE_STEP_OVERHEAD_S


def test_longer_context_and_bigger_batch_cost_more_per_token() -> None:
    s = _serve()
    short = s.serve(Plan(), batch=8, input_len=512, output_len=128)
    long = s.serve(Plan(), batch=8, input_len=8192, output_len=128)
    assert long.tpot_s > short.tpot_s and long.ttft_s > short.ttft_s
    assert long.memory.kv_cache_bytes > short.memory.kv_cache_bytes


def test_batching_raises_throughput() -> None:
    s = _serve()
    one = s.serve(Plan(), batch=1, input_len=512, output_len=256)
    many = s.serve(Plan(), batch=32, input_len=512, output_len=256)
    assert many.output_tokens_per_s > 10 * one.output_tokens_per_s


def test_tensor_parallel_cuts_time_per_token() -> None:
    s = _serve()
    tp1 = s.serve(Plan(), batch=4, input_len=512, output_len=128)
    tp8 = s.serve(Plan(tp=8), batch=4, input_len=512, output_len=128)
    assert tp8.tpot_s < tp1.tpot_s


def test_serving_plans_reject_training_axes() -> None:
    with pytest.raises(PlanError, match="serving plans"):
        _serve().serve(Plan(fsdp=2), batch=1, input_len=8, output_len=8)


def test_fp8_serving_caches_keys_and_values_in_fp8() -> None:
    assert kv_dtype_for("fp8") == "fp8" and kv_dtype_for("bf16") == "bf16"
    bf16 = _serve().serve(Plan(), batch=8, input_len=2048, output_len=128)
    fp8 = _serve("fp8").serve(Plan(), batch=8, input_len=2048, output_len=128)
    assert fp8.memory.kv_cache_bytes == bf16.memory.kv_cache_bytes / 2


def test_predict_plans_serving_and_reports_fit() -> None:
    w = Workload(model=load_preset("llama3-70b"), phase=Inference(batch=16))
    p = predict(w, H100, 8)
    assert p.fits and p.plan.chips == 8  # type: ignore[union-attr]


def test_expert_parallel_serving_reads_every_local_expert_whole() -> None:
    """Under expert parallelism folded over the tensor-parallel ranks (vLLM's
    --enable-expert-parallel) each chip holds E / ep whole experts: a decode step that touches
    nearly all of them reads all of its share of the expert weights, not a tp-th of it."""
    mixtral = load_preset("mixtral-8x7b")
    s = ServeModel(mixtral, H100, "bf16", model_for(H100), Network(H100))
    plan = Plan(tp=4, ep=4)
    p = s.serve(plan, batch=64, input_len=128, output_len=128)
    weights_s = p.memory.weights_bytes / H100.hbm_bytes_per_s
    assert p.tpot_s > weights_s


def test_a_tpu_engine_step_pays_for_its_token_bucket() -> None:
    """XLA serving engines pad a step's tokens to the next bucket (16, 32, 64, ...), so on a
    TPU a compute-bound step of 1025 tokens costs what one of 2048 does; a GPU runs the exact
    count."""
    from chipwise.perf.step.serve import EngineStepTimer

    v6e = chip("tpu-v6e")
    tpu = EngineStepTimer(ServeModel(LLAMA8, v6e, "bf16", model_for(v6e), Network(v6e)),
                          Plan(), "bf16")  # fmt: skip
    assert tpu.padded_tokens(33) == 64 and tpu.padded_tokens(3) == 16
    assert tpu.device_s(0, 1, 1025, 1025) > tpu.device_s(0, 1, 1024, 1024) * 1.5
    gpu = EngineStepTimer(_serve(), Plan(), "bf16")
    assert gpu.padded_tokens(33) == 33
