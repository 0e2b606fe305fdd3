"""KV-cache capacity as the engines size it: the memory the runtime reports, sliding layers
holding their window, and vLLM's Marlin padding of MXFP4 experts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.memory import marlin_expert_padding, serve_memory
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.engine import sglang_mem_fraction_static, windows_kv
from chipwise.perf.step.serve import ServeModel
from chipwise.workload.ir import Inference
from chipwise.workload.presets import load_preset

GIB = 2**30
H100 = chip("h100-sxm")
GPT_OSS = load_preset("gpt-oss-120b")  # 18 of 36 layers slide over 128 tokens


def test_the_runtime_reports_more_than_the_datasheet_on_80_gb_parts() -> None:
    # "80 GB" of HBM3 is 80 GiB less the driver's reserve: torch says 79.2 GiB
    assert H100.hbm_capacity_bytes == 80e9
    assert H100.usable_hbm_bytes / GIB == pytest.approx(79.2, abs=0.1)
    assert chip("mi300x").usable_hbm_bytes / GIB == pytest.approx(192.0, abs=0.1)
    # a chip without a runtime figure sizes from its datasheet capacity
    assert chip("l4").usable_hbm_bytes == chip("l4").hbm_capacity_bytes


def test_marlin_pads_gpt_oss_experts_to_its_tiles() -> None:
    # 2880 x 2880 expert matrices become 2944 x 3072 at tp=1; 1440 -> 1536 at tp=2
    assert marlin_expert_padding(GPT_OSS, Plan()) == pytest.approx(2944 * 3072 / 2880**2)
    assert marlin_expert_padding(GPT_OSS, Plan(tp=2)) == pytest.approx(1536 * 3072 / 1440 / 2880)
    assert marlin_expert_padding(load_preset("llama3-8b"), Plan()) == 1.0


def test_vllm_loads_gpt_oss_120b_at_the_size_its_log_states() -> None:
    # vLLM 0.10.1 on one H100 (Marlin): "Model loading took 65.9651 GiB" (vllm issue #23278)
    serve = ServeModel(GPT_OSS, H100, "int4", model_for(H100), Network(H100))
    base = serve_memory(
        GPT_OSS, Plan(), batch=1, context=0, precision="int4", kv_dtype="bf16",
        prefill_tokens=1, chip=H100,
    ).weights_bytes  # fmt: skip
    loaded = base + serve._layout_padding_bytes(Plan(), "vllm")
    assert loaded / GIB == pytest.approx(65.97, rel=0.01)
    assert serve._layout_padding_bytes(Plan(), "sglang") == 0.0


def test_windowed_engines_hold_more_gpt_oss_sequences_than_full_attention() -> None:
    assert windows_kv("vllm") and not windows_kv("sglang")
    assert not windows_kv("vllm", "2025-03-01")  # before the hybrid KV-cache manager
    serve = ServeModel(GPT_OSS, H100, "int4", model_for(H100), Network(H100))
    timer = serve.engine_timer(Plan(), "bf16")
    full = serve.kv_capacity_tokens(Plan(), "bf16", timer, "vllm")
    short = serve.kv_capacity_tokens(Plan(), "bf16", timer, "vllm", context=400.0)
    # (18 x 400 + 18 x 128) / (36 x 400) = 0.66 of the bytes a token
    assert short / full == pytest.approx(36 * 400 / (18 * 400 + 18 * 128))
    # a context within the window costs what it would under full attention
    assert serve.kv_capacity_tokens(Plan(), "bf16", timer, "vllm", context=100.0) == full


def test_tensorrt_llm_sizes_sliding_layers_as_full_attention() -> None:
    # TensorRT-LLM's KV pools are sized as if every layer were full attention
    # (kvCacheManager.cpp, NVIDIA/TensorRT-LLM@b35ac1b6): a gpt-oss token costs 36 layers
    assert not windows_kv("trtllm") and not windows_kv("trtllm", "2026-05-06")
    phase = Inference(load="max_throughput", input_len=5000, output_len=1000, engine="trtllm")
    serve = ServeModel(GPT_OSS, H100, "int4", model_for(H100), Network(H100))
    eng = serve.serve_engine(Plan(), phase).engine
    assert eng is not None
    timer = serve.engine_timer(Plan(), "bf16")
    full = serve.kv_capacity_tokens(Plan(), "bf16", timer, "trtllm")
    windowed = serve.kv_capacity_tokens(Plan(), "bf16", timer, "trtllm", context=5500.0)
    assert eng.kv_capacity_tokens_per_replica == pytest.approx(full)
    assert windowed > 1.9 * full  # what windowed pools would have held


def test_an_engine_run_reports_the_memory_it_sized_from() -> None:
    phase = Inference(load="max_throughput", input_len=215, output_len=196)
    serve = ServeModel(GPT_OSS, H100, "int4", model_for(H100), Network(H100))
    pred = serve.serve_engine(Plan(), phase)
    assert pred.capacity_bytes == H100.usable_hbm_bytes
    assert pred.fits
    # with the datasheet's 80e9 bytes the same run holds fewer sequences
    small = replace(H100, hbm_usable_bytes=0.0)
    low = ServeModel(GPT_OSS, small, "int4", model_for(small), Network(small))
    assert low.serve_engine(Plan(), phase).engine.kv_capacity_tokens_per_replica < (  # type: ignore[union-attr]
        pred.engine.kv_capacity_tokens_per_replica  # type: ignore[union-attr]
    )


@pytest.mark.parametrize(
    ("gib", "tp", "date", "expected"),
    [
        (79.21, 1, "", 0.834),  # H100: 10 GiB floor over 13.1 GiB reserved -> 0.834
        (139.8, 8, "", 0.896),  # H200 at tp 8
        (79.21, 1, "2025-06-01", 0.88),  # before PR #10975: by TP alone
        (79.21, 8, "2025-06-01", 0.81),
    ],
)
def test_sglang_picks_its_static_fraction_from_the_gpu_and_tp(
    gib: float, tp: int, date: str, expected: float
) -> None:
    assert sglang_mem_fraction_static(gib * GIB, tp, 1, date) == pytest.approx(expected)


def test_sglang_holds_less_kv_than_vllm_on_an_h100() -> None:
    llama = load_preset("llama3-8b")
    serve = ServeModel(llama, H100, "bf16", model_for(H100), Network(H100))
    timer = serve.engine_timer(Plan(), "bf16")
    vllm = serve.kv_capacity_tokens(Plan(), "bf16", timer, "vllm")
    sglang = serve.kv_capacity_tokens(Plan(), "bf16", timer, "sglang")
    assert sglang < vllm


def test_tensorrt_llm_reserves_whole_outputs_under_trtllm_bench_only() -> None:
    # trtllm-bench keeps the LLM API's GUARANTEED_NO_EVICT (prompt + whole output held from
    # admission); NVIDIA's MLPerf harness sets MAX_UTILIZATION (HarnessConfig's
    # batch_scheduler_policy 'max_util', mlcommons/inference_results_v5.1@952ca601
    # closed/NVIDIA/code/llmlib/config.py; every v6.0 gpt-oss-120b Server config sets it),
    # which holds a running request's context only: its running set is the pool over the
    # mean held context
    phase = Inference(load="max_throughput", input_len=5000, output_len=1300, engine="trtllm",
                      max_num_seqs=4096, max_num_tokens=65536)  # fmt: skip
    serve = ServeModel(GPT_OSS, H100, "int4", model_for(H100), Network(H100))
    mlperf = serve.serve_engine(Plan(), phase).engine
    bench = serve.serve_engine(Plan(), replace(phase, harness="trtllm-bench")).engine
    assert mlperf is not None and bench is not None
    pool = mlperf.kv_capacity_tokens_per_replica
    assert mlperf.limit == bench.limit == "kv_cache"
    assert mlperf.max_seqs_per_replica == int(pool // (5000 + 1300 / 2))
    assert bench.max_seqs_per_replica == int(pool // (5000 + 1300))
