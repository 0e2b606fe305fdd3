"""Speculative decoding (``Inference.spec_tokens`` / ``spec_accept`` / ``spec_method``): a
step verifies 1 + k tokens a sequence and runs the drafter k times; a sequence emits the
acceptance length ``a`` a step, so TPOT = step / a."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chipwise.errors import WorkloadError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.finite_run import simulate_run
from chipwise.perf.step.serve import ServeModel
from chipwise.workload.ir import Inference
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
H200 = chip("h200")
# sized from the datasheet's 80e9 bytes, as chipwise did when TODAY was recorded (the
# runtime's 79.2 GiB came later): the pins test speculative decoding, not the memory
H100_80E9 = replace(H100, hbm_usable_bytes=0.0)
SERVE = ServeModel(load_preset("llama3-8b"), H100_80E9, "bf16", model_for(H100), Network(H100_80E9))
DSV3 = ServeModel(load_preset("deepseek-v3"), H200, "fp8", model_for(H200), Network(H200))

# Today's predictions (main at 146913b, before speculative decoding existed, with the
# measured decode-attention floor and rate of 2026-12-05; re-recorded after the
# sustained_tensor_fraction refits of 2026-12-05, 0.709 -> 0.717 -> 0.711; the finite run's
# TPOT re-recorded when it became the mean of its requests' TPOTs, 0.02343 -> 0.02738; the
# rps TTFT re-recorded when a prompt's step came to carry its arrival window's other prompts,
# 0.03731 -> 0.03993, and again when that step was timed at the prompt lengths instead of
# a 24-count grid, 0.03993 -> 0.03819: a 4000-count grid gives 0.03821; re-recorded when
# prefill attention came to pay its per-query-tile fixed work, attention_tile_blocks,
# 2026-12-06: TTFT 0.03911 -> 0.03945 at concurrency 16, and again when vLLM's and SGLang's
# value was refitted without TensorRT-LLM's rows, Hopper 2.2 -> 2.5 key blocks, 2026-12-06:
# TTFT 0.03945 -> 0.03950 at concurrency 16; and when vLLM's async scheduling came to delay
# a busy engine's prompt by the step it has launched ahead, SCHEDULER_LAUNCHED_AHEAD,
# 2026-12-06: TTFT 0.03950 -> 0.04817 at concurrency 16, 0.03858 -> 0.04641 at 4 req/s;
# and when a closed loop's balance came to wait over the prompts' token share of a step and
# to count a request's cycle as TTFT + (L_out - 1) steps, Engine.solve, 2026-12-08: at
# concurrency 16, 15.70 -> 15.81 decoding, TPOT 0.008689 -> 0.008697, TTFT 0.048173 ->
# 0.048198, 1807.3 -> 1812.4 tokens/s) of llama3-8b on one H100 at 1000 in / 300 out:
# (load keys, TPOT, TTFT, output tokens/s).
TODAY = (
    ({"load": "concurrency", "concurrency": 16}, 0.00869688886661681, 0.0481984370461685,
     1812.367978062549),
    ({"load": "rps", "rps": 4.0}, 0.007839673764164527, 0.046414950988239445, 1200.0),
    ({"load": "max_throughput", "num_requests": 200, "output_len_std": 100.0},
     0.027490785467521803, 3.1508229510528536, 4429.336900037001),
    ({"load": "max_throughput"}, 0.06765381291276963, 0.0620863847306919, 5262.083313160981),
)  # fmt: skip


@pytest.mark.parametrize(("load", "tpot", "ttft", "tokens"), TODAY)
@pytest.mark.parametrize("method", ["mtp", "eagle"])
def test_no_drafts_and_acceptance_one_predict_what_chipwise_predicted_before(
    load: dict[str, object], tpot: float, ttft: float, tokens: float, method: str
) -> None:
    phase = Inference(input_len=1000, output_len=300, spec_tokens=0, spec_accept=1.0,
                      spec_method=method, **load)  # type: ignore[arg-type]  # fmt: skip
    pred = SERVE.serve_engine(Plan(), phase)
    assert pred.tpot_s == pytest.approx(tpot, rel=1e-9)
    assert pred.ttft_s == pytest.approx(ttft, rel=1e-9)
    assert pred.output_tokens_per_s == pytest.approx(tokens, rel=1e-9)


def _spec(serve: ServeModel, plan: Plan, k: int, a: float, method: str = "mtp", **load: object):
    phase = Inference(input_len=1000, output_len=1000, spec_tokens=k, spec_accept=a,
                      spec_method=method, **load)  # type: ignore[arg-type]  # fmt: skip
    return serve.serve_engine(plan, phase)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(min_value=1, max_value=7),
    lo=st.floats(min_value=0.0, max_value=1.0),
    hi=st.floats(min_value=0.0, max_value=1.0),
    method=st.sampled_from(["mtp", "eagle"]),
)
def test_tpot_falls_as_acceptance_rises_at_fixed_drafts(
    k: int, lo: float, hi: float, method: str
) -> None:
    a1, a2 = sorted((1 + k * lo, 1 + k * hi))
    if a2 - a1 < 0.05:
        return
    for load in ({"load": "concurrency", "concurrency": 8}, {"load": "max_throughput"}):
        slow = _spec(SERVE, Plan(), k, a1, method, **load)
        fast = _spec(SERVE, Plan(), k, a2, method, **load)
        assert fast.tpot_s < slow.tpot_s
        assert fast.output_tokens_per_s > slow.output_tokens_per_s


def test_drafting_costs_time_and_accepted_drafts_pay_it_back() -> None:
    plan = Plan(tp=8, ep=8)
    base = _spec(DSV3, plan, 0, 1.0, load="concurrency", concurrency=1)
    nothing = _spec(DSV3, plan, 3, 1.0, load="concurrency", concurrency=1)
    good = _spec(DSV3, plan, 3, 3.0, load="concurrency", concurrency=1)
    assert nothing.tpot_s > base.tpot_s  # three MTP passes and 4 verified tokens, no gain
    # at one sequence the step is weight-bound: three tokens a step nearly triple the rate
    assert 2.0 < base.tpot_s / good.tpot_s < 3.0
    assert good.engine is not None
    assert good.engine.tpot_p50_s == pytest.approx(good.tpot_s, rel=0.05)


def test_eagle_drafts_with_a_dense_layer_and_mtp_with_an_moe_layer() -> None:
    timer_mtp = DSV3.engine_timer(Plan(tp=8, ep=8), "fp8", 3, "mtp")
    timer_eagle = DSV3.engine_timer(Plan(tp=8, ep=8), "fp8", 3, "eagle")
    plain = DSV3.engine_timer(Plan(tp=8, ep=8), "fp8", 0, "mtp")
    assert plain.draft_s(64, 2000) == 0.0
    # three passes of one layer: small beside the 61-layer target, but not free
    step = plain.device_s(64, 2000, 0, 1000)
    for timer in (timer_mtp, timer_eagle):
        assert 0.0 < timer.draft_s(64, 2000) < 0.3 * step
    assert timer_mtp.device_s(64, 2000, 0, 1000) > step


@pytest.mark.parametrize(("k", "a"), [(3, 4.5), (0, 1.5), (2, 0.5), (1, float("nan"))])
def test_an_acceptance_outside_one_to_one_plus_drafts_is_refused(k: int, a: float) -> None:
    with pytest.raises(WorkloadError, match="spec_accept"):
        Inference(load="concurrency", concurrency=1, spec_tokens=k, spec_accept=a)


def test_bad_drafts_and_methods_are_refused() -> None:
    with pytest.raises(WorkloadError, match="spec_tokens"):
        Inference(load="concurrency", concurrency=1, spec_tokens=-1)
    with pytest.raises(WorkloadError, match="spec_method"):
        Inference(load="concurrency", concurrency=1, spec_tokens=2, spec_method="medusa")
    with pytest.raises(WorkloadError, match="static --batch"):
        Inference(spec_tokens=2, spec_accept=2.0)


def test_a_finite_run_with_acceptance_one_is_todays_and_faster_with_more() -> None:
    rng = np.random.default_rng(0)
    inputs = rng.integers(100, 2000, 300).astype(float)
    outputs = rng.integers(10, 1500, 300).astype(float)

    def step(dec: float, ctx: float, pre: float, plen: float) -> float:
        return 0.01 + 1e-5 * dec + 2e-6 * pre

    kw = {"prefill_fraction": 1.0, "max_num_seqs": 64, "max_num_tokens": 8192,
          "kv_capacity_tokens": 2e5, "context": 1500.0}  # fmt: skip
    base = simulate_run(step, inputs, outputs, **kw)  # type: ignore[arg-type]
    same = simulate_run(step, inputs, outputs, tokens_per_step=1.0, verify_tokens=1.0, **kw)  # type: ignore[arg-type]
    fast = simulate_run(step, inputs, outputs, tokens_per_step=2.5, verify_tokens=4.0, **kw)  # type: ignore[arg-type]
    assert base is not None and same is not None and fast is not None
    assert same.duration_s == base.duration_s
    assert np.array_equal(same.tpot_s, base.tpot_s)
    assert fast.output_tokens == base.output_tokens
    assert fast.duration_s < base.duration_s
    assert float(np.median(fast.tpot_s)) < float(np.median(base.tpot_s)) / 2
