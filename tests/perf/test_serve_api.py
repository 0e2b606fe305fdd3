"""A load timed through the engine's HTTP server (``Inference.harness == "api"``): its TTFT
holds the server's own latency (``serve.API_REQUEST_S``) and the prompt's tokenisation
(``serve.TOKENIZE_S_PER_TOKEN``), an in-process harness's does not."""

from __future__ import annotations

import pytest

from chipwise.errors import WorkloadError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.engine import Engine, lengths_of
from chipwise.perf.step.serve import (
    API_REQUEST_S,
    API_STREAM_S_PER_CHUNK,
    SCHEDULER_LAUNCHED_AHEAD,
    TOKENIZE_S_PER_TOKEN,
    ServeModel,
    api_request_s,
)
from chipwise.workload.ir import ENGINES, Inference
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
SERVE = ServeModel(load_preset("llama3-8b"), H100, "bf16", model_for(H100), Network(H100))


def _engine(harness: str, engine: str = "vllm", input_len: int = 233, **kw: object):
    phase = Inference(input_len=input_len, output_len=221, engine=engine, harness=harness, **kw)  # type: ignore[arg-type]
    result = SERVE.serve_engine(Plan(), phase).engine
    assert result is not None
    return result


# JetStream is modelled in-process only (Inference rejects a harness for it)
HTTP_ENGINES = tuple(e for e in ENGINES if e != "jetstream")


def test_every_engine_has_a_server_latency() -> None:
    assert set(API_REQUEST_S) == set(HTTP_ENGINES)
    assert all(0 < s < 0.2 for s in API_REQUEST_S.values())
    with pytest.raises(WorkloadError, match="in-process"):
        Inference(engine="jetstream", harness="api", load="concurrency", concurrency=4)


@pytest.mark.parametrize("engine", HTTP_ENGINES)
def test_one_client_through_the_server_waits_its_latency_on_top_of_the_prefill(engine: str) -> None:
    api = _engine("api", engine, load="concurrency", concurrency=1)
    bare = _engine("", engine, load="concurrency", concurrency=1)
    # (a vLLM-shaped front end streams the one client's own chunks meanwhile: < 1 % longer)
    for a, b in ((api.ttft_p50_s, bare.ttft_p50_s), (api.ttft_p99_s, bare.ttft_p99_s)):
        assert api_request_s(engine, 233) * (1 - 1e-9) <= a - b
        assert a - b <= api_request_s(engine, 233) * 1.01
    assert api.tpot_p50_s == pytest.approx(bare.tpot_p50_s)  # decode steps are the engine's
    # the client's cycle is longer by the latency, so it sends fewer requests a second
    cycle = 1 / bare.requests_per_s + api_request_s(engine, 233)
    assert api.requests_per_s == pytest.approx(1 / cycle, rel=2e-3)


@pytest.mark.parametrize("engine", HTTP_ENGINES)
def test_the_server_tokenises_a_longer_prompt_for_longer(engine: str) -> None:
    """The front end encodes the prompt before the engine sees it (~1.9 us a token): a
    7,373-token prompt's request spends ~14 ms more in the server than the fixed latency,
    on top of the engine's own longer prefill."""
    assert 1e-6 < TOKENIZE_S_PER_TOKEN < 1e-5
    assert api_request_s(engine, 7373) - api_request_s(engine, 0) == pytest.approx(
        7373 * TOKENIZE_S_PER_TOKEN
    )
    for n in (233, 7373):
        api = _engine("api", engine, input_len=n, load="concurrency", concurrency=1)
        bare = _engine("", engine, input_len=n, load="concurrency", concurrency=1)
        extra = api.ttft_p50_s - bare.ttft_p50_s
        assert extra == pytest.approx(API_REQUEST_S[engine] + n * TOKENIZE_S_PER_TOKEN, rel=1e-2)


def test_a_closed_loop_through_the_server_runs_fewer_requests_in_the_engine() -> None:
    api = _engine("api", load="concurrency", concurrency=64)
    bare = _engine("", load="concurrency", concurrency=64)
    assert api.decode_batch_per_replica < bare.decode_batch_per_replica
    assert api.requests_per_s < bare.requests_per_s
    assert api.ttft_p50_s > bare.ttft_p50_s


def test_an_open_loop_keeps_its_rate_and_adds_the_latency() -> None:
    api = _engine("api", load="rps", rps=2.0)
    bare = _engine("", load="rps", rps=2.0)
    assert api.requests_per_s == pytest.approx(bare.requests_per_s)
    # the front end's own latency, stretched a little by the chunks it streams meanwhile
    extra = api.ttft_p50_s - bare.ttft_p50_s
    assert api_request_s("vllm", 233) < extra < 1.05 * api_request_s("vllm", 233)


def _closed_loop(client_chunk_s: float, clients: int = 64) -> Engine:
    timer = SERVE.engine_timer(Plan(), "bf16")
    return Engine(timer.step_s, lengths_of(Inference(input_len=922, output_len=922)),
                  prefill_tokens_fraction=1.0, max_num_seqs=512, max_num_tokens=8192,
                  kv_capacity_tokens=1e12, client_s=api_request_s("vllm", 922),
                  client_chunk_s=client_chunk_s)  # fmt: skip


def test_a_front_end_streaming_many_clients_tokens_takes_longer_over_each_request() -> None:
    """vLLM's API server streams every decoding sequence's token of every step on the loop
    that also takes a new request (``API_STREAM_S_PER_CHUNK``): at 64 clients it is busy a
    share u = chunks/s x 30 us of the time and a request's own front-end work takes
    ``client_s / (1 - u)``; with no streaming cost the TTFT holds ``client_s`` only."""
    assert API_STREAM_S_PER_CHUNK["vllm"] == pytest.approx(30e-6)
    # ATOM's server has the same shape (one process streams and takes requests in)
    assert API_STREAM_S_PER_CHUNK == {"vllm": 30e-6, "atom": 30e-6}
    busy = _closed_loop(API_STREAM_S_PER_CHUNK["vllm"]).solve("concurrency", 64.0)
    idle = _closed_loop(0.0).solve("concurrency", 64.0)
    u = busy.rate.b / busy.rate.step_s * API_STREAM_S_PER_CHUNK["vllm"]
    assert 0.1 < u < 0.5
    client = api_request_s("vllm", 922)
    # the same engine state but for the client's stretched time (the decode batch moves by
    # well under a sequence)
    assert busy.rate.b == pytest.approx(idle.rate.b, abs=0.5)
    extra = busy.ttft_p50_s - idle.ttft_p50_s
    assert extra == pytest.approx(client * u / (1 - u), rel=0.1)
    # at 4 clients the front end is nearly idle
    few = _closed_loop(API_STREAM_S_PER_CHUNK["vllm"], 4).solve("concurrency", 4.0)
    few0 = _closed_loop(0.0, 4).solve("concurrency", 4.0)
    assert few.ttft_p50_s - few0.ttft_p50_s < 0.1 * (busy.ttft_p50_s - idle.ttft_p50_s)


@pytest.mark.parametrize("engine", ["vllm", "atom"])
def test_a_vllm_shaped_server_is_slower_to_take_a_request_in_while_it_streams(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's and ATOM's OpenAI servers stream every decoding sequence's chunk from the
    process that takes new requests in: at 64 clients through the server the TTFT holds
    the stretched front-end time; without the per-chunk cost it holds ``client_s`` only."""
    from chipwise.perf.step import serve

    busy = _engine("api", engine, load="concurrency", concurrency=64)
    monkeypatch.setattr(serve, "API_STREAM_S_PER_CHUNK", {})
    idle = _engine("api", engine, load="concurrency", concurrency=64)
    u = busy.decode_batch_per_replica / busy.tpot_p50_s * 30e-6  # chunks/s x 30 us
    assert 0.05 < u < 0.8
    assert busy.ttft_p50_s - idle.ttft_p50_s == pytest.approx(
        api_request_s(engine, 233) * u / (1 - u), rel=0.25
    )


@pytest.mark.parametrize("load", ["batch", "server"])
def test_an_api_client_times_only_the_engine_loads(load: str) -> None:
    with pytest.raises(WorkloadError, match="harness 'api'"):
        Inference(load=load, harness="api", ttft_p99_s=2.0)


@pytest.mark.parametrize(("harness", "steps"), [("api-sglang-recv-10", 10),
                                                ("api-sglang-recv-30", 30)])  # fmt: skip
def test_an_sglang_admission_gate_holds_a_closed_loops_prompts_for_half_its_cycle(
    harness: str, steps: int
) -> None:
    """SGLang under --scheduler-recv-interval N takes new
    requests every N decode steps: a closed loop's prompt waits out the rest of the cycle
    (half of it at the median), so TTFT grows by about N / 2 steps and the clients, idle
    meanwhile, keep fewer requests decoding; the API client's latency still applies."""
    gated = _engine(harness, "sglang", load="concurrency", concurrency=16)
    api = _engine("api", "sglang", load="concurrency", concurrency=16)
    extra = gated.ttft_p50_s - api.ttft_p50_s
    assert 0.3 * steps * api.tpot_p50_s < extra < 1.0 * steps * api.tpot_p50_s
    assert gated.ttft_p99_s > api.ttft_p99_s
    assert gated.output_tokens_per_s < api.output_tokens_per_s
    assert gated.decode_batch_per_replica < api.decode_batch_per_replica


def test_sglangs_continuous_decode_steps_flag_gates_nothing() -> None:
    """--num-continuous-decode-steps is read by no loop the rows' SGLang runs (its overlap
    loop never read it; PR #23131): the harness that states it times like a plain API
    client."""
    flagged = _engine("api-sglang-decode-steps-4", "sglang", load="concurrency", concurrency=16)
    api = _engine("api", "sglang", load="concurrency", concurrency=16)
    assert flagged.ttft_p50_s == pytest.approx(api.ttft_p50_s, rel=1e-9)
    assert flagged.output_tokens_per_s == pytest.approx(api.output_tokens_per_s, rel=1e-9)


def test_a_gated_harness_is_still_an_api_client() -> None:
    with pytest.raises(WorkloadError, match="API client"):
        Inference(engine="sglang", harness="api-sglang-recv-10", load="batch")


@pytest.mark.parametrize("engine", ["sglang", "vllm", "trtllm"])
def test_an_overlapping_loop_delays_a_busy_engines_prompt_by_one_step(engine: str) -> None:
    """SGLang's default overlap loop, vLLM's async scheduling and TensorRT-LLM's overlap
    scheduler have launched the next batch when they take a prompt, so at 16 clients the
    prompt waits about one decode step more than with the loop off
    (``SCHEDULER_LAUNCHED_AHEAD``)."""
    assert SCHEDULER_LAUNCHED_AHEAD[engine] == 1.0
    on = _engine("api", engine, load="concurrency", concurrency=16, async_scheduling=True)
    off = _engine("api", engine, load="concurrency", concurrency=16, async_scheduling=False)
    extra = on.ttft_p50_s - off.ttft_p50_s
    assert 0.5 * on.tpot_p50_s < extra < 2.0 * on.tpot_p50_s


def test_trtllms_overlap_scheduler_delays_an_open_loops_prompt_in_process_too() -> None:
    """An in-process harness (MLPerf's, no server latency) under Poisson arrivals: with
    TensorRT-LLM's overlap scheduler on, a prompt that finds a step running joins the one
    after the step already launched, so its TTFT is longer by up to a step; the decode
    steps themselves are no longer (the host work hides behind the device)."""
    on = _engine("", "trtllm", load="rps", rps=8.0, async_scheduling=True)
    off = _engine("", "trtllm", load="rps", rps=8.0, async_scheduling=False)
    assert on.tpot_p50_s <= off.tpot_p50_s
    assert on.ttft_p50_s - off.ttft_p50_s > 0.3 * on.tpot_p50_s
