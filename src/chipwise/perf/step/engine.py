"""A continuous-batching serving engine at steady state: batch, TTFT and TPOT percentiles.

vLLM, SGLang, TensorRT-LLM and JetStream all run the same loop: every engine step carries
one new token for each running sequence (decode) plus, within a token budget
(``max_num_tokens``), chunks of waiting prompts (chunked prefill); a finished sequence frees
its slot and its KV-cache blocks at once, and a new request takes them (in-flight batching).

**Why an analytic steady-state model and not an event simulation.** chipwise answers in
seconds over a whole catalog (an SLO search times hundreds of chip x plan x replica
options), so the engine must cost a bounded number of step-time evaluations. At steady state
an event simulation of thousands of requests converges to what these balance equations give;
the tails come from queueing theory. The model, per replica:

* **Decode rate.** With ``b`` sequences decoding, prompts must enter at the rate sequences
  leave: ``P = b x L_in / L_out`` prefill tokens per step on average (``L_in`` after the
  prefix-cache hits). Prefill rides in chunks of ``c = min(budget - b, max(L_in, P))``
  tokens, so a share ``f = P / c`` of steps carries a chunk. Mean step
  ``t = f t(b, c) + (1 - f) t(b, 0)``; an engine that prefills apart (SGLang, ATOM:
  ``PREFILL_APART_SCHEDULERS``) runs ``t(0, c) + t(b, 0)`` instead, its chunks the prompts
  that finishing requests let in together, ``f = 1 - exp(-P / L_in)`` (step times from
  ``serve.EngineStepTimer``: weights
  once per step, KV read per sequence, prefill attention, TP all-reduces; the host's
  per-step work runs while the device executes the previous step, as TensorRT-LLM's overlap
  scheduler and SGLang's zero-overhead scheduler do, so a step costs
  ``max(device, host)``). Output tokens/s = ``b / t``; requests/s ``X = b / (L_out t)``.
* **Limits.** ``b`` is bounded by ``max_num_seqs``, by the KV cache (``kv_pool_bytes``: a
  share of total HBM less the weights for vLLM and SGLang, a share of the HBM free after
  the weights for TensorRT-LLM, over the length-biased mean context
  ``E[L_in L_out + L_out^2 / 2] / E[L_out]``: long answers hold their blocks longer; over
  ``E[(L_in + L_out) L_out] / E[L_out]`` where the engine reserves each admitted request's
  whole output, TensorRT-LLM's GUARANTEED_NO_EVICT under trtllm-bench), and by
  the token budget (``b <= budget x L_out / (L_in + L_out)``). A load beyond them queues
  (vLLM preempts and recomputes when the cache runs out; at steady state the running set is
  the capacity).
* **Load.** ``max_throughput``: ``b`` at the limits; a run of ``N`` requests (``num_requests``,
  as benchmarks state it) is simulated request by request (``finite_run``: the engine's own
  admission, KV-cache preemption or reservation, the prefill burst at the start and the
  drain tail at the end, where the longest outputs decode at a small batch); the
  balance equations cannot hold that tail, whose length is set by the order statistics of
  the output lengths and by when the last requests got in. Its rate is ``N`` over the
  run's wall time, its TTFTs count from the run's start, its TPOTs are each request's
  ``(last - first token) / (outputs - 1)``. Beyond the simulation's bounds (more than
  ``finite_run.MAX_REQUESTS`` per replica, disaggregated or lockstep replicas) the run is
  ``ceil(N / b)`` waves at the steady state, the last one smaller. ``concurrency`` N (closed loop):
  ``X(b) (TTFT(b) + (L_out - 1) t) = N`` by Little's law (bisection: a client's request is
  between its send and its last token, E2E = TTFT + (L_out - 1) TPOT; the first token comes
  from the prompt's own step), at the limits TTFT = ``N / X - (L_out - 1) t``.
  ``rps`` R (open loop, Poisson): ``X(b) = R`` (bisection); above ``X`` at the limits the
  replica is saturated.
* **TTFT** = prefill service ``S(L) = ceil(L / c') t(b, min(L, c'))`` (``c' = budget - b``)
  plus the rest of the step running when the request arrives (it joins at the next step
  boundary: uniform on [0, t] whenever the engine is busy) plus the wait for the prefill
  slot, an M/G/1 queue (Pollaczek-Khinchine mean
  ``lambda E[S^2] / (2 (1 - rho))``, exponential tail ``P(W > w) = rho exp(-w rho / E[W])``
  (Kingman's heavy-traffic form); percentiles of ``W + S`` over the length distribution by
  bisection on the mixture's tail (numpy, vectorised over the length points).
* **Percentiles by load.** ``rps``: the M/G/1 wait above at ``rho = X E[S]``, its
  distribution exact for Poisson arrivals (Pollaczek-Khinchine in Benes' form,
  ``_mg1_wait_cdf``): the exponential tail is M/M/1's and overstates the p99 wait of
  prompt work less variable than an exponential (M/D/1 at rho 0.65: 6.0 against 5.4
  service times).
  ``concurrency`` N below the engine's limits: the same M/G/1 wait with the arrival theorem
  of closed queueing networks (an arriving client sees the other ``N - 1``: the rate scaled
  by ``(N - 1) / N``), solved jointly with ``X (S + W + (L_out - 1) t) = N``, ``W`` over
  the prompts' token share of a step in both (``Engine.prefill_work``); at the limits the clients
  beyond them queue for a slot and the mean wait is what Little's law leaves of ``N / X``
  after service and decode, with the same exponential tail. ``max_throughput`` (MLPerf Offline,
  ``trtllm-bench``): every request is queued at once. An endless backlog reports the prefill
  service; a run of ``N`` requests (``vllm bench serve`` at request rate inf) counts each
  request's wait from the run's start: the first ``b`` are prefilled one after another, the
  k-th after them waits ``k // b`` waves of ``b / X`` for a slot. ``server``
  (MLPerf Server): the planner searches the highest ``rps`` whose p99 TTFT and TPOT from
  this model meet the targets, with the engine's batch limit as tuned as its layout (its
  default or 2048). Near capacity the batch, and so TPOT, grows as ``1 / (1 - rho)``: the
  latency a Server run reports follows from how close to the engine's capacity it runs.
  A finite closed-loop run (``num_requests``) starts every client at once: that first
  wave's prompts are prefilled one after another (its last waits for all the others), and
  its TTFTs weigh ``N / num_requests`` in the run's mean and percentiles (the p99 TTFT of
  a ``vllm bench serve`` run is often that wave).
* **A harness that bunches arrivals** (``Inference.harness`` in
  ``HARNESS_ARRIVAL_WINDOWS``: AMD's MLPerf Server harness) holds requests for a window and
  hands each bunch to one of the deployment's replicas in turn. A replica then sees one
  bunch every ``replicas x window`` seconds, prefilled in one step (the Rate's chunk is the
  bunch, met by a share ``f`` of steps), and a request's TTFT is the rest of its window,
  the step then running and its bunch's prefill (size-biased: itself plus a Poisson number
  of others) - no queue forms, as bunches come spaced out.
* **TPOT** of a request = ``t(b, 0) + (t(b, c) - t(b, 0)) K / L_out`` with ``K`` ~
  Binomial(``L_out``, ``f``) chunks met during its decode: mean ``t``, p99 from the normal
  approximation, mixed over output lengths. Under Poisson arrivals (``rps``) the share
  ``f`` itself varies over a request's decode window with the prompt work that arrives in
  it (compound Poisson, ``_step_quantiles``): a second, independent spread.
* **Lockstep replicas.** Attention-data-parallel ranks (``Plan.adp``) each run this loop on
  their own requests, but every MoE layer's all-gather and reduce-scatter joins them, so a
  step lasts as long as the slowest rank's: with ``n`` ranks each carrying a chunk in a share
  ``f`` of its steps, independently, a share ``1 - (1 - f)^n`` of steps is a chunked one
  (``t(b, c)``) for all of them. That step waits for the busiest rank's attention and dense
  work on its chunk ``c``, but the routed experts the ranks share run only the prompt tokens
  present: ``P / f`` per rank on average (``Engine._chunked_step``; TensorRT-LLM gathers the
  ranks' tokens with their own counts, not padded to the largest, since NVIDIA/TensorRT-LLM
  PR #6064 "Remove padding in attention DP", merged 2025-07-18; SM120 pads again, PR #7965,
  not modelled). TensorRT-LLM's ADP balance holds the
  ranks' prompts and admits them all in one step (an admission gate, below): the gate's
  opening step is a chunked one for every rank whenever any rank holds a prompt, and lasts
  as long as the rank holding the most (``Engine._gated_chunk``).

Pipeline parallelism is timed as one pass through all layers per step (latency); its
throughput gain from overlapping micro-batches is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from chipwise.perf.step.finite_run import MAX_REQUESTS as MAX_RUN_REQUESTS
from chipwise.perf.step.finite_run import RunResult, sample_requests, simulate_run
from chipwise.perf.step.jetstream import DEFAULT_SLOTS as JETSTREAM_DEFAULT_SLOTS
from chipwise.workload.ir import Inference

FloatArray = npt.NDArray[np.float64]
StepFn = Callable[[float, float, float, float], float]
# A step of lockstep replicas whose prompt tokens differ by replica: (decode, context,
# prefill on the busiest replica, prompt length, mean prefill per replica), the last the
# tokens the shared routed experts see (``serve.BatchingStep``)
LockstepStepFn = Callable[[float, float, float, float, float], float]

# The batch limits an engine applies unless told: ``max_num_seqs`` (running sequences) and
# ``max_num_tokens`` (tokens per step). They depend on the engine, its release and the GPU:
#
# * vLLM (vllm/engine/arg_utils.py; dated by each change's merge, the release carrying it
#   followed within weeks):
#   - V0 engine (the default through 0.7.x): EngineArgs.max_num_seqs 256 on every GPU and for
#     every use (offline LLM class, API server) - docs.vllm.ai "Engine Arguments"; vLLM issue
#     #6801 (2024-08) on benchmarks run at this default. Its token budget without chunked
#     prefill is a whole prompt per step (max_model_len): kept at MAX_NUM_TOKENS_DEFAULT here.
#   - V1 engine, the default from v0.8.0 (VLLM_V1_DEFAULT_DATE): _set_default_args_v1 picks by
#     usage context and GPU. PR #12369 (2025-01-23): H100/H200 by name 1024 sequences and
#     16384 tokens for the LLM class (offline: benchmark_throughput, a max_throughput load) or
#     8192 for the API server (online loads); other GPUs 256 and 8192 / 2048.
#   - PR #17073 (merged 2025-04-23): the large values for every GPU with >= 70 GiB ("GPUs like
#     H100 and MI300x"); PR #17885 (2025-05-09) takes A100 out of them again.
#   - v0.28.0 (2026-08-24; PR #51726, quoted in vLLM issue #53961): GPUs with >= 160 GiB get
#     16384 tokens for the API server too.
#   With no date (a question about today) the newest rule applies. vLLM on TPU keeps the
#   V0 values here (its TPU token defaults, PR #17508, are not modelled).
# * SGLang: max_running_requests unset = clamp(kv_tokens / context_len x 512, 2048, 4096)
#   (sgl-project/sglang python/sglang/srt/model_executor/model_runner.py, init_memory_pool):
#   2048 at the usual context lengths; the KV cache bounds the batch beyond that anyway.
#   chunked_prefill_size is not modelled (MAX_NUM_TOKENS_DEFAULT).
# * TensorRT-LLM: max_batch_size 2048 and max_num_tokens 8192 (LLM API / trtllm-serve
#   BuildConfig defaults) under any load; trtllm-bench and MLPerf submissions run there.
# * ATOM (AMD's engine, ROCm/ATOM atom/model_engine/arg_utils.py and atom/config.py at
#   8ccc65c0, 2026-01-14, the atom 0.1.1 image's month): --max-num-seqs 512,
#   --max-num-batched-tokens 16384, under any load.
MAX_NUM_SEQS_DEFAULT = 256
MAX_THROUGHPUT_MAX_SEQS = 2048
# * JetStream: a fixed number of decode slots, jetstream-pytorch's --batch_size default
#   (jetstream.DEFAULT_SLOTS); no per-step token budget (perf/step/jetstream.py).
ENGINE_MAX_NUM_SEQS = {
    "trtllm": MAX_THROUGHPUT_MAX_SEQS,
    "sglang": 2048,
    "jetstream": JETSTREAM_DEFAULT_SLOTS,
    "atom": 512,
}
# Tokens per engine step (prefill chunks + decode tokens): TensorRT-LLM's max_num_tokens
# default 8192; vLLM V1's max_num_batched_tokens for online serving on >= 70 GiB GPUs, 8192.
MAX_NUM_TOKENS_DEFAULT = 8192
ENGINE_MAX_NUM_TOKENS = {"atom": 16384}
VLLM_V1_DEFAULT_DATE = "2025-03-18"  # v0.8.0: the V1 engine on by default
VLLM_BY_MEMORY_DATE = "2025-04-23"  # PR #17073: >= 70 GiB, not a GPU list
VLLM_NOT_A100_DATE = "2025-05-09"  # PR #17885: A100 back to the small values
VLLM_160_GIB_DATE = "2026-08-24"  # v0.28.0: >= 160 GiB, 16384 API-server tokens
_GIB = 2**30


@dataclass(frozen=True, slots=True)
class BatchDefaults:
    """The running-batch and per-step token limits an engine applies unless told."""

    max_num_seqs: int
    max_num_tokens: int


def released_before(date: str, day: str) -> bool:
    """Whether an engine of release ``date`` (YYYY-MM[-DD]; "" = the newest) predates
    ``day``: the one test behind every dated engine default."""
    return bool(date) and date < day


def engine_batch_defaults(
    engine: str,
    *,
    load: str = "rps",
    hbm_bytes: float = 0.0,
    chip_id: str = "",
    kind: str = "gpu",
    date: str = "",
) -> BatchDefaults:
    """``engine``'s own limits (see above) for a ``load`` (``max_throughput`` = vLLM's
    offline LLM class, any other = its API server) on a chip of ``hbm_bytes`` (``chip_id``
    names it, ``kind`` gpu or tpu), with the engine of ``date`` (YYYY-MM[-DD]; "" = newest)."""
    if engine != "vllm":
        seqs = ENGINE_MAX_NUM_SEQS.get(engine, MAX_NUM_SEQS_DEFAULT)
        return BatchDefaults(seqs, ENGINE_MAX_NUM_TOKENS.get(engine, MAX_NUM_TOKENS_DEFAULT))
    if released_before(date, VLLM_V1_DEFAULT_DATE) or kind != "gpu":
        return BatchDefaults(MAX_NUM_SEQS_DEFAULT, MAX_NUM_TOKENS_DEFAULT)
    offline = load == "max_throughput"
    name = chip_id.lower()
    if released_before(date, VLLM_BY_MEMORY_DATE):
        large = name.startswith(("h100", "h200"))
    else:
        a100_small = "a100" in name and not released_before(date, VLLM_NOT_A100_DATE)
        large = hbm_bytes >= 70 * _GIB and not a100_small
    if not large:
        return BatchDefaults(MAX_NUM_SEQS_DEFAULT, 8192 if offline else 2048)
    big = hbm_bytes >= 160 * _GIB and not released_before(date, VLLM_160_GIB_DATE)
    tokens = 16384 if offline or big else 8192
    return BatchDefaults(1024, tokens)


# How much HBM the KV cache gets. Two rules (the same two NVIDIA's aisimulate models for
# Dynamo's mocker, ai-dynamo/aisimulate crates/core/src/perfmodel/memory.rs: "TRT-LLM
# free-fraction vs vLLM/SGLang total-fraction"):
# * vLLM: --gpu-memory-utilization (default 0.9) is the share of the GPU's TOTAL memory the
#   engine may use for weights, activations and KV cache; the KV cache gets what is left of
#   it after the weights and the profiled activation peak (docs.vllm.ai, Engine Arguments).
#   SGLang's --mem-fraction-static is the same kind of share of total memory (weights + KV
#   pool, the activations and CUDA graphs reserved outside it); its default is picked at
#   start-up from the GPU's memory and TP (``sglang_mem_fraction_static``). ATOM's
#   --gpu-memory-utilization (default 0.9) is vLLM's rule: its KV blocks are
#   ``total x 0.9 - used - peak + current`` after a profiling run (atom/model_engine/
#   model_runner.py at 8ccc65c0).
# * TensorRT-LLM: KvCacheConfig.free_gpu_memory_fraction (default 0.9) is the share of the
#   memory still FREE after the weights and activations are allocated ("TensorRT LLM will
#   try to allocate 90% of free GPU memory for KV cache": nvidia.github.io/TensorRT-LLM,
#   "How to Change KV Cache Behavior"; trtllm-bench runs at 0.90-0.95, perf-overview.md).
# * JetStream: no memory-fraction knob. Its decode state's cache arrays (slots x cache
#   length) are allocated whole at start-up (jetstream-pytorch engine.init_decode_state:
#   env.make_caches_generate, one cache per layer, at c8bb611), by XLA from the HBM the
#   weights and the runtime leave: all of the free memory (the server fails to start when
#   they do not fit).
ENGINE_MEMORY_UTILIZATION = 0.9
KV_FREE_MEMORY_FRACTION = {"trtllm": 0.9, "jetstream": 1.0}
# Both rules take the device's memory as the runtime reports it (torch.cuda.mem_get_info's
# total: vLLM's "total_gpu_memory", e.g. 79.2 GiB on an "80 GB" H100), not the datasheet
# figure: ``Chip.usable_hbm_bytes``.
# Models mixing sliding-window and full-attention layers (gpt-oss, Gemma 2/3): engines
# that give a sliding layer blocks for its window only hold a sequence of context C in
# (full layers x C + sliding layers x min(C, window)) token-layers (layers.kv_cached_tokens),
# not all layers x C:
# * vLLM V1's hybrid KV-cache manager ("Sliding window layers: reserve slots only for the
#   most recent sliding_window_size tokens", gpt-oss named: docs.vllm.ai design/
#   hybrid_kv_cache_manager, written at commit 458e74; in the v0.9.2 API docs as the default
#   that FullAttentionSpec's "when hybrid allocator is disabled" falls back from). Before
#   v0.9.2 (2025-07-08) V1 allocated every layer for all tokens.
# SGLang sizes a separate SWA pool at --swa-full-tokens-ratio of the full layers' tokens
# (not modelled: its pool is counted as full attention on every layer).
# TensorRT-LLM is not among them: its variable sliding-window attention (VSWA) keeps one
# KV pool per window size, but sizes every pool as if all layers were full attention
# (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, NVIDIA/TensorRT-LLM@b35ac1b6, read
# 2026-12-07: the per-window memory share "is not used for BaseKVCacheManager::
# calculateMaxNumBlocks because [...] we want to first achieve identical performance as
# assuming all layers as full attention"; "SWA allocates blocks linearly, and we need as
# many blocks as full attention", since PR #6768, 2025-08), so a gpt-oss token costs all
# 36 layers of the pool. Fitted nothing. NVIDIA's MLPerf harness runs TensorRT-LLM under
# MAX_UTILIZATION, not the LLM API's GUARANTEED_NO_EVICT: HarnessConfig's runtime flag
# batch_scheduler_policy defaults to 'max_util' and goes into the engine's
# scheduler_config.capacity_scheduler_policy as MAX_UTILIZATION
# (mlcommons/inference_results_v5.1@952ca601 closed/NVIDIA/code/llmlib/config.py), and
# every v6.0 gpt-oss-120b Server config read sets 'max_util' (and
# kvcache_free_gpu_mem_frac 0.98; closed/{NVIDIA,Nebius,ASUSTeK}/configs/*/Server/
# gpt-oss-120b.py, gbeezybez/inference_results_v6.0@ab33b214, read 2026-12-07): a request
# holds its context only, so its running set is the pool over the mean held context, and
# the whole output is reserved under trtllm-bench only (``reserves_output``). On B300 and
# GB300 that pool holds ~950-1,040 of these sequences, more than the configs' 896
# (gpu_batch_size 128 x 7): the MLPerf runs whose p99 TTFT jumps to 1.3-2.5 s hold
# (Little's law on the scheduled rate, TPOT and TTFT p50) 873-893 requests a GPU, 0.97-1.0
# of that batch limit, those at 0.28-0.69 s 582-658 (see docs/performance.md).
WINDOWED_KV_DATES = {"vllm": "2025-07-08"}
# Points per length distribution (log-normal quantiles): enough for p99 within ~1 %.
LENGTH_POINTS = 48
_Z99 = NormalDist().inv_cdf(0.99)


@dataclass(frozen=True, slots=True)
class ArrivalWindow:
    """A harness that holds arriving requests and hands them to one replica in a bunch:
    it sends what it holds once ``seconds`` have passed since its last send, or sooner
    when it holds ``max_prompts``, to the next replica in turn."""

    seconds: float
    max_prompts: int


# Benchmark harnesses that batch arrivals before the engine sees them, by ``harness`` name:
# * "amd-mlperf-batcher": AMD's MLPerf Inference v4.1 llama2-70b Server harness
#   (mlcommons/inference_results_v4.1@198fc467 closed/AMD/code/llama2-70b-99.9/VllmFp8:
#   test_VllmFp8/test_VllmFp8_SyncServer_perf.sh runs mainVllmFp8_SyncServer.py with
#   --enable-batcher and the defaults --batcher-threshold 0.3 ("Maximum time to wait before
#   sending a batch to vLLM") and --gpu-batch-size 96; sync_sut.py batch_samples_loop sends
#   the held samples when 96 are held or 0.3 s have passed, round-robin over the vLLM
#   engines (next_device_id)). vLLM 0.4.3 there runs without chunked prefill, so a bunch is
#   prefilled in one step of up to max_num_batched_tokens.
HARNESS_ARRIVAL_WINDOWS = {"amd-mlperf-batcher": ArrivalWindow(seconds=0.3, max_prompts=96)}


@dataclass(frozen=True, slots=True)
class AdmissionGate:
    """A scheduler that admits waiting prompts only on every ``steps``-th engine step (while
    at least ``min_running`` requests run): an arrival waits out the rest of the cycle, then
    is prefilled in one step together with every prompt that arrived during it."""

    steps: int
    min_running: int = 0
    # TensorRT-LLM's attention-DP balance (-1 = none, a fixed cycle of ``steps``): ``steps``
    # is its timeout_iters and this its batching_wait_iters; see ``cycle``
    batching_wait: int = -1

    def cycle(self, ranks: int, prompts_per_step: float) -> float:
        """Steps between admissions when each of ``ranks`` lockstep ranks gets a prompt at
        ``prompts_per_step``: ``steps``, or under the ADP balance the sooner of its timeout
        and the wait for every rank to hold a prompt (the longest of ``ranks`` exponential
        waits, ``H_ranks / rate`` on average) plus the batching wait."""
        if self.batching_wait < 0:
            return float(self.steps)
        harmonic = sum(1.0 / k for k in range(1, max(1, ranks) + 1))
        every_rank = harmonic / max(1e-9, prompts_per_step)
        return max(1.0, min(float(self.steps), every_rank + self.batching_wait))


# Engines whose scheduler gates admission, by the ``harness`` (benchmark submission) that ran
# them, each from the submission's own engine configuration:
# * "amd-mlperf-v5.1-interactive": AMD's MLPerf Inference v5.1 llama2-70b Interactive run on
#   MI300X (mlcommons/inference_results_v5.1@965182b0 closed/AMD/code/llama2-70b-99.9/
#   harness_llm/models/llama2-70b/interactive_mi300x.yaml: VLLM_USE_V1 0, num_scheduler_steps
#   8, enable_chunked_prefill False, max_num_seqs 600, max_num_batched_tokens 40960). vLLM V0's
#   multi-step scheduling runs 8 decode steps per scheduler call; waiting prompts are
#   scheduled only between such runs (vLLM RFC #6854, "Multi-Step Scheduling", 2024-07).
# * "amd-mlperf-v5.1-server": AMD's MLPerf Inference v5.1 llama2-70b Server runs on MI300X
#   and MI325X (the same directory's server_mi300x.yaml / server_mi325x.yaml: VLLM_USE_V1
#   unset, num_scheduler_steps 9, enable_chunked_prefill False, max_num_batched_tokens
#   40960, max_num_seqs 650 / 1024): the same V0 multi-step loop, 9 decode steps per call.
#   Its custom-scheduler variables (VLLM_LLAMA2_MLPERF_SCHED with decode-batch targets
#   512..832) patch vLLM code that is not in the submission, so they are not modelled.
# * "amd-mlperf-v6.0-interactive" / "amd-mlperf-v6.0-server": AMD's MLPerf Inference v6.0
#   llama2-70b runs on MI355X (gbeezybez/inference_results_v6.0@ab33b214 closed/AMD/src/
#   llama2-70b-99/interactive_mi355x.yaml, server_mi355x.yaml; the scheduler patch in
#   closed/AMD/setup/llama2-70b-99/patches/llama2-70b_vllm_gfx950.patch): vLLM V1 whose
#   Scheduler.schedule skips the waiting queue unless its step counter is 0, the counter
#   cycling 0..VLLM_SUBSEQUENT_DECODE_STEPS, and only while len(running) >=
#   VLLM_MIN_REQUEST_DECODE_STEP: Interactive 6 and 0 (admits every 7th step), Server 2 and
#   1216 (every 3rd step while 1216+ requests run).
# * "amd-mlperf-v6.0-gpt-oss-offline" / "amd-mlperf-v6.0-gpt-oss-server": the same patch in
#   AMD's v6.0 gpt-oss-120b runs on MI355X (gbeezybez/inference_results_v6.0@232fbf90
#   closed/AMD/setup/gpt-oss-120b/patches/gpt-oss-120b_vllm_v0.14.0_amd_dev.patch;
#   closed/AMD/src/gpt-oss-120b/offline_mi355x.yaml, server_mi355x.yaml, and the same values
#   in Dell's, GigaComputing's and HPE's copies): Offline 5 and 256 (every 6th step while
#   256+ requests run), Server 10 and 128 (every 11th step while 128+ run).
# * "nvidia-mlperf-adp-T-W": NVIDIA's MLPerf Inference DeepSeek-R1 Offline and Server runs,
#   TensorRT-LLM with attention data parallelism over the 8 ranks of each instance and its
#   ADP balance on (closed/NVIDIA/configs/*/{Offline,Server}/deepseek-r1.py:
#   enable_attention_dp True, adp_balancing_enable True, adp_balancing_timeout_iters T,
#   adp_balancing_batching_wait_iters W; mlcommons/inference_results_v5.1@965182b0 and
#   gbeezybez/inference_results_v6.0@232fbf90): Server 9-3 (v5.1 GB300 6-2), Offline
#   500-10 (B200 v5.1, B300 v6.0), 50-10 (GB200) and 6-2 (GB300).
#   PyExecutor._balance_adp_requests (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/
#   py_executor.py; "ADP Balance Strategy", docs/source/blogs/tech_blog/
#   blog10_ADP_Balance_Strategy.md, 2025-09) holds every rank's context requests while
#   not all ranks have one, counting the iterations, and releases them when the count
#   reaches T (then restarts it); once every rank holds one it releases them after W more
#   iterations. All ranks' prompts enter in the same step. At a Server run's rate a rank
#   gets a prompt every few cycles (B200 v5.1: 5 requests/s over 8 ranks, ~0.4 per
#   9-step cycle), so prompts enter every T-th step; in Offline a rank's slot frees every
#   few steps and the cycle is the wait for every rank to hold one, plus W.
# * "trtllm-bench-adp-60-0": a ``trtllm-bench throughput`` run (its limits: trtllm_bench.py)
#   with the same ADP balance, as TensorRT-LLM's perf overview runs DeepSeek-R1 (the page's
#   llm_options.yml: enable_attention_dp true, attention_dp_config enable_balance true,
#   timeout_iters 60, batching_wait_iters 0; NVIDIA/TensorRT-LLM@03e27c7d5f
#   docs/source/developer-guide/perf-overview.md).
# * "api-sglang-recv-N": an HTTP client (API_REQUEST_S) timing SGLang run with
#   --scheduler-recv-interval N (InferenceMAX's B200 DeepSeek-R1 launch scripts: 10, 30 from
#   16 clients). Its event loop polls the tokenizer's queue for new requests only once its
#   SchedulerRecvSkipper has counted N decode forwards (a prefill forward weighs past the
#   threshold, so the loop polls right after one): sgl-project/sglang python/sglang/srt/
#   managers/scheduler_recv_skipper.py, SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE 1.
# * "api-trtllm-adp-50-10": an HTTP client timing trtllm-serve run with attention DP and
#   attention_dp_config enable_balance true at TensorRT-LLM's default timeout_iters 50 and
#   batching_wait_iters 10 (AttentionDpConfig in tensorrt_llm/llmapi/llm_args.py, the same
#   defaults in every stored version read, e.g. NVIDIA/TensorRT-LLM@00043967; the balance as
#   for "nvidia-mlperf-adp-T-W"): InferenceMAX's B200 gpt-oss TensorRT-LLM launches with
#   dp-attention (benchmarks/gptoss_fp4_b200_trt_slurm.sh: enable_balance true, neither
#   iteration count set).
# * "api-sglang-decode-steps-N": the same client timing SGLang run with
#   --num-continuous-decode-steps N (InferenceMAX's MI300X/MI325X/MI355X scripts: 4): no
#   gate. The flag ran N decode forwards back to back only in SGLang's non-overlapped
#   event_loop_normal (sgl-project/sglang PR #1652, 2024-10-13); the overlap loop, SGLang's
#   default since v0.4 (2024-12), never read it, and by 2026-04 the scheduler read it
#   nowhere ("num_continuous_decode_steps is already exposed in the server arguments, but
#   it was not fully wired into the scheduler runtime path", PR #23131, 2026-04-18, closed;
#   that PR would also have skipped the extra steps while requests wait). The rows' images
#   (SGLang v0.5.5.post3 / v0.5.7, 2025-12 / 2026-01) run the overlap loop
#   (``serve.SCHEDULER_LAUNCHED_AHEAD``); until 2026-12-06 chipwise gated them every 4 steps.
HARNESS_ADMISSION_GATES = {
    "amd-mlperf-v5.1-interactive": AdmissionGate(steps=8),
    "amd-mlperf-v5.1-server": AdmissionGate(steps=9),
    "amd-mlperf-v6.0-interactive": AdmissionGate(steps=7),
    "amd-mlperf-v6.0-server": AdmissionGate(steps=3, min_running=1216),
    "amd-mlperf-v6.0-gpt-oss-offline": AdmissionGate(steps=6, min_running=256),
    "amd-mlperf-v6.0-gpt-oss-server": AdmissionGate(steps=11, min_running=128),
    "nvidia-mlperf-adp-9-3": AdmissionGate(steps=9, batching_wait=3),
    "nvidia-mlperf-adp-6-2": AdmissionGate(steps=6, batching_wait=2),
    "nvidia-mlperf-adp-50-10": AdmissionGate(steps=50, batching_wait=10),
    "nvidia-mlperf-adp-500-10": AdmissionGate(steps=500, batching_wait=10),
    "trtllm-bench-adp-60-0": AdmissionGate(steps=60, batching_wait=0),
    "api-sglang-recv-10": AdmissionGate(steps=10),
    "api-sglang-recv-30": AdmissionGate(steps=30),
    "api-trtllm-adp-50-10": AdmissionGate(steps=50, batching_wait=10),
}
# Schedulers that run a waiting prefill batch on its own, the decodes held until no admissible
# prompt waits (``finite_run``: SGLang's get_next_batch_to_run tries get_new_batch_prefill
# first, mixed chunks only with --enable-mixed-chunk; AMD's ATOM likewise). A closed loop of
# clients whose requests all have the same lengths stays in lockstep on them: a wave's
# prompts are prefilled one batch after another while nothing decodes, the wave then decodes
# together, finishes in the same step and its clients send the next wave together. The j-th
# prompt of every wave (not only the run's first) waits for the j - 1 before it, so the mean
# TTFT is about half the wave's prefill, and each request's TPOT carries the prefills after
# its own (Lambda's Qwen3.5-397B SGLang run at 32 x 8192/1024: measured mean TTFT 1.825 s
# against 0.369 s from staggered arrivals; GDN-002). vLLM and TensorRT-LLM put prompt chunks
# into decode steps, so the wave's requests start decoding one after another, finish so and
# come back staggered: there the steady state's staggered arrivals hold.
PREFILL_APART_SCHEDULERS = ("sglang", "atom")
# The share of its time a front end's streaming may keep it busy in ``Engine._client``: at
# the cap a request's own work takes 5x as long; beyond it the front end could not keep up
# with the engine at all (its streamed tokens would fall behind the steps), which the
# steady state does not follow
_FRONT_END_BUSY_MAX = 0.8
# Gauss points of a bunch's summed prompt length (normal, by the central limit theorem)
_BUNCH_Z = np.array([NormalDist().inv_cdf((k + 0.5) / 7) for k in range(7)])


@dataclass(frozen=True, slots=True, kw_only=True)
class Lengths:
    """Joint (input, output) length points with weights summing to 1; ``stated``: the run's
    own lengths (a histogram), not a spread assumed around stated means."""

    inputs: FloatArray
    outputs: FloatArray
    weights: FloatArray
    stated: bool = False

    @property
    def identical(self) -> bool:
        """Whether every request is stated to have the same input and output lengths (a
        one-bucket histogram: ``vllm bench serve --dataset-name random`` at its default
        range ratio 0); means alone (a ShareGPT sample's) do not say so."""
        return (
            self.stated
            and bool(np.all(self.inputs == self.inputs[0]))
            and bool(np.all(self.outputs == self.outputs[0]))
        )

    @property
    def mean_in(self) -> float:
        return float(self.weights @ self.inputs)

    @property
    def mean_out(self) -> float:
        return float(self.weights @ self.outputs)

    @property
    def mean_context(self) -> float:
        """Mean context of a running sequence: time-weighted by its output length."""
        w, i, o = self.weights, self.inputs, self.outputs
        return float(w @ (i * o + o * o / 2.0)) / max(1e-9, float(w @ o))

    @property
    def mean_reserved(self) -> float:
        """Mean KV tokens a running sequence holds when the engine reserves its prompt and
        whole output at admission (TensorRT-LLM's ``GUARANTEED_NO_EVICT``): ``L_in + L_out``,
        time-weighted by its output length like ``mean_context``."""
        w, i, o = self.weights, self.inputs, self.outputs
        return float(w @ ((i + o) * o)) / max(1e-9, float(w @ o))


def windows_kv(engine: str, date: str = "") -> bool:
    """Whether ``engine`` (of release ``date``, "" = newest) holds only a sliding layer's
    window in its KV cache (``WINDOWED_KV_DATES``)."""
    since = WINDOWED_KV_DATES.get(engine)
    return since is not None and not released_before(date, since)


# SGLang's default --mem-fraction-static (python/sglang/srt/server_args.py,
# _handle_gpu_memory_settings / __post_init__):
# * before PR #10975 (merged 2025-09-27): by TP (world) size alone: 0.88 at 1, 0.87 at 2+,
#   0.85 at 4+, 0.81 at 8+, 0.79 at 16+;
# * since (PR #10975, "Use more general heuristics to set the default value of
#   --mem-fraction-static"): (gpu_mem - reserved) / gpu_mem with reserved (MiB) = 512 +
#   1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + tp x pp / 8 x 1024, at
#   least 10 GiB on GPUs over 60 GiB; chunked_prefill_size and cuda_graph_max_bs by the
#   GPU's memory (nvidia-smi's total, MiB): < 20 GiB 2048 / 8; < 35 GiB 2048 / 24 (80 at tp
#   4+); < 60 GiB 4096 / 32 (160); < 160 GiB 8192 / 256 (512); else 16384 / 512. On an H100
#   at tp 1 that is 0.834 (sgl-project/sglang issue #29092, 2026-06-23: "0.828 for H100 with
#   Qwen3 32B").
SGLANG_MEM_FRACTION_DATE = "2025-09-27"
_SGLANG_TP_FRACTIONS = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
# (below MiB, chunked_prefill_size, cuda_graph_max_bs under tp 4, at tp 4+)
_SGLANG_TIERS = (
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (160 * 1024, 8192, 256, 512),
    (float("inf"), 16384, 512, 512),
)
# SGLang captures CUDA graphs for decode batches of up to --cuda-graph-max-bs sequences; a
# larger decode batch runs the model op by op (``CudaGraphRunner.can_run``: "batch_size <=
# self.max_bs", else ``ModelRunner.forward_decode`` eagerly), so its step waits for the host
# to launch every kernel, as an eager prompt forward does (``EAGER_LAUNCH_HOST_S``). The
# default (python/sglang/srt/server_args.py) is the by-memory tier above since PR #10372
# ("relax max_cuda_graph_bs", opened 2025-09-12 "to align with vLLM ... and avoid wrong
# benchmark" results, e.g. a Qwen3-235B-A22B-FP8 ShareGPT run; merged before PR #10975 of
# 2025-09-27, which sizes memory from it); before it 160, or 8 (80 at tp 4+) on GPUs under
# 25,000 MiB (PR #2360, 2024-12-05).
SGLANG_GRAPH_TIERS_DATE = "2025-09-19"


def sglang_cuda_graph_max_bs(gpu_bytes: float, tp: int, date: str = "") -> int:
    """SGLang's default --cuda-graph-max-bs on a GPU of ``gpu_bytes`` under ``tp``, for the
    release of ``date`` ("" = newest; ``SGLANG_GRAPH_TIERS_DATE``)."""
    mib = gpu_bytes / 2**20
    if released_before(date, SGLANG_GRAPH_TIERS_DATE):
        return 160 if mib >= 25_000 else (8 if tp < 4 else 80)
    _, _, bs_small, bs_large = next(t for t in _SGLANG_TIERS if mib < t[0])
    return bs_small if tp < 4 else bs_large


def sglang_mem_fraction_static(gpu_bytes: float, tp: int, pp: int = 1, date: str = "") -> float:
    """SGLang's default --mem-fraction-static on a GPU of ``gpu_bytes`` under ``tp`` x
    ``pp``, for the release of ``date`` ("" = newest; see the rule above)."""
    world = tp * pp
    if released_before(date, SGLANG_MEM_FRACTION_DATE):
        return next(f for size, f in _SGLANG_TP_FRACTIONS if world >= size)
    mib = gpu_bytes / 2**20
    chunk = next(t for t in _SGLANG_TIERS if mib < t[0])[1]
    graph_bs = sglang_cuda_graph_max_bs(gpu_bytes, tp, date)
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * graph_bs + world / 8 * 1024
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved) / mib, 3)


# SGLang's pools for a hybrid linear-attention model (Qwen3-Next, Qwen3.5): the memory left
# for caches is split between a state pool and the full-attention layers' KV pool at
# --mamba-full-memory-ratio (state : KV, default 0.9, i.e. ~47 % for states), and the
# scheduler admits at most (state slots // 3) running requests
# (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO, with the default --mamba-scheduler-strategy
# no_buffer; extra_buffer adds 1-2 slots a request). sgl-project/sglang v0.5.9
# python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py handle_max_mamba_cache
# ("solve the equations: mamba_state_memory + full_kv_cache_memory == total_rest_memory;
# mamba_state_memory / full_kv_cache_memory == server_args.mamba_full_memory_ratio") and
# init_memory_pool ("max_num_reqs = min(max_num_reqs, max_mamba_cache_size // ratio)");
# server_args default mamba_full_memory_ratio=0.9 (as a v0.5.9 backport and later SGLang
# trees store them; read 2026-12-06). Not fitted: on one H200, Qwen3.5-35B-A3B's ~63 MB of
# fp32 state a request caps a 512-client run at ~130 running requests.
SGLANG_STATE_MEMORY_RATIO = 0.9
SGLANG_STATE_SLOTS_PER_REQUEST = 3


def sglang_state_split(pool_bytes: float) -> tuple[float, float]:
    """(KV bytes, state bytes) of SGLang's cache memory for a hybrid linear-attention model
    (``SGLANG_STATE_MEMORY_RATIO``)."""
    states = pool_bytes * SGLANG_STATE_MEMORY_RATIO / (1.0 + SGLANG_STATE_MEMORY_RATIO)
    return pool_bytes - states, states


def kv_pool_bytes(
    engine: str, capacity_bytes: float, non_kv_bytes: float, fraction: float = 0.0
) -> float:
    """Bytes of KV cache one chip gets under ``engine``'s sizing rule (see the constants
    above): ``non_kv_bytes`` are what the engine holds outside the pool (weights, and the
    activation peak and runtime reserve where the rule counts them); ``fraction`` replaces
    the engine's default share (of total memory for vLLM and SGLang, of free memory for
    TensorRT-LLM: ``Inference.memory_fraction``)."""
    free_share = KV_FREE_MEMORY_FRACTION.get(engine)
    if free_share is not None:  # a share of what is free after the rest is allocated
        return max(0.0, (fraction or free_share) * (capacity_bytes - non_kv_bytes))
    return max(0.0, (fraction or ENGINE_MEMORY_UTILIZATION) * capacity_bytes - non_kv_bytes)


def _lognormal_points(mean: float, std: float, n: int) -> FloatArray:
    if std <= 0:
        return np.array([float(mean)])
    sigma2 = math.log1p((std / mean) ** 2)
    mu = math.log(mean) - sigma2 / 2.0
    nd = NormalDist()
    z = np.array([nd.inv_cdf((k + 0.5) / n) for k in range(n)])
    return np.maximum(1.0, np.exp(mu + math.sqrt(sigma2) * z))


def lengths_of(phase: Inference) -> Lengths:
    """The load's length distribution: a histogram, log-normal (mean, std), or fixed."""
    if phase.lengths:
        arr = np.array(phase.lengths, dtype=float)
        w = arr[:, 2] / arr[:, 2].sum()
        return Lengths(inputs=arr[:, 0], outputs=np.maximum(1.0, arr[:, 1]), weights=w, stated=True)
    ins = _lognormal_points(phase.input_len, phase.input_len_std, LENGTH_POINTS)
    outs = _lognormal_points(max(1, phase.output_len), phase.output_len_std, LENGTH_POINTS)
    i, o = np.meshgrid(ins, outs, indexing="ij")
    w = np.full(i.size, 1.0 / i.size)
    return Lengths(inputs=i.ravel(), outputs=o.ravel(), weights=w)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rate:
    """Steady state of one replica with ``b`` sequences decoding."""

    b: float
    t0_s: float  # a decode-only step
    t1_s: float  # a step with a prefill chunk
    chunk: float  # prefill tokens in a chunked step
    f: float  # share of steps with a chunk (on any of the lockstep replicas)
    step_s: float  # mean step
    # tokens each decoding sequence emits per step: 1, or speculative decoding's mean
    # acceptance length
    tokens_per_step: float = 1.0

    @property
    def output_tokens_per_s(self) -> float:
        return self.b * self.tokens_per_step / self.step_s if self.b else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineState:
    """What one replica does at the load (per replica)."""

    rate: Rate
    requests_per_s: float
    in_system: float
    ttft_mean_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    # the mean over requests of each one's TPOT ((last token - first) / (outputs - 1), as
    # ``vllm bench serve`` reports "Mean TPOT"); in the steady state every request decodes
    # at the mean step, so it is the step time per emitted token
    tpot_mean_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    max_seqs: int
    kv_capacity_tokens: float
    saturated: bool
    limit: str
    prefill_s: float  # mean prefill service (no queue)


class Engine:
    """Balance equations of one replica (see the module docstring)."""

    def __init__(
        self,
        step: StepFn,
        lengths: Lengths,
        *,
        prefill_tokens_fraction: float,
        max_num_seqs: int,
        max_num_tokens: int,
        kv_capacity_tokens: float,
        seq_limit: str = "max_num_seqs",
        disaggregated: bool = False,
        prefill_replicas_per_decode: float = 1.0,
        decode_replicas: int = 1,
        prefill_step: StepFn | None = None,
        prefill_budget: float = 0.0,
        kv_transfer_s_per_token: float = 0.0,
        prefill_lockstep: int = 1,
        run_requests: float = 0.0,
        lockstep_replicas: int = 1,
        arrival_window: ArrivalWindow | None = None,
        window_replicas: int = 1,
        scheduler: str = "vllm",
        client_s: float = 0.0,
        client_chunk_s: float = 0.0,
        admission_gate: AdmissionGate | None = None,
        launched_ahead: float = 0.0,
        tokens_per_step: float = 1.0,
        verify_tokens: float = 1.0,
        reserves_output: bool = False,
        lockstep_step: LockstepStepFn | None = None,
        slot_queue: bool = False,
        least_loaded: bool = False,
    ) -> None:
        self.step = step
        # one dispatcher over the ``window_replicas`` replicas sends each arrival to the one
        # with the fewest requests in flight (join the shortest queue): a prompt then waits
        # only when every replica's prefill is busy, one M/G/c queue over the replicas
        # rather than c split Poisson ones. NVIDIA's MLPerf LLM harness dispatches Server
        # queries so (code/llmlib, HarnessConfig.traffic_distribution_policy
        # "load_balancing" for the Server scenario: the core with the fewest pending
        # samples, LLMServerFactory._create_scheduler; ykamiset/inference_results_v5.1@
        # e9ccad4d, the same in v6.0, read 2026-12-06)
        self.least_loaded = least_loaded
        # an open loop's wait for a free sequence slot near the batch limit (``_slot_wait``):
        # timed for a server load at its stated rate only (``Predictor._server_choice``);
        # the rate search and plain rps loads leave it out (see ``_slot_wait``)
        self.slot_queue = slot_queue
        # the step with the lockstep replicas' prompts apart (None: as if every one of them
        # had the busiest replica's chunk, an upper bound on the routed experts' work)
        self.lockstep_step = lockstep_step
        # speculative decoding: a decoding sequence emits ``tokens_per_step`` tokens a step
        # (the mean acceptance length) and takes ``verify_tokens`` (1 + drafts) of the step's
        # token budget (vLLM, SGLang and TensorRT-LLM count the draft tokens they verify
        # against max_num_batched_tokens / max_num_tokens); a request decodes in
        # ``L_out / tokens_per_step`` steps
        self.accept = max(1.0, tokens_per_step)
        self.verify = max(1.0, verify_tokens)
        # a scheduler that admits prompts only every few steps (``HARNESS_ADMISSION_GATES``)
        self.gate = admission_gate if not disaggregated else None
        # a harness batching arrivals (rps loads): each window's requests reach one of
        # ``window_replicas`` replicas in turn, as one bunch (``HARNESS_ARRIVAL_WINDOWS``)
        self.window = arrival_window if not disaggregated else None
        self.window_replicas = max(1, window_replicas)
        # whose scheduler admits and preempts in a finite run (finite_run.simulate_run)
        self.scheduler = scheduler
        self.max_num_seqs = max_num_seqs
        # seconds each request spends outside the engine before its first token reaches the
        # client (an HTTP server's own latency, ``serve.API_REQUEST_S``): added to every
        # TTFT, and to a closed-loop client's cycle (its request is not in the engine then)
        self.client_s = client_s
        # front-end seconds per streamed chunk (``serve.API_STREAM_S_PER_CHUNK``): the server
        # process that handles a request also turns every decoding sequence's token of every
        # step into a streamed chunk, so the busier it is the longer ``client_s`` takes
        # (``_client``)
        self.client_chunk_s = client_chunk_s
        # steps already launched ahead of a prompt the scheduler has just received: an
        # overlap scheduler launches the next batch before it takes new requests, so a prompt
        # that arrives during a step waits out that step and then the one already queued
        # behind it (``serve.SCHEDULER_LAUNCHED_AHEAD``)
        self.ahead = max(0.0, launched_ahead) if not disaggregated else 0.0
        # requests in the whole run (0 = endless): a closed loop's clients all send their
        # first request at once, and that first wave's queue is part of a finite run's TTFT
        self.run_requests = run_requests
        # replicas whose steps are joined by collectives (attention-DP ranks): see above
        self.lockstep = max(1, lockstep_replicas)
        self.lengths = lengths
        self.l_in = lengths.mean_in
        self.l_pre = max(1.0, self.l_in * prefill_tokens_fraction)
        self.pre_fraction = prefill_tokens_fraction
        self.l_out = max(1.0, lengths.mean_out)
        self.l_steps = self.l_out / self.accept  # decode steps per request
        self.ctx = lengths.mean_context
        self.budget = max_num_tokens
        self.kv_capacity_tokens = kv_capacity_tokens
        self.disaggregated = disaggregated
        # disaggregated (Dynamo, AIConfigurator's xPyD): this engine is one decode replica;
        # prompts run on a separate prefill pool of this many replicas per decode replica,
        # and each prompt's KV cache crosses the network before its first decode step
        self.prefill_per_decode = prefill_replicas_per_decode
        # the whole prefill pool, which one router feeds from every decode replica's share
        self.prefill_servers = max(1.0, prefill_replicas_per_decode * decode_replicas)
        # a prefill pool laid out apart (``Inference.prefill_pool``): its own step time
        # and token budget per prefill replica (None/0 = the decode replica's)
        self.pre_step = prefill_step or step
        self.pre_budget = prefill_budget or max_num_tokens
        self.kv_transfer_s_per_token = kv_transfer_s_per_token
        # prefill replicas whose steps are joined by collectives (the attention-DP ranks of
        # one prefill instance, whose MoE layers join them): a prompt that reaches an idle
        # rank still waits out the step its instance's other ranks are running
        self.pre_lockstep = max(1, prefill_lockstep)
        # the KV cache bounds the running set at what its sequences hold on average, or,
        # under a capacity policy that reserves every admitted request's whole output
        # (``reserves_output``: TensorRT-LLM's default GUARANTEED_NO_EVICT, see
        # finite_run), at what they reserve
        held = lengths.mean_reserved if reserves_output else self.ctx
        kv_seqs = int(kv_capacity_tokens // max(1.0, held))
        # ``seq_limit`` names what set ``max_num_seqs`` (the engine's flag, or SGLang's state
        # pool for a hybrid model: "state_slots")
        limits = {seq_limit: max_num_seqs, "kv_cache": kv_seqs}
        if not disaggregated and self._prefills_apart():
            # the prompts run in forwards of their own: a decode step holds b x verify tokens
            limits["max_num_tokens"] = int(self.budget / self.verify)
        elif not disaggregated:
            # b (verify + L_pre / steps) tokens a step: its decodes and their prompts' share
            limits["max_num_tokens"] = int(
                self.budget * self.l_steps / (self.l_pre + self.verify * self.l_steps)
            )
        self.limit, cap = min(limits.items(), key=lambda kv: kv[1])
        self.max_seqs = max(0, cap)
        self._rates: dict[float, Rate] = {}
        self._cycles: dict[float, float] = {}  # context_cycle_s by arrival rate

    @property
    def pooled(self) -> bool:
        """Whether prompts queue at one pool of replicas (``least_loaded``, aggregated)."""
        return self.least_loaded and self.window_replicas > 1 and not self.disaggregated

    def rate(self, b: float) -> Rate:
        # b is a time average (Little's law), not a count: kept fractional so that the
        # balance equations have a continuous root (a rounded b pushed its remainder into
        # the closed loop's wait, so TTFT could fall as clients were added)
        b = max(1.0, float(b))
        cached = self._rates.get(b)
        if cached is not None:
            return cached
        t0 = self.step(b, self.ctx, 0.0, self.l_in)
        a = self.accept
        if self.disaggregated:
            r = Rate(b=b, t0_s=t0, t1_s=t0, chunk=0.0, f=0.0, step_s=t0, tokens_per_step=a)
        else:
            need = b * self.l_pre / self.l_steps
            step_s = t0
            # with a harness window the prompts come as bunches, one prefilled per step:
            # its size follows the rate, which follows the step (two fixed-point passes);
            # an admission gate every n steps admits n steps' worth of prompts at once
            # (``_gated_chunk``)
            # a prompt forward of its own (``_prefills_apart``) has no decodes beside it: the
            # whole budget (SGLang's PrefillAdder bounds it by chunked_prefill_size alone)
            apart = self._prefills_apart()
            room = max(1.0, self.budget if apart else self.budget - b * self.verify)
            for _ in range(2 if self.window else 1):
                if self._gated(b):
                    chunk, f = self._gated_chunk(b, room)
                elif apart:
                    chunk, f = self._apart_chunk(need, room)
                else:
                    bunch = self._bunch_prompts(b / (self.l_steps * step_s)) * self.l_pre
                    chunk = max(1.0, min(room, max(self.l_pre, need, bunch)))
                    # a step of lockstep replicas is a chunked one when any of them has a
                    # chunk
                    f = 1.0 - (1.0 - min(1.0, need / chunk)) ** self.lockstep
                t1 = self._chunked_step(b, chunk, need / f if f > 0 else chunk, t0)
                step_s = f * t1 + (1 - f) * t0
            r = Rate(b=b, t0_s=t0, t1_s=t1, chunk=chunk, f=f, step_s=step_s, tokens_per_step=a)
        self._rates[b] = r
        return r

    def _after_first_s(self, rate: Rate) -> float:
        """Seconds from a request's first token to its last: ``L_out - 1`` tokens in
        ``(L_out - 1) / accept`` steps (E2E = TTFT + that, vLLM bench's TPOT =
        (E2E - TTFT) / (L_out - 1)). The first token comes from the prompt's own (last
        prefill) step, which the TTFT's prefill service already holds; the decode batch ``b``
        counts that step as one of its ``L_out / accept`` (the running set holds the
        request from its prefill step), so a closed loop's clients are
        ``X (TTFT + this)``, not ``b + X TTFT``."""
        return max(0.0, self.l_out - 1.0) / self.accept * rate.step_s

    def _client(self, rate: Rate) -> float:
        """Seconds a request spends in the HTTP front end (``client_s``) while it also streams
        one chunk per decoding sequence per step (``rate``): its own work shares the process
        with that load, busy a share ``u`` of the time, so it takes ``client_s / (1 - u)``
        (processor sharing), ``u`` capped at ``_FRONT_END_BUSY_MAX``."""
        if self.client_s <= 0.0 or self.client_chunk_s <= 0.0 or rate.step_s <= 0.0:
            return self.client_s
        busy = min(_FRONT_END_BUSY_MAX, rate.b / rate.step_s * self.client_chunk_s)
        return self.client_s / (1.0 - busy)

    def _prefills_apart(self) -> bool:
        """Whether this replica runs its prompts in forwards of their own
        (``PREFILL_APART_SCHEDULERS``), not joined to other replicas' steps."""
        return self.scheduler in PREFILL_APART_SCHEDULERS and self.lockstep == 1 and not self.window

    def _apart_chunk(self, need: float, room: float) -> tuple[float, float]:
        """(prompt tokens of a prefill forward, share of decode steps followed by one) for a
        scheduler that prefills apart: after each decode step it prefills every prompt then
        waiting (as many as slots were freed, within ``room``) in one forward. Requests finish,
        and so prompts enter, at ``m = need / L_pre`` per decode step, taken as Poisson: a
        share ``1 - exp(-m)`` of decode steps is followed by a prefill, of ``need / f`` tokens
        on average (one prompt per forward only when m is small). Identical requests
        (``Lengths.identical``) enter in waves instead."""
        m = need / self.l_pre
        if self.lengths.identical:
            # identical requests: those admitted together finish together, and their
            # successors enter as a wave every L_steps decode steps, prefilled in as few
            # forwards as the room allows
            wave = need * self.l_steps
            forwards = math.ceil(wave / room)
            return wave / forwards, min(1.0, forwards / self.l_steps)
        f = -math.expm1(-m)
        if f <= 0.0:
            return self.l_pre, 0.0
        chunk = need / f
        if chunk > room:
            return room, min(1.0, need / room)
        return max(1.0, chunk), f

    def _gated_chunk(self, b: float, room: float) -> tuple[float, float]:
        """(prompt tokens of a chunked step, share of steps that are chunked) under an
        admission gate with ``b`` sequences decoding per replica and ``room`` prompt tokens
        a step. Over a cycle the ``lockstep`` ranks together receive ``K`` prompts, Poisson
        of mean ``ranks x m`` (``m`` per rank: as many enter as leave). When the gate opens
        the step is a chunked one for every rank if any rank holds a prompt (probability
        ``1 - exp(-ranks m)``: with 8 ranks at a Server run's ~0.3 prompts per rank per
        cycle, nearly every cycle, not a third of them), and it lasts as long as the rank
        with the most prompts. TensorRT-LLM deals new requests to the attention-DP ranks
        with the fewest active requests and tokens (``ExecutorRequestQueue.
        _balance_requests_across_ranks``, a heap), so that rank holds ``ceil(K / ranks)``
        (several steps when they exceed the room). One replica: its own ``K``."""
        m = b / self.l_steps * self._cycle(b)
        ranks = self.lockstep
        lam = ranks * m
        p_any = -math.expm1(-lam)
        if p_any <= 0.0:
            return self.l_pre, 0.0
        k, pk = _poisson(lam, width=10.0)
        most = float(pk @ np.ceil(k / ranks)) / p_any  # on the busiest rank
        tokens = max(self.l_pre, most * self.l_pre)
        chunk = max(1.0, min(room, tokens))
        return chunk, min(1.0, p_any / self._cycle(b) * max(1.0, tokens / room))

    def _chunked_step(self, b: float, chunk: float, mean_prefill: float, t0: float) -> float:
        """A chunked step with ``b`` sequences decoding per replica and ``chunk`` prompt
        tokens on the busiest replica. Lockstep replicas (attention-DP ranks) wait for the
        busiest one's attention and dense work, but their shared routed experts run only
        the prompt tokens present: ``mean_prefill`` per replica on average (the prompt
        tokens entering per replica per step over the share of steps that carry any: the
        others of a gated release, or of an any-rank chunked step, decode only)."""
        if self.lockstep > 1 and self.lockstep_step is not None:
            routed = min(chunk, max(0.0, mean_prefill))
            return self.lockstep_step(b, self.ctx, chunk, self.l_in, routed)
        if self._prefills_apart():
            # the prompts' own forward, then the decodes' (``t0``, the decode-only step;
            # ``PREFILL_APART_SCHEDULERS``)
            return self.step(0.0, self.ctx, chunk, self.l_in) + t0
        return self.step(b, self.ctx, chunk, self.l_in)

    def _gated(self, b: float) -> bool:
        """Whether an admission gate holds prompts back with ``b`` sequences running."""
        return self.gate is not None and b >= self.gate.min_running

    def _cycle(self, b: float) -> float:
        """Steps between the gate's admissions with ``b`` sequences decoding per replica
        (as many prompts enter a step as requests leave: ``b / L_steps``)."""
        assert self.gate is not None
        return self.gate.cycle(self.lockstep, b / self.l_steps)

    def _bunch_prompts(self, x: float) -> float:
        """Mean prompts in one harness bunch when each replica serves ``x`` requests/s: the
        harness sees ``window_replicas x`` and sends what one window holds (0: no window)."""
        if self.window is None:
            return 0.0
        return min(float(self.window.max_prompts), self.window_replicas * x * self.window.seconds)

    def _window_ttfts(self, rate: Rate, x: float) -> tuple[FloatArray, FloatArray]:
        """TTFT points and weights of a request that a harness window holds (see
        ``HARNESS_ARRIVAL_WINDOWS``): the rest of the window (uniform), the engine step then
        running (uniform), and the prefill of its whole bunch. A request's bunch is
        size-biased: it is itself plus a Poisson number of others (the harness's arrivals
        over the window), whose summed prompt length is normal (mean and variance of the
        length distribution). ``x``: this replica's requests/s."""
        assert self.window is not None
        lam = max(1e-9, self.window_replicas * x)  # arrivals at the harness
        seconds = min(self.window.seconds, self.window.max_prompts / lam)
        total, wt = self._bunch_ttfts(rate, lam, seconds, self.window.max_prompts)
        # the bunch reaches the engine at a random point of its step cycle
        return _with_step_residual(total, wt, rate.step_s, 1.0, self.ahead)

    def _gate_ttfts(self, rate: Rate, x: float) -> tuple[FloatArray, FloatArray]:
        """TTFT points and weights under an admission gate (``HARNESS_ADMISSION_GATES``): the
        rest of the gate's cycle of ``steps`` mean steps (uniform: arrivals fall uniformly
        in it), then the admission step, which prefills the request's whole bunch (itself
        and the Poisson number of others that arrived over the cycle). ``x``: this
        replica's requests/s."""
        assert self.gate is not None
        lam = max(1e-9, x)
        points, w = self._bunch_ttfts(rate, lam, self._cycle(rate.b) * rate.step_s, math.inf)
        # the gate opens as a step is launched: the bunch's prefill queues behind the steps an
        # overlap scheduler has already launched
        return points + self.ahead * rate.step_s, w

    def _summed_prompts(self, counts: FloatArray, pk: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Prefill tokens of ``counts`` prompts together (weights ``pk``), at the
        ``_BUNCH_Z`` Gauss points of the normal their sum tends to (central limit theorem):
        (tokens, weights), one row of points per count, flattened."""
        lens = self.lengths
        inputs = np.maximum(1.0, lens.inputs * self.pre_fraction)
        mean = float(lens.weights @ inputs)
        sd = math.sqrt(max(0.0, float(lens.weights @ (inputs - mean) ** 2)))
        tokens = counts[:, None] * mean + _BUNCH_Z[None, :] * np.sqrt(counts)[:, None] * sd
        w = pk[:, None] * np.full(_BUNCH_Z.size, 1.0 / _BUNCH_Z.size)[None, :]
        return tokens.ravel(), w.ravel()

    def _bunch_ttfts(
        self, rate: Rate, lam: float, seconds: float, max_prompts: float
    ) -> tuple[FloatArray, FloatArray]:
        """TTFT points and weights of a request held ``seconds`` with others arriving at
        ``lam``/s (at most ``max_prompts`` in a bunch): the rest of the hold (uniform) and
        its bunch's prefill, ``ceil(tokens / room)`` steps of ``rate.b`` decodes."""
        others, pk = _poisson(lam * seconds)
        k = np.minimum(others + 1.0, max_prompts)
        tokens, w = self._summed_prompts(k, pk)
        tokens = np.maximum(np.repeat(k, _BUNCH_Z.size), tokens)  # at least a token each
        room = max(1.0, self.budget - rate.b * self.verify)
        # step times on a geometric grid of bunch sizes, interpolated (bounded work)
        grid = np.unique(np.geomspace(max(1.0, float(tokens.min())), float(tokens.max()) + 1.0, 24))
        grid_s = np.array(
            [
                math.ceil(n / room) * self.step(rate.b, self.ctx, min(n, room), self.l_in)
                for n in grid
            ]
        )
        service = np.interp(tokens, grid, grid_s)
        # the rest of the hold the request waits out
        return _plus_uniform(service, w, seconds, 1.0)

    def requests_per_s(self, b: float) -> float:
        r = self.rate(b)
        x = r.b / (self.l_steps * r.step_s)
        if self.disaggregated:  # the prefill pool's share may be the bound
            x = min(x, self.prefill_per_decode / self._mean_work(0.0))
        return x

    def prefill_work(self, b: float, inputs: FloatArray) -> FloatArray:
        """What prompts of ``inputs`` tokens occupy of their prefill slot, for its queue and
        its capacity: their tokens' share of a full step (a step packs prompts up to the
        token budget), plus their KV transfer when disaggregated. A prompt alone on an idle
        slot (the TTFT's service) takes less than that but the slot serves fewer a second."""
        step, room, dec = self._prefill_slot(b)
        work = inputs * (step(dec, self.ctx, room, self.l_in) / room)
        if self.disaggregated:
            work = work + inputs * self.kv_transfer_s_per_token
        return work

    def _mean_work(self, b: float) -> float:
        return float(self.prefill_work(b, np.array([self.l_pre]))[0])

    def _mean_prefill_s(self, b: float) -> float:
        """Mean seconds a prompt is prefilled with ``b`` sequences decoding, over the length
        distribution (``prefill_service``): the service in ``_state``'s mean TTFT."""
        lens = self.lengths
        inputs = np.maximum(1.0, lens.inputs * self.pre_fraction)
        return float(lens.weights @ self.prefill_service(b, inputs))

    def _work_moments(self, b: float) -> tuple[float, float]:
        """(E[W], E[W^2]) of what the prompts occupy of the prefill slot with ``b`` sequences
        decoding (``prefill_work`` over the length distribution): the queue a closed loop's
        prompt waits in, in ``solve``'s balance as in ``_state``'s TTFT."""
        lens = self.lengths
        work = self.prefill_work(b, np.maximum(1.0, lens.inputs * self.pre_fraction))
        return float(lens.weights @ work), float(lens.weights @ (work * work))

    def _prefill_slot(self, b: float) -> tuple[StepFn, float, float]:
        """Where prompts are prefilled with ``b`` sequences decoding per replica: (the step
        that runs them, prompt tokens a step takes, sequences decoding alongside) - this
        replica's steps beside its decodes, or disaggregated an idle prefill replica's."""
        if self.disaggregated:
            return self.pre_step, max(1.0, self.pre_budget), 0.0
        return self.step, max(1.0, self.budget - b * self.verify), b

    def prefill_service(self, b: float, inputs: FloatArray) -> FloatArray:
        """Seconds to prefill prompts of ``inputs`` tokens (after prefix hits) with ``b``
        sequences decoding alongside; disaggregated: on an idle prefill replica."""
        step, room, dec = self._prefill_slot(b)
        if inputs.size == 1:  # one length (a mean's service), without np.unique's sort
            return np.array([_chunked_prefill_s(step, dec, self.ctx, float(inputs[0]), room)])
        uniq, index = np.unique(inputs, return_inverse=True)
        times = np.array([_chunked_prefill_s(step, dec, self.ctx, float(n), room) for n in uniq])
        return np.asarray(times[index], dtype=float)

    def context_cycle_s(self, lam: float) -> float:
        """Mean seconds of one step of a busy context (prefill) replica that receives
        ``lam`` prompts/s: a context-only worker (TensorRT-LLM's disaggregated context
        servers, Dynamo's prefill workers) runs one step after another, each taking every
        prompt that arrived during the step before, up to its token budget (TensorRT-LLM's
        capacity scheduler packs the waiting requests into a step; FCFS chunking splits a
        prompt that does not fit). A step therefore carries ``lam T L_pre`` prompt tokens
        and lasts ``T = t(lam T L_pre)``: the fixed point (at least one prompt's step, at
        most a full budget's). Below one arrival a step, ``t(L_pre)``."""
        cached = self._cycles.get(lam)
        if cached is None:
            cached = self._cycles[lam] = self._context_cycle(lam)
        return cached

    def _context_cycle(self, lam: float) -> float:
        step, room, dec = self._prefill_slot(0.0)
        lo = step(dec, self.ctx, min(room, self.l_pre), self.l_in)
        hi = step(dec, self.ctx, room, self.l_in)

        def excess(t: float) -> float:
            n = min(room, max(self.l_pre, lam * t * self.l_pre))
            return t - step(dec, self.ctx, n, self.l_in)

        if excess(lo) >= 0.0:
            return lo
        if excess(hi) <= 0.0:
            return hi
        return _bisect(excess, lo, hi, tol=1e-3 * lo)

    def context_steps_pack(self, lam: float) -> bool:
        """Whether a prefill replica's steps at ``lam`` prompts/s carry every prompt that
        arrived during the step before (the fixed point of ``context_cycle_s`` is within the
        token budget), so that no backlog of prompt tokens forms beyond one step; False when
        the steps run full (a prompt longer than the budget, or the load at the budget),
        whose backlog is the queue of prompt tokens (``_pooled_wait`` over their work)."""
        room = self._prefill_slot(0.0)[1]
        if self.l_pre >= room:
            return False
        return lam * self.context_cycle_s(lam) * self.l_pre < room

    def _joined_step_service(
        self, rate: Rate, x: float, inputs: FloatArray, w: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Prefill seconds (from the step boundary it joins at) of prompts of ``inputs``
        tokens with weights ``w`` at an aggregated replica under Poisson arrivals of ``x``/s,
        and their weights. In-flight batching admits at a step boundary every prompt that
        arrived during the step then running, packed up to the token budget's room beside
        the ``b`` decodes (TensorRT-LLM's capacity scheduler, vLLM's chunked prefill): so a
        prompt's step also carries the others of its arrival window, a Poisson number
        (mean ``x`` times the mean step) whose summed length is normal (``_BUNCH_Z``), half
        of them ahead of it first come first served and half behind. Its first token comes
        when the step holding its last chunk ends (``_packed_prefill_s``): a longer step than
        its prompt alone, the more so the more prompts a step packs (the length and count
        tails of the window, not only of its own prompt)."""
        room = max(1.0, self.budget - rate.b * self.verify)
        kbar = max(0.0, x * rate.step_s)
        others, pk = _poisson(kbar)
        window, ww = self._summed_prompts(others, pk)
        window, ww = _binned(np.maximum(0.0, window), ww)
        own, ow = _binned(inputs, w)
        half = window[None, :] / 2.0
        total = half + own[:, None]
        full = np.maximum(0.0, np.ceil(total / room - 1e-9) - 1.0)
        last = np.clip(total - full * room + half, 1.0, room)
        # the step timed at one prompt token, at the full room, and at the prompt lengths
        # (capped at the room) whose prefill ``prefill_service`` has already timed beside
        # the same ``b`` decodes (their token counts' GEMMs are planned), linear between:
        # the step is close to affine in its prompt tokens between GEMM tile boundaries,
        # and a last chunk carries its own prompt and often its window's others, so it sits
        # at those lengths or above. (A geometric grid of 24 counts from 1 to the room
        # planned 2.4x the GEMM shapes of the rest of a solve and, measured against 400
        # counts, interpolated a GPU's service less closely.)
        grid = np.unique(np.concatenate(([1.0, room], np.minimum(inputs, room))))
        grid_s = np.array([self.step(rate.b, self.ctx, float(n), self.l_in) for n in grid])
        seconds = full * float(grid_s[-1]) + np.interp(last, grid, grid_s)
        return seconds.ravel(), (ow[:, None] * ww[None, :]).ravel()

    def _context_step_ttfts(
        self, lam: float, inputs: FloatArray, w: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """First-token times (before any queue of full steps) of prompts of ``inputs``
        tokens with weights ``w`` at a disaggregated prefill replica receiving ``lam``
        prompts/s, and their weights. The replica steps back to back (``context_cycle_s``:
        mean step ``T``) a share ``u = min(1, r lam T)`` of the time (``r`` ranks in
        lockstep: any of them with a prompt starts a step of all). A prompt that finds it
        idle is prefilled alone at once; one that finds a step running waits out the rest
        of it (uniform on [0, T]) and is prefilled in the next step beside the prompts that
        arrived meanwhile (``lam T L_pre`` tokens on average), its first token coming when
        that step ends. Its KV cache then crosses to the decode replica."""
        step, room, dec = self._prefill_slot(0.0)
        cycle = self.context_cycle_s(lam)
        busy = min(1.0, self.pre_lockstep * lam * cycle)  # the instance's arrivals
        # the prompts that arrived during the running step, first come first served: on
        # average half before this one (their tokens go ahead) and half after (they fill
        # what its last step leaves of the budget)
        half = lam * cycle * self.l_pre / 2.0 if self.context_steps_pack(lam) else 0.0
        alone = self.prefill_service(0.0, inputs)
        uniq, index = np.unique(inputs, return_inverse=True)
        packed = np.array(
            [_packed_prefill_s(step, dec, self.ctx, half, float(n), half, room) for n in uniq]
        )[index]
        transfer = inputs * self.kv_transfer_s_per_token
        idle, iw = _binned(alone + transfer, w)
        joined, jw = _binned(packed + transfer, w)
        late, lw = _plus_uniform(joined, jw, cycle, busy)
        points = np.concatenate([idle, late])
        weights = np.concatenate([iw * (1.0 - busy), lw])
        return points, weights

    def solve(self, load: str, value: float) -> EngineState:
        """Steady state for ``load`` (concurrency | rps | max_throughput) at ``value``
        (clients or requests/s per replica)."""
        cap = max(1, self.max_seqs)
        saturated = False
        limit = self.limit
        if load == "max_throughput":
            # value: the run's requests per replica (0 = an endless backlog); a run of N
            # requests never holds more than N at once
            b = float(min(cap, value)) if value >= 1 else float(cap)
        elif load == "concurrency":
            n = value
            if n <= 1:
                b = 1.0
            else:
                # X(b) (S(b) + W(b) + (L_out - 1) t(b)) = N: each client waits for the
                # prefill slot, is prefilled (its first token comes from its prompt's step)
                # or decodes its other tokens (Little's law); g increasing in b. The wait is
                # the M/G/1 one over what a prompt occupies of the slot, its tokens' share of
                # a step (``prefill_work``), as in ``_state``'s TTFT: a step packs prompts up
                # to its token budget, and ``requests_per_s`` already counts them so. Over
                # each prompt's whole service instead, the balance let one prompt a step
                # through where the rate packs ~7 (1024-token prompts at OSL 1, an 8k
                # budget), and X x TTFT came to 1.7 of 256 clients (SVP-034, -89 %)
                def g(x: float) -> float:
                    rate, s = self.requests_per_s(x), self._mean_prefill_s(x)
                    steps = self.rate(x)
                    step = steps.step_s
                    resid = step * (0.5 + self.ahead) * self._busy(load, n, rate, 0.0)
                    pool = rate / self.prefill_per_decode if self.disaggregated else rate
                    wait = _closed_loop_wait(pool, *self._work_moments(x), n)[1]
                    # an admission gate: a request waits out half its cycle on average
                    gate = self._cycle(x) * step / 2 if self._gated(x) else 0.0
                    client = self._client(steps)
                    rest = self._after_first_s(steps)
                    return rate * (client + s + resid + wait + gate + rest) - n

                hi = min(float(cap), n)
                b = hi if g(hi) <= 0 else _bisect(g, 1.0, hi, tol=0.01)
                limit = self.limit if b >= cap and n > cap else "concurrency"
        elif load == "rps":
            if self.requests_per_s(cap) < value:
                b, saturated = float(cap), True
            else:
                b = _bisect(lambda x: self.requests_per_s(x) - value, 1.0, float(cap))
                limit = "rps"
        else:
            raise ValueError(f"unknown engine load {load!r}")
        rate = self.rate(b)
        x = self.requests_per_s(b) if (load != "rps" or saturated) else value
        if load == "concurrency" and value <= 1:
            # a lone client's request also crosses the server
            x = 1 / (1 / x + self._client(rate))
        if load == "max_throughput" and value >= 1:
            x = self._finite_run_rate(value, b)
        state = self._state(load, value, rate, x, saturated, limit)
        if load == "max_throughput" and value >= 1:
            run = self._simulated_run(value)
            if run is not None:
                return self._run_state(state, run)
        if self._closed_loop_simulated(load, value):
            clients = round(value) if self.run_requests > value else 0
            run = self._simulated_run(self.run_requests, clients=clients)
            if run is not None:
                return self._run_state(state, run)
        return state

    def _closed_loop_simulated(self, load: str, value: float) -> bool:
        """Whether a finite closed loop of ``value`` clients is simulated: a run of no more
        requests than clients (every client sends once, all at the start: the run is one
        wave, a backlog queued at once, with no steady state to reach), or one that runs in
        lockstep waves (identical lengths on an engine whose prompts run apart,
        ``_prefills_apart``); no admission gate either way."""
        if load != "concurrency" or value < 2 or self.run_requests < 1 or self.gate is not None:
            return False
        if self.run_requests <= value:
            return True
        return self._prefills_apart() and self.lengths.identical

    def _simulated_run(self, n: float, clients: int = 0) -> RunResult | None:
        """A finite run of ``n`` requests queued at once (or sent by a closed loop of
        ``clients``), simulated (``finite_run``); None when it is not simulated:
        disaggregated or lockstep replicas (their steps join other ranks'), or beyond the
        simulation's bounds."""
        if self.disaggregated or self.lockstep > 1:
            return None
        count = max(1, round(n))
        if count > MAX_RUN_REQUESTS:
            return None
        lens = self.lengths
        inputs, outputs = sample_requests(lens.inputs, lens.outputs, lens.weights, count)
        return simulate_run(
            self.step, inputs, outputs, prefill_fraction=self.pre_fraction,
            max_num_seqs=self.max_num_seqs, max_num_tokens=int(self.budget),
            kv_capacity_tokens=self.kv_capacity_tokens, context=self.ctx,
            scheduler=self.scheduler, tokens_per_step=self.accept, verify_tokens=self.verify,
            clients=clients,
        )  # fmt: skip

    def _run_state(self, state: EngineState, run: RunResult) -> EngineState:
        """``state`` with what the simulated finite run measures: requests/s such that
        requests/s x the mean output length is its output tokens over its wall time, its
        TTFTs (from each request's send) and TPOTs per request, the steady state at its
        time-averaged decode batch."""
        x = run.output_tokens / (self.l_out * run.duration_s)
        ttft = run.ttft_s + self._client(self.rate(max(1.0, run.mean_decode_batch)))
        p50, p99 = (float(q) for q in np.quantile(ttft, (0.5, 0.99)))
        if run.tpot_s.size:
            tpot50, tpot99 = (float(q) for q in np.quantile(run.tpot_s, (0.5, 0.99)))
            tpot_mean = float(run.tpot_s.mean())
        else:
            tpot50 = tpot99 = state.tpot_p50_s
            tpot_mean = state.tpot_mean_s
        return replace(
            state,
            rate=self.rate(max(1.0, run.mean_decode_batch)),
            requests_per_s=x,
            in_system=run.mean_in_system,
            ttft_mean_s=float(ttft.mean()),
            ttft_p50_s=p50,
            ttft_p99_s=p99,
            tpot_mean_s=tpot_mean,
            tpot_p50_s=tpot50,
            tpot_p99_s=tpot99,
        )

    def _finite_run_rate(self, n: float, b: float) -> float:
        """Requests/s over a run of ``n`` requests all queued at once (``trtllm-bench
        throughput``, ``vllm bench throughput``: the reported rate is the run's requests over
        its wall time). Requests of one length are admitted together and finish together, so
        the run is ``floor(n / b)`` full waves at ``b`` and a last, smaller one; with
        ``n >> b`` this is the steady-state rate."""
        full = math.floor(n / b)
        rest = n - full * b
        seconds = full * b / self.requests_per_s(b)
        if rest >= 0.5:
            seconds += rest / self.requests_per_s(rest)
        return n / seconds

    def _busy(self, load: str, value: float, x: float, in_engine_s: float) -> float:
        """Probability an arriving prompt finds a step running, which it waits out before it
        joins the batch (the next step boundary): uniform on [0, step] as arrivals fall
        uniformly in time (mean half a step: ~70 ms at MLPerf Server's 140 ms steps). A
        closed loop of 2+ clients always finds one (the others never leave); Poisson
        arrivals about as often as a request is in the engine (Little: ``x`` times its time
        there), at most 1. Offline runs admit the backlog at once; a disaggregated decode
        replica receives prompts that queued at the prefill pool."""
        if self.disaggregated:
            return 0.0
        if load == "concurrency":
            return 1.0 if value >= 2 else 0.0
        if load == "rps":
            return min(1.0, x * in_engine_s)
        return 0.0

    def _first_wave(self, load: str, clients: float, limit: str) -> FloatArray:
        """TTFTs of a finite closed-loop run's first wave: its ``clients`` send their first
        request together (``vllm bench serve --max-concurrency``, AIPerf, genai-perf start
        every client at once) into an idle engine, which prefills the prompts one after
        another within its token budget (several to a step when they fit); the j-th
        prompt's chunks share each step with the j prompts already decoding, so it gets
        ``budget - j`` tokens a step and its first token comes after the prefill of all
        before it. Empty when the run is endless
        (``run_requests`` 0), not a closed loop below the engine's limits, or disaggregated."""
        n = round(clients)
        if (
            load != "concurrency"
            or limit != "concurrency"
            or self.disaggregated
            or n < 2
            or self.run_requests < clients
        ):
            return np.zeros(0)
        return self._wave_ttfts(n)

    def _wave_ttfts(self, n: int) -> FloatArray:
        """First-token times of ``n`` prompts sent together into an idle engine, prefilled
        one after another within its token budget (``_first_wave``)."""
        times = np.empty(n)
        done = 0.0
        for j in range(n):
            room = max(1.0, self.budget - j * self.verify)
            # a step packs the waiting prompts' tokens up to its room
            chunk = min(room, (n - j) * self.l_pre)
            done += self.l_pre / chunk * self.step(float(j), self.ctx, chunk, self.l_in)
            times[j] = done
        return times

    def _backlog_ttfts(self, load: str, value: float, rate: Rate) -> FloatArray:
        """TTFTs of a finite run of ``value`` requests all queued at once (``vllm bench
        serve`` at request rate inf, ``trtllm-bench``: each request's clock starts when the
        run does), empty otherwise: the engine admits ``b`` and prefills them one after
        another (``_wave_ttfts``); the k-th request after them waits for a slot, i.e. for
        ``k // b`` waves of ``b / X`` seconds each (the waves of ``_finite_run_rate``)."""
        if load != "max_throughput" or self.disaggregated or value < 1:
            return np.zeros(0)
        n = max(1, round(value))
        b = max(1, min(n, math.floor(rate.b)))
        wave_s = b / self.requests_per_s(b)
        k = np.arange(n)
        return np.asarray((k // b) * wave_s + self._wave_ttfts(b)[k % b], dtype=float)

    def _slot_wait(self, x: float, hold_s: float) -> tuple[float, float]:
        """(P(wait), mean wait of those who wait) for a free sequence slot under Poisson
        arrivals at ``x`` requests/s, each holding one of the engine's ``max_seqs`` slots
        (its batch limit: max_num_seqs, the KV cache or the token budget, whichever binds)
        for ``hold_s`` seconds on average (prefill and decode). An M/G/c queue with
        ``c = max_seqs`` servers offered ``a = x hold_s`` erlangs (Little's law: the mean
        running batch): Erlang C for the chance to wait, and the Allen-Cunneen wait of
        those who do, ``(1 + Cs^2) / 2 x hold_s / (c - a)``, exponential (Cs^2: the
        squared coefficient of variation of the output lengths, which set the holding
        time). Below ``c - a`` of a few ``sqrt(c)`` the chance vanishes (Halfin-Whitt);
        close to the limit the wait grows as ``1 / (c - a)``: the latency of a Server run
        is set by how near the engine's limit its scheduled rate runs (one B300
        gpt-oss-120b deployment measured p99 TTFT 0.32 s at 79.26 requests/s and 2.52 s at
        88.45, MLPerf v6.0, SVM-190/194).

        Only a server load timed at its stated rate asks for it: in the rate search it puts
        the searched rate where p99 TTFT meets its target, so runs made well inside their
        limit at a submitter's default rate were predicted at the target (SVM-190 +41 ->
        +731 %; MLPerf Server rows 15.9 / 62.9 -> 15.9 / 68.6 % median / p90, 2026-12-06)."""
        servers = math.floor(self.max_seqs)
        offered = x * hold_s
        if servers < 1 or hold_s <= 0 or offered <= 0:
            return 0.0, 0.0
        if offered >= servers:
            return 1.0, math.inf
        p_wait = _erlang_c_large(servers, offered)
        if p_wait <= 0.0:
            return 0.0, 0.0
        lens = self.lengths
        mean_out = max(1e-9, lens.mean_out)
        cs2 = float(lens.weights @ (lens.outputs - mean_out) ** 2) / mean_out**2
        return p_wait, (1.0 + cs2) / 2.0 * hold_s / (servers - offered)

    def _state(self, load: str, value: float, rate: Rate, x: float, saturated: bool,
               limit: str) -> EngineState:  # fmt: skip
        lens = self.lengths
        # Poisson arrivals into an engine that keeps up: a queue forms before the prefill
        open_queue = load == "rps" and not saturated
        inputs = np.maximum(1.0, lens.inputs * self.pre_fraction)
        service = self.prefill_service(rate.b, inputs)
        w = lens.weights
        es = float(w @ service)
        # a request holds its sequence slot from its prompt's step to its last token: the
        # prompt's own (last prefill) step gives its first token, so after the prefill come
        # ``L_out - 1`` tokens (``_after_first_s``), as in the closed loop's cycle; with
        # ``L_out`` steps after the prefill the engine's mean running set ``x (S + L_out t)``
        # exceeded the ``b = x L_out t`` the rate solves for by a prompt's service (one step
        # at MLPerf Server's lengths), and the slot wait near the limit came early
        decode_s = self._after_first_s(rate)
        # What a prompt occupies of the prefill slot, for the queue: its tokens' share of
        # full steps. A step carries up to ``room`` prompt tokens from as many prompts as
        # fit (chunked prefill packs them: vLLM's scheduler, TRT-LLM's in-flight batching),
        # so prompts ahead of a new one delay it by their tokens / room steps, not by a step
        # each (a 222-token MLPerf prompt is 3 % of an 8k-token step).
        work = self.prefill_work(rate.b, inputs)
        ew = float(w @ work)
        ew2 = float(w @ (work * work))
        if self.disaggregated:
            x_pool = x / self.prefill_per_decode  # arrivals at one prefill replica
            # the points of the step a prompt joins (and the one it waits out) replace the
            # prompt alone; the queue below is the backlog of full steps ahead of it
            service, w = self._context_step_ttfts(x_pool, inputs, w)
            es = float(w @ service)
        else:
            x_pool = x
        busy = self._busy(load, value, x, es + decode_s)
        resid = busy * rate.step_s * (0.5 + self.ahead)
        if load == "concurrency" and limit == "concurrency" and not self.disaggregated:
            # below the engine's limits a prompt waits only for the prompts being prefilled
            rho, wait_mean = _closed_loop_wait(x_pool, ew, ew2, value)
        elif load == "concurrency":
            wait_mean = max(0.0, value / x - decode_s - es - resid - self._client(rate))
            rho = min(0.999, x_pool * ew) if wait_mean > 0 else 0.0
        elif open_queue and self.disaggregated:
            # disaggregated, one router places every prompt on the prefill replica with the
            # least outstanding work (Dynamo's KV router, --router-temperature 0: the
            # lowest of overlap weight x blocks to prefill + active blocks; with no prefix
            # reuse, the least-loaded worker; docs.nvidia.com/dynamo/latest/components/
            # router/README.html, read 2026-12-04; NVIDIA's MLPerf v6.0 llama3.1-405b
            # dynamo_cluster: router_mode 'kv'). A prompt then waits only when every
            # replica is busy: one M/G/c queue over the pool, not c split Poisson queues
            rho, wait_mean = _pooled_wait(x_pool * self.prefill_servers, ew, ew2,
                                          self.prefill_servers)  # fmt: skip
            if self.context_steps_pack(x_pool):
                # the step a prompt joins holds all that queued before it (above)
                rho, wait_mean = 0.0, 0.0
        elif open_queue and self.pooled:
            # least-loaded dispatch: rho is the chance to wait (Erlang C over the replicas)
            rho, wait_mean = _pooled_wait(x * self.window_replicas, ew, ew2,
                                          self.window_replicas)  # fmt: skip
        elif open_queue:
            rho = min(0.999, x_pool * ew)
            wait_mean = x_pool * ew2 / (2 * (1 - rho))
        else:
            # offline / saturated: the queue is the backlog; service only is reported
            rho, wait_mean = 0.0, 0.0
        if saturated:
            wait_mean = math.inf
        wait_mean_prefill = wait_mean
        if open_queue and not self.disaggregated:
            # the step a prompt joins carries its arrival window's other prompts
            service, w = self._joined_step_service(rate, x, inputs, w)
            es = float(w @ service)
        service, w = _with_step_residual(service, w, rate.step_s, busy, self.ahead)
        ttft_mean = es + resid + wait_mean
        wave = self._first_wave(load, value, limit)
        wait_grid: tuple[FloatArray, FloatArray] | None = None
        backlog = self._backlog_ttfts(load, value, rate)
        # arrivals an admission gate holds (open-loop ones, or a closed loop's, whose first
        # wave, a tenth of an InferenceMAX run, is then not told apart) or a harness window
        # holds (open-loop ones)
        gated = load in ("rps", "concurrency") and not saturated and self._gated(rate.b)
        windowed = open_queue and self.window is not None
        if gated or windowed:
            # a harness window or an admission gate: prompts are prefilled in bunches that
            # come spaced out, so no queue forms before them
            points, pw = self._gate_ttfts(rate, x) if gated else self._window_ttfts(rate, x)
            ttft_mean = float(pw @ points)
            p50, p99 = _sum_quantiles(points, pw, 0.0, 0.0, (0.5, 0.99))
        elif backlog.size:
            ttft_mean = float(backlog.mean())
            p50, p99 = (float(q) for q in np.quantile(backlog, (0.5, 0.99)))
        elif wave.size:
            # a finite closed-loop run: its first wave's TTFTs are part of the run's mean
            # and percentiles (each of the run's requests weighs 1 / run_requests)
            share = wave.size / self.run_requests
            ttft_mean = (1 - share) * ttft_mean + share * float(wave.mean())
            p50, p99 = _mixed_quantiles(service, w, rho, wait_mean, wave, share, (0.5, 0.99))
        elif open_queue and not (self.disaggregated or self.pooled) and rho > 0:
            # Poisson arrivals at one prefill slot: the M/G/1 wait's own distribution
            # (``_mg1_wait_cdf``), not an exponential of its mean (pooled: Erlang C's chance
            # to wait and an exponential wait, ``_sum_quantiles`` below)
            wait_grid = _mg1_wait_cdf(*_binned(work, lens.weights), rho)
            p50, p99 = _mg1_quantiles(service, w, *wait_grid, (0.5, 0.99))
        else:
            p50, p99 = _sum_quantiles(service, w, rho, wait_mean, (0.5, 0.99))
        # an open loop near the engine's sequence limit: arrivals wait for a free slot
        slot_p, slot_theta = (
            self._slot_wait(x, es + decode_s) if self.slot_queue and open_queue else (0.0, 0.0)
        )
        if slot_p > _SLOT_WAIT_FLOOR:
            ttft_mean += slot_p * slot_theta
            wait_mean += slot_p * slot_theta
            if not math.isfinite(slot_theta):
                p50 = p99 = math.inf  # offered more than the slots hold: no steady state
            else:
                if gated or windowed:
                    tail = _slot_tail(points, pw, 0.0, 0.0, slot_p, slot_theta)
                elif wait_grid is not None:
                    tail = _slot_tail_grid(service, w, *wait_grid, slot_p, slot_theta)
                else:
                    theta_p = wait_mean_prefill / rho if rho > 0 and wait_mean_prefill > 0 else 0.0
                    tail = _slot_tail(service, w, rho, theta_p, slot_p, slot_theta)
                p50, p99 = _bisect_quantiles(tail, tail.top, (0.5, 0.99))
        client = self._client(rate)
        ttft_mean, p50, p99 = (t + client for t in (ttft_mean, p50, p99))
        # an open loop's prompts arrive at random: the prefill a request's decode meets
        # varies with how many arrive while it decodes (``_step_quantiles``)
        open_loop = open_queue and not self.disaggregated
        arrivals = x if open_loop and self.lockstep == 1 and not gated and not windowed else 0.0
        tpot50, tpot99 = _tpot_quantiles(rate, lens, self.accept, arrivals, inputs)
        in_engine = es + resid + wait_mean + decode_s
        in_system = x * in_engine if math.isfinite(wait_mean) else math.inf
        return EngineState(
            rate=rate,
            requests_per_s=x,
            in_system=in_system,
            ttft_mean_s=ttft_mean,
            ttft_p50_s=p50,
            ttft_p99_s=p99,
            tpot_mean_s=rate.step_s / self.accept,
            tpot_p50_s=tpot50,
            tpot_p99_s=tpot99,
            max_seqs=self.max_seqs,
            kv_capacity_tokens=self.kv_capacity_tokens,
            saturated=saturated,
            limit=limit,
            prefill_s=es,
        )


def _chunked_prefill_s(step: StepFn, dec: float, ctx: float, n: float, room: float) -> float:
    """Seconds to prefill one ``n``-token prompt in chunks of ``room`` tokens: its full
    chunks, then one step of only the tokens left (a chunked-prefill scheduler puts the
    prompt's remainder in its last step; that step's GEMMs and attention run on those
    tokens, not on a full budget)."""
    full, rest = divmod(n, room)
    t = full * step(dec, ctx, room, n) if full else 0.0
    if rest > 0.5 or not full:
        t += step(dec, ctx, max(1.0, rest), n)
    return t


def _packed_prefill_s(
    step: StepFn, dec: float, ctx: float, ahead: float, n: float, behind: float, room: float
) -> float:
    """Seconds until an ``n``-token prompt's last chunk is computed when steps of ``room``
    prompt tokens pack ``ahead`` tokens of earlier prompts before it and ``behind`` tokens
    of later ones after it: the full steps up to its last chunk, then that step, which also
    carries what of the later prompts fits."""
    full, rest = divmod(ahead + n, room)
    if rest < 0.5 and full:
        full, rest = full - 1, room
    t = full * step(dec, ctx, room, n) if full else 0.0
    return t + step(dec, ctx, min(room, max(1.0, rest + behind)), n)


def _erlang_c(servers: int, offered: float) -> float:
    """Erlang C: the probability that an arrival waits in an M/M/c queue of ``servers``
    servers offered ``offered`` erlangs (via the Erlang B recursion, stable for large c)."""
    if offered >= servers:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1.0 - rho + rho * b)


# A slot wait less likely than this leaves the TTFT percentiles as they are (its p99 share)
_SLOT_WAIT_FLOOR = 1e-6
# Erlang C is taken as 0 when the offered load is this many sqrt(c) (plus as many erlangs)
# below the c servers: the chance to wait is then below 1e-13 (Halfin-Whitt)
_SLOT_WAIT_SPAN = 8.0


def _erlang_c_large(servers: int, offered: float) -> float:
    """Erlang C for ``servers`` servers offered ``offered`` < ``servers`` erlangs, in
    closed form for any size: Erlang B = P(N = c) / P(N <= c) for N ~ Poisson(a), whose
    ratio sum_j prod_{i<j} (c - i) / a is summed in logs over the terms that matter (at
    most ``c - a`` + 12 sqrt(a) + 12 of them, and ``c - a`` is at most
    ``_SLOT_WAIT_SPAN`` (sqrt(c) + 1) here), so its cost is bounded by ~20 sqrt(c)."""
    gap = servers - offered
    if gap <= 0:
        return 1.0
    if gap > _SLOT_WAIT_SPAN * (math.sqrt(servers) + 1.0):
        return 0.0
    terms = min(servers, math.ceil(gap + 12.0 * math.sqrt(offered) + 12.0))
    i = np.arange(terms, dtype=np.float64)
    log_r = np.concatenate([[0.0], np.cumsum(np.log((servers - i) / offered))])
    top = float(log_r.max())
    erlang_b = math.exp(-top) / float(np.exp(log_r - top).sum())
    rho = offered / servers
    return erlang_b / (1.0 - rho + rho * erlang_b)


@dataclass(frozen=True, slots=True)
class _SlotTail:
    """P(TTFT > t) with a wait for a sequence slot: ``fn(t)``, and a time beyond the
    quantiles asked for (``top``)."""

    fn: Callable[[float], float]
    top: float

    def __call__(self, t: float) -> float:
        return self.fn(t)


def _slot_tail(service: FloatArray, w: FloatArray, rho: float, theta_p: float,
               slot_p: float, slot_theta: float) -> _SlotTail:  # fmt: skip
    """P(S + W + V > t): S discrete (``service``, weights ``w``), W the prefill wait (0
    with probability 1 - ``rho``, else exponential of mean ``theta_p``), V the slot wait
    (0 with probability 1 - ``slot_p``, else exponential of mean ``slot_theta``),
    independent. P(W + V > u) = P(W > u) + slot_p E[exp(-(u - W) / slot_theta); W <= u],
    in closed form (the sum of two exponentials is hypoexponential)."""
    ts = slot_theta

    def tail(t: float) -> float:
        u = np.maximum(t - service, 0.0)
        over_w = rho * np.exp(-u / theta_p) if theta_p > 0 else np.zeros_like(u)
        at_zero = (1.0 - rho if theta_p > 0 else 1.0) * np.exp(-u / ts)
        if theta_p <= 0:
            spread = np.zeros_like(u)
        elif abs(theta_p - ts) < 1e-12 * ts:
            spread = rho * u / ts * np.exp(-u / ts)
        else:
            spread = rho * ts / (ts - theta_p) * (np.exp(-u / ts) - np.exp(-u / theta_p))
        inner = over_w + slot_p * (at_zero + spread)
        return float(w @ np.where(t < service, 1.0, np.minimum(1.0, inner)))

    top = float(service.max()) + 50.0 * (max(theta_p, 0.0) + ts)
    return _SlotTail(fn=tail, top=top)


def _slot_tail_grid(service: FloatArray, w: FloatArray, grid: FloatArray, cdf: FloatArray,
                    slot_p: float, slot_theta: float) -> _SlotTail:  # fmt: skip
    """``_slot_tail`` with the prefill wait W given on a grid (``_mg1_wait_cdf``):
    E[exp(-(u - W) / theta); W <= u] = exp(-u / theta) L(u), L the running sum of the
    grid's probabilities times exp(g / theta), kept in logs."""
    pdf = np.diff(np.concatenate([[0.0], cdf]))
    log_l = np.logaddexp.accumulate(np.log(np.maximum(pdf, 1e-300)) + grid / slot_theta)

    def tail(t: float) -> float:
        u = t - service
        over_w = 1.0 - np.interp(u, grid, cdf, left=0.0, right=1.0)
        slot = np.exp(np.interp(u, grid, log_l) - np.maximum(u, 0.0) / slot_theta)
        inner = np.where(u < 0, 1.0, np.minimum(1.0, over_w + slot_p * slot))
        return float(w @ inner)

    top = float(service.max()) + float(grid[-1]) + 50.0 * slot_theta
    return _SlotTail(fn=tail, top=top)


def _pooled_wait(rate: float, es: float, es2: float, servers: float) -> tuple[float, float]:
    """(P(wait), mean wait) of an M/G/c queue: ``rate`` arrivals/s at ``servers`` servers
    whose work per arrival has mean ``es`` and second moment ``es2``. Allen-Cunneen: the
    M/M/c wait scaled by (1 + Cs^2) / 2, i.e. Erlang C x E[S^2] / (2 E[S]) / (c (1 - rho));
    at c = 1 it is the Pollaczek-Khinchine wait. A fractional pool interpolates Erlang C
    between its neighbouring whole server counts."""
    if es <= 0:
        return 0.0, 0.0
    offered = rate * es
    rho = min(0.999, offered / servers)
    lo = max(1, math.floor(servers))
    hi = max(lo, math.ceil(servers))
    p_lo = _erlang_c(lo, min(offered, 0.999 * lo))
    p_hi = _erlang_c(hi, min(offered, 0.999 * hi))
    p_wait = min(0.999, p_lo + (servers - lo) * (p_hi - p_lo)) if hi > lo else min(0.999, p_lo)
    return p_wait, p_wait * es2 / (2.0 * es) / (servers * (1.0 - rho))


def _closed_loop_wait(rate: float, es: float, es2: float, clients: float) -> tuple[float, float]:
    """(Utilisation, mean wait) of the prefill slot of a closed loop of ``clients``: the
    Pollaczek-Khinchine M/G/1 wait ``lambda E[S^2] / (2 (1 - rho))`` with the arrival
    theorem of closed queueing networks (Lavenberg and Reiser 1980: an arriving client sees
    the loop as it is with the other ``N - 1``), i.e. the rate scaled by ``(N - 1) / N``:
    no wait for one client, the open-loop wait as ``N`` grows."""
    seen = rate * max(0.0, clients - 1.0) / max(1.0, clients)
    rho = min(0.999, seen * es)
    return rho, seen * es2 / (2.0 * (1.0 - rho))


def _bisect(
    fn: Callable[[float], float], lo: float, hi: float, iters: int = 20, tol: float = 0.5
) -> float:
    """Root of an increasing ``fn`` on [lo, hi] (clamped to the ends), to ``tol``."""
    if fn(lo) >= 0:
        return lo
    if fn(hi) <= 0:
        return hi
    for _ in range(iters):
        mid = (lo + hi) / 2
        if fn(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return (lo + hi) / 2


# Points of the uniform step residual added to each prefill service (midpoints of equal
# slices): 16 keep p99 within 1/32 of a step.
_RESIDUAL_POINTS = 16


def _with_step_residual(
    service: FloatArray, w: FloatArray, step_s: float, busy: float, ahead: float = 0.0
) -> tuple[FloatArray, FloatArray]:
    """``service`` + R and its weights: R = 0 with probability ``1 - busy``, else uniform on
    [0, ``step_s``] (the running step an arrival waits out) plus ``ahead`` whole steps (those
    an overlap scheduler has already launched behind it), as a discrete mixture."""
    if step_s <= 0 or busy <= 0:
        return service, w
    service, w = _binned(service, w)
    s, ws = _plus_uniform(service + ahead * step_s, w, step_s, busy)
    if busy < 1.0:
        s = np.concatenate([service, s])
        ws = np.concatenate([w * (1.0 - busy), ws])
    return s, ws


def _plus_uniform(
    service: FloatArray, w: FloatArray, width: float, share: float
) -> tuple[FloatArray, FloatArray]:
    """``service`` + U, U uniform on [0, ``width``] (``_RESIDUAL_POINTS`` slice midpoints),
    the points weighing ``share`` of ``w`` in all."""
    r = (np.arange(_RESIDUAL_POINTS) + 0.5) / _RESIDUAL_POINTS * width
    s = (service[:, None] + r[None, :]).ravel()
    ws = (w[:, None] * np.full(_RESIDUAL_POINTS, share / _RESIDUAL_POINTS)[None, :]).ravel()
    return s, ws


# Value bins a service distribution is merged into before the residual widens it: within
# 1/128 of its range, and it bounds the quantile search's work (a dataset's ~1000 prompt
# lengths x 16 residual points made one MLPerf Server row take 40 s).
_SERVICE_BINS = 128


def _poisson(mean: float, width: float = 6.0) -> tuple[FloatArray, FloatArray]:
    """Counts 0 .. mean + ``width`` sd + ``width`` and their Poisson(``mean``) probabilities,
    renormalised over that range: how many prompts arrive in a window of ``mean`` expected
    ones."""
    hi = int(mean + width * math.sqrt(mean) + width)
    counts = np.arange(hi + 1, dtype=float)
    log_pmf = (
        counts * math.log(max(mean, 1e-300))
        - mean
        - np.array([math.lgamma(k + 1.0) for k in counts.tolist()])
    )
    pk = np.exp(log_pmf)
    return counts, pk / pk.sum()


def _binned(service: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``service`` merged into ``_SERVICE_BINS`` equal-width value bins (weighted means)."""
    if service.size <= _SERVICE_BINS:
        return service, w
    lo, hi = float(service.min()), float(service.max())
    if hi <= lo:
        return service[:1], np.array([float(w.sum())], dtype=np.float64)
    idx = np.minimum(((service - lo) / (hi - lo) * _SERVICE_BINS).astype(int), _SERVICE_BINS - 1)
    wsum = np.bincount(idx, weights=w, minlength=_SERVICE_BINS).astype(np.float64)
    vsum = np.bincount(idx, weights=w * service, minlength=_SERVICE_BINS).astype(np.float64)
    keep = wsum > 0
    return vsum[keep] / wsum[keep], wsum[keep]


def _sum_quantiles(service: FloatArray, w: FloatArray, rho: float, wait_mean: float,
                   qs: tuple[float, ...]) -> tuple[float, ...]:  # fmt: skip
    """Quantiles of W + S: S discrete (``service`` with weights ``w``), W = 0 with
    probability 1 - rho, else exponential with mean wait_mean / rho."""
    if not math.isfinite(wait_mean):
        return tuple(math.inf for _ in qs)
    theta = wait_mean / rho if rho > 0 and wait_mean > 0 else 0.0
    if np.all(service == service[0]):
        # one prompt length: P(W + S > t) = rho exp(-(t - S) / theta), solved in closed form
        s0 = float(service[0])
        return tuple(
            s0 + (theta * math.log(rho / (1 - q)) if theta > 0 and rho > 1 - q else 0.0) for q in qs
        )

    if theta <= 0:
        return _discrete_quantiles(service, w, qs)
    if rho > 0 and 0 < float(service.max()) < _CLOSED_FORM_SPAN * theta:
        return _exp_wait_quantiles(service, w, rho, theta, qs)
    return _bisect_quantiles(
        lambda t: _wait_tail(t, service, w, rho, theta), _wait_top(service, theta), qs
    )


# Service spans (in queue-wait means theta) up to which ``_exp_wait_quantiles`` runs: its
# running log-sum-exp of s / theta loses ~1e-16 of that ratio, so at 1e6 its tail is within
# 1e-10 of ``_wait_tail``'s; beyond, the queue is a negligible share and bisection is used.
_CLOSED_FORM_SPAN = 1e6


def _exp_wait_quantiles(service: FloatArray, w: FloatArray, rho: float, theta: float,
                        qs: tuple[float, ...]) -> tuple[float, ...]:  # fmt: skip
    """``_sum_quantiles``' quantiles with a queue (``theta`` > 0), in closed form: with the
    service points sorted, P(W + S > t) on [s_k, s_k+1) is A_k + rho D_k exp(-(t - s_k) /
    theta), A_k the weight above s_k and D_k = sum over i <= k of w_i exp(-(s_k - s_i) /
    theta) (a running log-sum-exp). The tail falls to 1 - q either inside the interval
    before the first s_k where it is already below (the exponential's root) or at that s_k
    (a jump). The same points as bisecting ``_wait_tail``, without its 40 passes a
    quantile over every point."""
    keep = w > 0
    s, ws = service[keep], w[keep]
    order = np.argsort(s, kind="stable")
    s, ws = s[order], ws[order]
    above = np.cumsum(ws[::-1])[::-1] - ws
    d = rho * np.exp(np.logaddexp.accumulate(np.log(ws) + s / theta) - s / theta)
    left = above + d  # the tail at each s_k
    out: list[float] = []
    for q in qs:
        y = 1.0 - q
        below = np.flatnonzero(left <= y)
        k = int(below[0]) if below.size else s.size
        t = float(s[k]) if k < s.size else math.inf
        if k > 0 and y > above[k - 1]:
            t = min(t, float(s[k - 1]) + theta * math.log(float(d[k - 1]) / (y - above[k - 1])))
        out.append(t)
    return tuple(out)


def _discrete_quantiles(service: FloatArray, w: FloatArray,
                        qs: tuple[float, ...]) -> tuple[float, ...]:  # fmt: skip
    """``_sum_quantiles``' quantiles without a queue, those of S alone: the lowest point
    whose weight above it (summed as ``_wait_tail`` sums it) is at most 1 - q, found by
    bisection over the points, where bisecting the time converges to it."""
    points = np.unique(service[w > 0])
    out: list[float] = []
    for q in qs:
        lo, hi = -1, points.size - 1  # the tail above the top point is 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if float(w @ (service > points[mid])) > 1.0 - q:
                lo = mid
            else:
                hi = mid
        out.append(float(points[hi]))
    return tuple(out)


def _wait_tail(t: float, service: FloatArray, w: FloatArray, rho: float, theta: float) -> float:
    """P(W + S > t) for ``_sum_quantiles``'s W and S."""
    gap = t - service
    pw = np.where(gap < 0, 1.0, rho * np.exp(-gap / theta) if theta > 0 else 0.0)
    return float(w @ pw)


def _wait_top(service: FloatArray, theta: float) -> float:
    """A time beyond every quantile of W + S that the models ask for."""
    return float(service.max()) + (theta * 50 if theta > 0 else 0.0)


def _bisect_quantiles(
    tail: Callable[[float], float], top: float, qs: tuple[float, ...]
) -> tuple[float, ...]:
    """The ``qs`` quantiles of a distribution from its tail P(X > t), by bisection on
    [0, ``top``] (40 halvings)."""
    out: list[float] = []
    for q in qs:
        lo, hi = 0.0, top + 1e-9
        for _ in range(40):
            mid = (lo + hi) / 2
            if tail(mid) > 1 - q:
                lo = mid
            else:
                hi = mid
        out.append(hi)
    return tuple(out)


# Points of the M/G/1 wait's grid (``_mg1_wait_cdf``): its step is ~1/100 of the wait's
# decay length, so a quantile lies within ~1 % of that length of the exact one (checked
# against M/M/1's closed form in tests/perf/test_engine.py).
_WAIT_GRID = 2048
# The grid reaches where the exponential approximation's tail falls to this (the exact tail
# of a prompt-length work distribution is lighter; what lies beyond wraps around the FFT)
_WAIT_GRID_TAIL = 1e-9


def _mg1_wait_cdf(work: FloatArray, w: FloatArray, rho: float) -> tuple[FloatArray, FloatArray]:
    """(grid, P(W <= grid)) of the FCFS wait W of an M/G/1 queue whose work per arrival is
    ``work`` with weights ``w``, at utilisation ``rho`` < 1. The Pollaczek-Khinchine
    formula in Benes' form: W is a Geometric(``rho``) number (P(N = n) = (1 - rho)
    rho^n) of independent residual works, each with the equilibrium density
    P(S > x) / E[S] (Kleinrock, Queueing Systems vol. 1, 1975, sec. 5.7; Asmussen,
    Applied Probability and Queues, 2003, VIII.5). Computed exactly on a grid of
    ``_WAIT_GRID`` points by FFT: the residual's probabilities per cell (rounded to the
    nearest point), transformed, ``(1 - rho) / (1 - rho R(s))``, transformed back. Its
    mean is Pollaczek-Khinchine's; unlike the exponential of that mean (``_sum_quantiles``,
    exact only for exponential work) its tail follows the work's own shape: lighter for
    prompt lengths less variable than an exponential, whose Cramer-Lundberg decay rate
    solves lambda (E[exp(g S)] - 1) = g (M/D/1 at rho 0.65: p99 wait 5.4 E[S], the
    exponential 6.0 E[S])."""
    es = float(w @ work)
    rho = min(0.999, max(1e-9, rho))
    theta = float(w @ (work * work)) / (2.0 * es * (1.0 - rho))  # E[W] / rho
    span = float(work.max()) + theta * math.log(rho / _WAIT_GRID_TAIL)
    h = span / _WAIT_GRID
    edges = (np.arange(_WAIT_GRID + 1) - 0.5) * h
    edges[0] = 0.0
    # integral of P(S > u) from 0 to each edge: sum of w min(S, x)
    area = np.minimum(work[None, :], edges[:, None]) @ w
    residual = np.diff(area) / es
    size = 2 * _WAIT_GRID
    wait = np.fft.irfft((1.0 - rho) / (1.0 - rho * np.fft.rfft(residual, size)), size)
    cdf = np.clip(np.cumsum(wait[:_WAIT_GRID]), 0.0, 1.0).astype(np.float64)
    return (np.arange(_WAIT_GRID) * h).astype(np.float64), cdf


def _mg1_quantiles(service: FloatArray, w: FloatArray, grid: FloatArray, cdf: FloatArray,
                   qs: tuple[float, ...]) -> tuple[float, ...]:  # fmt: skip
    """Quantiles of W + S: S discrete (``service`` with weights ``w``), W independent of it
    with P(W <= ``grid``) = ``cdf`` (``_mg1_wait_cdf``; 1 beyond the grid)."""

    def tail(t: float) -> float:
        below = np.interp(t - service, grid, cdf, left=0.0, right=1.0)
        return float(w @ (1.0 - below))

    return _bisect_quantiles(tail, float(service.max()) + float(grid[-1]), qs)


def _mixed_quantiles(service: FloatArray, w: FloatArray, rho: float, wait_mean: float,
                     points: FloatArray, share: float,
                     qs: tuple[float, ...]) -> tuple[float, ...]:  # fmt: skip
    """Quantiles of a mixture: W + S (as ``_sum_quantiles``) with weight ``1 - share`` and
    the equally weighted ``points`` with weight ``share``."""
    if not math.isfinite(wait_mean):
        return tuple(math.inf for _ in qs)
    theta = wait_mean / rho if rho > 0 and wait_mean > 0 else 0.0

    def tail(t: float) -> float:
        wait = _wait_tail(t, service, w, rho, theta)
        return (1 - share) * wait + share * float(np.mean(points > t))

    top = max(_wait_top(service, theta), float(points.max()))
    return _bisect_quantiles(tail, top, qs)


def _tpot_quantiles(
    rate: Rate,
    lens: Lengths,
    accept: float = 1.0,
    arrivals: float = 0.0,
    inputs: FloatArray | None = None,
) -> tuple[float, float]:
    """Median and p99 of a request's mean time per output token (chunks met ~ binomial
    over its decode steps, ``accept`` output tokens a step; ``arrivals``: an open loop's
    Poisson rate of prompts ``inputs`` long, whose count varies over a request's decode)."""
    p50, p99 = _step_quantiles(rate, lens, accept, arrivals, inputs)
    return p50 / accept, p99 / accept


def _step_quantiles(
    rate: Rate,
    lens: Lengths,
    accept: float,
    arrivals: float = 0.0,
    inputs: FloatArray | None = None,
) -> tuple[float, float]:
    """Median and p99 of a request's mean step over its ``L_out / accept`` decode steps.

    Two sources of spread, independent: which of the steps carry a chunk (Binomial over
    the request's steps at the share ``f``), and, under Poisson arrivals at ``arrivals``
    prompts a second, how much prefill there is to carry while the request decodes: the
    prompt tokens arriving in its window of ``n`` steps (``n t`` seconds) are compound
    Poisson, mean ``x n t E[L]``, variance ``x n t E[L^2]``, so the share of chunked steps
    over that window (``c`` tokens a chunk) varies by ``x t E[L^2] / (c^2 n)`` (a window
    of 65 arrivals: ~10-14 % of the share, against the Binomial's ~3 % at 685 steps). A
    closed loop's arrivals follow its completions and do not fluctuate so."""
    delta = rate.t1_s - rate.t0_s
    mean = rate.step_s
    if delta <= 0 or rate.f <= 0 or rate.f >= 1:
        return mean, mean
    outs, index = np.unique(np.maximum(1.0, lens.outputs / accept), return_inverse=True)
    weights = np.bincount(index, weights=lens.weights)
    var = rate.f * (1 - rate.f) / outs
    if arrivals > 0 and inputs is not None and rate.chunk > 0:
        # prompt tokens arriving over n steps: variance x n t E[L^2]; over the n steps'
        # n c chunk tokens, the share's variance x t E[L^2] / (c^2 n)
        m2 = float(lens.weights @ (inputs * inputs))
        var = var + arrivals * mean * m2 / (rate.chunk**2 * outs)
    sd = delta * np.sqrt(var)
    if outs.size == 1:
        return mean, min(rate.t1_s, mean + _Z99 * float(sd[0]))
    lo, hi = rate.t0_s, rate.t1_s
    for _ in range(40):
        mid = (lo + hi) / 2
        z = (mid - mean) / sd
        above = float(weights @ (1.0 - _ndtr(z)))
        if above > 0.01:
            lo = mid
        else:
            hi = mid
    return mean, hi


def _ndtr(z: FloatArray) -> FloatArray:
    """Standard normal CDF of a (short) array."""
    return np.array([0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in z.tolist()])


__all__ = [
    "ENGINE_MAX_NUM_SEQS",
    "ENGINE_MEMORY_UTILIZATION",
    "HARNESS_ADMISSION_GATES",
    "HARNESS_ARRIVAL_WINDOWS",
    "KV_FREE_MEMORY_FRACTION",
    "MAX_NUM_SEQS_DEFAULT",
    "MAX_NUM_TOKENS_DEFAULT",
    "MAX_THROUGHPUT_MAX_SEQS",
    "SGLANG_GRAPH_TIERS_DATE",
    "SGLANG_MEM_FRACTION_DATE",
    "VLLM_V1_DEFAULT_DATE",
    "AdmissionGate",
    "ArrivalWindow",
    "BatchDefaults",
    "Engine",
    "EngineState",
    "Lengths",
    "Rate",
    "engine_batch_defaults",
    "kv_pool_bytes",
    "lengths_of",
    "released_before",
    "sglang_cuda_graph_max_bs",
    "sglang_mem_fraction_static",
    "windows_kv",
]
