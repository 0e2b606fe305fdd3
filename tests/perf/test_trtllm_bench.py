"""trtllm-bench's own batch and token limits (``perf/step/trtllm_bench.py``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.errors import WorkloadError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.serve import ServeModel
from chipwise.perf.step.trtllm_bench import trtllm_bench_limits
from chipwise.workload.ir import Inference
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
L8B = load_preset("llama3-8b")  # 32 layers, 8 KV heads of 128, 8.03e9 parameters


def _limits(isl: int, osl: int, *, max_in: int | None = None, tp: int = 1, precision: str = "fp8"):
    return trtllm_bench_limits(
        L8B, precision=precision, kv_dtype="fp8", hbm_bytes=H100.hbm_capacity_bytes, tp=tp,
        pp=1, mean_in=isl, mean_out=osl, max_in=max_in or isl, kv_free_fraction=0.9,
    )  # fmt: skip


def test_limits_follow_calc_engine_setting_by_hand() -> None:
    # 2048/2048 on one H100 (74.5 GiB): KV 2 x 32 x 8 x 128 x 1 B = 64 KiB a token;
    # (74.5 - 7.48) GiB x 0.9 / (64 KiB x 4096) = 241 requests -> 256 (multiple of 32);
    # tokens 241 x 2 = 483 -> 2048 minimum, then the whole 2048-token prompt + 256 (no chunking)
    assert _limits(2048, 2048) == (256, 2304)
    # 2048/128: 454 requests -> 512 (multiple of 128); 454 x 17 = 7718 tokens -> 8192
    assert _limits(2048, 128) == (512, 8192)


def test_short_requests_hit_the_caps_and_long_prompts_raise_the_token_budget() -> None:
    assert _limits(128, 128) == (4096, 8192)  # min(R, 4096); 4096 x 2 tokens
    bs, tokens = _limits(20000, 2000)
    assert bs == 64  # at least 64
    assert tokens == 20000 + bs  # a 20000-token prompt in one step


def test_more_ranks_keep_a_kv_head_each_so_fewer_requests_fit() -> None:
    # 8 ranks hold 8x the memory, but the KV bytes a token are the same (8 heads >= tp)
    assert _limits(2048, 2048, tp=8)[0] > _limits(2048, 2048)[0]
    assert _limits(2048, 2048, tp=16)[0] < _limits(2048, 2048, tp=8)[0] * 2


def test_untuned_precisions_take_the_build_defaults() -> None:
    # ... and, chunked prefill off, a token budget for the longest prompt plus the batch
    assert _limits(128, 2048, max_in=9000, precision="int4") == (2048, 9000 + 2048)


def _bench(spec, chip_id: str, precision: str, tp: int, isl: int, osl: int, kv: str = "fp8"):
    gpu = chip(chip_id)
    return trtllm_bench_limits(
        spec, precision=precision, kv_dtype=kv, hbm_bytes=gpu.usable_hbm_bytes, tp=tp, pp=1,
        mean_in=isl, mean_out=osl, max_in=isl, kv_free_fraction=0.9,
    )  # fmt: skip


def test_mla_is_sized_as_the_hf_config_reads_and_nvfp4_weights_count_packed() -> None:
    # DeepSeek-R1 NVFP4 on 4 B200 (178.35 GiB each): the config's 128 KV heads of
    # 7168 / 128 = 56 (no head_dim): 2 x 61 x 128 x 56 x 1 B = 854 KiB a token; weights
    # 378e9 packed elements x 0.5 B = 176 GiB; (713.4 - 176.0) x 0.9 / (854 KiB x 2048)
    # = 290 requests -> 384 (a multiple of 128), not 64 (the MHA-width KV and the
    # 671e9-parameter weights)
    r1 = load_preset("deepseek-r1")
    assert _bench(r1, "b200", "fp4", 4, 1024, 1024)[0] == 384
    assert _bench(r1, "b200", "fp4", 4, 1024, 32768)[0] == 64  # 18 requests: the minimum


def test_the_perf_overview_deepseek_1k8k_rows_ran_the_formula_before_pr_13498() -> None:
    # TRP-002/006 (perf-overview at 03e27c7d5f, 2025-11) predate NVIDIA/TensorRT-LLM PR #13498
    # (opened 2026-04-27), so their runs sized max_batch_size by tuning.py's old rule:
    # B200 (713.4 - 176.0) GiB x 0.9 / (854 KiB x 9216) = 64 requests -> 96 (multiple of 32),
    # GB200 67 -> 96, at the page's 0.90 or 0.95 KV fraction alike. The PR's NVFP4 engine size
    # (per-dtype checkpoint bytes, 2.10x) would leave 41 / 44 requests -> 64, fewer, not the
    # ~250 per rank the rows' throughput would need (the rows' notes).
    r1 = load_preset("deepseek-r1")
    for gpu in ("b200", "gb200"):
        assert _bench(r1, gpu, "fp4", 4, 1024, 8192)[0] == 96
        hi = trtllm_bench_limits(
            r1, precision="fp4", kv_dtype="fp8", hbm_bytes=chip(gpu).usable_hbm_bytes, tp=4,
            pp=1, mean_in=1024, mean_out=8192, max_in=1024, kv_free_fraction=0.95,
        )  # fmt: skip
        assert hi[0] == 96


def test_mxfp4_experts_take_the_build_defaults() -> None:
    # gpt-oss's MXFP4 checkpoint is not one of trtllm-bench's tuned quantisations
    oss = load_preset("gpt-oss-120b")
    assert _bench(oss, "h100-sxm", "fp4", 4, 1024, 1024, kv="bf16") == (2048, 8192)
    assert _bench(oss, "b200", "fp4", 2, 32768, 1024) == (2048, 32768 + 2048)


def test_a_trtllm_bench_run_uses_the_limits_and_trtllm_serve_does_not() -> None:
    # sized from the datasheet 80 GB (the runtime's 79.2 GiB rounds bench's batch to 384,
    # where the KV cache binds first): the harness's limits are what is under test here
    h100 = replace(H100, hbm_usable_bytes=0.0)
    serve = ServeModel(L8B, h100, "fp8", model_for(h100), Network(h100))
    kw = {"load": "max_throughput", "input_len": 2048, "output_len": 2048, "engine": "trtllm",
          "num_requests": 1500}  # fmt: skip
    bench = serve.serve_engine(Plan(), Inference(harness="trtllm-bench", **kw)).engine
    served = serve.serve_engine(Plan(), Inference(**kw)).engine  # trtllm-serve + a client
    assert bench is not None and served is not None
    # bench's batch of 256 is optimistic (rounded up from its own estimate of the cache,
    # tuning.py): its runs keep the LLM API's GUARANTEED_NO_EVICT, which reserves each
    # request's 2048 + 2048 tokens, so the cache holds fewer
    kv = bench.kv_capacity_tokens_per_replica
    assert bench.max_seqs_per_replica == min(256, int(kv // 4096)) < 256
    assert bench.limit == "kv_cache"
    # trtllm-serve under the engine's defaults: the cache at the time-averaged context
    assert served.max_seqs_per_replica == int(kv // (2048 + 2048 / 2)) > 256


def test_an_unknown_harness_is_refused() -> None:
    with pytest.raises(WorkloadError, match="harness"):
        Inference(harness="genai-perf")
