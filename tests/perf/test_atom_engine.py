"""AMD's ATOM engine (``Inference.engine`` "atom"): its own batch defaults, vLLM's memory
rule, AITER's fused MoE with the shared experts inside it, and AMD GPUs only."""

from __future__ import annotations

import pytest

from chipwise.errors import PlanError
from chipwise.hardware.catalog import chip
from chipwise.perf.ops.layers import engine_fuses_shared_experts
from chipwise.perf.predictor import Predictor
from chipwise.perf.step.engine import BatchDefaults, engine_batch_defaults, kv_pool_bytes
from chipwise.workload import load_workload_model
from chipwise.workload.ir import Inference, Workload

GIB = 2**30


def test_atom_defaults_are_its_arg_utils_values_under_any_load() -> None:
    for load in ("concurrency", "rps", "max_throughput"):
        got = engine_batch_defaults("atom", load=load, hbm_bytes=288 * GIB, chip_id="mi355x")
        assert got == BatchDefaults(512, 16384)


def test_atom_sizes_its_kv_cache_as_a_share_of_total_memory_like_vllm() -> None:
    total, rest = 288 * GIB, 70 * GIB
    assert kv_pool_bytes("atom", total, rest) == kv_pool_bytes("vllm", total, rest)
    assert kv_pool_bytes("atom", total, rest) == pytest.approx(0.9 * total - rest)


def test_atom_runs_the_shared_experts_inside_the_fused_moe() -> None:
    deepseek = load_workload_model("deepseek-v3")
    assert engine_fuses_shared_experts(
        deepseek, engine="atom", architecture="cdna4", precision="fp8", ep=8
    )
    # a model without shared experts has none to fuse
    gpt_oss = load_workload_model("gpt-oss-120b")
    assert not engine_fuses_shared_experts(
        gpt_oss, engine="atom", architecture="cdna4", precision="fp4", ep=1
    )


def _predictor(chip_id: str) -> Predictor:
    phase = Inference(engine="atom", load="concurrency", concurrency=4, input_len=1024,
                      output_len=256)  # fmt: skip
    return Predictor(Workload(model=load_workload_model("gpt-oss-120b"), phase=phase),
                     chip(chip_id), "fp4")  # fmt: skip


def test_atom_serves_on_an_amd_gpu_and_refuses_others_in_one_line() -> None:
    pred = _predictor("mi355x").predict(1)
    assert pred.output_tokens_per_s > 0
    with pytest.raises(PlanError, match=r"atom engine runs on AMD GPUs only.*h100-sxm"):
        _predictor("h100-sxm").predict(1)
