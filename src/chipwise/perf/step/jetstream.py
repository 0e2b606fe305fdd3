"""JetStream's serving loop: a fixed decode batch of slots, each prompt prefilled alone.

JetStream (google/JetStream, ``jetstream/core/orchestrator.py`` at commit 8839d1a,
2025-05-22; the same loop serves MaxText's and jetstream-pytorch's models) runs, in the
interleaved mode of a single TPU slice, three steps on the same chips:

* **Prefill** (``_prefill_thread``): one request at a time (batch 1), its tokens padded up to
  the nearest of ``token_utils.DEFAULT_PREFILL_BUCKETS`` (16, 32, 64, ... 32768, doubling):
  every XLA program has a static shape, so a 215-token prompt pays for 256.
* **Insert** (``_insert_if_possible``): the prefilled cache goes into a free decode slot. In
  interleaved mode the generate thread blocks on the prefill backlog while slots are free,
  so waiting prompts are prefilled and inserted before the next decode step: no per-step
  token budget, only the free slots bound the admissions.
* **Generate** (``_generate_thread``): one compiled step over the whole decode state, all
  ``max_concurrent_decodes`` slots (``per_device_batch_size`` x chips in MaxText, the
  server's ``--batch_size`` in jetstream-pytorch), occupied or not: its projections, MLP
  and LM head run on every slot. Each slot holds a cache of a fixed length (MaxText's
  ``max_target_length``, jetstream-pytorch's ``--max_cache_length``); jetstream-pytorch's
  default dense attention (``layers.AttentionKernel`` with ``ragged_mha`` off, its default
  since the flag came in PR #93, 2024-05-23) reads every slot's whole cache each step, so
  the KV read per step is slots x cache length whatever the prompts' lengths
  (``Inference.slot_cache_len``); ragged attention reads only the present sequences' own
  context (``slot_cache_len`` 0).

So a step of the engine model (``engine.Engine``, one replica) with ``decode`` sequences
running and ``prefill`` prompt tokens to admit costs one generate step at the slot count
plus one padded batch-1 prefill per admitted prompt. The mean prompt stands for its length
mix: its prefill costs the mix's mean padded prefill (the buckets are not linear in length).
**Data parallelism inside one server.** A JetStream server drives all its chips as one
engine. With data parallelism (jetstream-pytorch ``--shard_on_batch``, "data parallel
instead of model parallel", benchmarks/summary.md) the decode state is sharded on its batch
axis (``environment.sharding_by_name`` -> axis 0), so a generate step runs ``slots / shards``
per chip; but a prefill's output is replicated (``engine.get_prefix_destination_sharding``:
``self.replicated`` under ``shard_on_batch``): each batch-1 prefill runs whole on every chip,
one after another for the whole server. ``shards`` is that data-parallel degree.

int8 weights (jetstream-pytorch ``--quantize_weights``: weight-only, per channel) and an
int8 KV cache (``--quantize_kv_cache``) are the workload's precision ``w8a16`` and
``kv_dtype`` int8; nothing here is specific to them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import numpy.typing as npt

# token_utils.DEFAULT_PREFILL_BUCKETS (google/JetStream jetstream/engine/token_utils.py at
# 8839d1a): the prefill lengths JetStream compiles; a prompt is padded to the smallest that
# holds it (take_nearest_length; a longer prompt is cut to the largest)
PREFILL_BUCKETS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
# Decode slots when none are stated: jetstream-pytorch's ``--batch_size`` flag default 32
# (AI-Hypercomputer/jetstream-pytorch jetstream_pt/config.py at c8bb611, 2025-09-14).
DEFAULT_SLOTS = 32


class StepParts(Protocol):
    """The pieces of a step a serving step timer prices (``serve.EngineStepTimer``)."""

    def linear_s(self, tokens: float) -> float: ...
    def attention_s(
        self, seqs: float, context: int, *, decode: bool, dense: bool = False
    ) -> float: ...
    def logits_s(self, seqs: float) -> float: ...
    def comm_s(self, tokens: float) -> float: ...


def prefill_bucket(tokens: float) -> int:
    """The padded length JetStream prefills a prompt of ``tokens`` at."""
    i = bisect.bisect_left(PREFILL_BUCKETS, max(1.0, tokens))
    return PREFILL_BUCKETS[min(i, len(PREFILL_BUCKETS) - 1)]


def prompt_prefill_s(parts: StepParts, tokens: float) -> float:
    """One prompt's prefill: a batch-1 forward over its padded bucket (attention over the
    bucket too: the program's shape), sampling its first token."""
    n = prefill_bucket(tokens)
    return (
        parts.linear_s(n)
        + parts.attention_s(n, n, decode=False)
        + parts.logits_s(1.0)
        + parts.comm_s(n)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class JetStreamStep:
    """``engine.StepFn`` of a JetStream replica: a generate step over ``slots`` plus the
    padded prefills of the prompts admitted before it (see the module docstring)."""

    parts: StepParts
    slots: int
    host_step_s: float
    overlap: bool
    mean_in: float
    mean_prompt_s: float  # mean padded prefill over the load's prompt lengths
    # positions each slot's cache holds, all read by a dense decode attention every step
    # (``Inference.slot_cache_len``); 0 = only the present sequences' own context
    cache_len: int = 0
    # data-parallel shards of the decode state (``--shard_on_batch``): ``slots`` are the
    # whole server's, each shard's chips step ``slots / shards`` of them; prefills replicate
    shards: int = 1
    # > 0: the generate step runs only the present sequences, padded up to a multiple of
    # this (at least ``slots``), not every slot: vLLM V0's TPU runner (``vllm_v0_tpu_step``)
    batch_multiple: int = 0
    # host seconds per present sequence per call, and whether each prompt's own forward
    # pays the host's per-call work (``host_step_s`` + one sequence's share): vLLM V0's TPU
    # runner (``VLLM_V0_TPU_HOST_PER_SEQ_S``); JetStream's orchestrator: 0 / False
    host_per_seq_s: float = 0.0
    prompt_host: bool = False

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"JetStream needs at least one decode slot, got {self.slots}")
        if self.shards < 1:
            raise ValueError(f"JetStream needs at least one shard, got {self.shards}")

    def device_s(self, decode: float, context: float) -> float:
        """Device time of one generate step: every slot through the projections, MLP and
        LM head, the ``decode`` present sequences' KV read (a shard's share of each)."""
        n = float(self.padded_batch(decode)) / self.shards
        present = max(1.0, decode / self.shards)
        if self.cache_len:
            attention = self.parts.attention_s(n, self.cache_len, decode=True, dense=True)
        else:
            attention = self.parts.attention_s(present, max(1, round(context)),
                                               decode=True)  # fmt: skip
        return self.parts.linear_s(n) + attention + self.parts.logits_s(n) + self.parts.comm_s(n)

    def padded_batch(self, decode: float) -> int:
        """Sequences a generate step of ``decode`` present ones runs: at least ``slots``;
        beyond them, rounded up to ``batch_multiple`` when the engine pads its batch."""
        n = max(0, round(decode))
        if self.batch_multiple > 0 and n > self.slots:
            n = -(-n // self.batch_multiple) * self.batch_multiple
        return max(self.slots, n)

    def generate_s(self, decode: float, context: float) -> float:
        """One generate step, the host's work hidden behind the device's or added."""
        device = self.device_s(decode, context)
        host = self.host_step_s + self.host_per_seq_s * max(0.0, decode)
        return max(device, host) if self.overlap else device + host

    def __call__(self, decode: float, context: float, prefill: float, prompt_len: float) -> float:
        t = self.generate_s(decode, context) if decode > 0 else 0.0
        if prefill > 0:
            length = max(1.0, prompt_len)
            mix = abs(length - self.mean_in) < 0.5
            each = self.mean_prompt_s if mix else prompt_prefill_s(self.parts, length)
            if self.prompt_host:
                each += self.host_step_s + self.host_per_seq_s
            t += prefill / length * each
        return t


def jetstream_step(
    parts: StepParts,
    *,
    slots: int,
    inputs: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    host_step_s: float,
    overlap: bool,
    cache_len: int = 0,
    shards: int = 1,
) -> JetStreamStep:
    """The step of a JetStream server with ``slots`` decode slots (each reserving
    ``cache_len`` positions, 0 = ragged) sharded ``shards`` ways on batch, serving prompts
    of ``inputs`` tokens (with ``weights``)."""
    uniq, index = np.unique(np.maximum(1.0, inputs), return_inverse=True)
    each = np.array([prompt_prefill_s(parts, float(n)) for n in uniq])
    mean_prompt_s = float(weights @ each[index])
    return JetStreamStep(
        parts=parts,
        slots=slots,
        host_step_s=host_step_s,
        overlap=overlap,
        mean_in=float(weights @ inputs),
        mean_prompt_s=mean_prompt_s,
        cache_len=cache_len,
        shards=shards,
    )


# vLLM's V0 engine on TPU (vllm/worker/tpu_model_runner.py and vllm/attention/backends/
# pallas.py of the V0 releases, e.g. v0.7.3, 2025-02-20; the V0 TPU runner kept this shape
# until the V1 TPU runner replaced it) runs the same two kinds of step as JetStream, never
# mixed in one forward (V0 on TPU has no chunked prefill: a scheduler step is all prompts or
# all decodes):
# * prefill: TPUModelRunner.execute_model runs each scheduled prompt as its own batch-1
#   forward ("Since the FlashAttention kernel does not support ragged inputs, we split the
#   prompts into different batches and process them separately"), its tokens padded by
#   _get_padded_prefill_len to the next power of two, at least 16: JetStream's buckets;
# * decode: one forward over the running sequences, padded by _get_padded_batch_size to 8
#   when at most 8 run, else up to the next multiple of 16 (the padding rows carry context
#   length 0, so the paged attention kernel reads only the real sequences' pages).
# A prefill step holds the decoding sequences back for its length, as a JetStream prefill
# does, so a step of the engine model (decode + admitted prompts) costs the decode forward
# plus each prompt's padded forward.
VLLM_V0_TPU_MIN_BATCH = 8
VLLM_V0_TPU_BATCH_MULTIPLE = 16
# The V0 TPU runner's host work per running sequence per call, which the device waits out:
# every call ends in a blocking ``next_token_ids.cpu().tolist()`` (TPUModelRunner.
# _execute_model, read at vllm 03070a3b), after which V0's Python handles each sequence
# (the step's outputs and stop checks, the next schedule, ``_prepare_decode``'s per-sequence
# lists and block tables) before the next call can start: nothing of it overlaps the
# device, so a step costs device + ``host_step_s`` + this x sequences, and each prompt's
# own forward one sequence's share. Fitted 2026-12-06 (h151): 195 us makes the tpu-recipes
# v6e-4 Llama-3.1-8B ShareGPT run's output tokens/s (SVG-001, V0 engine of 2025-02) exact;
# its TTFT and TPOT rows (SVG-002..005) were not used. The same order as vLLM's own
# diagnosis of V0 on a GPU (blog.vllm.ai/2024/09/05/perf-update.html, v0.5.3, Llama 3 8B
# on one H100: scheduling and input preparation 29 % of the time against 38 % on the GPU).
VLLM_V0_TPU_HOST_PER_SEQ_S = 195e-6


def vllm_v0_tpu_step(
    parts: StepParts,
    *,
    inputs: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    host_step_s: float,
    overlap: bool,
) -> JetStreamStep:
    """The step of a vLLM V0 TPU replica (see above) serving prompts of ``inputs`` tokens
    (with ``weights``): a decode forward padded to ``VLLM_V0_TPU_BATCH_MULTIPLE`` (at least
    ``VLLM_V0_TPU_MIN_BATCH``) plus one padded batch-1 prefill per admitted prompt, each call
    followed by the host's per-sequence work (``VLLM_V0_TPU_HOST_PER_SEQ_S``)."""
    step = jetstream_step(
        parts, slots=VLLM_V0_TPU_MIN_BATCH, inputs=inputs, weights=weights,
        host_step_s=host_step_s, overlap=overlap,
    )  # fmt: skip
    return replace(step, batch_multiple=VLLM_V0_TPU_BATCH_MULTIPLE,
                   host_per_seq_s=VLLM_V0_TPU_HOST_PER_SEQ_S, prompt_host=True)  # fmt: skip
