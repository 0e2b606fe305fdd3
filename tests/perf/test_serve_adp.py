"""Attention data parallelism (``Plan.adp``): each tp rank serves its own requests with
whole attention and its own KV cache; only the routed experts are split over the ranks."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.errors import PlanError
from chipwise.hardware import chip
from chipwise.perf.base import Plan, parse_plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.plan.planner import plan_constraints
from chipwise.perf.predict import predict
from chipwise.perf.step.engine import HARNESS_ADMISSION_GATES, Engine, lengths_of
from chipwise.perf.step.serve import EngineStepTimer, ServeModel, rank_plan
from chipwise.workload.ir import Inference, Training, Workload
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
MOE = load_preset("qwen3-30b-a3b")  # 4 key/value heads, 128 experts, 8 per token
DENSE = load_preset("llama3-8b")
SHORT = Inference(load="max_throughput", input_len=128, output_len=128, engine="trtllm")


def _serve(spec=MOE) -> ServeModel:
    return ServeModel(spec, H100, "fp8", model_for(H100), Network(H100))


def test_adp_parses_prints_and_is_kept_by_the_planner_keys() -> None:
    p = parse_plan("tp=8,ep=8,adp=1")
    assert p.adp == 1 and "adp=1" in str(p) and parse_plan(str(p)) == p
    assert "adp" not in str(Plan(tp=8))
    with pytest.raises(PlanError, match="adp must be 0"):
        parse_plan("tp=8,adp=2")
    assert plan_constraints("tp=8,ep=8,adp=1", 8)["adp"] == 1
    assert "adp" not in plan_constraints("tp=8", 8)


def test_adp_is_a_serving_setting_only() -> None:
    work = Workload(model=MOE, phase=Training(seq_len=4096, global_batch=64))
    with pytest.raises(PlanError, match="serving setting"):
        predict(work, H100, 8, "bf16", plan_keys=plan_constraints("tp=8,adp=1", 8))


def test_adp_needs_the_experts_split_over_exactly_the_tp_ranks() -> None:
    with pytest.raises(PlanError, match="etp x ep must equal tp"):
        _serve().serve_engine(Plan(tp=8, ep=4, adp=1), SHORT)


def test_a_rank_holds_whole_attention_and_its_share_of_the_experts() -> None:
    assert rank_plan(Plan(dp=2, tp=8, ep=8, adp=1)) == Plan(dp=16, tp=1, ep=8, etp=1)
    assert rank_plan(Plan(tp=8, adp=1)) == Plan(dp=8, tp=1, etp=8)
    assert rank_plan(Plan(tp=8, ep=8)) == Plan(tp=8, ep=8)


def test_adp_replicates_attention_so_each_rank_has_less_kv_cache() -> None:
    s = _serve()
    tp, adp = Plan(tp=8, ep=8), Plan(tp=8, ep=8, adp=1)
    a = s.serve_engine(tp, SHORT)
    b = s.serve_engine(adp, SHORT)
    assert a.engine is not None and b.engine is not None
    assert b.memory.weights_bytes > a.memory.weights_bytes  # non-expert weights on every rank
    # every key/value head on one rank: more bytes per token, and less room for them
    assert (
        s.engine_timer(adp, "fp8").kv_bytes_per_token()
        > s.engine_timer(tp, "fp8").kv_bytes_per_token()
    )
    assert b.engine.kv_capacity_tokens_per_replica < a.engine.kv_capacity_tokens_per_replica


def test_each_rank_has_its_own_batch_limit() -> None:
    p = _serve().serve_engine(Plan(tp=8, ep=8, adp=1), replace(SHORT, max_num_seqs=64))
    assert p.engine is not None and p.engine.max_seqs_per_replica == 64
    # eight ranks of 64 sequences each: more than one engine's limit runs at once
    assert p.batch > 64 * 4


def test_adp_on_a_dense_model_is_data_parallelism() -> None:
    s = _serve(DENSE)
    adp = s.serve_engine(Plan(tp=8, adp=1), SHORT)
    dp = s.serve_engine(Plan(dp=8), SHORT)
    assert adp.output_tokens_per_s == pytest.approx(dp.output_tokens_per_s, rel=1e-9)
    assert adp.memory.weights_bytes == pytest.approx(dp.memory.weights_bytes)


class _Recording(Network):
    """A network that notes the kind of every collective it times."""

    def __init__(self, c) -> None:  # type: ignore[no-untyped-def]
        super().__init__(c)
        object.__setattr__(self, "kinds", [])

    def time_s(self, kind, n_bytes, group):  # type: ignore[no-untyped-def]
        self.kinds.append(kind)  # type: ignore[attr-defined]
        return super().time_s(kind, n_bytes, group)


@given(st.sampled_from([2, 4, 8]), st.integers(min_value=1, max_value=8192), st.booleans())
@settings(max_examples=20, deadline=None)
def test_adp_never_adds_the_attention_all_reduce(tp: int, tokens: int, moe: bool) -> None:
    spec = MOE if moe else DENSE
    net = _Recording(H100)
    s = ServeModel(spec, H100, "fp8", model_for(H100), net)
    # every collective the step times, measured (kernels.py) or modelled (the network)
    measured_or_modelled = s._collective_s

    def recorded(kind, n_bytes, group, **kw):  # type: ignore[no-untyped-def]
        net.kinds.append(kind)  # type: ignore[attr-defined]
        return measured_or_modelled(kind, n_bytes, group, **kw)

    s._collective_s = recorded  # type: ignore[method-assign]
    comm = EngineStepTimer(s, Plan(tp=tp, ep=tp if moe else 1, adp=1), "fp8").comm_s(tokens)
    kinds = sorted(set(net.kinds))  # type: ignore[attr-defined]
    assert "all_reduce" not in kinds
    if moe:  # an all-gather and a reduce-scatter (timed once, paid per MoE layer)
        assert kinds == ["all_gather", "reduce_scatter"] and comm > 0
    else:
        assert kinds == [] and comm == 0.0


def test_the_adp_balance_admits_every_ranks_prompts_in_one_step() -> None:
    """NVIDIA's MLPerf DeepSeek-R1 Server runs hold context requests until the 9th step
    (TensorRT-LLM's ADP balance, timeout_iters 9): a request waits out the rest of that
    cycle, and the ranks' prompts enter together, so a chunked step comes once a cycle and
    not whenever any one rank has a prompt."""
    s = _serve()
    plan = Plan(tp=8, ep=8, adp=1)
    load = Inference(load="rps", rps=8.0, input_len=800, output_len=2000, engine="trtllm",
                     max_num_seqs=512, max_num_tokens=4096)  # fmt: skip
    plain = s.serve_engine(plan, load)
    gated = s.serve_engine(plan, replace(load, harness="nvidia-mlperf-adp-9-3"))
    assert plain.engine is not None and gated.engine is not None
    assert not gated.engine.saturated
    assert gated.engine.ttft_p50_s > plain.engine.ttft_p50_s + 3.0 * gated.tpot_s
    assert gated.engine.ttft_p99_s < plain.engine.ttft_p99_s + 9.0 * gated.tpot_s + 1.0
    # the ranks no longer stall one another's decodes with their own prompts
    assert gated.tpot_s < plain.tpot_s


def test_a_trtllm_bench_run_with_the_adp_balance_keeps_bench_limits_and_batches_prompts() -> None:
    """TensorRT-LLM's perf overview runs DeepSeek-R1 under trtllm-bench with the ADP balance
    (timeout_iters 60, batching_wait_iters 0): the same limits trtllm-bench sizes, and the
    ranks' prompts enter together, so fewer decode steps carry a prompt."""
    s = _serve()
    plan = Plan(tp=8, ep=8, adp=1)
    load = Inference(load="max_throughput", input_len=1024, output_len=1024, engine="trtllm",
                     num_requests=3000, harness="trtllm-bench")  # fmt: skip
    plain = s.serve_engine(plan, load)
    balanced = s.serve_engine(plan, replace(load, harness="trtllm-bench-adp-60-0"))
    assert plain.engine is not None and balanced.engine is not None
    assert balanced.engine.max_seqs_per_replica == plain.engine.max_seqs_per_replica
    assert balanced.tpot_s < plain.tpot_s
    assert balanced.output_tokens_per_s > plain.output_tokens_per_s


def test_the_adp_gate_opens_a_chunked_step_for_every_rank_when_any_rank_holds_a_prompt() -> None:
    """Under TensorRT-LLM's ADP balance the gate's opening step carries the prompts of every
    rank that holds one, and all lockstep ranks wait for it: at a Server run's ~0.25
    prompts per rank per 9-step cycle, 8 ranks meet a chunked step in ~1 - exp(-2) of the
    cycles (not a quarter of them, as one rank would); the chunk is one prompt (the
    balanced busiest rank's), and the prompt tokens entering per step still equal those
    the leaving sequences make room for."""

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del ctx, lin
        return 0.03 + 1e-4 * b + 5e-5 * chunk

    lens = lengths_of(Inference(input_len=800, output_len=4000))
    gate = HARNESS_ADMISSION_GATES["nvidia-mlperf-adp-9-3"]
    kw = {"prefill_tokens_fraction": 1.0, "max_num_seqs": 512, "max_num_tokens": 3456,
          "kv_capacity_tokens": 1e9, "admission_gate": gate}  # fmt: skip
    one = Engine(step, lens, **kw).rate(111.0)  # type: ignore[arg-type]
    eight = Engine(step, lens, lockstep_replicas=8, **kw).rate(111.0)  # type: ignore[arg-type]
    m = 111.0 / 4000 * 9  # prompts per rank per cycle (~0.25)
    assert eight.f == pytest.approx(-math.expm1(-8 * m) / 9, rel=0.02)
    assert one.f == pytest.approx(-math.expm1(-m) / 9, rel=0.02)
    assert eight.f > 3 * one.f
    assert eight.chunk == pytest.approx(800, rel=0.05)  # ceil(K / 8) = 1 prompt mostly
    # mean prompt tokens per step on one rank >= the need (the busiest rank's bound)
    need = 111.0 * 800 / 4000
    assert one.f * one.chunk == pytest.approx(need, rel=0.01)
    assert eight.f * eight.chunk >= need
    assert eight.step_s > one.step_s


def test_a_lockstep_chunked_step_runs_the_routed_experts_on_the_prompts_present() -> None:
    """Under attention DP a step in which only some ranks carry a prompt waits for the
    busiest rank's attention and dense work, but the shared routed experts see only the
    prompt tokens actually present: less than if every rank had the busiest one's chunk,
    and no less than a decode-only step plus that chunk's own rank's share."""
    timer = _serve().engine_timer(Plan(tp=8, ep=8, adp=1), "fp8")
    every = timer.device_s(64, 1024, 2048, 2048)
    assert timer.device_s(64, 1024, 2048, 2048, 2048) == pytest.approx(every)
    some = timer.device_s(64, 1024, 2048, 2048, 512)
    assert timer.device_s(64, 1024, 0, 0) < some < every
    # only the routed experts' share changes
    assert every - some == pytest.approx(timer.routed_s(64 + 2048) - timer.routed_s(64 + 512))
    # a dense model's ranks share no experts: nothing changes
    dense = _serve(DENSE).engine_timer(Plan(tp=8, adp=1), "fp8")
    assert dense.device_s(64, 1024, 2048, 2048, 512) == dense.device_s(64, 1024, 2048, 2048)


def test_the_engine_times_a_lockstep_chunked_step_with_the_mean_prompt_per_rank() -> None:
    """The engine hands the lockstep step the prompt tokens per rank of a chunked step on
    average (the prompt tokens entering per step over the share of steps that carry any),
    beside the busiest rank's chunk."""
    seen: list[tuple[float, float]] = []

    def step(b: float, ctx: float, chunk: float, lin: float) -> float:
        del ctx, lin
        return 0.03 + 1e-4 * b + 5e-5 * chunk

    def lockstep(b: float, ctx: float, chunk: float, lin: float, routed: float) -> float:
        seen.append((chunk, routed))
        return step(b, ctx, chunk, lin) - 4e-5 * (chunk - routed)

    lens = lengths_of(Inference(input_len=800, output_len=4000))
    gate = HARNESS_ADMISSION_GATES["nvidia-mlperf-adp-9-3"]
    kw = {"prefill_tokens_fraction": 1.0, "max_num_seqs": 512, "max_num_tokens": 3456,
          "kv_capacity_tokens": 1e9, "admission_gate": gate, "lockstep_replicas": 8}  # fmt: skip
    upper = Engine(step, lens, **kw).rate(111.0)  # type: ignore[arg-type]
    exact = Engine(step, lens, lockstep_step=lockstep, **kw).rate(111.0)  # type: ignore[arg-type]
    chunk, routed = seen[-1]
    assert routed == pytest.approx(111.0 * 800 / 4000 / exact.f)
    assert routed < chunk == pytest.approx(exact.chunk)
    assert exact.t1_s < upper.t1_s and exact.f == upper.f


def test_a_decode_step_gathers_its_tokens_at_the_graphs_latency_not_the_hosts() -> None:
    """A decode-only step is the CUDA graph TensorRT-LLM replays: its MoE all-gather and
    reduce-scatter drop nccl-tests' host-launched floor (serve.ServeModel._collective_s);
    a step with prompt tokens, launched eagerly, keeps the measured times."""
    b200 = chip("b200")
    s = ServeModel(MOE, b200, "fp8", model_for(b200), Network(b200), engine="trtllm")
    timer = EngineStepTimer(s, Plan(tp=4, ep=4, adp=1), "fp8")
    eager, graphed = timer.comm_s(16), timer.comm_s(16, graphed=True)
    assert 0.0 < graphed < 0.8 * eager
    # the step's time follows: a decode-only step pays the graphed collectives
    decode = timer.device_s(16, 1024, 0.0, 1.0)
    assert decode == pytest.approx(
        timer.linear_s(16) + timer.attention_s(16, 1024, decode=True) + timer.logits_s(16)
        + graphed
    )  # fmt: skip
