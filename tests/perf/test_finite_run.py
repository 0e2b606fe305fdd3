"""A finite run of N requests queued at once: drain tail, admission, preemption, bounds."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.perf.step.engine import Engine, Lengths
from chipwise.perf.step.finite_run import MAX_REQUESTS, sample_requests, simulate_run


def _step(decode: float, context: float, prefill: float, prompt_len: float) -> float:
    """A step: weights once (4 ms), 40 us a decoding sequence, 10 us a prompt token."""
    del context, prompt_len
    return 0.004 + 4e-5 * decode + 1e-5 * prefill


# a long-tailed output distribution (ShareGPT-like: most answers short, a few long)
TAILED = Lengths(
    inputs=np.array([100.0, 200.0, 400.0, 100.0, 300.0]),
    outputs=np.array([50.0, 150.0, 250.0, 600.0, 1200.0]),
    weights=np.array([0.3, 0.3, 0.2, 0.15, 0.05]),
)
# identical requests, stated so (a one-bucket histogram)
FIXED = Lengths(
    inputs=np.array([200.0]), outputs=np.array([200.0]), weights=np.array([1.0]), stated=True
)


def _run(lens: Lengths, n: int, *, cap: float = 1e7, seqs: int = 256, scheduler: str = "vllm"):  # type: ignore[no-untyped-def]
    i, o = sample_requests(lens.inputs, lens.outputs, lens.weights, n)
    return simulate_run(
        _step, i, o, prefill_fraction=1.0, max_num_seqs=seqs, max_num_tokens=8192,
        kv_capacity_tokens=cap, context=lens.mean_context, scheduler=scheduler,
    )  # fmt: skip


def _engine(lens: Lengths, *, cap: float = 1e7, seqs: int = 256, scheduler: str = "vllm") -> Engine:
    return Engine(
        _step, lens, prefill_tokens_fraction=1.0, max_num_seqs=seqs, max_num_tokens=8192,
        kv_capacity_tokens=cap, scheduler=scheduler,
    )  # fmt: skip


def test_the_sample_keeps_the_distributions_mean_and_reaches_its_tail() -> None:
    i, o = sample_requests(TAILED.inputs, TAILED.outputs, TAILED.weights, 1000)
    assert o.mean() == pytest.approx(TAILED.mean_out, rel=0.01)
    assert i.mean() == pytest.approx(TAILED.mean_in, rel=0.01)
    assert o.max() == TAILED.outputs.max()
    # well mixed: the longest outputs are not all at the end of the queue
    assert np.flatnonzero(o == 1200.0).min() < 500


@pytest.mark.parametrize("scheduler", ["vllm", "sglang", "trtllm", "atom"])
def test_every_request_finishes_once_and_its_clock_runs_forward(scheduler: str) -> None:
    run = _run(TAILED, 600, cap=60_000, scheduler=scheduler)
    assert run is not None
    assert run.requests == 600
    assert np.all(np.isfinite(run.ttft_s)) and np.all(run.ttft_s > 0)
    assert run.ttft_s.max() <= run.duration_s
    assert np.all(run.tpot_s > 0)
    assert 0 < run.mean_decode_batch <= 256


@pytest.mark.parametrize("scheduler", ["vllm", "sglang", "trtllm", "atom"])
def test_a_finite_run_is_never_faster_than_the_steady_state(scheduler: str) -> None:
    """The steady state holds the batch at its limit for ever; a finite run starts empty and
    drains at the end, so it never moves more requests per second."""
    for lens, cap in ((TAILED, 1e7), (TAILED, 60_000), (FIXED, 1e7), (FIXED, 20_000)):
        eng = _engine(lens, cap=cap, scheduler=scheduler)
        steady = eng.solve("max_throughput", 0).requests_per_s
        for n in (50, 400, 2000):
            finite = _engine(lens, cap=cap, scheduler=scheduler).solve("max_throughput", n)
            assert finite.requests_per_s <= steady * 1.02, (lens, cap, n)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(20, 600), more=st.integers(1, 600), cap=st.sampled_from([3e4, 1e5, 1e7]))
def test_a_run_lasts_longer_with_more_requests(n: int, more: int, cap: float) -> None:
    short, long = _run(FIXED, n, cap=cap), _run(FIXED, n + more, cap=cap)
    assert short is not None and long is not None
    assert long.duration_s >= short.duration_s


def test_the_drain_tail_is_set_by_the_longest_outputs() -> None:
    """Same requests, same mean output: when a few answers are 24x the others, the run ends
    when they do, decoding at a small batch, and moves fewer tokens a second than when all
    answers are of one length."""
    n = 512
    uniform = Lengths(inputs=np.array([100.0]), outputs=np.array([100.0]), weights=np.array([1.0]))
    share = 50.0 / 1150.0  # of 1200-token answers, so that the mean stays 100
    tailed = Lengths(
        inputs=np.array([100.0, 100.0]), outputs=np.array([50.0, 1200.0]),
        weights=np.array([1.0 - share, share]),
    )  # fmt: skip
    a, b = _run(uniform, n), _run(tailed, n)
    assert a is not None and b is not None
    assert b.output_tokens / b.duration_s < 0.8 * a.output_tokens / a.duration_s
    # the run lasts at least as long as the longest output alone would take at batch 1
    assert b.duration_s >= 1200 * _step(1, 0, 0, 0)


def test_vllm_preempts_when_long_outputs_fill_the_cache_and_trtllm_reserves_instead() -> None:
    """vLLM admits on its prompt's blocks, so long-tailed outputs fill the cache mid-decode
    and it preempts (recomputes) the newest; TensorRT-LLM's GUARANTEED_NO_EVICT reserves
    each request's whole output at admission and never evicts."""
    vllm = _run(TAILED, 800, cap=40_000, scheduler="vllm")
    trt = _run(TAILED, 800, cap=40_000, scheduler="trtllm")
    assert vllm is not None and trt is not None
    assert vllm.preemptions > 0
    assert trt.preemptions == 0
    # with room for everything nobody is preempted
    roomy = _run(TAILED, 800, cap=1e7, scheduler="vllm")
    assert roomy is not None and roomy.preemptions == 0


def test_sglang_runs_its_prefill_batches_alone_so_decodes_wait() -> None:
    """SGLang (no mixed chunks) stalls its decodes for a waiting prefill batch: a run's
    TPOT tail is longer than vLLM's, which mixes prompt chunks into decode steps."""
    sgl = _run(TAILED, 800, scheduler="sglang")
    vllm = _run(TAILED, 800, scheduler="vllm")
    assert sgl is not None and vllm is not None
    assert np.quantile(sgl.tpot_s, 0.99) > np.quantile(vllm.tpot_s, 0.99)


def test_atom_prefills_whole_prompts_in_steps_of_their_own() -> None:
    """ATOM admits a waiting prompt only if all of it fits the step's token budget, and runs
    that prefill batch without the decodes: two 3000-token prompts under a 4096-token budget
    take a step each, the first answering after its own prompt alone; SGLang chunks the
    second into the first step (so the first answers later) and finishes it in the next."""
    i, o = np.array([3000.0, 3000.0]), np.array([4.0, 4.0])

    def run(scheduler: str):  # type: ignore[no-untyped-def]
        return simulate_run(
            _step, i, o, prefill_fraction=1.0, max_num_seqs=8, max_num_tokens=4096,
            kv_capacity_tokens=1e6, context=3000.0, scheduler=scheduler,
        )  # fmt: skip

    atom, sgl = run("atom"), run("sglang")
    assert atom is not None and sgl is not None
    whole = _step(0, 0, 3000, 0)
    assert sorted(atom.ttft_s) == pytest.approx([whole, 2 * whole])
    assert min(sgl.ttft_s) == pytest.approx(_step(0, 0, 4096, 0))
    # a prompt longer than the whole budget still runs (alone, in chunks), never stalls
    long = simulate_run(
        _step, np.array([9000.0]), np.array([4.0]), prefill_fraction=1.0, max_num_seqs=8,
        max_num_tokens=4096, kv_capacity_tokens=1e6, context=9000.0, scheduler="atom",
    )  # fmt: skip
    assert long is not None and long.requests == 1


def test_the_simulation_is_bounded() -> None:
    """No input hangs it: more requests than MAX_REQUESTS, or a request its cache cannot
    hold, are left to the steady state (None), and the largest run it takes is quick."""
    assert _run(FIXED, MAX_REQUESTS + 1) is None
    assert _run(FIXED, 10, cap=300) is None  # 200 + 200 tokens never fit in 300
    start = time.perf_counter()
    assert _run(TAILED, MAX_REQUESTS, cap=2e5, seqs=1024) is not None
    assert time.perf_counter() - start < 5.0


def test_the_engine_reports_the_simulated_runs_ttft_from_its_start() -> None:
    """A run of 4 batches' worth: its TTFT percentiles are the simulated requests', each
    counted from the run's start, and its rate is the run's requests over its duration."""
    eng = _engine(FIXED, seqs=128)
    st_ = eng.solve("max_throughput", 512)
    run = _run(FIXED, 512, seqs=128)
    assert run is not None
    assert st_.ttft_p50_s == pytest.approx(float(np.median(run.ttft_s)))
    assert st_.ttft_p99_s > 1.3 * st_.ttft_p50_s  # the last batch waits for three
    assert st_.requests_per_s == pytest.approx(512 / run.duration_s, rel=0.01)


def _loop(scheduler: str, clients: int, n: int):  # type: ignore[no-untyped-def]
    """A closed loop of ``clients`` over ``n`` requests of 2000 / 100 tokens each."""
    return simulate_run(
        _step, np.full(n, 2000.0), np.full(n, 100.0), prefill_fraction=1.0, max_num_seqs=256,
        max_num_tokens=4096, kv_capacity_tokens=1e7, context=2050.0, scheduler=scheduler,
        clients=clients,
    )  # fmt: skip


def test_a_closed_loop_of_identical_requests_stays_in_lockstep_on_sglang_not_on_vllm() -> None:
    """SGLang prefills a wave's prompts (4096-token batches) while nothing decodes, so
    the wave decodes and ends together and every wave's j-th prompt waits for the j - 1
    before it: the last waves' TTFTs repeat the first's. vLLM puts prompt chunks into
    decode steps, the requests end one step apart and come back staggered: after the first
    wave a prompt is prefilled at once."""
    sgl, vllm = _loop("sglang", 8, 64), _loop("vllm", 8, 64)
    assert sgl is not None and vllm is not None and sgl.requests == 64
    wave = 4 * 0.004 + 8 * 2000 * 1e-5  # 16,000 prompt tokens in 4 batches, nothing decoding
    first, last = sgl.ttft_s[:8], sgl.ttft_s[-8:]
    assert max(first) == pytest.approx(wave)
    assert np.sort(last) == pytest.approx(np.sort(first))
    assert float(np.mean(vllm.ttft_s[-8:])) < 0.5 * float(np.mean(last))
    # each client's requests follow one another: 8 waves' worth of time on SGLang
    assert sgl.duration_s == pytest.approx(8 * (wave + 99 * _step(8, 0, 0, 0)), rel=0.02)


def test_the_engine_simulates_a_closed_loop_only_for_stated_identical_lengths() -> None:
    """A closed loop on SGLang whose lengths are stated identical (a one-bucket histogram)
    runs in lockstep waves: its mean TTFT is about half a wave's prefill. Means alone (a
    ShareGPT sample's) keep the steady state's staggered arrivals."""
    stated = Lengths(
        inputs=np.array([2000.0]), outputs=np.array([100.0]), weights=np.array([1.0]),
        stated=True,
    )  # fmt: skip
    means = Lengths(inputs=np.array([2000.0]), outputs=np.array([100.0]), weights=np.array([1.0]))
    assert stated.identical and not means.identical and not TAILED.identical

    def engine(lens: Lengths) -> Engine:
        return Engine(
            _step, lens, prefill_tokens_fraction=1.0, max_num_seqs=256, max_num_tokens=4096,
            kv_capacity_tokens=1e7, scheduler="sglang", run_requests=64,
        )  # fmt: skip

    lock, stagger = engine(stated).solve("concurrency", 8), engine(means).solve("concurrency", 8)
    run = _loop("sglang", 8, 64)
    assert run is not None
    assert lock.ttft_mean_s == pytest.approx(float(run.ttft_s.mean()))
    assert lock.ttft_mean_s > 2.0 * stagger.ttft_mean_s


def test_a_windowed_or_lockstep_engine_keeps_its_steady_state_for_identical_lengths() -> None:
    """Only an engine whose prompts run apart (``Engine._prefills_apart``) runs a closed loop
    of identical requests in lockstep waves: one behind a harness's arrival window, or whose
    steps join other replicas', keeps the steady state's answer."""
    from chipwise.perf.step.engine import ArrivalWindow

    def engine(**kw: object) -> Engine:
        return Engine(
            _step, FIXED, prefill_tokens_fraction=1.0, max_num_seqs=256, max_num_tokens=4096,
            kv_capacity_tokens=1e7, scheduler="sglang", run_requests=64, **kw,  # type: ignore[arg-type]
        )  # fmt: skip

    assert engine()._closed_loop_simulated("concurrency", 8)
    windowed = engine(arrival_window=ArrivalWindow(seconds=0.3, max_prompts=96))
    assert not windowed._closed_loop_simulated("concurrency", 8)
    assert not engine(lockstep_replicas=2)._closed_loop_simulated("concurrency", 8)


@pytest.mark.parametrize("scheduler", ["vllm", "sglang"])
def test_a_closed_loop_with_a_client_per_request_is_a_backlog_queued_at_once(
    scheduler: str,
) -> None:
    """100 clients over 100 requests each send once, all at the start: the run is the
    backlog of a max-throughput run (its TTFTs from the start, the prompts prefilled one
    after another), not a steady state whose slot queue never forms in so short a run."""
    long = Lengths(inputs=np.array([30000.0]), outputs=np.array([100.0]), weights=np.array([1.0]))

    def engine() -> Engine:
        return Engine(
            _step, long, prefill_tokens_fraction=1.0, max_num_seqs=1024, max_num_tokens=8192,
            kv_capacity_tokens=1e7, scheduler=scheduler, run_requests=100,
        )  # fmt: skip

    loop, backlog = engine().solve("concurrency", 100), engine().solve("max_throughput", 100)
    assert loop.ttft_mean_s == pytest.approx(backlog.ttft_mean_s)
    assert loop.requests_per_s == pytest.approx(backlog.requests_per_s)
    # about half the 3M prompt tokens' prefill on average: 10 us a token, 4 ms a step
    assert 10.0 < loop.ttft_mean_s < 25.0


@pytest.mark.parametrize("scheduler", ["sglang", "atom"])
def test_a_scheduler_that_prefills_apart_pays_the_prompts_own_forward(scheduler: str) -> None:
    """SGLang and ATOM run waiting prompts in a forward of their own, then the decodes: a
    steady-state step with prompts costs both forwards, the prompts that finishing requests
    let in batched together (Poisson: one forward for a share 1 - exp(-m) of decode steps);
    vLLM joins the chunk to the decode step."""
    b = 120.0
    apart = _engine(TAILED, scheduler=scheduler).rate(b)
    joined = _engine(TAILED, scheduler="vllm").rate(b)
    ctx, l_in = TAILED.mean_context, TAILED.mean_in
    assert apart.t1_s == pytest.approx(_step(0, ctx, apart.chunk, l_in) + _step(b, ctx, 0, l_in))
    assert joined.t1_s == pytest.approx(_step(b, ctx, joined.chunk, l_in))
    m = b / TAILED.mean_out  # prompts entering per decode step
    assert apart.f == pytest.approx(-np.expm1(-m))
    assert apart.chunk == pytest.approx(m * TAILED.mean_in / apart.f)
    # identical requests enter in waves: one prefill forward per wave while it fits the
    # budget (30 x 200 tokens), as few as it needs beyond (120 x 200 in 3 of 8192)
    wave = _engine(FIXED, scheduler=scheduler).rate(30.0)
    assert wave.f == pytest.approx(1 / 200) and wave.chunk == pytest.approx(30 * 200)
    big = _engine(FIXED, scheduler=scheduler).rate(b)
    assert big.f == pytest.approx(3 / 200) and big.chunk == pytest.approx(b * 200 / 3)
    # the prompts' forward has no decodes beside it, so the whole budget is its room:
    # 200 x 200 tokens in 5 forwards of 8192 (6 of the 8192 - 200 a mixed step leaves)
    full = _engine(FIXED, scheduler=scheduler).rate(200.0)
    assert full.f == pytest.approx(5 / 200) and full.chunk == pytest.approx(200 * 200 / 5)
