"""The continuous-batching engine: balance equations, limits, percentiles and invariants."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chipwise.errors import PlanError, WorkloadError
from chipwise.hardware import chip
from chipwise.perf.base import InferPrediction, Plan
from chipwise.perf.ops.layers import Dtypes, active_experts, weight_bytes
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.predict import predict
from chipwise.perf.step.engine import (
    MAX_NUM_SEQS_DEFAULT,
    BatchDefaults,
    Engine,
    _bisect_quantiles,
    _discrete_quantiles,
    _mg1_quantiles,
    _mg1_wait_cdf,
    _wait_tail,
    engine_batch_defaults,
    kv_pool_bytes,
    lengths_of,
)
from chipwise.perf.step.serve import (
    HOST_STEP_S,
    EngineStepTimer,
    ServeModel,
    engine_overlaps_host,
)
from chipwise.workload.ir import Inference, Workload
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
LLAMA8 = load_preset("llama3-8b")
LLAMA70 = load_preset("llama3-70b")


def _serve(spec=LLAMA8, precision: str = "bf16", c=H100) -> ServeModel:  # type: ignore[no-untyped-def]
    return ServeModel(spec, c, precision, model_for(c), Network(c))


def _timer(precision: str = "bf16") -> EngineStepTimer:
    return EngineStepTimer(_serve(precision=precision), Plan(), "bf16")


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 1024), ctx=st.integers(16, 16384), db=st.integers(1, 512))
def test_a_decode_step_never_gets_faster_with_more_sequences_or_context(
    b: int, ctx: int, db: int
) -> None:
    t = _timer()
    base = t.step_s(b, ctx, 0, 0)
    assert t.step_s(b + db, ctx, 0, 0) >= base * 0.999
    assert t.step_s(b, ctx + db, 0, 0) >= base * 0.999


@settings(max_examples=15, deadline=None)
@given(rps=st.floats(0.5, 20.0), replicas=st.sampled_from([1, 2, 4]))
def test_more_replicas_never_raise_p99_latency_at_a_fixed_arrival_rate(
    rps: float, replicas: int
) -> None:
    s = _serve()
    phase = Inference(load="rps", rps=rps, input_len=512, output_len=128)
    few = s.serve_engine(Plan(dp=replicas), phase)
    more = s.serve_engine(Plan(dp=2 * replicas), phase)
    assert few.engine is not None and more.engine is not None
    assert more.engine.ttft_p99_s <= few.engine.ttft_p99_s * 1.001
    assert more.engine.tpot_p99_s <= few.engine.tpot_p99_s * 1.001


def test_an_rps_load_is_served_at_its_rate_with_littles_law_holding() -> None:
    p = _serve().serve_engine(Plan(), Inference(load="rps", rps=4, input_len=512, output_len=256))
    assert p.engine is not None and not p.engine.saturated
    assert p.engine.requests_per_s == pytest.approx(4.0)
    assert p.output_tokens_per_s == pytest.approx(4.0 * 256)
    # requests in the system = rate x time in the system, from arrival to the last token:
    # TTFT, then the other 255 tokens a step each (the first came from the prompt's step)
    assert p.engine.in_system_per_replica == pytest.approx(
        4.0 * (p.ttft_s + (256 - 1) * p.tpot_s), rel=1e-6
    )
    assert p.engine.ttft_p99_s >= p.engine.ttft_p50_s and p.engine.tpot_p99_s >= p.tpot_s * 0.999


def test_an_rps_load_beyond_capacity_is_saturated_with_unbounded_ttft() -> None:
    p = _serve(LLAMA70, "fp8").serve_engine(
        Plan(tp=8, dp=1), Inference(load="rps", rps=1e4, input_len=2048, output_len=512)
    )
    assert p.engine is not None and p.engine.saturated and math.isinf(p.engine.ttft_p99_s)


def test_max_throughput_is_bounded_by_the_kv_cache_or_the_engine_limits() -> None:
    s = _serve()
    long = s.serve_engine(Plan(), Inference(load="max_throughput", input_len=8192, output_len=8192))
    assert long.engine is not None and long.engine.limit == "kv_cache"
    used = long.engine.decode_batch_per_replica * (8192 + 8192 / 2)
    assert used <= long.engine.kv_capacity_tokens_per_replica
    short = s.serve_engine(Plan(), Inference(load="max_throughput", input_len=128, output_len=128))
    assert short.output_tokens_per_s > long.output_tokens_per_s


def test_a_closed_loop_never_beats_max_throughput_and_grows_with_clients() -> None:
    s = _serve()
    kw = {"input_len": 1024, "output_len": 256}
    top = s.serve_engine(Plan(), Inference(load="max_throughput", **kw)).output_tokens_per_s
    few = s.serve_engine(Plan(), Inference(load="concurrency", concurrency=4, **kw))
    many = s.serve_engine(Plan(), Inference(load="concurrency", concurrency=64, **kw))
    assert few.output_tokens_per_s < many.output_tokens_per_s <= top * 1.001
    assert few.tpot_s < many.tpot_s  # TPOT rises with the batch
    # vLLM V0 (2024): at most its default 256 sequences, however many clients
    old = Inference(load="concurrency", concurrency=4096, engine_date="2024-10", **kw)
    over = s.serve_engine(Plan(), old)
    assert over.engine is not None
    assert over.engine.decode_batch_per_replica == MAX_NUM_SEQS_DEFAULT


def test_prefix_hits_cut_ttft() -> None:
    s = _serve()
    cold = s.serve_engine(Plan(), Inference(load="rps", rps=2, input_len=4096, output_len=128))
    warm = s.serve_engine(
        Plan(), Inference(load="rps", rps=2, input_len=4096, output_len=128, prefix_hit_rate=0.8)
    )
    assert warm.ttft_s < cold.ttft_s


def test_length_spread_raises_p99_ttft_over_fixed_lengths() -> None:
    s = _serve()
    fixed = s.serve_engine(Plan(), Inference(load="rps", rps=4, input_len=1024, output_len=256))
    spread = s.serve_engine(
        Plan(),
        Inference(load="rps", rps=4, input_len=1024, output_len=256, input_len_std=800),
    )
    assert fixed.engine is not None and spread.engine is not None
    assert spread.engine.ttft_p99_s > fixed.engine.ttft_p99_s


def test_lognormal_lengths_keep_their_mean() -> None:
    lens = lengths_of(Inference(input_len=1000, output_len=200, input_len_std=600))
    assert lens.mean_in == pytest.approx(1000, rel=0.03)
    assert lens.mean_out == pytest.approx(200)


def test_weight_only_int4_reads_a_quarter_of_the_bf16_weight_bytes_and_decodes_faster() -> None:
    # 4 bits a value plus a group of 128's fp16 scale and 4-bit zero point
    assert weight_bytes("int4") == pytest.approx(0.25 * weight_bytes("bf16") + 2.5 / 128)
    assert Dtypes.for_precision("int4").matmul == "bf16"
    phase = Inference(load="concurrency", concurrency=8, input_len=512, output_len=256)
    bf = predict(Workload(model=LLAMA70, phase=phase), H100, 4, "bf16")
    q4 = predict(Workload(model=LLAMA70, phase=phase), H100, 4, "int4")
    assert q4.memory.weights_bytes < 0.3 * bf.memory.weights_bytes
    assert q4.tpot_s < bf.tpot_s  # type: ignore[union-attr]


def test_fp4_runs_w4a4_on_a_chip_with_an_fp4_rate_and_weight_only_elsewhere() -> None:
    phase = Inference(load="max_throughput", input_len=128, output_len=128)
    wl = Workload(model=LLAMA70, phase=phase)
    assert predict(wl, chip("b200"), 1, "fp4").precision == "fp4"
    on_h100, int4 = predict(wl, H100, 1, "fp4"), predict(wl, H100, 1, "int4")
    assert on_h100.precision == "int4"
    assert replace(on_h100, assumptions=int4.assumptions) == int4
    # a chip with neither fp4 nor bf16 (T4) cannot serve it at all
    with pytest.raises(Exception, match="fp4"):
        predict(wl, chip("t4"), 1, "fp4")


@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_an_engine_at_its_kv_limit_fits_the_memory_its_own_rule_sized(engine: str) -> None:
    # TensorRT-LLM perf-overview ran Llama-3.3-70B fp8 on one H200 at 128/128 (SV-011): the
    # KV pool is 0.9 of the free memory, so the deployment fits by construction (4096
    # sequences allowed: vLLM's own 1024 would bind before the KV cache does)
    phase = Inference(
        load="max_throughput", input_len=128, output_len=128, engine=engine, max_num_seqs=4096
    )
    pred = predict(Workload(model=LLAMA70, phase=phase), chip("h200-sxm"), 1, "fp8")
    assert isinstance(pred, InferPrediction) and pred.engine is not None
    assert pred.engine.limit == "kv_cache"
    assert pred.fits and pred.memory.total_bytes <= pred.capacity_bytes


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [(1, 8), (2, 16), (1000, 128)],  # k=8 of 128: one token touches 8 experts
)
def test_decode_touches_only_the_experts_its_tokens_route_to(tokens: int, expected: int) -> None:
    assert active_experts(128, tokens, 8, 128) == pytest.approx(expected, abs=1)


def test_a_load_needs_its_value() -> None:
    with pytest.raises(WorkloadError, match="concurrency"):
        Inference(load="concurrency")
    with pytest.raises(WorkloadError, match="rps"):
        Inference(load="rps", rps=0)


def test_a_server_load_runs_at_the_highest_rate_within_its_p99_targets() -> None:
    kw = {"input_len": 512, "output_len": 256, "load": "server"}
    wl = Workload(model=LLAMA8, phase=Inference(tpot_p99_s=0.03, **kw))  # type: ignore[arg-type]
    p = predict(wl, H100, 1, "bf16")
    assert isinstance(p, InferPrediction) and p.engine is not None
    assert p.engine.tpot_p99_s <= 0.03 and not p.engine.saturated
    looser = predict(
        Workload(model=LLAMA8, phase=Inference(tpot_p99_s=0.06, **kw)),  # type: ignore[arg-type]
        H100, 1, "bf16",
    )  # fmt: skip
    assert looser.output_tokens_per_s >= p.output_tokens_per_s  # type: ignore[union-attr]
    with pytest.raises(WorkloadError, match="target"):
        Inference(load="server")


def test_a_server_load_with_a_stated_rate_is_timed_there_within_its_capacity() -> None:
    """``Inference.rps`` on a server load: the searched deployment timed at that rate (an
    MLPerf run's scheduled rate), with the wait for a free slot; a rate at or beyond the
    searched capacity keeps the search's prediction (a run that met its targets), not the
    capacity with a slot wait added, which diverges there (RTX Pro 6000 gpt-oss-120b p99
    TTFT +24,000 %, 2026-12-06)."""
    kw = {"input_len": 512, "output_len": 256, "load": "server", "tpot_p99_s": 0.03}
    searched = predict(Workload(model=LLAMA8, phase=Inference(**kw)), H100, 1, "bf16")  # type: ignore[arg-type]
    assert isinstance(searched, InferPrediction) and searched.engine is not None
    cap = searched.engine.requests_per_s
    light = predict(Workload(model=LLAMA8, phase=Inference(rps=cap / 2, **kw)), H100, 1, "bf16")  # type: ignore[arg-type]
    over = predict(Workload(model=LLAMA8, phase=Inference(rps=cap * 2, **kw)), H100, 1, "bf16")  # type: ignore[arg-type]
    assert isinstance(light, InferPrediction) and light.engine is not None
    assert isinstance(over, InferPrediction) and over.engine is not None
    assert light.engine.requests_per_s == pytest.approx(cap / 2)
    assert light.plan == searched.plan
    assert light.engine.tpot_p99_s < searched.engine.tpot_p99_s
    assert over.engine.requests_per_s == pytest.approx(cap)
    assert not over.engine.saturated
    assert over.engine.ttft_p99_s == searched.engine.ttft_p99_s
    assert over.engine.tpot_p99_s == searched.engine.tpot_p99_s <= 0.03


def test_disaggregation_takes_prefill_out_of_the_decode_steps() -> None:
    s = _serve(LLAMA70, "fp8")
    kw = {"load": "rps", "rps": 4.0, "input_len": 4096, "output_len": 256}
    mixed = s.serve_engine(Plan(tp=2, dp=4), Inference(**kw))  # type: ignore[arg-type]
    split = s.serve_engine(Plan(tp=2, dp=4), Inference(disaggregated=True, **kw))  # type: ignore[arg-type]
    assert split.engine is not None and mixed.engine is not None
    assert 0 < split.engine.prefill_chips < 8
    assert split.engine.tpot_p99_s < mixed.engine.tpot_p99_s
    with pytest.raises(PlanError, match="dp >= 2"):
        s.serve_engine(Plan(tp=8), Inference(disaggregated=True, **kw))  # type: ignore[arg-type]


def test_a_disaggregated_prefill_replica_packs_short_prompts_up_to_its_token_budget() -> None:
    """The prefill pool's capacity is the queue's own: a step carries prompts up to the
    token budget, so 128-token prompts are not served one per step (as they once were)."""
    s = _serve(LLAMA70, "fp8")
    kw = {"load": "max_throughput", "input_len": 128, "output_len": 16}
    split = s.serve_engine(Plan(tp=2, dp=4), Inference(disaggregated=True, **kw))  # type: ignore[arg-type]
    assert split.engine is not None
    timer = EngineStepTimer(s, Plan(tp=2), "fp8")
    alone = timer.step_s(0, 128, 128, 128)  # one prompt on an idle prefill replica
    pools = split.engine.prefill_chips // 2  # tp=2 prefill replicas
    assert split.engine.requests_per_s > 1.5 * pools / alone


@settings(max_examples=10, deadline=None)
@given(clients=st.integers(1, 256), more=st.integers(1, 256))
def test_tpot_rises_with_the_clients_of_a_closed_loop(clients: int, more: int) -> None:
    s = _serve()

    def tpot(n: int) -> tuple[float, float]:
        p = s.serve_engine(
            Plan(), Inference(load="concurrency", concurrency=n, input_len=1024, output_len=256)
        )
        assert p.engine is not None
        return p.engine.tpot_p50_s, p.engine.tpot_p99_s

    few, many = tpot(clients), tpot(clients + more)
    # the decode batch is solved to half a sequence: allow that much
    assert many[0] >= few[0] * 0.995 and many[1] >= few[1] * 0.995


@settings(max_examples=20, deadline=None)
@given(
    b=st.integers(1, 512),
    db=st.integers(1, 512),
    input_len=st.integers(16, 8192),
    longer=st.integers(1, 8192),
)
def test_tpot_rises_with_the_decode_batch_and_the_context(
    b: int, db: int, input_len: int, longer: int
) -> None:
    """At a given decode batch, the engine's mean step (its TPOT) and a static batch's TPOT
    never fall with more sequences or a longer prompt (more KV cache to read, and in the
    engine more prompt tokens to prefill per output token)."""
    s = _serve()
    timer = s.engine_timer(Plan(), "bf16")

    def engine_tpot(batch: int, lin: int) -> float:
        lens = lengths_of(Inference(input_len=lin, output_len=256))
        engine = Engine(timer.step_s, lens, prefill_tokens_fraction=1.0, max_num_seqs=4096,
                        max_num_tokens=16384, kv_capacity_tokens=1e12)  # fmt: skip
        return engine.rate(batch).step_s

    def static_tpot(batch: int, lin: int) -> float:
        return s.serve(Plan(), batch=batch, input_len=lin, output_len=256).tpot_s

    # The per-shape GEMM tile choice (waves, split-K) is not monotone in M: a few more rows
    # can land on a better tile by up to ~1 % (b=166 -> 174 at a 16-token prompt: -0.75 %),
    # as cuBLAS's per-shape heuristics do; beyond that, more sequences never run faster.
    for tpot in (engine_tpot, static_tpot):
        base = tpot(b, input_len)
        assert tpot(b + db, input_len) >= base * 0.99
        assert tpot(b, input_len + longer) >= base * 0.999


def test_an_overlapping_engine_hides_host_work_a_static_batch_pays() -> None:
    t = _timer()
    device = t.device_s(1, 512, 0, 0)
    assert device > HOST_STEP_S  # llama3-8b on an H100: the weights alone take ~5 ms
    # continuous batching (overlap scheduler): the host's work runs during the device step
    assert t.step_s(1, 512, 0, 0) == pytest.approx(device)
    # a static batch (benchmark_latency) pays the host's work on every decode step
    static = _serve().serve(Plan(), batch=1, input_len=512, output_len=2)
    assert static.tpot_s >= device + HOST_STEP_S * 0.999


def test_sglang_serves_a_hybrid_model_without_its_overlap_loop() -> None:
    # SGLang's default prefix cache for a linear-attention hybrid (MambaRadixCache,
    # no_buffer) disables the overlap schedule; speculative decoding turns the radix cache
    # off instead, and an SGLang from before that cache kept the overlap loop
    assert not engine_overlaps_host("sglang", "2026-03-20", linear_attention=True)
    assert not engine_overlaps_host("sglang", "", linear_attention=True)
    assert engine_overlaps_host("sglang", "2026-03-20", linear_attention=True, speculative=True)
    assert engine_overlaps_host("sglang", "2025-09-01", linear_attention=True)
    assert engine_overlaps_host("sglang", "2026-03-20")
    assert engine_overlaps_host("vllm", "2026-03-20", linear_attention=True)


def test_vllm_before_default_async_scheduling_pays_host_work_in_series() -> None:
    # vLLM made async scheduling its default in v0.14.0 (2026-01); before, only a run that
    # passed --async-scheduling overlapped the host's work with the device step
    assert not engine_overlaps_host("vllm", "2025-11-04")
    assert engine_overlaps_host("vllm", "2025-11-04", async_scheduling=True)
    assert engine_overlaps_host("vllm", "")  # today's vLLM
    assert engine_overlaps_host("vllm", "2026-04-23")
    assert not engine_overlaps_host("vllm", "2026-04-23", async_scheduling=False)
    assert engine_overlaps_host("sglang", "2025-11-04") and engine_overlaps_host("trtllm", "2024")
    t = _timer()
    device = t.device_s(8, 512, 0, 0)
    assert t.step_s(8, 512, 0, 0, overlap=False) == pytest.approx(device + HOST_STEP_S)
    phase = Inference(load="concurrency", concurrency=8, input_len=512, output_len=128)
    sync = _serve().serve_engine(Plan(), replace(phase, engine_date="2025-11-04"))
    overlapped = _serve().serve_engine(Plan(), phase)
    assert sync.tpot_s > overlapped.tpot_s
    assert sync.decode.overhead_s == pytest.approx(HOST_STEP_S)


def test_expert_parallelism_over_the_tp_ranks_adds_no_all_to_all_in_serving() -> None:
    """Every tp rank holds the step's tokens after attention's all-reduce: experts spread
    over those ranks need no dispatch (the combine is the MLP all-reduce); experts spread
    over replicas (data-parallel attention) exchange tokens."""
    qwen = load_preset("qwen3-235b-a22b")
    s = _serve(qwen, "fp8", chip("h200-sxm"))
    folded = s.engine_timer(Plan(tp=8, ep=8), "fp8").comm_s(1024)
    plain = s.engine_timer(Plan(tp=8), "fp8").comm_s(1024)
    assert folded == pytest.approx(plain)
    over_replicas = s.engine_timer(Plan(dp=8, ep=8), "fp8").comm_s(1024)
    assert over_replicas > 0


def test_a_closed_loop_prompt_waits_only_for_the_prompts_being_prefilled() -> None:
    """One client never queues; more clients (still within the engine's limits) find the
    prefill slot busy more often, so mean TTFT rises above the prefill service."""
    s = _serve(LLAMA70, "fp8")
    kw = {"load": "concurrency", "input_len": 5000, "output_len": 500}

    def at(n: int) -> InferPrediction:
        p = s.serve_engine(Plan(tp=2), Inference(concurrency=n, **kw))  # type: ignore[arg-type]
        assert p.engine is not None
        assert n == 1 or p.engine.limit == "concurrency"  # within the engine's limits
        return p

    one, some, many = at(1), at(10), at(40)
    assert one.engine is not None and one.ttft_s == pytest.approx(one.engine.ttft_p50_s)
    assert one.ttft_s < some.ttft_s < many.ttft_s
    # Little's law still holds: clients = decoding + waiting or in prefill
    assert many.engine is not None
    decoding = many.engine.decode_batch_per_replica
    assert decoding + many.engine.requests_per_s * many.ttft_s == pytest.approx(40, rel=0.01)


def test_the_sustained_rate_limits_compute_bound_serving_ops_only() -> None:
    """A decode of one sequence streams weights (memory-bound: the sustained tensor rate
    changes nothing); a decode of 512 sequences on llama3-70b is compute-bound on an H100
    and runs at the sustained rate like a prefill of as many tokens (a serving step's fp8
    GEMMs on Hopper: ``serving_fp8_sustained_fraction``)."""
    s = _serve(LLAMA70, "fp8")
    plan = Plan(tp=4)
    one = s.serve(plan, batch=1, input_len=512, output_len=2)
    single = s.layer_op_times(plan, batch=1, input_len=512, output_len=2)[1]
    assert all(t.bound != "compute" for t in single if t.op.tensor_op)
    many = s.serve(plan, batch=512, input_len=512, output_len=2)
    ops = s.layer_op_times(plan, batch=512, input_len=512, output_len=2)[1]
    gemms = [t for t in ops if t.op.kind.name == "MATMUL"]
    assert gemms and all(t.bound == "compute" for t in gemms)
    for g in gemms:
        bare = s.model.op_time(g.op)
        f = s.model.serving_sustained_fraction(g.op.dtype)
        assert f == pytest.approx(0.92 if g.op.dtype == "fp8" else 0.711)
        assert g.compute_s == pytest.approx(bare.compute_s / f)
    assert one.tpot_s < many.tpot_s


@pytest.mark.parametrize(
    ("engine", "expected_gb"),
    [
        ("vllm", 0.9 * 80 - 40),  # a share of TOTAL memory, less the rest
        ("sglang", 0.9 * 80 - 40),
        ("trtllm", 0.9 * (80 - 40)),  # a share of the memory FREE after the rest
    ],
)
def test_each_engine_sizes_its_kv_pool_by_its_own_rule(engine: str, expected_gb: float) -> None:
    gb = 1e9
    assert kv_pool_bytes(engine, 80 * gb, 40 * gb) == pytest.approx(expected_gb * gb)


def test_trtllm_holds_more_kv_than_vllm_by_a_tenth_of_what_is_not_kv() -> None:
    s = _serve(LLAMA70, "fp8")
    plan = Plan(tp=2)
    timer = s.engine_timer(plan, "fp8")
    vllm = s.kv_capacity_tokens(plan, "fp8", timer, "vllm")
    trt = s.kv_capacity_tokens(plan, "fp8", timer, "trtllm")
    assert trt > vllm
    # 0.9 (C - N) - (0.9 C - N) = 0.1 N: N is at least the weights (35 GB per chip at TP2)
    assert (trt - vllm) * timer.kv_bytes_per_token() > 0.1 * 35e9


def test_a_kv_bound_closed_loop_waits_less_under_trtllm_sizing() -> None:
    s = _serve(LLAMA70, "fp8")
    runs = {
        e: s.serve_engine(
            Plan(tp=2),
            Inference(
                load="concurrency", concurrency=100, input_len=5000, output_len=500, engine=e
            ),
        )
        for e in ("vllm", "trtllm")
    }
    vllm, trt = runs["vllm"].engine, runs["trtllm"].engine
    assert vllm is not None and trt is not None
    assert trt.kv_capacity_tokens_per_replica > vllm.kv_capacity_tokens_per_replica
    assert trt.decode_batch_per_replica >= vllm.decode_batch_per_replica
    assert trt.ttft_p50_s < vllm.ttft_p50_s
    names = {a.name for a in runs["trtllm"].assumptions}
    assert "kv_cache_free_memory_fraction" in names


def test_an_unknown_engine_is_rejected_naming_the_choices() -> None:
    with pytest.raises(WorkloadError, match="trtllm"):
        Inference(load="max_throughput", engine="tgi")


def test_a_finite_max_throughput_run_never_beats_the_endless_backlog_and_holds_at_most_n() -> None:
    s = _serve()
    plan = Plan()

    def run(n: int) -> InferPrediction:
        return s.serve_engine(
            plan, Inference(load="max_throughput", input_len=128, output_len=2048, num_requests=n)
        )

    endless = run(0)
    assert endless.engine is not None
    cap = endless.engine.decode_batch_per_replica
    few, many = run(int(cap // 2)), run(int(cap * 100))
    assert few.engine is not None and many.engine is not None
    assert few.engine.decode_batch_per_replica <= cap // 2
    rate = endless.engine.output_tokens_per_s
    assert few.engine.output_tokens_per_s < rate
    # 1.5 waves: the half-full last wave costs less than a full one, more than nothing
    one_and_half = run(int(cap * 1.5))
    assert one_and_half.engine is not None
    assert 0.75 * rate < one_and_half.engine.output_tokens_per_s < rate
    assert many.engine.output_tokens_per_s == pytest.approx(rate, rel=0.01)


def test_short_prompts_share_a_step_so_the_prefill_queue_counts_tokens_not_prompts() -> None:
    """A step carries up to ``max_num_tokens`` prompt tokens from as many prompts as fit:
    at 200-token prompts, 20 arrivals per second with 100 ms steps use about half of the
    8k-token prefill room (a queue counting one prompt per step would be at twice its
    capacity, its TTFT unbounded)."""

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del b, ctx, lin
        return 0.08 + 0.02 * chunk / 8192  # 80 ms decode, up to 100 ms with a full chunk

    lens = lengths_of(Inference(input_len=200, output_len=200))
    engine = Engine(step, lens, prefill_tokens_fraction=1.0, max_num_seqs=1024,
                    max_num_tokens=8192, kv_capacity_tokens=1e9)  # fmt: skip
    st = engine.solve("rps", 20.0)
    assert not st.saturated and math.isfinite(st.ttft_p99_s)
    # the wait is a fraction of a step, the prompt's own service one step
    assert st.ttft_p99_s < 3 * st.prefill_s
    # and it still grows with the rate
    assert engine.solve("rps", 40.0).ttft_p99_s > st.ttft_p99_s


def test_a_prompt_bound_closed_loop_runs_at_the_packed_rate_and_keeps_its_clients() -> None:
    """256 clients of 1024-token prompts and one output token each, an 8k-token budget: a
    step packs ~7 prompts beside the sequences finishing in it, so the loop runs ~7 prompts
    a step and every client is waiting or in prefill (Little's law: requests/s x mean TTFT
    = 256). A balance that let each prompt hold the prefill slot for its whole service
    (one prompt a step) solved ~1 prompt a step and a TTFT that held 1.7 of the 256 clients
    (the sglang-jax Qwen3 vLLM rows at OSL 1, SVP-022/028/034: TTFT -87..-89 %)."""

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del b, ctx, lin
        return 0.01 + 0.04 * chunk / 8192  # 10 ms decode, up to 50 ms with a full chunk

    lens = lengths_of(Inference(input_len=1024, output_len=1))
    engine = Engine(step, lens, prefill_tokens_fraction=1.0, max_num_seqs=256,
                    max_num_tokens=8192, kv_capacity_tokens=1e9)  # fmt: skip
    state = engine.solve("concurrency", 256.0)
    assert state.requests_per_s * state.rate.step_s > 6.0  # prompts a step
    assert state.requests_per_s * state.ttft_mean_s == pytest.approx(256, rel=0.01)


@settings(max_examples=40, deadline=None)
@given(
    clients=st.integers(2, 1024),
    input_len=st.integers(1, 8192),
    output_len=st.integers(1, 2048),
    spread=st.sampled_from([0.0, 0.5]),
    budget=st.sampled_from([2048, 8192, 16384]),
    max_num_seqs=st.sampled_from([16, 256, 1024]),
    per_seq=st.floats(0.0, 2e-4),
    per_token=st.floats(1e-6, 2e-5),
    client_s=st.sampled_from([0.0, 0.01]),
    ahead=st.sampled_from([0.0, 1.0]),
)
def test_a_closed_loop_holds_its_clients_at_the_solved_rate(
    clients: int, input_len: int, output_len: int, spread: float, budget: int,
    max_num_seqs: int, per_seq: float, per_token: float, client_s: float, ahead: float,
) -> None:  # fmt: skip
    """Little's law over a closed loop of N clients with no think time: each client's
    request is somewhere between its send and its last token, TTFT (with the server's own
    latency) then ``L_out - 1`` tokens a TPOT each, so X (TTFT + (L_out - 1) TPOT) = N at
    the solved rate X, below the engine's limits (the prefill slot's wait) or at them (the
    queue for a slot), whatever the lengths, budget and step costs."""

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del ctx, lin
        return 0.005 + per_seq * b + per_token * chunk

    phase = Inference(input_len=input_len, output_len=output_len, input_len_std=spread *
                      input_len, output_len_std=spread * output_len)  # fmt: skip
    lens = lengths_of(phase)
    engine = Engine(step, lens, prefill_tokens_fraction=1.0, max_num_seqs=max_num_seqs,
                    max_num_tokens=budget, kv_capacity_tokens=1e9, client_s=client_s,
                    launched_ahead=ahead)  # fmt: skip
    # a prompt longer than a whole budget per output step leaves no batch to solve for
    assume(engine.max_seqs >= 1)
    state = engine.solve("concurrency", float(clients))
    # the balance holds the decode batch at one sequence or more (``Engine.rate``): a loop of
    # a few clients whose requests are all prompt (OSL 1-2) solves below that, not modelled
    assume(state.rate.b > 1.0)
    cycle = state.ttft_mean_s + (lens.mean_out - 1.0) * state.tpot_mean_s
    assert state.requests_per_s * cycle == pytest.approx(clients, rel=0.01)


def test_an_arrival_waits_out_the_running_step_before_its_prompt_joins() -> None:
    """A busy engine admits a new prompt at the next step boundary: TTFT p50 >= service +
    ~half a step, p99 >= service + ~a whole step; one client of a closed loop finds the
    engine idle and pays the service only."""

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del b, ctx, lin
        return 0.1 + 0.02 * chunk / 8192  # 100 ms steps

    lens = lengths_of(Inference(input_len=200, output_len=200))
    engine = Engine(step, lens, prefill_tokens_fraction=1.0, max_num_seqs=1024,
                    max_num_tokens=8192, kv_capacity_tokens=1e9)  # fmt: skip
    for state in (engine.solve("concurrency", 64), engine.solve("rps", 20.0)):
        assert state.ttft_p50_s >= state.prefill_s + 0.045
        assert state.ttft_p99_s >= state.prefill_s + 0.09
        assert state.ttft_mean_s >= state.prefill_s + 0.05 - 1e-9
    one = engine.solve("concurrency", 1)
    assert one.ttft_p50_s == pytest.approx(one.prefill_s, rel=1e-6)


def test_a_prompt_behind_a_launched_step_waits_it_out_too() -> None:
    """An overlap scheduler (SGLang's event_loop_overlap) receives a prompt after it has
    launched the next batch: a busy engine's prompt waits the rest of the running step and
    then one whole step more (mean, p50 and p99 all one step later); a lone client finds the
    engine idle and pays its prefill only."""

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del b, ctx, lin
        return 0.1 + 0.02 * chunk / 8192  # 100 ms steps

    lens = lengths_of(Inference(input_len=200, output_len=200))
    kw = {"prefill_tokens_fraction": 1.0, "max_num_seqs": 1024, "max_num_tokens": 8192,
          "kv_capacity_tokens": 1e9}  # fmt: skip
    plain = Engine(step, lens, **kw)  # type: ignore[arg-type]
    ahead = Engine(step, lens, launched_ahead=1.0, **kw)  # type: ignore[arg-type]
    a, p = ahead.solve("rps", 2.0), plain.solve("rps", 2.0)
    for x, y in ((a.ttft_mean_s, p.ttft_mean_s), (a.ttft_p50_s, p.ttft_p50_s)):
        assert x - y == pytest.approx(min(1.0, 2.0 * (p.prefill_s + 200 * 0.1)) * 0.1, rel=0.05)
    assert a.ttft_p99_s > p.ttft_p99_s
    c_a, c_p = ahead.solve("concurrency", 8), plain.solve("concurrency", 8)
    assert c_a.ttft_p50_s - c_p.ttft_p50_s == pytest.approx(0.1, rel=0.1)
    assert c_a.requests_per_s < c_p.requests_per_s  # the clients wait longer per request
    one = ahead.solve("concurrency", 1)
    assert one.ttft_p50_s == pytest.approx(one.prefill_s, rel=1e-6)


def test_a_server_load_on_vllm_may_raise_the_batch_limit_as_submitters_do() -> None:
    """An MLPerf-style server load chooses vLLM's batch limit (256 or 2048), so a loose
    TPOT target is met at more requests/s than the default limit allows; a stated
    max_num_seqs is kept."""
    kw = {"input_len": 256, "output_len": 256, "load": "server", "tpot_p99_s": 0.2}
    tuned = predict(Workload(model=LLAMA8, phase=Inference(**kw)), H100, 1, "fp8")  # type: ignore[arg-type]
    fixed = predict(
        Workload(model=LLAMA8, phase=Inference(max_num_seqs=256, **kw)),  # type: ignore[arg-type]
        H100, 1, "fp8",
    )  # fmt: skip
    assert isinstance(tuned, InferPrediction) and isinstance(fixed, InferPrediction)
    assert fixed.engine is not None and fixed.engine.decode_batch_per_replica <= 256
    assert tuned.output_tokens_per_s > 1.1 * fixed.output_tokens_per_s


def test_a_server_load_weighs_the_engines_own_limit_on_this_chip(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unstated max_num_seqs: the server search tries the engine's default on this chip and
    release (vLLM V1 on an 80 GB H100: 1024, on an L4: 256) beside the tuned 2048."""
    import chipwise.perf.predictor as predictor_module

    tried: list[int] = []
    real = predictor_module.plan_slo

    def spy(model, phase, **kw):  # type: ignore[no-untyped-def]
        tried.append(phase.max_num_seqs)
        return real(model, phase, **kw)

    monkeypatch.setattr(predictor_module, "plan_slo", spy)
    kw = {"input_len": 256, "output_len": 256, "load": "server", "tpot_p99_s": 0.2}
    for c, default in ((H100, 1024), (chip("l4"), 256)):
        tried.clear()
        predict(Workload(model=LLAMA8, phase=Inference(**kw)), c, 1, "fp8")  # type: ignore[arg-type]
        assert sorted(tried) == [default, 2048]


def test_a_finite_closed_loop_run_adds_its_first_wave_to_mean_and_p99_ttft() -> None:
    """Every client of a finite closed-loop run sends its first request at once: the last
    of that wave waits for all the others' prefill, which lifts the run's mean and p99 TTFT
    (SVT-002/004's p99 of 2.5 s / 8.3 s) but not its throughput or median."""
    s = _serve(LLAMA70)
    base = dict(load="concurrency", concurrency=64, input_len=1000, output_len=1000,
                max_num_tokens=512)  # fmt: skip
    endless = s.serve_engine(Plan(tp=4), Inference(**base))  # type: ignore[arg-type]
    run = s.serve_engine(Plan(tp=4), Inference(**base, num_requests=3000))  # type: ignore[arg-type]
    short = s.serve_engine(Plan(tp=4), Inference(**base, num_requests=640))  # type: ignore[arg-type]
    assert endless.engine is not None and run.engine is not None and short.engine is not None
    assert run.output_tokens_per_s == pytest.approx(endless.output_tokens_per_s)
    assert run.ttft_s > endless.ttft_s
    assert short.ttft_s > run.ttft_s  # the wave is a larger share of a shorter run
    # the wave's last prompt waits for 63 prompts of 1000 tokens at < 512 tokens a step
    assert run.engine.ttft_p99_s > 64 * 1000 / 512 * endless.tpot_s * 0.5
    assert run.engine.ttft_p50_s == pytest.approx(endless.engine.ttft_p50_s, rel=0.05)


@pytest.mark.parametrize("input_len", [16, 512])
def test_one_more_sequence_never_makes_a_static_decode_step_faster(input_len: int) -> None:
    # every batch from 1 to 400: where a GEMM turns compute-bound at the sustained tensor
    # rate its time must not jump (testing the unthrottled compute made b=270 10 % faster
    # than b=269); the kernel choice may move a tile by well under 1 %
    s = _serve()
    tpots = [s.serve(Plan(), batch=b, input_len=input_len, output_len=256).tpot_s
             for b in range(1, 401)]  # fmt: skip
    assert all(later >= earlier * 0.999 for earlier, later in itertools.pairwise(tpots))


def test_a_finite_backlog_counts_each_requests_wait_for_a_slot_in_its_ttft() -> None:
    """``vllm bench serve`` at request rate inf queues every request at once and times each
    from the start: a request beyond the running batch waits for slots to free, so a run of
    three batches' worth has a median TTFT of about one wave and a p99 of about two (the
    simulated run: vLLM admits on its prompts' blocks and preempts when the cache fills, so
    the waves blur), while an endless backlog reports the prefill service only."""
    s = _serve()

    def run(n: int) -> InferPrediction:
        return s.serve_engine(
            Plan(), Inference(load="max_throughput", input_len=512, output_len=256, num_requests=n)
        )

    endless = run(0)
    assert endless.engine is not None
    b = int(endless.engine.decode_batch_per_replica)
    three = run(3 * b)
    assert three.engine is not None
    wave_s = b / three.engine.requests_per_s
    assert 0.75 * wave_s < three.engine.ttft_p50_s < 1.5 * wave_s
    assert 1.5 * wave_s < three.engine.ttft_p99_s < 3 * wave_s  # the run lasts 3 waves
    assert endless.engine.ttft_p99_s < 0.1 * wave_s
    # more requests never shorten the wait; one batch's worth waits for prefill only
    assert run(6 * b).ttft_s > three.ttft_s
    assert run(b).engine.ttft_p99_s < wave_s  # type: ignore[union-attr]


GIB = 2**30


@pytest.mark.parametrize(
    ("engine", "load", "gib", "chip_id", "date", "seqs", "tokens"),
    [
        # vLLM V0 (before v0.8.0): 256 on every GPU, whatever the load
        ("vllm", "max_throughput", 192, "mi300x", "2024-10-10", 256, 8192),
        ("vllm", "rps", 80, "h100-sxm", "2025-02", 256, 8192),
        # V1, PR #12369: H100/H200 by name only
        ("vllm", "max_throughput", 80, "h100-sxm", "2025-04-01", 1024, 16384),
        ("vllm", "rps", 141, "h200-sxm", "2025-04-01", 1024, 8192),
        ("vllm", "max_throughput", 192, "mi300x", "2025-04-01", 256, 8192),
        ("vllm", "rps", 192, "mi300x", "2025-04-01", 256, 2048),
        # PR #17073: by memory (>= 70 GiB), A100-80GB included until PR #17885
        ("vllm", "rps", 192, "mi300x", "2025-04-30", 1024, 8192),
        ("vllm", "rps", 80, "a100-sxm-80gb", "2025-04-30", 1024, 8192),
        ("vllm", "rps", 80, "a100-sxm-80gb", "2025-06", 256, 2048),
        ("vllm", "concurrency", 24, "l4", "", 256, 2048),
        # v0.28.0: >= 160 GiB, 16384 tokens online too
        ("vllm", "rps", 192, "b200", "2026-07", 1024, 8192),
        ("vllm", "rps", 192, "b200", "", 1024, 16384),
        ("vllm", "rps", 141, "h200-sxm", "", 1024, 8192),
        # other engines: their own limits, whatever the date
        ("trtllm", "rps", 80, "h100-sxm", "2024-01", 2048, 8192),
        ("sglang", "concurrency", 80, "h100-sxm", "", 2048, 8192),
    ],
)
def test_engine_batch_defaults_follow_the_engine_release_and_the_gpu(
    engine: str, load: str, gib: float, chip_id: str, date: str, seqs: int, tokens: int
) -> None:
    got = engine_batch_defaults(
        engine, load=load, hbm_bytes=gib * GIB, chip_id=chip_id, kind="gpu", date=date
    )
    assert got == BatchDefaults(seqs, tokens)


def test_vllm_on_tpu_and_without_a_chip_keeps_256() -> None:
    tpu = engine_batch_defaults("vllm", hbm_bytes=192 * GIB, chip_id="tpu-v7", kind="tpu")
    assert tpu.max_num_seqs == MAX_NUM_SEQS_DEFAULT
    assert engine_batch_defaults("vllm").max_num_seqs == MAX_NUM_SEQS_DEFAULT
    assert engine_batch_defaults("trtllm").max_num_seqs == 2048


def test_the_engine_release_sets_how_many_sequences_a_backlog_runs() -> None:
    """benchmark_throughput with vLLM's defaults: 256 sequences on V0 (2024), 1024 on an
    H100 since V1; the KV cache of llama3-8b holds more than 256 at these lengths."""
    s = _serve()
    kw = {"load": "max_throughput", "input_len": 128, "output_len": 128}
    old = s.serve_engine(Plan(), Inference(engine_date="2024-10-10", **kw))
    new = s.serve_engine(Plan(), Inference(**kw))
    assert old.engine is not None and new.engine is not None
    assert old.engine.decode_batch_per_replica == MAX_NUM_SEQS_DEFAULT
    assert new.engine.decode_batch_per_replica > MAX_NUM_SEQS_DEFAULT
    assert new.output_tokens_per_s > old.output_tokens_per_s


@pytest.mark.parametrize("text", ["v0.6.3", "2025-13", "2025-02-30", "2025-1-05"])
def test_an_engine_date_must_be_a_date(text: str) -> None:
    with pytest.raises(WorkloadError, match="engine_date"):
        Inference(load="max_throughput", engine_date=text)
    assert Inference(load="max_throughput", engine_date="2024-02-29").engine_date


def test_a_harness_window_bunches_arrivals_into_longer_ttft_and_a_tpot_tail() -> None:
    """AMD's MLPerf Server harness holds arrivals for up to 0.3 s and hands each bunch to
    one engine in turn: a request waits out the rest of the window and its whole bunch's
    prefill (SVM-003's p50 TTFT of 0.99 s on 8 engines), and the bunch's prefill step
    stalls decoding, so p99 TPOT sits above the median."""
    s = _serve(LLAMA70, "fp8", chip("mi300x"))
    base = {"load": "rps", "input_len": 222, "output_len": 294, "input_len_std": 170.0,
            "engine": "vllm", "max_num_seqs": 1024, "max_num_tokens": 49152}  # fmt: skip
    plain = s.serve_engine(Plan(dp=8), Inference(rps=60.0, **base))  # type: ignore[arg-type]
    held = s.serve_engine(Plan(dp=8), Inference(rps=60.0, harness="amd-mlperf-batcher", **base))  # type: ignore[arg-type]
    one = s.serve_engine(Plan(dp=1), Inference(rps=7.5, harness="amd-mlperf-batcher", **base))  # type: ignore[arg-type]
    for p in (plain, held, one):
        assert p.engine is not None and not p.engine.saturated
    assert held.engine is not None and plain.engine is not None and one.engine is not None
    # the window's own wait: 0.15 s on average, up to 0.3 s
    assert held.engine.ttft_p50_s > plain.engine.ttft_p50_s + 0.1
    assert held.engine.ttft_p99_s > plain.engine.ttft_p99_s + 0.25
    # eight engines share the harness: each bunch is eight times larger than with one
    assert held.engine.ttft_p50_s > one.engine.ttft_p50_s
    assert held.engine.tpot_p99_s > 1.05 * held.engine.tpot_p50_s
    # the same requests are served: the window moves latency, not the rate
    assert held.output_tokens_per_s == pytest.approx(plain.output_tokens_per_s, rel=1e-6)


def _gated_load(s: ServeModel, rps: float, harness: str, **limits: int) -> InferPrediction:
    phase = Inference(load="rps", rps=rps, input_len=222, output_len=294, input_len_std=170.0,
                      engine="vllm", harness=harness, **limits)  # fmt: skip
    return s.serve_engine(Plan(dp=1), phase)


def test_an_admission_gate_holds_prompts_for_the_rest_of_its_cycle() -> None:
    """AMD's MLPerf v6.0 Interactive vLLM admits waiting prompts only every 7th step: a
    request waits out the rest of that cycle (3.5 steps on average, up to 7) before the
    step that prefills it with all the prompts that came during the cycle (SVR-025's p50
    TTFT of 228 ms at a 36 ms TPOT), and that step stalls decoding once every 7."""
    s = _serve(LLAMA70, "fp8", chip("mi300x"))
    limits = {"max_num_seqs": 4096, "max_num_tokens": 8192}
    plain = _gated_load(s, 4.0, "", **limits)
    gated = _gated_load(s, 4.0, "amd-mlperf-v6.0-interactive", **limits)
    assert plain.engine is not None and gated.engine is not None
    assert not gated.engine.saturated
    step = gated.tpot_s
    assert gated.engine.ttft_p50_s > plain.engine.ttft_p50_s + 2.5 * step
    assert gated.engine.ttft_p99_s > plain.engine.ttft_p99_s + 5.0 * step
    assert gated.engine.ttft_p99_s < plain.engine.ttft_p99_s + 7.0 * step + 1.0
    # a chunked step once every 7: the tail of TPOT over its median
    assert gated.engine.tpot_p99_s > gated.engine.tpot_p50_s
    # the gate moves latency, not the served rate
    assert gated.output_tokens_per_s == pytest.approx(plain.output_tokens_per_s, rel=1e-6)


def test_an_admission_gate_opens_below_its_running_threshold() -> None:
    """The v6.0 Server gate holds prompts only while 1216+ requests run: a lighter load
    sees the plain engine's TTFT."""
    s = _serve(LLAMA70, "fp8", chip("mi300x"))
    limits = {"max_num_seqs": 3096, "max_num_tokens": 40960}
    plain = _gated_load(s, 2.0, "", **limits)
    light = _gated_load(s, 2.0, "amd-mlperf-v6.0-server", **limits)
    assert plain.engine is not None and light.engine is not None
    assert light.engine.decode_batch_per_replica < 1216
    assert light.engine.ttft_p99_s == pytest.approx(plain.engine.ttft_p99_s, rel=1e-9)


@settings(max_examples=10, deadline=None)
@given(rps=st.floats(0.5, 6.0))
def test_a_longer_admission_cycle_never_shortens_ttft(rps: float) -> None:
    s = _serve(LLAMA70, "fp8", chip("mi300x"))
    limits = {"max_num_seqs": 4096, "max_num_tokens": 8192}
    seven = _gated_load(s, rps, "amd-mlperf-v6.0-interactive", **limits)
    eight = _gated_load(s, rps, "amd-mlperf-v5.1-interactive", **limits)
    nine = _gated_load(s, rps, "amd-mlperf-v5.1-server", **limits)
    assert seven.engine is not None and eight.engine is not None and nine.engine is not None
    assert eight.engine.ttft_p50_s >= seven.engine.ttft_p50_s
    assert eight.engine.ttft_p99_s >= seven.engine.ttft_p99_s
    assert nine.engine.ttft_p99_s >= eight.engine.ttft_p99_s


def test_an_unknown_harness_is_refused() -> None:
    with pytest.raises(WorkloadError, match="harness"):
        Inference(load="rps", rps=1.0, harness="batcher")


def test_a_pooled_prefill_queue_of_one_server_is_pollaczek_khinchine() -> None:
    from chipwise.perf.step.engine import _pooled_wait

    rate, es, es2 = 0.6, 1.0, 1.5
    p_wait, wait = _pooled_wait(rate, es, es2, 1.0)
    assert p_wait == pytest.approx(0.6)
    assert wait == pytest.approx(rate * es2 / (2 * (1 - 0.6)))


@pytest.mark.parametrize("servers", [2.0, 5.2, 26.0])
def test_a_pooled_prefill_queue_waits_less_than_split_queues_at_the_same_load(
    servers: float,
) -> None:
    from chipwise.perf.step.engine import _pooled_wait

    es, es2 = 1.0, 1.2
    per_server = 0.8
    p_wait, wait = _pooled_wait(per_server * servers, es, es2, servers)
    split = per_server * es2 / (2 * (1 - per_server))  # each server its own M/G/1
    assert 0 < p_wait < per_server
    assert 0 < wait < split


def test_a_prompt_s_last_chunk_costs_a_step_of_its_own_tokens() -> None:
    from chipwise.perf.step.engine import _chunked_prefill_s

    def step(dec: float, ctx: float, pre: float, plen: float) -> float:
        return 0.01 + pre * 1e-4

    # 9429 tokens in 4096-token chunks: two full steps and one of 1237 tokens
    t = _chunked_prefill_s(step, 0.0, 0.0, 9429.0, 4096.0)
    assert t == pytest.approx(2 * step(0, 0, 4096, 0) + step(0, 0, 1237, 0))
    assert _chunked_prefill_s(step, 0.0, 0.0, 4096.0, 4096.0) == pytest.approx(step(0, 0, 4096, 0))
    assert _chunked_prefill_s(step, 0.0, 0.0, 100.0, 4096.0) == pytest.approx(step(0, 0, 100, 0))


def _context_engine(rps: float) -> tuple[Engine, float]:
    """A disaggregated replica whose prefill steps cost 20 ms + 50 us a prompt token (no
    decode), fed 500-token prompts; returns it and the prefill replica's prompts/s."""

    def step(decode: float, context: float, prefill: float, prompt_len: float) -> float:
        del context, prompt_len
        return 0.020 + 50e-6 * prefill + 1e-4 * decode

    lens = lengths_of(Inference(input_len=500, output_len=100))
    engine = Engine(step, lens, prefill_tokens_fraction=1.0, max_num_seqs=256,
                    max_num_tokens=8192, kv_capacity_tokens=1e9, disaggregated=True,
                    prefill_replicas_per_decode=1.0)  # fmt: skip
    return engine, rps


def test_a_busy_context_replica_steps_back_to_back_each_step_taking_the_last_ones_arrivals() -> (
    None
):
    """A context-only replica packs the prompts that arrived during its running step into
    the next: with t(n) = a + s n and lam prompts/s of L tokens, T = a / (1 - lam s L)
    once lam T >= 1; below that a step is one prompt's."""
    engine, _ = _context_engine(1.0)
    alone = 0.020 + 50e-6 * 500
    assert engine.context_cycle_s(0.5) == pytest.approx(alone)
    for lam in (30.0, 35.0, 38.0):  # lam s L = 0.75 .. 0.95 of the replica
        assert engine.context_cycle_s(lam) == pytest.approx(0.020 / (1 - lam * 50e-6 * 500),
                                                            rel=1e-2)  # fmt: skip
    # never more than a full budget's step
    assert engine.context_cycle_s(1e4) == pytest.approx(0.020 + 50e-6 * 8192)


def test_a_disaggregated_prompt_waits_out_the_running_context_step_and_shares_the_next() -> None:
    """TTFT at a busy prefill replica: the rest of the running step (uniform on [0, T])
    plus the step that carries the prompt beside the others that arrived meanwhile,
    above the prompt alone, and rising with the load."""
    engine, _ = _context_engine(1.0)
    alone = 0.020 + 50e-6 * 500
    lam = 30.0
    cycle = 0.020 / (1 - lam * 50e-6 * 500)
    state = engine.solve("rps", lam)
    assert not state.saturated
    # the median: half the running step plus its own step, which carries the last
    # step's arrivals (a cycle's tokens) and this prompt
    assert state.ttft_p50_s == pytest.approx(1.5 * cycle + 50e-6 * 500, rel=0.1)
    assert state.ttft_p50_s > 2 * alone
    assert engine.solve("rps", 1.0).ttft_p50_s < state.ttft_p50_s


def _step_level_ttfts(engine: Engine, b: float, rps: float, steps: int, seed: int) -> list[float]:
    """TTFTs of a discrete-event run of ``engine``'s steps at a fixed decode batch ``b``:
    Poisson arrivals at ``rps``, each step admitting the waiting prompts first come first
    served up to the budget's room beside the decodes (chunking the one that does not fit),
    lasting ``engine.step`` of what it carries; a prompt's first token comes when the step
    holding its last chunk ends. Under an overlapping loop (``engine.ahead``, one step) a
    prompt that arrives during step k joins step k + 2, the next one being launched already."""
    rng = np.random.default_rng(seed)
    lens = engine.lengths
    p = lens.weights / lens.weights.sum()
    room = max(1.0, engine.budget - b)
    now, last, queue, out = 0.0, engine.rate(b).step_s, [], []
    pending: list[list[float]] = []
    for _ in range(steps):
        n = int(rng.poisson(rps * last))
        arrivals = now - last + np.sort(rng.random(n)) * last
        new = [
            [a, float(t)] for a, t in zip(arrivals, rng.choice(lens.inputs, n, p=p), strict=True)
        ]
        if engine.ahead >= 1.0:
            queue, pending = queue + pending, new
        else:
            queue += new
        left, done = room, []
        for item in queue:
            if left < 0.5:
                break
            take = min(left, item[1])
            item[1] -= take
            left -= take
            if item[1] < 0.5:
                done.append(item[0])
        last = engine.step(b, engine.ctx, max(1.0, room - left), engine.l_in)
        now += last
        out += [now - a for a in done]
        queue = [item for item in queue if item[1] >= 0.5]
    return out[len(out) // 10 :]


@pytest.mark.parametrize("rps", [10.0, 30.0])
def test_open_loop_ttft_percentiles_agree_with_a_step_level_simulation(
    rps: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each step admits every prompt that arrived during the one before: a prompt's step
    # also carries the others of its window (Poisson count, spread lengths), so its TTFT
    # tail is the window's, not its own prompt's alone - at low utilisation as at high.
    seen: dict[str, Engine] = {}
    state = Engine._state

    def spy(self: Engine, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen["engine"] = self
        return state(self, *args, **kwargs)

    monkeypatch.setattr(Engine, "_state", spy)
    phase = Inference(load="rps", rps=rps, input_len=512, output_len=256, input_len_std=400,
                      max_num_tokens=4096)  # fmt: skip
    pred = _serve().serve_engine(Plan(), phase)
    eng = pred.engine
    assert eng is not None and not eng.saturated
    engine = seen["engine"]
    sim = np.quantile(
        _step_level_ttfts(engine, eng.decode_batch_per_replica, rps, 20_000, seed=7), (0.5, 0.99)
    )
    assert eng.ttft_p50_s == pytest.approx(sim[0], rel=0.15)
    assert eng.ttft_p99_s == pytest.approx(sim[1], rel=0.15)


def test_the_open_loop_wait_distribution_is_m_m_1s_for_exponential_work() -> None:
    """``_mg1_wait_cdf`` (Pollaczek-Khinchine in Benes' form, by FFT) against M/M/1's closed
    form P(W > t) = rho exp(-(1 - rho) t / E[S]): its quantiles within 1 %."""
    work = np.linspace(0.005, 14.0, 2800)
    w = np.exp(-work)
    w /= w.sum()
    es = float(w @ work)
    for rho in (0.3, 0.7, 0.9):
        grid, cdf = _mg1_wait_cdf(work, w, rho)
        for q in (0.9, 0.99):
            exact = es / (1 - rho) * math.log(rho / (1 - q))
            got = float(np.interp(q, cdf, grid))
            assert got == pytest.approx(exact, rel=0.01)


def test_the_open_loop_wait_has_its_pollaczek_khinchine_mean_and_a_lighter_tail() -> None:
    """Fixed work (M/D/1): the wait's mean is Pollaczek-Khinchine's rho D / (2 (1 - rho)),
    and its p99 sits below the exponential of that mean (the old Kingman form: 6.0 D at
    rho 0.65; M/D/1's is 5.4 D), so an open loop's p99 TTFT does too."""
    work, w = np.array([1.0]), np.array([1.0])
    for rho in (0.3, 0.65, 0.9):
        grid, cdf = _mg1_wait_cdf(work, w, rho)
        mean = float(np.diff(np.concatenate(([0.0], cdf))) @ grid)
        assert mean == pytest.approx(rho / (2 * (1 - rho)), rel=0.005)
        p99 = float(np.interp(0.99, cdf, grid))
        kingman = 1 / (2 * (1 - rho)) * math.log(rho / 0.01)
        assert p99 < kingman
    service, sw = np.array([0.5, 1.0]), np.array([0.5, 0.5])
    grid, cdf = _mg1_wait_cdf(work, w, 0.65)
    p50, p99 = _mg1_quantiles(service, sw, grid, cdf, (0.5, 0.99))
    assert 0.5 <= p50 < p99 < 1.0 + 6.0


@pytest.mark.parametrize(("servers", "offered"), [(1, 0.6), (10, 8.0), (100, 95.0), (896, 876.0)])
def test_erlang_c_in_closed_form_matches_the_erlang_b_recursion(
    servers: int, offered: float
) -> None:
    from chipwise.perf.step.engine import _erlang_c, _erlang_c_large

    assert _erlang_c_large(servers, offered) == pytest.approx(_erlang_c(servers, offered), rel=1e-9)


def test_erlang_c_of_a_million_slots_is_bounded_work() -> None:
    """A user-sized slot count (max_num_seqs up to MAX_SERVE_BATCH) costs ~20 sqrt(c)
    terms, not c: a million slots 1000 erlangs short of full answers at once."""
    import time

    from chipwise.limits import MAX_SERVE_BATCH
    from chipwise.perf.step.engine import _erlang_c_large

    start = time.perf_counter()
    p = _erlang_c_large(MAX_SERVE_BATCH, MAX_SERVE_BATCH - 1000.0)
    assert 0.0 < p < 1.0
    assert _erlang_c_large(MAX_SERVE_BATCH, MAX_SERVE_BATCH / 2) == 0.0
    assert time.perf_counter() - start < 1.0


def test_a_slot_wait_alone_is_m_m_c_s_exponential_tail() -> None:
    """With no prefill and no prefill queue, P(V > t) = C exp(-t / theta): the p99 is
    theta ln(C / 0.01)."""
    from chipwise.perf.step.engine import _bisect_quantiles, _slot_tail

    c, theta = 0.4, 2.0
    tail = _slot_tail(np.zeros(1), np.ones(1), 0.0, 0.0, c, theta)
    (p99,) = _bisect_quantiles(tail, tail.top, (0.99,))
    assert p99 == pytest.approx(theta * math.log(c / 0.01), rel=1e-6)


def test_a_slot_wait_on_a_prefill_queue_is_their_hypoexponential_sum() -> None:
    """Both waits certain (rho = C = 1): W + V is hypoexponential, whose tail is
    (a e^(-t/a) - b e^(-t/b)) / (a - b); the grid form of the prefill wait agrees."""
    from chipwise.perf.step.engine import _slot_tail, _slot_tail_grid

    a, b, t = 0.3, 2.0, 1.7
    closed = (a * math.exp(-t / a) - b * math.exp(-t / b)) / (a - b)
    tail = _slot_tail(np.zeros(1), np.ones(1), 1.0, a, 1.0, b)
    assert tail(t) == pytest.approx(closed, rel=1e-9)
    grid = np.linspace(0.0, 20.0, 200001)
    cdf = 1.0 - np.exp(-grid / a)
    on_grid = _slot_tail_grid(np.zeros(1), np.ones(1), grid, cdf, 1.0, b)
    assert on_grid(t) == pytest.approx(closed, rel=2e-3)


def test_an_open_loop_near_its_slot_limit_waits_for_slots() -> None:
    """Poisson arrivals whose running batch nears max_num_seqs queue for a slot: TTFT p99
    grows steeply over the last few percent of the rate (MLPerf v6.0 B300 gpt-oss-120b:
    0.32 s at 79.26 requests/s, 2.52 s at 88.45, SVM-190/194), while a light load is
    untouched (its chance to wait is below _SLOT_WAIT_FLOOR)."""
    s = _serve(LLAMA70, "fp8", chip("h100-sxm"))
    plan = Plan(tp=8)
    limits = {"max_num_seqs": 64, "max_num_tokens": 8192}
    top = s.serve_engine(plan, Inference(input_len=512, output_len=256, load="max_throughput",
                                         **limits))  # fmt: skip
    assert top.engine is not None
    cap = top.engine.requests_per_s
    ttfts, plain = [], []
    for share in (0.3, 0.9, 0.97):
        load = Inference(input_len=512, output_len=256, load="rps", rps=share * cap, **limits)
        pred = s.serve_engine(plan, load, slot_queue=True)
        without = s.serve_engine(plan, load)
        assert pred.engine is not None and not pred.engine.saturated
        assert without.engine is not None
        ttfts.append(pred.engine.ttft_p99_s)
        plain.append(without.engine.ttft_p99_s)
    assert ttfts[0] < ttfts[1] < ttfts[2]
    assert ttfts[2] > 3 * ttfts[0]
    assert ttfts[0] == pytest.approx(plain[0], rel=1e-12)  # a light load never waits
    assert ttfts[2] > 2 * plain[2]


def test_a_request_holds_its_slot_from_its_prompt_step_to_its_last_token() -> None:
    """The slot wait's offered erlangs are the running set by Little's law: arrivals x the
    time a request holds a sequence slot, its prefill (whose last step gives the first
    token) then ``L_out - 1`` decode steps, as in the closed loop's cycle; with ``L_out``
    steps after the prefill, a short answer (OSL 4 here) held a slot a step too long and the
    Erlang C wait near the limit came early."""
    from chipwise.perf.step.engine import _erlang_c_large

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del b, ctx, lin
        return 0.01 + 0.04 * chunk / 8192

    lens = lengths_of(Inference(input_len=512, output_len=4))
    kw = dict(prefill_tokens_fraction=1.0, max_num_seqs=16, max_num_tokens=8192,
              kv_capacity_tokens=1e9)  # fmt: skip
    x = 150.0
    plain = Engine(step, lens, **kw).solve("rps", x)
    slots = Engine(step, lens, slot_queue=True, **kw).solve("rps", x)
    assert not slots.saturated
    servers = math.floor(slots.max_seqs)
    hold = slots.prefill_s + (4 - 1) * slots.rate.step_s
    offered = x * hold
    assert 0.5 * servers < offered < servers
    # one output length: the holding time's Cs^2 is 0
    wait = _erlang_c_large(servers, offered) * hold / 2 / (servers - offered)
    assert slots.ttft_mean_s - plain.ttft_mean_s == pytest.approx(wait, rel=1e-9)


def test_least_loaded_dispatch_pools_the_prefill_queue_over_the_replicas() -> None:
    """One dispatcher sending each arrival to the replica with the fewest requests in flight
    (NVIDIA's MLPerf harness in the Server scenario) queues prompts at one M/G/c pool: p99
    TTFT falls against c split Poisson queues at the same rate; decode is untouched, and one
    replica has nothing to pool."""
    s = _serve(LLAMA8, "bf16")
    load = Inference(input_len=2048, output_len=256, load="rps", rps=8 * 6.0)
    split = s.serve_engine(Plan(dp=8, tp=1), load)
    pooled = s.serve_engine(Plan(dp=8, tp=1), load, least_loaded=True)
    assert split.engine is not None and pooled.engine is not None
    assert pooled.engine.ttft_p99_s < 0.9 * split.engine.ttft_p99_s
    assert pooled.engine.tpot_p99_s == split.engine.tpot_p99_s
    assert pooled.output_tokens_per_s == pytest.approx(split.output_tokens_per_s)
    one = Inference(input_len=2048, output_len=256, load="rps", rps=6.0)
    alone = s.serve_engine(Plan(dp=1, tp=1), one)
    alone_ll = s.serve_engine(Plan(dp=1, tp=1), one, least_loaded=True)
    assert alone.engine is not None and alone_ll.engine is not None
    assert alone_ll.engine.ttft_p99_s == alone.engine.ttft_p99_s


def test_a_tensorrt_llm_server_run_is_timed_with_least_loaded_dispatch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A TensorRT-LLM MLPerf Server load (NVIDIA's harness) is timed at the searched rate with
    its queries sent to the least-loaded instance; the rate (tokens/s) is the search's."""
    import chipwise.perf.predictor as predictor

    kw = {"input_len": 2048, "output_len": 256, "load": "server", "tpot_p99_s": 0.05,
          "ttft_p99_s": 2.0, "engine": "trtllm"}  # fmt: skip
    wl = Workload(model=LLAMA8, phase=Inference(**kw))  # type: ignore[arg-type]
    pooled = predict(wl, H100, 8, "bf16", plan_keys={"tp": 1})
    monkeypatch.setattr(predictor, "LEAST_LOADED_SERVER_ENGINES", frozenset())
    split = predict(wl, H100, 8, "bf16", plan_keys={"tp": 1})
    assert isinstance(pooled, InferPrediction) and pooled.engine is not None
    assert isinstance(split, InferPrediction) and split.engine is not None
    assert pooled.output_tokens_per_s == pytest.approx(split.output_tokens_per_s)
    assert pooled.engine.ttft_p99_s < split.engine.ttft_p99_s


@settings(max_examples=200, deadline=None)
@given(
    points=st.lists(st.integers(0, 30), min_size=1, max_size=40),
    weights=st.lists(st.integers(0, 5), min_size=40, max_size=40),
    q=st.sampled_from([0.5, 0.9, 0.99]),
)
def test_quantiles_without_a_queue_are_what_bisecting_the_tail_finds(
    points: list[int], weights: list[int], q: float
) -> None:
    """With no queue (theta 0) a quantile of S is read off its sorted points, with the
    tail summed as bisection sums it, so ties land where bisection puts them (equal
    weights, p50 on a boundary)."""
    service = np.array(points, dtype=float) * 0.37
    w = np.array(weights[: len(points)], dtype=float)
    if w.sum() == 0:
        w[0] = 1.0
    w = w / w.sum()
    (exact,) = _discrete_quantiles(service, w, (q,))
    top = float(service.max()) + 1e-9
    (bisected,) = _bisect_quantiles(lambda t: _wait_tail(t, service, w, 0.0, 0.0), top, (q,))
    assert exact == pytest.approx(bisected, rel=1e-9, abs=1e-9)


def test_replicas_of_one_shape_share_their_step_timings() -> None:
    """A deployment of many replicas reuses the step timings of one replica of the same
    shape (an SLO search times one, then the deployment), and predicts as a fresh model
    would; so does a replica whose tp group spans PCIe domains of one chip."""
    phase = Inference(load="rps", rps=4.0, input_len=512, output_len=128)  # type: ignore[arg-type]
    shared = _serve(LLAMA70)
    shared.serve_engine(Plan(tp=4), phase)
    after = shared.serve_engine(Plan(tp=4, dp=3), phase)
    fresh = _serve(LLAMA70).serve_engine(Plan(tp=4, dp=3), phase)
    assert after == fresh
    one = shared.engine_timer(Plan(tp=4), "bf16")
    assert shared.engine_timer(Plan(tp=4, dp=3), "bf16")._linear is one._linear
    l40s = _serve(LLAMA70, c=chip("l40s"))  # PCIe: a domain of one chip
    alone = l40s.engine_timer(Plan(tp=2), "bf16")
    assert l40s.engine_timer(Plan(tp=2, dp=2), "bf16")._linear is alone._linear
