"""SGLang runs a prompt's forward eagerly (CUDA graphs for decode only, up to its
--cuda-graph-max-bs sequences): the host issues every kernel of the forward while the device
runs them, so a step carrying prompt tokens, or a decode batch beyond the graphs, takes at
least the host's launches (``serve.EAGER_LAUNCH_HOST_S`` per kernel)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

import chipwise.perf.step.serve as serve_mod
from chipwise.hardware import chip
from chipwise.hardware.chip import Chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.engine import SGLANG_GRAPH_TIERS_DATE, sglang_cuda_graph_max_bs
from chipwise.perf.step.serve import (
    EAGER_LAUNCH_HOST_S,
    EAGER_PREFILL_ENGINES,
    EAGER_RANK_SKEW,
    HOST_STEP_S,
    SGLANG_PIECEWISE_DEFAULT_DATE,
    BatchingStep,
    ServeModel,
    eager_rank_skew,
    expected_max_standard_normal,
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
    assert host == pytest.approx(timer.eager_launches() * EAGER_LAUNCH_HOST_S)  # one rank
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


def test_expected_maximum_of_standard_normals() -> None:
    """Known order-statistic means (Tippett 1925; Harter 1961)."""
    assert expected_max_standard_normal(1) == 0.0
    assert expected_max_standard_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-4)
    assert expected_max_standard_normal(4) == pytest.approx(1.02938, rel=1e-4)
    assert expected_max_standard_normal(8) == pytest.approx(1.42360, rel=1e-4)


def test_tensor_parallel_ranks_pace_the_eager_forward_at_the_slowest() -> None:
    """Each rank issues its own copy of the eager forward and every all-reduce waits for
    the slowest, so the host time grows with the ranks (1 at tp 1, as fitted)."""
    assert eager_rank_skew(1) == 1.0
    assert 1.0 < eager_rank_skew(2) < eager_rank_skew(4) < eager_rank_skew(8)
    assert eager_rank_skew(8) == pytest.approx(1 + EAGER_RANK_SKEW * 1.4236, rel=1e-3)
    sv = _serve("deepseek-v3", "fp8", H200)
    for tp in (4, 8):
        timer = sv.engine_timer(Plan(tp=tp), "bf16")
        in_step = timer.eager_launches() * EAGER_LAUNCH_HOST_S
        assert timer.eager_host_s() == pytest.approx(in_step * eager_rank_skew(tp))
        assert timer.eager_host_s() > 1.2 * in_step


def test_a_tensor_parallel_short_prompt_waits_longer_than_its_ranks_in_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DeepSeek-V3 at tp 8 on a short prompt: SGLang's eager prefill is host-bound, and
    the slowest rank's launches set its TTFT."""
    phase = Inference(input_len=922, output_len=922, engine="sglang", load="concurrency",
                      concurrency=4, engine_date="2025-12-31")  # fmt: skip
    skewed = _serve("deepseek-v3", "fp8", H200).serve_engine(Plan(tp=8), phase).engine
    monkeypatch.setattr(serve_mod, "EAGER_RANK_SKEW", 0.0)
    in_step = _serve("deepseek-v3", "fp8", H200).serve_engine(Plan(tp=8), phase).engine
    assert skewed is not None and in_step is not None
    assert skewed.ttft_p50_s > in_step.ttft_p50_s + 0.01


GIB = 2**30


@pytest.mark.parametrize(
    ("gib", "tp", "date", "expected"),
    [
        (79.21, 1, "", 256),  # H100 (and H200, under 160 GiB): 256 under tp 4
        (79.21, 8, "", 512),
        (178.0, 1, "", 512),  # B200, MI300X: 512 at every tp
        (79.21, 8, "2025-09-01", 160),  # before PR #10372: 160 on every large GPU
        (22.0, 1, "2025-09-01", 8),  # and 8 (80 at tp 4+) under 25,000 MiB
        (22.0, 4, "2025-09-01", 80),
    ],
)
def test_sglang_graphs_decode_batches_up_to_its_default_max_bs(
    gib: float, tp: int, date: str, expected: int
) -> None:
    assert sglang_cuda_graph_max_bs(gib * GIB, tp, date) == expected
    assert SGLANG_GRAPH_TIERS_DATE < "2025-09-27"  # before PR #10975, which sizes from it


def test_a_decode_batch_beyond_the_graphs_waits_for_the_hosts_launches() -> None:
    timer = _serve("llama3-70b", "bf16", H200).engine_timer(Plan(tp=8), "bf16")
    host = timer.eager_host_s()
    graphed = BatchingStep(timer=timer, overlap=True)
    capped = BatchingStep(
        timer=timer, overlap=True, eager_host_s=host, eager_prefill=False, graph_max_seqs=512
    )
    assert graphed(600, 400, 0, 0) < host  # the device alone would be done sooner
    assert capped(512, 400, 0, 0) == graphed(512, 400, 0, 0)  # still a graph replay
    assert capped(600, 400, 0, 0) == pytest.approx(host)
    # prompts run in (piecewise) graphs here: a short prompt's step has no floor
    assert capped(0, 0, 64, 64) == graphed(0, 0, 64, 64) < host


def test_sglangs_max_throughput_tpot_holds_its_eager_decode_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1000 requests at once on 8 x H200: the running batch outgrows the 512-sequence
    graphs, so the median request decodes slower than with every batch graphed; vLLM's
    step is untouched."""
    phase = Inference(input_len=220, output_len=200, engine="sglang", load="max_throughput",
                      num_requests=1000, engine_date="2025-11-04")  # fmt: skip
    capped = _serve("llama3-70b", "bf16", H200).serve_engine(Plan(tp=8), phase).engine
    vllm_phase = replace(phase, engine="vllm")
    vllm = _serve("llama3-70b", "bf16", H200).serve_engine(Plan(tp=8), vllm_phase).engine
    monkeypatch.setattr(serve_mod, "sglang_cuda_graph_max_bs", lambda *a, **k: 1 << 20)
    graphed = _serve("llama3-70b", "bf16", H200).serve_engine(Plan(tp=8), phase).engine
    vllm_after = _serve("llama3-70b", "bf16", H200).serve_engine(Plan(tp=8), vllm_phase).engine
    assert capped is not None and graphed is not None
    assert capped.tpot_p50_s > 1.02 * graphed.tpot_p50_s
    assert vllm is not None and vllm_after is not None
    assert vllm.tpot_p50_s == vllm_after.tpot_p50_s
