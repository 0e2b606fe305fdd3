"""A finite run of ``N`` requests queued at once, simulated step by step on one replica.

``vllm bench serve`` at request rate inf (and ``trtllm-bench``, ``vllm bench throughput``)
sends all ``N`` requests at once and reports the run's output tokens over its wall time,
and each request's TTFT and TPOT. With one length per request the steady state and its
waves (``engine.Engine``) describe such a run well. With a length *distribution* three
things the balance equations cannot hold set the run's numbers:

* **The drain tail.** Once the queue is empty the running batch shrinks as requests
  finish, and the run ends only when its last, longest outputs do; they decode at a small
  batch, where a step moves few tokens. The run's length is set by when the last requests
  were admitted and how long they are, not by ``N / X``.
* **KV-cache admission and preemption.** The engines do not reserve a request's whole
  output when they admit it: vLLM V1 allocates blocks for the tokens it schedules now (the
  prompt chunk) and, when a running request's next token finds no free block, preempts the
  most recently admitted one (``self.running.pop()``), frees its blocks and puts it back at
  the head of the queue; it is recomputed (prefilled again, prompt and the tokens it had
  generated) when blocks free up, and no new request is admitted in a step that preempted
  (vllm/v1/core/sched/scheduler.py, ``schedule``: "First, schedule the RUNNING requests",
  ``allocate_slots`` ... ``preempted_req = self.running.pop()``; "Next, schedule the
  WAITING requests" only ``if not preempted_reqs``). SGLang admits a request while its
  prompt plus ``new_token_ratio`` x its ``max_new_tokens`` fit beside the same share of
  every running request's remaining tokens; the ratio starts at 0.7
  (``SGLANG_INIT_NEW_TOKEN_RATIO``), decays each decode step to 0.14 of that over 600 steps
  (``SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR``, ``SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS``,
  sglang/srt/environ.py; ``NewTokenRatioTracker``), and when a decode step finds the pool
  full SGLang retracts the requests that have decoded least (``retract_decode``) and raises
  the ratio again. TensorRT-LLM's default capacity policy ``GUARANTEED_NO_EVICT`` admits a
  request only when its prompt and all its output tokens fit beside every running
  request's remaining need, so it never evicts. ``vllm bench serve`` sends each
  request's output length as its ``max_tokens``, so the engines know it.
* **Prefill at the start.** All ``N`` prompts are queued at once: the first steps are
  prompt chunks (vLLM, TensorRT-LLM: mixed with the decodes within the token budget;
  SGLang runs a waiting prefill batch on its own, its decodes wait: ``get_next_batch_to_run``
  tries ``get_new_batch_prefill`` first, mixed chunks only with ``--enable-mixed-chunk``;
  AMD's ATOM likewise, and whole prompts only: its ``Scheduler.schedule`` admits waiting
  prompts while their tokens fit ``max_num_batched_tokens`` and returns that batch before
  looking at the decodes, allocating the prompt's blocks only and preempting the newest
  running request when a decode finds no block, as vLLM does: ROCm/ATOM atom/model_engine/
  scheduler.py at 8ccc65c0, 2026-01-14), and each request's TTFT counts from the run's
  start.

**Why a simulation here and not an analytic correction.** The drain tail depends on the
joint order of admission times and output lengths, and preemption on the running set's
contexts at each moment: a closed form would need the order statistics of a
state-dependent process. A finite run is a bounded thing: ``N`` requests, each admitted,
maybe preempted, and finished. This simulates the engine's scheduler loop on one replica,
vectorised over the running requests with numpy, and jumps over runs of pure-decode steps
between events (a finish, the cache filling up): the loop runs a few times per request.
Step times come from the replica's step-time function (``serve.EngineStepTimer``),
evaluated on a grid of (decoding sequences, prompt tokens in the step) and interpolated, at
the load's mean context (a decode step's KV read is taken at that mean: the running set's
context varies over the run, which this does not follow). Runs of more than
``MAX_REQUESTS`` requests, or that would take more than ``MAX_EVENTS_PER_REQUEST`` loop
turns per request (a preemption storm), are left to the steady state (``None``).

The requests' lengths are a stratified sample of the length distribution (its quantiles at
``(k + 1/2) / N``: the sample's longest output is the expected maximum of ``N`` draws to
within one quantile step), sent in a fixed well-mixed order (a golden-ratio sequence), as
``vllm bench serve`` shuffles its dataset once with a fixed seed. No random numbers: the
same inputs give the same run.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
# step(decoding sequences, context, prompt tokens in the step, prompt length) -> seconds
StepFn = Callable[[float, float, float, float], float]

MAX_REQUESTS = 4096  # per replica; beyond it a run is close to its steady state anyway
MAX_EVENTS_PER_REQUEST = 64  # loop turns per request before the run is given up as a storm
# SGLang's new_token_ratio schedule (sglang/srt/environ.py defaults, see the module doc)
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS = 600
# SGLANG_RETRACT_DECODE_STEPS: after a retract the ratio is set so the running requests can
# decode this many more steps (ScheduleBatch retract_decode's estimate)
SGLANG_RETRACT_DECODE_STEPS = 20
# Grid of the interpolated step time: points per octave of decoding sequences and of
# prompt tokens (the step-time function is smooth between them: weights once per step,
# per-token GEMMs, per-sequence KV reads)
_GRID_PER_OCTAVE = 2
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What a finite run measures (one replica)."""

    duration_s: float
    output_tokens: float
    requests: int
    ttft_s: FloatArray  # per request, from when it was sent (the run's start, all at once)
    tpot_s: FloatArray  # per request with more than one output token
    mean_decode_batch: float  # decoding sequences per step, averaged over the run's time
    mean_in_system: float  # requests waiting or running, averaged over time (Little)
    preemptions: int


def sample_requests(
    inputs: FloatArray, outputs: FloatArray, weights: FloatArray, n: int
) -> tuple[FloatArray, FloatArray]:
    """``n`` (input, output) lengths: the distribution's quantiles at ``(k + 1/2) / n`` in
    its points' order, sent in a golden-ratio order (well mixed, no random numbers)."""
    cum = np.cumsum(weights / weights.sum())
    q = (np.arange(n) + 0.5) / n
    idx = np.minimum(np.searchsorted(cum, q, side="right"), len(cum) - 1)
    order = np.argsort((np.arange(n) * _GOLDEN) % 1.0, kind="stable")
    return inputs[idx][order].astype(float), outputs[idx][order].astype(float)


class _StepGrid:
    """``step`` on a grid, interpolated: decode-only steps on points of the decoding
    sequences ``b``; steps with ``c`` prompt tokens on points of (``b``, ``b + c``), the
    step's tokens, so that the per-token part of the step (every GEMM) is timed at few
    token counts (the step-time function's own grid, ``serve._grid_point``, every other
    point). Grid points are evaluated once, when first needed."""

    def __init__(self, step: StepFn, context: float, prompt_len: float) -> None:
        self.step = step
        self.context = context
        self.prompt_len = prompt_len
        self._memo: dict[tuple[int, int], float] = {}

    @staticmethod
    def _points(x: float) -> tuple[int, int, float]:
        """Grid points around ``x`` (0, 1, ... 4, then ``_GRID_PER_OCTAVE`` per octave,
        rounded half up) and ``x``'s share of the way between them."""
        if x <= 4:
            lo = math.floor(x)
            return lo, lo + 1, x - lo
        k = math.log2(x) * _GRID_PER_OCTAVE
        lo = math.floor(2.0 ** (math.floor(k) / _GRID_PER_OCTAVE) + 0.5)
        hi = math.floor(2.0 ** (math.ceil(k) / _GRID_PER_OCTAVE) + 0.5)
        return lo, hi, (x - lo) / (hi - lo) if hi > lo else 0.0

    def _at(self, b: int, tokens: int) -> float:
        key = (b, tokens)
        t = self._memo.get(key)
        if t is None:
            chunk = float(max(0, tokens - b)) if tokens >= 0 else 0.0
            t = self.step(float(b), self.context, chunk, self.prompt_len)
            self._memo[key] = t
        return t

    def _line(self, b0: int, b1: int, fb: float, tokens: int | None) -> float:
        lo = self._at(b0, -1 if tokens is None else tokens)
        if not fb:
            return lo
        hi = self._at(b1, -1 if tokens is None else tokens)
        return lo + fb * (hi - lo)

    def __call__(self, b: float, c: float) -> float:
        b0, b1, fb = self._points(b)
        if c <= 0:
            return self._line(b0, b1, fb, None)
        s0, s1, fs = self._points(b + c)
        lo = self._line(b0, b1, fb, s0)
        if not fs:
            return lo
        return lo + fs * (self._line(b0, b1, fb, s1) - lo)


def simulate_run(
    step: StepFn,
    inputs: FloatArray,
    outputs: FloatArray,
    *,
    prefill_fraction: float,
    max_num_seqs: int,
    max_num_tokens: int,
    kv_capacity_tokens: float,
    context: float,
    scheduler: str = "vllm",
    tokens_per_step: float = 1.0,
    verify_tokens: float = 1.0,
    clients: int = 0,
) -> RunResult | None:
    """Run ``len(inputs)`` requests queued at once (``clients`` > 0: sent by a closed loop of
    that many clients, each sending its next request, in order, when its last one ends)
    through ``scheduler``'s loop (vllm | sglang | trtllm | atom; any other runs vLLM's) on one
    replica; ``None`` when the run is beyond the bounds (``MAX_REQUESTS``,
    ``MAX_EVENTS_PER_REQUEST``) or a request can never fit in the cache. Speculative
    decoding: a decoding request emits ``tokens_per_step`` tokens a step (the mean
    acceptance length, its last step only what is left) and takes ``verify_tokens`` of the
    step's token budget."""
    acc = max(1.0, float(tokens_per_step))
    verify = max(1.0, float(verify_tokens))
    n = int(inputs.size)
    if n < 1 or n > MAX_REQUESTS:
        return None
    prompt = np.maximum(1.0, np.round(inputs))  # KV tokens of each prompt
    out = np.maximum(1.0, np.round(outputs))
    cap = float(kv_capacity_tokens)
    budget = float(max(1, max_num_tokens))
    if cap <= 0 or float((prompt + out).max()) > cap:
        return None  # no engine admits a request its cache cannot hold
    # SGLang and ATOM run a prefill batch on its own; ATOM admits whole prompts only
    mixed = scheduler not in ("sglang", "atom")
    whole = scheduler == "atom"
    # share of its output each engine reserves when admitting (see the module doc)
    if scheduler == "trtllm":
        ratio, ratio_min, decay = 1.0, 1.0, 0.0
    elif scheduler == "sglang":
        ratio = SGLANG_INIT_NEW_TOKEN_RATIO
        ratio_min = ratio * SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
        decay = (ratio - ratio_min) / SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
    else:
        ratio, ratio_min, decay = 0.0, 0.0, 0.0
    grid = _StepGrid(step, context, float(np.mean(inputs)))
    # a request's prompt tokens still to compute: its prompt after prefix-cache hits
    pre = np.maximum(1.0, np.round(prompt * prefill_fraction))
    cached = prompt - pre  # tokens a prefix hit brings into the cache without compute
    gen = np.zeros(n)  # output tokens generated
    kv = np.zeros(n)  # tokens it holds in the cache
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    # a closed loop of ``clients``: each sends its next request when its last one ends
    released = n if clients <= 0 else min(n, clients)
    arrival = np.zeros(n)
    # the queue, its head on the right (admitted and preempted requests come and go there),
    # a closed loop's next request joining at its tail on the left
    waiting: deque[int] = deque(range(released - 1, -1, -1))
    run = np.zeros(0, dtype=np.int64)  # running requests in admission order
    t = used = 0.0
    decode_area = in_system_area = 0.0
    preemptions = 0
    turns = 0
    limit = MAX_EVENTS_PER_REQUEST * n + 1000
    done = 0
    while done < n:
        turns += 1
        if turns > limit:
            return None
        decoding = run[pre[run] <= 0] if run.size else run
        n_dec = float(decoding.size)
        # 1. the running requests' next tokens: a full cache preempts (vLLM: the newest;
        # SGLang: those that decoded least) until they fit
        if used + n_dec * acc > cap:
            if scheduler == "sglang":
                victims_order = np.lexsort((-prompt[run], gen[run]))  # least decoded first
                keep = np.ones(run.size, dtype=bool)
                need = used + n_dec * acc
                for v in victims_order:
                    if need <= cap or keep.sum() <= 1:
                        break
                    j = run[v]
                    keep[v] = False
                    need -= kv[j] + (acc if pre[j] <= 0 else 0.0)
                victims = run[~keep]
                run = run[keep]
                left = out[run] - gen[run]
                ratio = min(
                    1.0,
                    float((gen[run].sum() + SGLANG_RETRACT_DECODE_STEPS * run.size)
                          / max(1.0, float((gen[run] + left).sum()))),
                )  # fmt: skip
            else:
                k = run.size
                need = used + n_dec * acc
                while k > 1 and need > cap:
                    k -= 1
                    j = run[k]
                    need -= kv[j] + (acc if pre[j] <= 0 else 0.0)
                victims = run[k:]
                run = run[:k]
            for j in victims[::-1]:  # back to the queue's head, oldest first
                used -= kv[j]
                kv[j] = 0.0
                pre[j] = prompt[j] + gen[j]  # recomputed: the prompt and its own tokens
                cached[j] = 0.0
                waiting.append(int(j))
            preemptions += int(victims.size)
            decoding = run[pre[run] <= 0]
            n_dec = float(decoding.size)
            admit = False
        else:
            admit = True
        # 2. prompt chunks: running requests' remaining prompts, then new admissions
        room = budget - (n_dec * verify if mixed else 0.0)
        chunk = 0.0
        completed: list[int] = []  # prompts whose last chunk runs in this step
        prefilling = run[pre[run] > 0] if run.size else run
        for j in prefilling:
            if room <= 0:
                break
            c = min(pre[j], room)
            if used + c > cap:
                break
            pre[j] -= c
            kv[j] += c
            used += c
            chunk += c
            room -= c
            if pre[j] <= 0:
                completed.append(int(j))
        added: list[int] = []
        if admit:
            reserve = ratio * float((out[run] - gen[run]).sum()) if ratio > 0 else 0.0
            while waiting and room > 0 and run.size + len(added) < max_num_seqs:
                j = waiting[-1]
                if whole and pre[j] > room and room < budget:
                    break  # the next prefill step takes it whole (one too long runs alone)
                c = min(pre[j], room)
                hold = cached[j] + c
                if ratio > 0:
                    # reserve the whole prompt and the output share, beside the running
                    want = prompt[j] + gen[j] + ratio * (out[j] - gen[j])
                    if used + reserve + want > cap:
                        break
                    reserve += ratio * (out[j] - gen[j])
                elif used + hold > cap:
                    break
                waiting.pop()
                pre[j] -= c
                kv[j] += hold
                used += hold
                chunk += c
                room -= c
                added.append(j)
                if pre[j] <= 0:
                    completed.append(j)
        if added:
            run = np.concatenate([run, np.asarray(added, dtype=np.int64)])
        if not mixed and chunk > 0:
            decoding = decoding[:0]  # SGLang, ATOM: a prefill batch runs on its own
            n_dec = 0.0
        # 3. time: one step with a chunk, or a stretch of decode-only steps up to the next
        # event (a finish, a full cache, SGLang's ratio letting the next one in)
        if chunk > 0 or n_dec == 0:
            steps = 1.0
            dt = grid(n_dec, chunk) if (chunk > 0 or n_dec > 0) else 0.0
        else:
            steps = float(np.ceil((out[decoding] - gen[decoding]) / acc).min())
            steps = min(steps, max(1.0, math.floor((cap - used) / (n_dec * acc))))
            if waiting and decay > 0 and ratio > ratio_min:
                steps = min(steps, 16.0)
            dt = steps * grid(n_dec, 0.0)
        if chunk == 0 and n_dec == 0:
            return None  # nothing can run: a request that fits nowhere
        in_system_area += (released - done) * dt
        decode_area += n_dec * dt
        t += dt
        if n_dec:
            # each step emits ``acc`` tokens a request, the last one only what is left
            grown = np.minimum(steps * acc, out[decoding] - gen[decoding])
            gen[decoding] += grown
            kv[decoding] += grown
            used += float(grown.sum())
            if decay > 0:
                ratio = max(ratio_min, ratio - decay * steps)
        # prompts completed in this step emit their first (or, recomputed, next) token
        if completed:
            fresh = np.asarray(completed, dtype=np.int64)
            fresh = fresh[gen[fresh] < out[fresh]]
            if fresh.size:
                new = fresh[np.isnan(first[fresh])]
                first[new] = t
                gen[fresh] += 1.0
                kv[fresh] += 1.0
                used += float(fresh.size)
        ended = gen[run] >= out[run]
        if ended.any():
            fin = run[ended]
            finish[fin] = t
            used -= float(kv[fin].sum())
            kv[fin] = 0.0
            done += int(fin.size)
            run = run[~ended]
            for _ in range(min(int(fin.size), n - released)):
                arrival[released] = t
                waiting.appendleft(released)
                released += 1
    multi = out > 1
    tpot = (finish[multi] - first[multi]) / (out[multi] - 1.0)
    return RunResult(
        duration_s=t,
        output_tokens=float(out.sum()),
        requests=n,
        ttft_s=first - arrival,
        tpot_s=tpot,
        mean_decode_batch=decode_area / t if t > 0 else 0.0,
        mean_in_system=in_system_area / t if t > 0 else 0.0,
        preemptions=preemptions,
    )


__all__ = ["MAX_REQUESTS", "RunResult", "sample_requests", "simulate_run"]
