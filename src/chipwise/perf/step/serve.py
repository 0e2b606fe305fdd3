"""Serving: prefill (compute-bound) and decode (memory-bound), TTFT, TPOT and throughput.

A serving plan is ``dp`` replicas of a ``tp x pp`` model; each replica serves
``ceil(batch / dp)`` concurrent requests. Steady state of continuous batching with every
request ``input_len`` in and ``output_len`` out: per request slot, the replica spends one
prefill of its batch's prompts and ``output_len`` decode steps, so

    TTFT = prefill time of the replica's batch (b x input_len tokens, one forward)
    TPOT = one decode step at the mean context (input_len + output_len / 2)
    output tokens/s = batch x output_len / (TTFT + output_len x TPOT)

Decode reads every weight and the whole KV cache per step (the projections are GEMMs with
M = b, which the per-op model makes memory-bound). Tensor parallelism adds two all-reduces
of the activations per layer; at decode sizes these are latency-bound and not overlapped
(vLLM's and TensorRT-LLM's custom all-reduce run between the GEMMs). Pipeline stages run
one after another for a given token (PP adds capacity, not latency).

**Attention data parallelism** (``Plan.adp``; TensorRT-LLM ``enable_attention_dp``, SGLang
``--enable-dp-attention``) runs the ``tp`` ranks of a replica as ``tp`` attention replicas:
each rank holds its own requests and their KV cache, and runs every non-expert op whole
(attention, norms, dense and shared-expert MLPs, router, embedding, LM head: their weights
replicated on each rank), on its own tokens only. The routed experts stay split over the
``tp`` ranks (``etp x ep = tp``): before each MoE layer the ranks all-gather their tokens,
already quantized to the matmul dtype, with their routing (top-k ids and weights), each rank
runs its experts on every rank's tokens, and a reduce-scatter returns each rank its tokens'
sums (TensorRT-LLM ``CutlassFusedMoE.forward_chunk``: ``allgather`` when ``use_dp`` and no
all-to-all, then ``reducescatter_or_allreduce``; its all-to-all needs a multi-node NVLink
system or DeepEP, ``select_alltoall_method_type``). No attention all-reduce is left. So the
model times one rank as a tp=1 replica with experts split ``etp x ep``
(``rank_plan``), with those two collectives over the ``tp`` group in place of the
all-reduces; the engine runs ``dp x tp`` replicas, each with its own batch limit, token
budget and KV pool (what the HBM left after replicated non-expert weights holds).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Protocol

from chipwise.errors import PlanError
from chipwise.hardware import Chip
from chipwise.perf.base import (
    Assumption,
    Breakdown,
    InferPrediction,
    MemoryUse,
    OpTime,
    PerfModel,
    Plan,
    ServingLoadResult,
)
from chipwise.perf.efficiency import efficiency_for, fabric_collective_latency_s
from chipwise.perf.ops.kernels import (
    measured_all_reduce_s,
    measured_nccl_launch_s,
    measured_nccl_s,
)
from chipwise.perf.ops.layers import (
    Dtypes,
    Shard,
    activation_bytes,
    attention_ops,
    decode_layer_ops,
    embedding_ops,
    embedding_params,
    engine_fuses_shared_experts,
    fp8_context_attention,
    head_ops,
    is_linear_kind,
    is_sequence_op,
    kv_bytes_per_token_per_layer,
    kv_cached_tokens,
    layer_ops,
    layer_window,
    projection_op,
    recurrent_state_bytes,
)
from chipwise.perf.plan.memory import (
    RESERVE_FIXED_BYTES,
    expert_weight_bytes,
    marlin_expert_padding,
    serve_memory,
    stage_layer_kinds,
)
from chipwise.perf.plan.parallel import (
    Collective,
    Group,
    Network,
    check_plan,
    groups,
    layers_per_stage,
)
from chipwise.perf.step.engine import (
    ENGINE_MEMORY_UTILIZATION,
    HARNESS_ADMISSION_GATES,
    HARNESS_ARRIVAL_WINDOWS,
    KV_FREE_MEMORY_FRACTION,
    MAX_NUM_TOKENS_DEFAULT,
    SGLANG_STATE_SLOTS_PER_REQUEST,
    VLLM_V1_DEFAULT_DATE,
    BatchDefaults,
    Engine,
    StepFn,
    engine_batch_defaults,
    kv_pool_bytes,
    lengths_of,
    released_before,
    sglang_cuda_graph_max_bs,
    sglang_mem_fraction_static,
    sglang_state_split,
    windows_kv,
)
from chipwise.perf.step.jetstream import (
    JetStreamStep,
    jetstream_step,
    prefill_bucket,
    vllm_v0_tpu_step,
)
from chipwise.perf.step.timing import Cost, StepTimer, time_ops
from chipwise.perf.step.trtllm_bench import trtllm_bench_limits
from chipwise.units import dtype_bytes
from chipwise.workload.ir import (
    TRTLLM_BENCH_HARNESSES,
    Inference,
    Op,
    PrefillPool,
    TransformerSpec,
    api_harness,
)

# Host (CPU) work per engine step: scheduling, preparing the step's inputs, sampling
# bookkeeping, stop checks, detokenising, launching the step's CUDA graph. Measured
# figures bracket it: vLLM V0 (mid-2024) left ~4 ms of GPU bubble per decode step (vLLM
# RFC #6854, "Multi-Step Scheduling", 2024-07-26: "each highlighted redbox is about 4ms of
# GPU bubble", 5-13 ms in the worst traces); vLLM V1 with its scheduler in a busy-loop
# process still serves Llama-3.2-1B at 2.73 ms TPOT (vLLM PR #17866, 2025-05-08), of which
# ~1.3 ms would be device time on an H100-class GPU (GPU not stated: 2.5 GB of weights at
# ~3 TB/s plus ~160 kernel launches), so ~1.4 ms is host. 2 ms assumed for an engine
# that runs it between steps.
HOST_STEP_S = 2e-3
DECODE_STEP_OVERHEAD_S = HOST_STEP_S  # the static-batch path pays it on every decode step
# Each prefill step of a static batch pays the same fixed host cost.
PREFILL_STEP_OVERHEAD_S = HOST_STEP_S
# Continuous-batching engines run that host work for step n+1 while the device executes
# step n, so a step costs max(device, host), not their sum: TensorRT-LLM's overlap
# scheduler ("CPU work (step n) and GPU computation (step n+1) run concurrently", on by
# default: nvidia.github.io/TensorRT-LLM features/overlap-scheduler, 2025), SGLang's
# zero-overhead batch scheduler ("the scheduler runs one batch ahead", no GPU idle time
# between consecutive decode batches in Nsight: lmsys.org/blog/2024-12-04-sglang-v0-4),
# vLLM V1's ``--async-scheduling`` (the same one-step-ahead loop). A static batch
# (``vllm benchmark_latency``, ``serve``) is timed with the host work in series.
# TensorRT-LLM's overlap scheduler belongs to its PyTorch backend; its C++ executor over a
# TensorRT engine overlaps iterations only when ``enableTrtOverlap`` is set (an opt-in switch,
# NVIDIA/TensorRT-LLM PR #3625, 2025-04-16). NVIDIA's MLPerf llama2-70b harness runs that
# executor without it (inference_results_v5.1 closed/NVIDIA/code/llmlib/cores/
# trtllm_executor_core.py), so those validation rows state ``async_scheduling`` no.
ENGINE_OVERLAPS_HOST = True
# vLLM V1 overlaps only under async scheduling, which it shipped opt-in and experimental
# ("can be enabled using the --async-scheduling flag", vLLM PR #19970, 2025-06-23) and made
# the default in v0.14.0 (PR #27614; v0.14.0 release notes, "Breaking Changes: Async
# scheduling is now enabled by default", quoted in OpenBMB/UltraRAG PR #259, 2026-01-21).
# An older vLLM schedules, prepares inputs and processes outputs between its steps, so a
# step costs device + host (``engine_overlaps_host``), unless the run passed
# --async-scheduling (``Inference.async_scheduling``). The engine's date is
# ``Inference.engine_date`` (a validation row's date).
VLLM_ASYNC_SCHEDULING_DEFAULT_DATE = "2026-01-21"
# SGLang runs a hybrid linear-attention model (Qwen3-Next, Qwen3.5) with its prefix cache on
# (MambaRadixCache, sgl-project/sglang PR #11214, opened 2025-10-04) in the default
# --mamba-scheduler-strategy no_buffer, and that turns its overlap loop off:
# ServerArgs._handle_mamba_radix_cache sets disable_overlap_schedule ("Disabling overlap
# schedule since mamba no_buffer is not compatible with overlap schedule") unless
# speculative decoding is on, which disables the radix cache instead (python/sglang/srt/
# server_args.py of a 2026-01 tree, read 2026-12-07; the trtllm_mha exception does not apply:
# on SM100 these models default to triton attention). SGLang's docs say the same:
# "MambaRadixCacheV1: The default version ... SGLang will automatically close overlap
# schedule for compatibility reasons" (docs/basic_usage/qwen3.md, PR #15337, 2025-12-17).
# The opt-in extra_buffer strategy keeps the overlap loop (PR #14792, 2025-12-10). So every
# step's host work runs in series with the device (HOST_STEP_S), as in vLLM before async
# scheduling.
SGLANG_MAMBA_RADIX_DATE = "2025-10-04"
# vLLM's steps that carry prompt tokens for a Gated DeltaNet hybrid (Qwen3-Next, Qwen3.5)
# do not hide the host's step work behind the device: the hybrid's full CUDA graph covers
# decode-only steps alone (vllm/v1/attention/backends/gdn_attn.py,
# GDNAttentionMetadataBuilder._cudagraph_support = UNIFORM_BATCH, "GDN only supports
# decode-only full CUDAGraph capture"), and a mixed step splits each GDN layer's batch into
# its prefill part (causal_conv1d_fn, then flash-linear-attention's chunked delta rule, whose
# prepare_chunk_indices reads the step's cu_seqlens back to the host with .tolist():
# vllm/model_executor/layers/fla/ops/index.py; both files as stored from vLLM's main, read
# 2026-12-06, not at v0.17.1's tag) and its decode part (causal_conv1d_update,
# fused_recurrent), run eagerly between the graph pieces; the read-back waits for the device,
# so the host's per-request work for the next step (scheduling, input preparation, output
# processing) runs after the device's instead of beside it. Modelled as that work added to
# a mixed step of more tokens than vLLM captures in CUDA graphs (VLLM_CUDA_GRAPH_MAX_TOKENS:
# above it the whole forward runs eagerly, its launches on the host too): HOST_STEP_S plus
# this many seconds per decoding sequence. Fitted on
# GPUStack's vLLM v0.17.1 Qwen3.5-35B-A3B ShareGPT runs on one H200 at 512
# clients (GDN-028/032/034, in_sample.toml): their decode took ~93 ms a token where the
# device step is ~57 ms, and the fp8 checkpoint gained +3 % against the device's +37 %; 123 us
# a sequence (mean log error 0 over the three) leaves them -5 / +4 / +0 % (from +102 / +156 /
# +146 % without it). Refitted 2026-12-08 (little) when Engine.solve's closed-loop balance
# came to wait over the prompts' token share of a step (a step packs them) and to count a
# request's cycle as TTFT + (L_out - 1) steps: the solved loop holds ~509 of the 512 clients
# decoding, where it held ~281 when the constant was first fitted (85 us, 2026-12-06, h161).
# Refitted 2026-12-08 (little2), 123 -> 139 us, when the three rows were re-valued to their
# runs' generated tokens over duration (3979 / 4323 / 4255 tok/s; the pages' 'output token
# throughput' is guidellm 0.5.x's rate-distribution mean over the span of token events,
# which leaves out the last requests' decode: see the rows' notes): -2.2 / +0.6 / +2.2 %.
# Which host work it is was not traced (scheduling, input preparation and output
# processing grow with the running requests; so may the eager GDN layers' index and copy
# work on the split batch); the form, per running request and only in steps with prompt
# tokens above the graphs' ceiling, is what the rows allow: the decode-only run at 200
# sequences (GDN-050, -15 %) leaves no room for a fixed cost of this size, and at 1-8 req/s
# (~45 sequences, steps under the ceiling, piecewise graphs) the mean TTFT is already
# reached without it (GDN-054..058). Not fitted on: the other GDN- vLLM rows.
VLLM_GDN_MIXED_HOST_S_PER_SEQ = 139e-6
# TensorRT-LLM's PyTorch executor (PyExecutor) runs its per-request work in Python on each
# rank's process every step: scheduling, the KV cache manager's per-request block
# bookkeeping, input preparation (model_engine._prepare_tp_inputs loops over the scheduled
# requests), the sampler's update_requests and the responses. Its overlap loop hides that
# behind the device only while it is shorter (step = max(device, host)). Plain tp runs the
# same loop over all of an instance's requests on every rank; attention DP gives each rank
# its own requests, so the host work per step is that of the busiest rank's requests.
# Measured: NVIDIA/TensorRT-LLM PR #10273 (2025-12-24, "the host overhead is the
# bottleneck"): GPT-OSS-120B on GB200, ADP2, max_batch_size 1536, 3072 clients at 1k/1k,
# host_step_time (py_executor's wall time of one loop iteration) 45.11 ms with 1536 requests
# a rank; less HOST_STEP_S over 1536 = 28 us a request (chipwise's device step there is ~30
# ms, so the iteration is the host's). Not fitted on validation rows; the InferenceMAX
# TensorRT-LLM 1.2.0rc2 B200 tp 4 run at 128 clients (IMX-125, TPOT 5.56 ms) is consistent
# with it (host 2 + 128 x 0.028 = 5.6 ms).
TRTLLM_HOST_S_PER_REQUEST = (45.11e-3 - HOST_STEP_S) / 1536
# SGLang's normal (non-overlap) scheduler loop runs each step's host work in series with the
# device: it schedules and prepares batch n, runs it, then processes its results
# (Scheduler.event_loop_normal; process_batch_result_decode walks every running request in
# Python: its output token, finish check and streamed output), and only then forms batch
# n+1 (the timeline in sgl-project/sglang-omni PR #156, 2026-03-14: "[schedule] [GPU:
# run_batch_N] [process_result_N] [schedule] ..."). The overlap loop hides that work; a
# Gated DeltaNet hybrid served in the default no_buffer mode runs without it
# (SGLANG_MAMBA_RADIX_DATE); those are the only SGLang runs the rows time without the overlap
# loop, so the term is kept to them (a --disable-overlap-schedule run of another model would
# pay the same work, unmeasured here). The per-request part is taken as
# VLLM_GDN_MIXED_HOST_S_PER_SEQ,
# the same kind of per-request Python step work measured in series in vLLM (fitted on
# GDN-028/032/034, in_sample.toml); not fitted on any SGLang row. With it (85 us when this
# was written), the SGLang v0.5.9
# Qwen3.5-35B-A3B run on one H200 at 512 clients (GDN-030, ~156 running: ~45 ms device and
# host) goes +54 -> +19 % and the Qwen3.5-397B B200 tp 8 run at 32 clients (GDN-001/003)
# +30 -> +14 % tokens/s, -25 -> -13 % TPOT; at the refit 123 us (2026-12-08) +9 %, +8 % and
# -8 %.
SGLANG_SERIAL_HOST_S_PER_REQUEST = VLLM_GDN_MIXED_HOST_S_PER_SEQ
# SGLang-JAX (sgl-project/sglang-jax: SGLang's scheduler ported to JAX on TPU) runs the overlap
# loop (Scheduler.event_loop_overlap, on by default: server_args.disable_overlap_schedule
# False at 10f32e49, 2025-09-11, and 2d97c787, 2026-07-08), so its host work per step is
# hidden only while it is shorter than the device's (step = max(device, host)); but that work
# is far larger than a CUDA engine's. Each decode step the scheduler thread builds the batch's
# inputs in numpy (ScheduleBatch.get_model_worker_batch at 10f32e49: a gather of every
# request's row of req_to_token, max_context_len entries each, and a cache_loc array padded to
# the batch bucket x max_req_len, copied to the device), processes the previous batch's
# tokens request by request in Python, and the forward thread dispatches the jitted model and
# sampler over their sharded arguments. Measured: "a device forward takes 6.183 ms, while the
# corresponding host processing span on the runner thread takes 6.621 ms ... host work of
# this magnitude can limit how quickly subsequent batches are submitted" (Qwen3-8B decode,
# XProf; jitted_sampler alone 1.814 ms in cpp_pjit_shard_arg_fallback; sgl-project/sglang-jax
# PR #1652, 2026-09-14, which trimmed it after every build the rows ran). Modelled as
# SGLANG_JAX_HOST_STEP_S per step plus SGLANG_JAX_HOST_S_PER_REQUEST per scheduled request,
# overlapped. FITTED on the two rows that pin them (in_sample.toml, with their runs' ITL
# rows): SGL-JAX main-10f32e49's Qwen3-8B 1024/1024 output tokens/s on a v6e-4 at 8 and 256
# clients (SVP-003, SVP-033: +0.1 and -0.5 % with these values, +44 and +7 % before), where
# the device step (~5 and ~29 ms) is shorter than the host's (5.2 + 8 x 0.1 and 5.2 + 256 x
# 0.1 ms). The same line then meets that matrix's measured decode steps at 16-128 clients
# (ITL 6.6-17.1 ms against 6.8-18.0 ms of host), which only a host cost growing with the
# running requests does: the device step falls short of them by a near-constant 1.2-2.0 ms.
# Not fitted on: every other SGL-JAX row (other models, ISLs, builds, chips). The later
# builds (sglang-jax 0.1.0 on v6e-4, 2026-06; main 2d97c787 on TPU7x, 2026-07) are given the
# same host: no figure of theirs was found (PR #1652's 6.6 ms was read after them).
SGLANG_JAX_HOST_STEP_S = 5.2e-3
SGLANG_JAX_HOST_S_PER_REQUEST = 0.1e-3
# SGLang-JAX before its "feat: embedding tp" (sgl-project/sglang-jax PR #259, merged
# 2025-10-23, commit 26309b43) loaded the token embedding and the LM head whole onto every
# tensor-parallel rank: the Qwen3 weight map at 10f32e49 (models/qwen3.py
# _create_qwen3_weight_mappings) gives model.embed_tokens.weight and lm_head.weight
# sharding=(None, None), Embed declares its table with_partitioning(..., (None, None)), and
# LogitsProcessor._get_logits multiplies the hidden states by the whole table on each rank.
# So every decode step each chip reads the full vocab x d_model head (Qwen3-8B: 1.24 GB, not
# a quarter of it at tp 4), and both tables take their full size out of each chip's memory
# before the KV pool. From PR #259 on both are split over "tensor" (sharding=("tensor",
# None)), as chipwise times every other engine's head.
SGLANG_JAX_VOCAB_TP_DATE = "2025-10-23"
# vLLM's default ceiling on the tokens of a step it runs in CUDA graphs (the largest capture
# size): min(max_num_seqs x (1 + speculative tokens) x 2, 512), at most max_num_batched_tokens
# (vllm/config/vllm.py VllmConfig._set_cudagraph_sizes); 512 at the default max_num_seqs of
# 256 and above (engine.MAX_NUM_SEQS_DEFAULT and the >= 70 GiB GPUs' 1024). A step of more
# tokens runs without graphs.
VLLM_CUDA_GRAPH_MAX_TOKENS = 512
# A client that times requests through the engine's OpenAI-compatible HTTP server
# (``vllm bench serve --backend openai-chat``, AIPerf, genai-perf; ``Inference.harness``
# "api") measures TTFT from sending the request to the first streamed token: beside the
# engine's prefill, the HTTP request and its JSON, the chat template and tokenisation, the
# hand-off to the engine's scheduler process (vLLM V1's ZMQ front end, SGLang's
# TokenizerManager -> Scheduler -> DetokenizerManager, trtllm-serve's executor queue),
# detokenising and the server-sent event back. Seconds per request, per engine, read off
# GPUStack's performance-lab pages, whose runs time the engines' servers with the same client
# (``vllm bench serve --backend openai-chat --endpoint /v1/chat/completions``, ShareGPT
# ~230-token prompts), as the median TTFT less chipwise's engine TTFT of the same load:
# SGLang 0.5.3.post3, Qwen3-8B bf16 on one H100 at 4 clients, 27.25 - 25.45 ms (GPS-284; the
# engine TTFT with the overlap loop's step, SCHEDULER_LAUNCHED_AHEAD, and the eager prefill
# forward's host launches, EAGER_LAUNCH_HOST_S: 27.25 - 20.5 = 6.7 ms without those until
# 2026-12-06, 27.3 - 13.1 = 14 ms without either before);
# TensorRT-LLM 1.2.0rc1 trtllm-serve, same model and load, 45.5 - 20.3 ms (GPS-287: the
# engine TTFT with its overlap scheduler's launched-ahead step, from 2026-12-07; 45.5 - 13.1
# = 32 ms without it before); vLLM
# (v0.10.2/v0.11.0), the median over all ten of its 1-8-client TTFT rows on five pages
# (2026-12-05): gpt-oss-120b on H100 at tp 1/2 (GPS-026/036: 2.1, 11.2 ms) and on A100
# (GPS-058/068: -18.4, -6.6 ms), Qwen3-8B on H100 at 1/2/4/8 clients (GPS-302/305/281/308:
# 48.5, 48.2, 43.6, 44.0 ms), GLM-4.6 and DeepSeek-R1 on 8 x H200 (GPS-382/425: 10.8, 28.9 ms)
# -> 20 ms. Two of the ten (GPS-036/068) ran --async-scheduling: less the step its loop has
# launched ahead (SCHEDULER_LAUNCHED_AHEAD, from 2026-12-06; ~5 ms at 4 clients) they read
# ~6 and ~-12 ms, and the median stays 20 ms (10.8 and 28.9 ms either side of it).
# Until 2026-12-05 vLLM's was read off the Qwen3-8B rows alone (50 ms), more than
# gpt-oss-120b's whole measured TTFT on the same H100 page (47.5 and 36.7 ms, GPS-026/036).
# The same pages cross-check it without chipwise's engine model: at 4 clients, the p99
# inter-token latency is the step a prompt joins (each of the 100 prompts stalls the 3 other
# streams once: ~300 of ~22,000 ITLs, 1.4 % > 1 %), and the median TTFT less that step and
# half a decode step (the wait for the step in flight) leaves 16 ms (Qwen3-8B, 60.3 - 41.0 -
# 3.7), 20 ms (gpt-oss-120b on H100, 47.5 - 23.3 - 4.0) and 17 ms (on A100, 61.6 - 38.8 -
# 5.6) for vLLM, 12 ms for SGLang (27.3 - 11.5 - 3.5; 5 ms less the ~7 ms step its overlap
# loop has launched ahead) and 17 ms for TensorRT-LLM (45.5 -
# 24.4 - 3.7): one front end's order, ~15-20 ms. The Qwen3-8B vLLM rows' extra ~25 ms is then
# in the step a prompt joins (41 ms measured against 12 ms modelled), not in the server:
# unexplained (see docs/performance.md, known issues). Independent figures of the
# same order: an 8B model on vLLM with an 8-token prompt on an A5000 answers its first token
# in ~62 ms, of which ~20 ms is the prefill's weight read (vLLM issue #770, 2024-12-03);
# vLLM's V1 front end is a separate process for the same reason, its API server's work having
# measured 33 % of V0's time for Llama-3-8B on an H100 (blog.vllm.ai/2024/09/05/perf-update).
# Prompt tokenisation is out of the constants since 2026-12-07 (TOKENIZE_S_PER_TOKEN below;
# ~0.4 ms at these pages' ~230-token prompts). vLLM's and TensorRT-LLM's were then re-read by
# the same rule over every 1-8-client TTFT row timed through their servers on GPUStack's pages
# and InferenceMAX's B200 gpt-oss-120b runs (``--backend vllm``, the completions endpoint;
# vLLM v0.13 at tp 1-8, 14 rows; TensorRT-LLM at tp 2-8, 11 rows; 2026-12-07, h183): vLLM
# 11.6 ms over 24 rows (the GPUStack ten alone 25.2 ms with the engine model of that day),
# TensorRT-LLM 20.0 ms over 12 (GPS-287 alone 24.7 ms; both with its overlap scheduler's
# launched-ahead step). The same runs' H100 and H200 vLLM rows (21 at 4 clients, not used)
# read 14.6 ms. The InferenceMAX rows bound it without the engine
# model: at 4 clients and ~1k-token prompts on 8 B200s the whole median TTFT is 24.7 ms
# through vLLM and 29.3 ms through TensorRT-LLM (IMX-057, IMX-141), less than the 20 or 25 ms
# used before plus a prefill step and the wait for the step in flight. Left: vLLM's tp 1 rows
# read 16-21 ms at ~1k-token prompts against 9-17 ms at tp 2-8 (IMX-003/009 and IMX-213/216
# against IMX-021..066 and IMX-159..267), unexplained.
# ATOM's has not been measured: its OpenAI server has vLLM V1's shape (a FastAPI/uvicorn
# process that renders and tokenises the request and detokenises each streamed chunk, the
# engine core in a process of its own behind ZMQ queues: ROCm/ATOM atom/entrypoints/
# openai_server.py and atom/model_engine/engine_core.py at 8ccc65c0), so vLLM's 20 ms of
# before 2026-12-07 is kept (the rule above over ATOM's eleven 4-client InferenceMAX TTFT rows
# reads 23 ms; not used).
API_REQUEST_S = {"vllm": 0.0116, "sglang": 0.0018, "trtllm": 0.020, "atom": 0.020}
# Seconds per prompt token of tokenising it in the HTTP front end, in series before the engine
# sees the request: vLLM's API server encodes a completion prompt and hands its ids to the
# engine core (vllm/entrypoints/openai, the renderer's tokenizer call), as trtllm-serve,
# SGLang's TokenizerManager and ATOM's server do. A BPE encode of a long prompt takes ~1.9 us a
# token (ModelTC/LightLLM PR #1258, 2026-04-06: a 22k-token prompt through the Qwen3.5-35B-A3B
# tokenizer in 40.2-41.7 ms); a short one costs more a token (10-21 us at 131 tokens,
# tenstorrent/tt-inference-server issue #2173: the call's fixed part, left in API_REQUEST_S).
# The InferenceMAX gpt-oss-120b rows show it: through vLLM on B200 the median TTFT at 4 clients
# grows by 5.6-6.2 us a prompt token from ~1k- to ~7k-token prompts at tp 2-8 (IMX-021/033,
# IMX-039/051, IMX-057/069), where the modelled prefill grew 3.5-5.0 us (at tp 8, 1.9 us of
# it the all-reduces): a cost that tensor parallelism does not divide.
TOKENIZE_S_PER_TOKEN = 1.9e-6
# Seconds of the HTTP front end's process per streamed chunk (one decoding sequence's token
# of one step): vLLM V1's API server runs the output processing of every engine step
# (``AsyncLLM.output_handler``: the engine core's outputs decoded, each request's incremental
# detokenisation and RequestOutput, vllm/v1/engine/async_llm.py and output_processor.py) and
# each stream's server-sent event (the OpenAI completion chunk built and serialised,
# vllm/entrypoints/openai/serving_completion.py) in the same process and asyncio loop as a
# new request's parsing, tokenisation and hand-off to the engine core; vLLM broke that output
# processing into pieces "to avoid blocking the event loop for too long", which "help[s] in
# particular with TTFT" (vllm-project/vllm PR #12287, 2025-01-21). Per chunk: 30 us, what
# SGLang's OpenAI front end measured for the same per-token conversion (sgl-project/sglang
# issue #10186, 2025-09-09: "30us taken for each token" in its OpenAI output formatting, on a
# Kunpeng CPU). Not fitted. At 64 clients decoding 10 ms steps (6,400 chunks/s) the front end
# is ~20 % busy and a request's ~13 ms there takes ~16 ms; at 4 clients (~1,000 chunks/s)
# ~3 %. ATOM's OpenAI server has the same shape (a FastAPI/uvicorn process that renders and
# tokenises the request and detokenises each streamed chunk, the engine core behind ZMQ:
# ROCm/ATOM atom/entrypoints/openai_server.py at 8ccc65c0), so the same cost applies there
# (from 2026-12-07, lead): its 16 DeepSeek-R1 rows that moved all improved (IMX-D-288 -17 ->
# -11 %, IMX-D-315 -13 -> -9 %), its MI355X gpt-oss rows at 32-128 clients overshoot
# (IMX-282 -1 -> +15 %, IMX-300 -16 -> +22 %; ATOM's 20 ms latency in ``API_REQUEST_S`` is
# itself unmeasured); serving 10.05 -> 10.03 % median, AMD 8.77 / 21.40 -> 8.49 / 21.68 %.
# trtllm-serve's is unmeasured and its TTFT rows are already over; SGLang's 1.8 ms leaves
# nothing to stretch. At the highest chunk rates
# (B200 tp 2-4, 64-128 clients, ~11,000-13,000 chunks/s) the rows show less stretch than
# this (IMX-048 +2 -> +20 %): vLLM merges a stream's outputs that its consumer has not yet
# taken ("RequestOutputs are merged if the producer gets ahead of the consumer",
# RequestOutputCollector in vllm/v1/engine/output_processor.py), so the per-chunk work grows
# slower than the chunks; not modelled.
API_STREAM_S_PER_CHUNK = {"vllm": 30e-6, "atom": 30e-6}
# SGLang's default scheduler loop is its overlap loop (``Scheduler.event_loop_overlap``;
# --disable-overlap-schedule turns it off): each iteration receives new requests, forms and
# launches batch k, and only then waits for batch k-1 to finish and processes its result.
# An iteration therefore starts as batch k-1 ends, with batch k already launched on the
# device: a prompt received there runs as batch k+1, after the in-flight batch k. An
# arriving prompt waits out the rest of the running step (uniform, half a step on average)
# and then one whole step more, which the non-overlapped loop it was modelled as before did
# not have; its first token leaves when the prefill's result is processed, one iteration
# later, right after the prefill ends (the loop blocks on it). Read in sgl-project/sglang
# python/sglang/srt/managers/scheduler.py (event_loop_overlap: recv_requests ->
# get_next_batch_to_run -> run_batch -> process_batch_result of the last batch), and in
# SGLang's own account of the loop ("the scheduler runs one batch ahead",
# lmsys.org/blog/2024-12-04-sglang-v0-4); the same step appears in SGLang's server-side TTFT
# metric (sgl-project/sglang PR #25772, 2026-05-19: "the TTFT reported by the overlap-based
# scheduler incorrectly includes an additional decode latency"). Steps per engine.
# vLLM V1 under async scheduling has the same shape: ``EngineCore.step_with_batch_queue``
# schedules and submits batch k+1 (non-blocking) while batch k runs, and only then blocks on
# batch k's result; requests that arrived meanwhile are added after that, so they join batch
# k+2 (vllm-project/vllm vllm/v1/engine/core.py, batch queue of 2 under
# --async-scheduling, PR #19970). It applies only where the engine overlaps
# (``engine_overlaps_host``); vLLM's API_REQUEST_S was read off v0.10/v0.11 rows that ran
# without async scheduling, so the step is not in it. TensorRT-LLM's PyTorch backend has
# the same loop under its overlap scheduler (on unless ``disable_overlap_scheduler``):
# ``PyExecutor._executor_loop_overlap`` fetches and schedules batch k+1, launches its
# forward, and only then blocks on batch k's sampled tokens (``_update_requests``) and sends
# batch k's responses (``_process_previous_batch``), so a request fetched while batch k runs
# joins batch k+1 only if it came before that fetch, else k+2 (NVIDIA/TensorRT-LLM
# tensorrt_llm/_torch/pyexecutor/py_executor.py @9521caf4, read 2026-12-07). Its
# API_REQUEST_S was re-read with the step (2026-12-07; until then trtllm had none here, its
# server latency having been read with the step inside it). MLPerf Server rows carry no
# server latency, so there the step was missing: a TTFT of 1.5 steps (the rest of the
# running one and the prompt's own) where the loop takes 2.5, and NVIDIA's v6.0 Llama-2
# B300 run measures a p50 TTFT of 2.7 of its p50 decode steps (326 / 119 ms, SVM-091).
SCHEDULER_LAUNCHED_AHEAD = {"sglang": 1.0, "vllm": 1.0, "trtllm": 1.0}
# Engines whose prompt (extend) forward runs eagerly: SGLang captures CUDA graphs for its
# decode batches only (``cuda_graph_runner``, up to --cuda-graph-max-bs); a prefill chunk
# runs the model's PyTorch code op by op unless --enable-piecewise-cuda-graph is passed
# (opt-in: sgl-project/sglang PR #10062, 2025-09-05, "SGLang's current native prefilling
# can incur kernel launch overhead"; DeepSeek-V3's MLA under it PR #12996, 2025-11-10).
# The host then issues every kernel of the forward while the device runs them, so the
# chunk's step costs max(device, host launches): a short prompt on a fast GPU waits for
# the host. Measured: a DeepSeek-V3 SGLang prefill of one new token took 82.6 ms eager
# against 23.1 ms as one CUDA graph (sgl-project/sglang PR #12160, 2025-10-26).
EAGER_PREFILL_ENGINES = frozenset({"sglang"})
# SGLang then made the piecewise graphs its default for the models they support ("Recently
# we enabled PCG by default ... Use --disable-piecewise-cuda-graph to turn it off",
# docs.sglang.io advanced_features/piecewise_cuda_graph; sgl-project/sglang PR #16331
# "Piecewise Cuda Graph set default", opened 2026-01-03; issue #18130 "Piecewise Cuda Graph
# Default Enable", 2026-02-02): a release from that day on is taken to graph its prompts.
SGLANG_PIECEWISE_DEFAULT_DATE = "2026-02-02"
# Host seconds per kernel an eager forward launches (``EngineStepTimer.eager_launches``:
# the layer ops that launch a kernel of their own, each an nn.Module call with its Python
# dispatch, plus a low-precision GEMM's activation-quantisation kernel). Fitted: GPUStack's
# Qwen3-8B H100 pair at 4 clients, whose prefill steps are both host-bound: the FP8
# checkpoint's median TTFT less the bf16 one's, 33.38 - 27.25 ms (GPS-293, GPS-284), over the
# 144 more kernels the FP8 forward launches (in_sample.toml). The InferenceMAX DeepSeek-R1
# rows were not used; SGLang's one-token DeepSeek-V3 forward above (82.6 ms at ~1,500
# kernels, ~55 us each) is of the same order.
EAGER_LAUNCH_HOST_S = 42.6e-6
# Under tensor parallelism an eager forward runs once per rank, each rank's own process
# issuing its copy of the kernels (SGLang's TP workers: one scheduler process per GPU), and
# every all-reduce joins the ranks: a rank's all-reduce kernel waits on the device until
# every peer has launched its own (custom all-reduce's barrier flags, NCCL's ring), so in a
# host-bound forward each segment between two all-reduces takes the slowest rank's host
# time, not the mean one EAGER_LAUNCH_HOST_S was fitted on (one H100, no all-reduce).
# Modelled as ranks whose per-segment host times scatter independently around that mean by
# this fraction of it: the forward's host time grows by the fraction times the expected
# maximum of ``tp`` standard normal draws (0.56 at 2 ranks, 1.03 at 4, 1.42 at 8;
# ``eager_rank_skew``). Fitted on the InferenceMAX DeepSeek-R1 SGLang rows at ~1k-token
# prompts and 4 clients, whose prefill steps are host-bound (15 rows, in_sample.toml): their
# median TTFT reads -32..0 % (mean log error -0.22, mean |log| 0.22) with the ranks in step,
# and mean log -0.01 (mean |log| 0.09, least over 0.05 steps at 0.30-0.35) at 0.30; the
# B200 fp8 pair (IMX-D-078/087, -5 / 0 % before) goes to +18 / +25 %. The shape in tp is
# what the B200 NVFP4 pairs show (tp 4 and tp 8, the same forward, 1620 launches,
# host-bound at both): tp 8 runs ~26 ms longer (182 vs 156 ms, 176 vs 150 ms median TTFT)
# though each rank does less.
# Not traced: which host work scatters (Python dispatch, the allocator, the OS) was not
# measured, and other rank-count costs (an eager all-reduce's host work) would read alike.
EAGER_RANK_SKEW = 0.30
# Tensor-parallel all-reduces in serving run between the GEMMs they join: vLLM's custom
# all-reduce, TensorRT-LLM's fused all-reduce + residual + RMSNorm kernels and SGLang's
# run on the critical path (neither engine overlaps TP communication with GEMMs by
# default, unlike Megatron's userbuffers in training, ``train.TP_OVERLAP``), so prefill
# and decode both pay all of it.
SERVE_TP_OVERLAP = 0.0
# Unless the engine joins a GEMM and its all-reduce in one kernel: TensorRT-LLM's GEMM +
# all-reduce fusion (a persistent CUTLASS GEMM whose all-reduce warps reduce each finished
# output tile over NVLink SHARP multicast memory while the MMA warps compute the next tiles:
# NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/cutlass_kernels/allreduce_gemm/, kernel
# sm100_gemm_allreduce_tma_warpspecialized.hpp; on Blackwell one tile shape, 128 x 256,
# NVLS two-shot, allreduce_gemm_runner.cu; fp16/bf16/fp8/NVFP4 inputs). It replaces the
# all-reduce after each row-parallel GEMM (attention's output projection, a dense MLP's down
# projection; an MoE layer's second all-reduce follows its experts, not one GEMM) and the
# all-reduce + norm fusion (TRTLLM_LLAMA_EAGER_FUSION_DISABLED=1 beside it). NVIDIA's MLPerf
# llama3.1-405b runs turn it on: v5.1's TensorRT engines with the build flag
# ``gemm_allreduce_plugin`` (closed/NVIDIA/configs/{B200-SXM-180GBx8,GB200-NVL72_..._aarch64x72,
# GB300-NVL72_..._aarch64x72_TRT}/{Offline,Server}/llama3_1-405b.py, ykamiset/
# inference_results_v5.1@e9ccad4d), v6.0's PyTorch flow with TRTLLM_GEMM_ALLREDUCE_FUSION_
# ENABLED=1 (every llama3_1-405b config of closed/NVIDIA and its partners on B200, B300,
# GB200 and GB300, gbeezybez/inference_results_v6.0@232fbf90, read 2026-12-06); their
# llama2-70b configs run tp 1. Rows state it as harness "nvidia-mlperf-gemm-ar". A tile's
# reduction overlaps the tiles after it, so the all-reduce costs what the GEMM cannot hide
# (its bytes outlasting the GEMM) and at least its last wave of tiles' share
# (``EngineStepTimer._gemm_hidden_all_reduce_s``).
GEMM_ALL_REDUCE_HARNESSES = frozenset({"nvidia-mlperf-gemm-ar"})
GEMM_ALL_REDUCE_TILE = (128, 256)
GEMM_ALL_REDUCE_OPS = frozenset({"o_proj", "mlp_down"})
# Serving engines run a tensor-parallel all-reduce of fewer than this many bytes with their
# own one-kernel all-reduce over peer memory, not through NCCL/RCCL: vLLM's CustomAllreduce
# (max_size 8 MiB, vllm/distributed/device_communicators/custom_all_reduce.py; strictly
# below it: ``should_custom_ar`` returns ``inp_size < self.max_size``, as SGLang's copy does,
# so a step of exactly 8 MiB - 256 tokens of a 16384-wide model, 512 of an 8192-wide one,
# the engines' default batch caps - goes through NCCL/RCCL; on ROCm in
# AMD's vLLM fork since 2024-05, ROCm/vllm PR #27, upstream since 2025-03, vLLM PR #14125),
# as TensorRT-LLM's and SGLang's custom all-reduce kernels do. Its steps cost the fabric's
# latency (the kind default ``collective_latency_s``), not a collective library's own
# (RCCL's ~45 us floor on MI300X, efficiency.toml [architecture.cdna3]). Larger messages (a
# step of ~1000 sequences of a 70B+ model, prefill chunks) go through NCCL/RCCL.
CUSTOM_ALL_REDUCE_MAX_BYTES = 8 * 1024 * 1024
# XLA runs static shapes, so a TPU serving engine compiles one program per bucket of the
# step's token count and pads each step up to the next bucket: vLLM TPU
# (vllm-project/tpu-inference, tpu_inference/runner/tpu_runner.py TPUModelRunner.__init__:
# num_tokens_paddings = get_token_paddings(min_token_size=16, max_token_size=
# max_num_batched_tokens, padding_gap=VLLM_TPU_BUCKET_PADDING_GAP), whose default gap 0 gives
# 16, 32, 64, ... doubling, runner/utils.py). Every token-proportional op (projections, MLP,
# norms, TP all-reduces) runs on the padded count; the ragged paged-attention kernel reads
# only the real sequences' KV pages, so attention is not padded.
TPU_TOKEN_BUCKET_MIN = 16


# Speculative decoding's drafters (``Inference.spec_method``), each run once per draft token
# per step on the step's decoding sequences (a chain: one candidate per position):
# * "mtp": DeepSeek-V3's multi-token-prediction module (DeepSeek-V3 Technical Report, arXiv
#   2412.19437 Sec. 2.2, Eq. 21-23): a projection M (d x 2d) of the normed hidden state and
#   the next token's embedding, one Transformer block (in the checkpoint a MoE decoder layer
#   like the others, ``num_nextn_predict_layers`` 1 in config.json), and the main model's
#   shared output head. TensorRT-LLM (docs "Speculative Decoding", MTP; NVIDIA blog "DeepSeek
#   R1 MTP Implementation and Optimization", 2025-05) and SGLang (``--speculative-algorithm
#   EAGLE`` with the NextN module, docs "Speculative Decoding") run the one module k times
#   in turn for k > 1, as modelled here.
# * "eagle": an EAGLE-3 head (Li et al., "EAGLE-3", arXiv 2503.01840, 2025-03): a fully
#   connected layer fusing three of the target's hidden states (3d -> d, once per step), one
#   decoder layer of the target's shape (dense MLP; the published heads, e.g.
#   yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json: 1 layer, hidden 4096, MLP 14336, 32/8
#   heads, as Llama-3.1-8B's) and an LM head over a reduced draft vocabulary of
#   ``EAGLE_DRAFT_VOCAB`` tokens (the same config's draft_vocab_size).
EAGLE_DRAFT_VOCAB = 32000
# The drafter's weights are not always the target's precision: NVIDIA's NVFP4 checkpoints of
# DeepSeek-V3/R1 leave the MTP layer out of quantization (ModelOpt hf_quant_config.json
# exclude_modules "model.layers.61*", as SGLang's ModelOptFp4Config tests spell the
# production wildcard; TensorRT-LLM tech blog 1, 2025-05: "3x MTP Layers bf16" beside nvfp4
# MoE layers), and EAGLE-3 heads are published in bf16 (nvidia/Llama-4-Maverick-17B-128E-
# Eagle3 "BF16", TensorRT-LLM tech blog 6; yuhuili/EAGLE3-* bf16). So an fp4 target drafts
# with a bf16 MTP layer, an EAGLE-3 head drafts in bf16 under any narrower target; an fp8
# DeepSeek checkpoint keeps its MTP layer in fp8 like the rest.
DRAFT_PRECISION = {("mtp", "fp4"): "bf16"}
EAGLE_DRAFT_PRECISION = "bf16"


def api_request_s(engine: str, mean_input_len: float) -> float:
    """Seconds an HTTP client's request spends in ``engine``'s server beside the engine: its
    front end's fixed latency and the prompt's tokenisation."""
    return API_REQUEST_S[engine] + TOKENIZE_S_PER_TOKEN * mean_input_len


def draft_precision(method: str, precision: str) -> str:
    """The precision ``method``'s drafter runs at beside a target served at ``precision``."""
    if method == "eagle" and precision not in ("fp32", "fp16"):
        return EAGLE_DRAFT_PRECISION
    return DRAFT_PRECISION.get((method, precision), precision)


# The routed experts' ops beside ``expert_*`` (layers.py ``_mlp_ops``): the dispatch and combine
ROUTED_EXPERT_OPS = frozenset({"moe_permute", "moe_unpermute"})


def _routed_op(op: Op) -> bool:
    """Whether ``op`` is part of the routed experts (dispatch, expert GEMMs and activation,
    combine): what the ranks of an attention-DP MoE layer share."""
    return op.name in ROUTED_EXPERT_OPS or op.name.startswith("expert_")


# Each token crosses the attention-DP all-gather with its routing: k expert ids (int32) and k
# routing weights (fp32) (TensorRT-LLM's allgather of token_selected_slots and
# token_final_scales beside the quantized activations).
ROUTING_BYTES_PER_CHOICE = 4 + 4


@functools.lru_cache(maxsize=64)  # one entry per tensor-parallel degree asked for
def expected_max_standard_normal(n: int) -> float:
    """E[max of ``n`` independent standard normal draws] (0 for one draw), by quadrature
    of n x phi(x) Phi(x)^(n-1)."""
    if n <= 1:
        return 0.0
    unit, step = NormalDist(), 0.005
    xs = (i * step for i in range(-1600, 1601))  # x in [-8, 8]
    return sum(x * n * unit.pdf(x) * unit.cdf(x) ** (n - 1) * step for x in xs)


def eager_rank_skew(tp: int) -> float:
    """Factor on an eager forward's host launches when ``tp`` ranks issue it in step, each
    all-reduce waiting for the slowest (``EAGER_RANK_SKEW``); 1 at tp 1."""
    return 1.0 + EAGER_RANK_SKEW * expected_max_standard_normal(max(1, tp))


def runs_prefill_eagerly(engine: str, engine_date: str = "") -> bool:
    """Whether ``engine`` of ``engine_date`` ("" = newest) runs a prompt's forward op by op
    (``EAGER_PREFILL_ENGINES`` before ``SGLANG_PIECEWISE_DEFAULT_DATE``)."""
    return engine in EAGER_PREFILL_ENGINES and released_before(
        engine_date, SGLANG_PIECEWISE_DEFAULT_DATE
    )


def mixed_step_host_s_per_seq(engine: str, linear_attention: bool, kind: str) -> float:
    """Host seconds per decoding sequence that ``engine``'s steps with prompt tokens beyond
    its CUDA graphs add in series (``VLLM_GDN_MIXED_HOST_S_PER_SEQ``: vLLM on a GPU running
    a Gated DeltaNet hybrid, ``linear_attention``; 0 elsewhere)."""
    if engine == "vllm" and linear_attention and kind == "gpu":
        return VLLM_GDN_MIXED_HOST_S_PER_SEQ
    return 0.0


def replicates_vocab(engine: str, kind: str, engine_date: str = "") -> bool:
    """Whether ``engine`` of ``engine_date`` ("" = newest) on a chip of ``kind`` keeps the
    whole embedding and LM head on every tensor-parallel rank: SGLang-JAX before
    ``SGLANG_JAX_VOCAB_TP_DATE``."""
    return (
        engine == "sglang"
        and kind == "tpu"
        and released_before(engine_date, SGLANG_JAX_VOCAB_TP_DATE)
    )


def step_host_s(engine: str, kind: str = "gpu") -> float:
    """Host seconds of one ``engine`` step on a chip of ``kind`` before its per-request work
    (``step_host_s_per_request``): ``SGLANG_JAX_HOST_STEP_S`` for SGLang on a TPU
    (SGLang-JAX), ``HOST_STEP_S`` elsewhere."""
    if engine == "sglang" and kind == "tpu":
        return SGLANG_JAX_HOST_STEP_S
    return HOST_STEP_S


def step_host_s_per_request(
    engine: str, overlap: bool, linear_attention: bool = False, kind: str = "gpu"
) -> float:
    """Host seconds per scheduled request of one ``engine`` step (``TRTLLM_HOST_S_PER_REQUEST``
    for TensorRT-LLM's PyTorch executor, whose overlap loop is ``overlap``;
    ``SGLANG_JAX_HOST_S_PER_REQUEST`` for SGLang on a chip of ``kind`` tpu (SGLang-JAX);
    ``SGLANG_SERIAL_HOST_S_PER_REQUEST`` for SGLang's normal loop, without ``overlap``,
    serving a hybrid linear-attention model, ``linear_attention``; 0 elsewhere)."""
    if engine == "trtllm" and overlap:
        return TRTLLM_HOST_S_PER_REQUEST
    if engine == "sglang" and kind == "tpu":
        return SGLANG_JAX_HOST_S_PER_REQUEST
    if engine == "sglang" and not overlap and linear_attention:
        return SGLANG_SERIAL_HOST_S_PER_REQUEST
    return 0.0


def engine_overlaps_host(
    engine: str,
    engine_date: str = "",
    async_scheduling: bool | None = None,
    *,
    linear_attention: bool = False,
    speculative: bool = False,
) -> bool:
    """Whether ``engine`` of ``engine_date`` ("" = newest) runs its host work for the next
    step while the device runs this one: as told (``async_scheduling``), else the engine's
    default (``ENGINE_OVERLAPS_HOST``), which vLLM before v0.14.0 did not have
    (``VLLM_ASYNC_SCHEDULING_DEFAULT_DATE``) and SGLang turns off for a hybrid
    linear-attention model (``linear_attention``) served without ``speculative`` decoding
    (``SGLANG_MAMBA_RADIX_DATE``)."""
    if async_scheduling is not None:
        return async_scheduling
    if engine == "vllm" and released_before(engine_date, VLLM_ASYNC_SCHEDULING_DEFAULT_DATE):
        return False
    if (
        engine == "sglang"
        and linear_attention
        and not speculative
        and not released_before(engine_date, SGLANG_MAMBA_RADIX_DATE)
    ):
        return False
    return ENGINE_OVERLAPS_HOST


def runs_vllm_v0_tpu(engine: str, kind: str, engine_date: str = "") -> bool:
    """Whether ``engine`` of ``engine_date`` ("" = newest) on a chip of ``kind`` is vLLM's
    V0 TPU runner (``jetstream.vllm_v0_tpu_step``): vLLM on a TPU before its V1 engine became
    the default (``VLLM_V1_DEFAULT_DATE``, v0.8.0; taken for TPUs too)."""
    return engine == "vllm" and kind == "tpu" and released_before(engine_date, VLLM_V1_DEFAULT_DATE)


def rank_plan(plan: Plan) -> Plan:
    """What one chip of ``plan`` holds and runs, as a plan: ``plan`` itself, or under
    attention data parallelism (``plan.adp``) a tp=1 replica per rank (``dp x tp`` of them)
    whose routed experts are split ``etp x ep`` over the ``tp`` ranks of the group."""
    if not plan.adp:
        return plan
    return Plan(dp=plan.dp * plan.tp, tp=1, pp=plan.pp, ep=plan.ep, etp=plan.expert_tp)


def lockstep_ranks(layout: Plan | PrefillPool, spec: TransformerSpec) -> int:
    """Ranks whose engine steps are joined by collectives: the ``tp`` attention-DP ranks of
    an MoE layout (their MoE layers gather every rank's tokens each step), else 1."""
    return layout.tp if layout.adp and spec.is_moe else 1


def rank_shard(plan: Plan) -> Shard:
    """How one chip of ``plan`` splits a layer's weights (``rank_plan``'s tp, ep and etp)."""
    rank = rank_plan(plan)
    return Shard(tp=rank.tp, ep=rank.ep, etp=rank.expert_tp)


def check_serving_plan(plan: Plan, chip: Chip, spec: TransformerSpec) -> None:
    """Raise ``PlanError`` when ``plan`` cannot serve ``spec`` on ``chip``: a training axis,
    a layout ``check_plan`` refuses, or attention data parallelism whose experts do not
    split exactly over the tp ranks."""
    if plan.fsdp > 1 or plan.cp > 1 or plan.vp > 1:
        raise PlanError("serving plans use tp, pp, dp (replicas), ep and adp only")
    check_plan(plan, plan.chips, chip, spec)
    if plan.adp and plan.expert_tp * plan.ep != plan.tp:
        raise PlanError(
            f"plan {plan}: adp=1 splits the routed experts over the tp={plan.tp} ranks, so "
            f"etp x ep must equal tp (got {plan.expert_tp} x {plan.ep}); use ep={plan.tp}, "
            f"or etp={plan.tp // plan.ep} with ep={plan.ep}"
        )


def kv_dtype_for(precision: str) -> str:
    """KV cache dtype: fp8 with fp8 or fp4 serving, fp32 with fp32, otherwise bf16 (weight-only
    int4/w8a16 keep a bf16 cache unless ``--kv-dtype fp8`` says otherwise)."""
    if precision in ("fp8", "fp4"):
        return "fp8"
    if precision == "fp32":
        return "fp32"
    if precision == "fp16":
        return "fp16"
    return "bf16"


def _kv_sizing(engine: str, memory_fraction: float = 0.0) -> Assumption:
    if memory_fraction:
        return Assumption(
            name="engine_memory_fraction",
            value=memory_fraction,
            source=f"{engine}: as launched (--memory-fraction: "
            + (
                "free_gpu_memory_fraction, a share of HBM free after weights and activations)"
                if engine == "trtllm"
                else "a share of the memory the runtime reports, --gpu-memory-utilization / "
                "--mem-fraction-static)"
            ),
        )
    free_share = KV_FREE_MEMORY_FRACTION.get(engine)
    if free_share is not None:
        return Assumption(
            name="kv_cache_free_memory_fraction",
            value=free_share,
            source=f"{engine}: KV cache = this share of HBM free after weights and activations "
            + (
                "(TRT-LLM KvCacheConfig.free_gpu_memory_fraction default)"
                if engine == "trtllm"
                else "(JetStream allocates its slots' caches from all free HBM at start-up)"
            ),
        )
    return Assumption(
        name="engine_memory_utilization",
        value=ENGINE_MEMORY_UTILIZATION,
        source=f"{engine}: weights + activations + KV cache within this share of the memory "
        "the runtime reports (vLLM --gpu-memory-utilization default; SGLang's "
        "--mem-fraction-static default follows the GPU's memory and TP instead, 0.83 on an "
        "H100 at tp 1: engine.sglang_mem_fraction_static)",
    )


def serve_assumptions(
    *,
    engine: bool = False,
    kv_dtype: str = "",
    engine_name: str = "vllm",
    overlap: bool = True,
    memory_fraction: float = 0.0,
    kind: str = "gpu",
) -> tuple[Assumption, ...]:
    if engine:
        per_request = step_host_s_per_request(engine_name, overlap, kind=kind)
        sglang_jax = engine_name == "sglang" and kind == "tpu"  # SGLang-JAX
        return (
            Assumption(
                name="host_step_s",
                value=step_host_s(engine_name, kind),
                source=(
                    "perf/step/serve.py SGLANG_JAX_HOST_STEP_S: SGLang-JAX's per-step host "
                    "work (sglang-jax PR #1652: 6.6 ms of host against a 6.2 ms forward; "
                    "fitted on SVP-003/033); "
                    if sglang_jax
                    else "perf/step/serve.py (vLLM RFC #6854 ~4 ms V0 bubble; ~1.4 ms V1, "
                    "PR #17866); "
                )
                + (
                    "hidden behind the device step (overlap scheduler: TRT-LLM, SGLang, "
                    "vLLM async scheduling)"
                    if overlap
                    else "added to every step (vLLM before async scheduling was its "
                    "default, v0.14.0)"
                ),
            ),
            Assumption(
                name="serve_tp_overlap",
                value=SERVE_TP_OVERLAP,
                source="TP all-reduces on the critical path (vLLM custom, TRT-LLM fused "
                "all-reduce+norm)",
            ),
            Assumption(
                name="serving_engine",
                value=(
                    "fixed decode slots; each prompt prefilled alone at a power-of-two "
                    "bucket, then inserted; see perf/step/jetstream.py"
                    if engine_name == "jetstream"
                    else "continuous batching with chunked prefill, steady state; M/G/1 "
                    "prefill queue; see perf/step/engine.py"
                ),
                source="google/JetStream orchestrator.py (interleaved mode)"
                if engine_name == "jetstream"
                else "perf/step/engine.py",
            ),
            _kv_sizing(engine_name, memory_fraction),
            Assumption(name="kv_cache_dtype", value=kv_dtype, source="--kv-dtype or precision"),
        ) + (
            (
                Assumption(
                    name="host_s_per_request",
                    value=per_request,
                    source="perf/step/serve.py SGLANG_JAX_HOST_S_PER_REQUEST: SGLang-JAX's "
                    "per-request numpy input building and result processing a step "
                    "(fitted on SVP-003/033)"
                    if sglang_jax
                    else "perf/step/serve.py TRTLLM_HOST_S_PER_REQUEST: TensorRT-LLM "
                    "PyExecutor's per-request Python work a step, on every rank over all "
                    "requests under plain tp, a rank's own under attention DP "
                    "(NVIDIA/TensorRT-LLM PR #10273: 45.11 ms at 1536 requests a rank)",
                ),
            )
            if per_request
            else ()
        )
    return (
        Assumption(
            name="decode_step_overhead_s",
            value=DECODE_STEP_OVERHEAD_S,
            source="perf/step/serve.py (host cost per step of a static batch, in series: "
            "vLLM RFC #6854 ~4 ms V0 bubble; ~1.4 ms V1, PR #17866)",
        ),
        Assumption(
            name="serving_steady_state",
            value="continuous batching, prefill of the batch then output_len decode steps",
            source="perf/step/serve.py",
        ),
    )


class ServeModel(StepTimer):
    """Times serving of one model on one chip type, caching op times.

    The sustained tensor rate (``sustained_tensor_fraction``, fitted to whole training steps:
    among other things clocks under a full load's power cap) limits every serving op whose
    compute at that rate outlasts its memory stream, prefill or decode alike: a decode step
    of hundreds of sequences runs its GEMMs at the same throttled rate as a prefill. A
    memory-bound op (a skinny decode GEMM streaming its weights, a KV-cache read) is limited
    by HBM, not by the tensor rate, and is left as the per-op model times it."""

    def __init__(
        self,
        spec: TransformerSpec,
        chip: Chip,
        precision: str,
        model: PerfModel,
        network: Network,
        *,
        engine: str = "vllm",
    ) -> None:
        super().__init__(spec, chip, precision, model, network)
        self.engine = engine  # whose kernels run the step (its measured all-reduce)

    def time_ops(
        self, ops: tuple[Op, ...], *, sustained: bool = True, model: PerfModel | None = None
    ) -> list[OpTime]:
        return time_ops(ops, model or self.model, sustained=sustained, compute_bound_only=True)

    def fuses_shared(self, shard: Shard) -> bool:
        """Whether the engine runs the shared expert as one more expert of the fused MoE
        at ``shard``'s expert parallelism (``engine_fuses_shared_experts``)."""
        return engine_fuses_shared_experts(
            self.spec, engine=self.engine, architecture=self.chip.architecture,
            precision=self.precision, ep=shard.ep,
        )  # fmt: skip

    def _time(self, ops: tuple[Op, ...], *, sustained: bool = True) -> Cost:
        return self.cost(ops, sustained=sustained)

    def _layers(self, ops_for: dict[tuple[bool, bool], tuple[Op, ...]], *, sustained: bool) -> Cost:
        """All decoder layers (a token passes every stage in turn), by (moe, sliding) kind."""
        total = Cost()
        for moe, sliding, count in stage_layer_kinds(self.spec, self.spec.n_layers, 1):
            total = total + self._time(ops_for[moe, sliding], sustained=sustained).scaled(count)
        return total

    def serve(self, plan: Plan, *, batch: int, input_len: int, output_len: int) -> InferPrediction:
        spec, chip = self.spec, self.chip
        check_serving_plan(plan, chip, spec)
        g = groups(plan, chip)
        rank = rank_plan(plan)
        b = -(-batch // rank.dp)  # requests per replica (per rank under adp)
        shard = rank_shard(plan)
        act = activation_bytes(self.precision)
        kv_dtype = kv_dtype_for(self.precision)
        kw = {"b": b, "seq_len": input_len, "shard": shard, "precision": self.precision}

        # prefill: one forward over b x input_len tokens
        kinds = [(moe, sliding) for moe, sliding, _ in stage_layer_kinds(spec, spec.n_layers, 1)]
        fused = self.fuses_shared(shard)
        pre_ops = {
            (moe, sliding): layer_ops(spec, moe=moe, sliding=sliding, serving=True,
                                      fused_shared=fused, **kw)  # type: ignore[arg-type]
            for moe, sliding in kinds
        }  # fmt: skip
        pre = self._layers(pre_ops, sustained=True)
        head = head_ops(spec, loss=False, quantised_checkpoint=True, **kw)  # type: ignore[arg-type]
        ends = embedding_ops(spec, **kw) + head  # type: ignore[arg-type]
        pre = pre + self._time(ends)
        tokens = b * input_len
        comm_pre = self._comm(plan, g, tokens * spec.d_model * act) * (1 - SERVE_TP_OVERLAP)
        ttft = pre.total_s + comm_pre + PREFILL_STEP_OVERHEAD_S

        # decode: one token for each of b requests at the mean context
        context = input_len + max(1, output_len) // 2
        dec_ops = {
            (moe, sliding): decode_layer_ops(spec, batch=b, context=context, shard=shard,
                                             precision=self.precision, kv_dtype=kv_dtype,
                                             moe=moe, sliding=sliding,
                                             fused_shared=fused)
            for moe, sliding in kinds
        }  # fmt: skip
        dec = self._layers(dec_ops, sustained=True)
        kw1 = {"b": b, "seq_len": 1, "shard": shard, "precision": self.precision}
        head1 = head_ops(spec, loss=False, quantised_checkpoint=True, **kw1)  # type: ignore[arg-type]
        dec = dec + self._time(embedding_ops(spec, **kw1) + head1, sustained=True)  # type: ignore[arg-type]
        comm_dec = self._comm(plan, g, b * spec.d_model * act, graphed=True)
        tpot = dec.total_s + comm_dec + DECODE_STEP_OVERHEAD_S

        memory = serve_memory(
            spec,
            rank,
            batch=b,
            context=input_len + output_len,
            precision=self.precision,
            kv_dtype=kv_dtype,
            prefill_tokens=tokens,
            chip=chip,
        )
        return InferPrediction(
            workload=spec.name,
            chip_id=chip.id,
            chips=plan.chips,
            precision=self.precision,
            plan=plan,
            batch=batch,
            input_len=input_len,
            output_len=output_len,
            ttft_s=ttft,
            tpot_s=tpot,
            memory=memory,
            capacity_bytes=chip.hbm_capacity_bytes,
            prefill=Breakdown(
                compute_s=pre.compute_s,
                memory_s=pre.memory_s,
                communication_s=comm_pre,
                overhead_s=pre.overhead_s + PREFILL_STEP_OVERHEAD_S,
            ),
            decode=Breakdown(
                compute_s=dec.compute_s,
                memory_s=dec.memory_s,
                communication_s=comm_dec,
                overhead_s=dec.overhead_s + DECODE_STEP_OVERHEAD_S,
            ),
            assumptions=serve_assumptions() + self.model_assumptions,
        )

    def layer_op_times(
        self, plan: Plan, *, batch: int, input_len: int, output_len: int
    ) -> tuple[tuple[OpTime, ...], tuple[OpTime, ...]]:
        """Per-op times of one typical prefill layer and one decode layer under ``plan``
        (an MoE model's typical layer is an MoE layer), for a roofline chart."""
        spec = self.spec
        shard = rank_shard(plan)
        b = -(-batch // rank_plan(plan).dp)  # requests per replica, as ``serve`` counts them
        moe = spec.is_moe
        fused = self.fuses_shared(shard)
        prefill = layer_ops(
            spec,
            b=b,
            seq_len=input_len,
            shard=shard,
            precision=self.precision,
            moe=moe,
            serving=True,
            fused_shared=fused,
        )
        decode = decode_layer_ops(
            spec,
            batch=b,
            context=input_len + max(1, output_len) // 2,
            shard=shard,
            precision=self.precision,
            kv_dtype=kv_dtype_for(self.precision),
            moe=moe,
            fused_shared=fused,
        )
        return tuple(self.time_ops(prefill)), tuple(self.time_ops(decode))

    def kv_capacity_tokens(
        self,
        plan: Plan,
        kv_dtype: str,
        timer: EngineStepTimer,
        engine: str = "vllm",
        context: float = 0.0,
        date: str = "",
        memory_fraction: float = 0.0,
    ) -> float:
        """Tokens of context one replica's KV cache (one rank's under ``adp``) holds: what
        ``engine``'s sizing rule leaves after the weights, one chunk's activations and the
        runtime's fixed reserve (``engine.kv_pool_bytes``), over the bytes a token of a
        sequence of mean ``context`` takes (sliding layers keep their window where
        ``context`` is given: the caller has checked ``engine.windows_kv``), for the engine
        release of ``date`` ("" = newest) launched with ``memory_fraction`` (0 = its
        default)."""
        pool = self._cache_pool_bytes(plan, kv_dtype, engine, date, memory_fraction)
        if engine == "sglang" and self.spec.uses_linear_attention:
            # a hybrid model's states take their own pool out of it (sglang_state_split)
            kv, _ = sglang_state_split(pool)
            return kv / timer.kv_bytes_per_token(context, with_state=False)
        return pool / timer.kv_bytes_per_token(context)

    def _cache_pool_bytes(
        self, plan: Plan, kv_dtype: str, engine: str, date: str, memory_fraction: float
    ) -> float:
        """Bytes one chip's caches get under ``engine``'s sizing rule (``kv_capacity_tokens``)."""
        chip = self.chip
        base = serve_memory(
            self.spec, rank_plan(plan), batch=1, context=0, precision=self.precision,
            kv_dtype=kv_dtype, prefill_tokens=MAX_NUM_TOKENS_DEFAULT, chip=chip,
        )  # fmt: skip
        fixed = RESERVE_FIXED_BYTES.get(chip.kind, RESERVE_FIXED_BYTES["gpu"])
        weights = base.weights_bytes + self._layout_padding_bytes(plan, engine)
        if replicates_vocab(engine, chip.kind, date) and not plan.adp:
            # the embedding and LM head whole on every rank (bf16), not their tp share
            emb, head = embedding_params(self.spec)
            weights += (emb + head) * (1.0 - 1.0 / plan.tp) * dtype_bytes("bf16")
        if engine == "sglang":
            # the static fraction already leaves the activations and CUDA graphs outside;
            # the pool is the fraction of what was free at start-up, less the weights
            frac = memory_fraction or sglang_mem_fraction_static(
                chip.usable_hbm_bytes, plan.tp, plan.pp, date
            )
            return kv_pool_bytes(engine, chip.usable_hbm_bytes - fixed, weights, frac)
        non_kv = fixed + weights + base.activations_bytes
        return kv_pool_bytes(engine, chip.usable_hbm_bytes, non_kv, memory_fraction)

    def sglang_state_slot_limit(
        self, plan: Plan, timer: EngineStepTimer, date: str = "", memory_fraction: float = 0.0
    ) -> int | None:
        """The running requests SGLang admits on one replica of a hybrid linear-attention
        model: its state pool's slots (``sglang_state_split``) over
        ``SGLANG_STATE_SLOTS_PER_REQUEST``; None for other models."""
        if not self.spec.uses_linear_attention:
            return None
        pool = self._cache_pool_bytes(plan, timer.kv_dtype, "sglang", date, memory_fraction)
        _, states = sglang_state_split(pool)
        per_request = timer.state_bytes_per_sequence()
        slots = int(states // per_request) if per_request > 0 else 0
        return max(1, slots // SGLANG_STATE_SLOTS_PER_REQUEST)

    def _layout_padding_bytes(self, plan: Plan, engine: str) -> float:
        """Bytes ``engine`` adds to one chip's weights by padding them to its kernels'
        tiles: vLLM's Marlin layout of MXFP4 experts served weight-only on NVIDIA GPUs
        without fp4 (``memory.marlin_expert_padding``); 0 elsewhere."""
        if engine != "vllm" or self.chip.vendor != "nvidia" or self.precision != "int4":
            return 0.0
        rank = rank_plan(plan)
        pad = marlin_expert_padding(self.spec, rank) - 1.0
        return pad * expert_weight_bytes(self.spec, rank, self.precision) if pad else 0.0

    def _prefill_pool_step(
        self, pool: PrefillPool, kv_dtype: str, phase: Inference
    ) -> tuple[StepFn, float]:
        """A prefill pool's step time (one rank of its own layout) and token budget. Its
        engines run without the overlap scheduler: TensorRT-LLM's context-only workers
        require ``disable_overlap_scheduler`` (NVIDIA MLPerf v6.0 DeepSeek-R1 Interactive,
        configs/GB200-NVL72_GB200-186GB_aarch64x4/Interactive/deepseek-r1.py:
        "Required for context-only in PyTorch backend", gbeezybez/inference_results_v6.0
        @232fbf90, read 2026-12-04). A dense model's pool has no experts to split: its
        ``ep`` (``tp`` unless stated) lays none out (NVIDIA MLPerf v6.0 llama3.1-405b's
        context servers: tensor_parallel_size 4, moe_expert_parallel_size 1)."""
        layout = Plan(tp=pool.tp, ep=pool.ep if self.spec.is_moe else 1, adp=pool.adp)
        check_serving_plan(layout, self.chip, self.spec)
        timer = self.engine_timer(
            layout, kv_dtype, phase.spec_tokens, phase.spec_method,
            gemm_all_reduce=phase.harness in GEMM_ALL_REDUCE_HARNESSES,
        )  # fmt: skip
        budget = pool.max_num_tokens or self.batch_defaults(phase).max_num_tokens
        return functools.partial(timer.step_s, overlap=False), float(budget)

    def _kv_transfer_s_per_token(self, timer: EngineStepTimer) -> float:
        """Seconds to move one token's KV cache from a prefill to a decode replica: each
        chip sends its shard over the scale-out network (NIXL/UCX RDMA in Dynamo), or over
        the scale-up link when the chip has no scale-out tier."""
        tier = self.chip.scale_out or self.chip.scale_up
        return timer.kv_bytes_per_token() / tier.bytes_per_s_per_chip

    def engine_timer(
        self,
        plan: Plan,
        kv_dtype: str,
        spec_tokens: int = 0,
        spec_method: str = "mtp",
        *,
        gemm_all_reduce: bool = False,
        replicated_vocab: bool = False,
    ) -> EngineStepTimer:
        """The step timer of ``plan`` (cached: an SLO search solves many loads per plan),
        verifying ``spec_tokens`` draft tokens of ``spec_method``'s drafter per sequence;
        ``gemm_all_reduce``: the engine joins row-parallel GEMMs and their all-reduces
        (``GEMM_ALL_REDUCE_HARNESSES``); ``replicated_vocab``: every rank runs the whole LM
        head (``replicates_vocab``)."""
        timers: dict[tuple[Plan, str, int, str, bool, bool], EngineStepTimer] = (
            self.__dict__.setdefault("_engine_timers", {})
        )
        key = (
            plan, kv_dtype, spec_tokens, spec_method if spec_tokens else "", gemm_all_reduce,
            replicated_vocab,
        )  # fmt: skip
        timer = timers.get(key)
        if timer is None:
            timer = timers[key] = EngineStepTimer(
                self, plan, kv_dtype, spec_tokens=spec_tokens, spec_method=spec_method,
                gemm_all_reduce=gemm_all_reduce, replicated_vocab=replicated_vocab,
            )  # fmt: skip
            # One replica's step is the same however many replicas there are, unless their
            # number moves its tp / pp / ep groups across scale-up domains (a group of one
            # rank communicates nothing): such timers share their timings (an SLO search
            # times one replica, then the deployment)
            replica: dict[tuple[object, ...], EngineStepTimer] = self.__dict__.setdefault(
                "_replica_timers", {}
            )
            axes = (timer.groups[a] for a in ("tp", "pp", "ep"))
            same = (replace(plan, dp=1), *key[1:], *(g if g.size > 1 else None for g in axes))
            timer.share_timings(replica.setdefault(same, timer))
        return timer

    def batch_defaults(self, phase: Inference, load: str = "") -> BatchDefaults:
        """The batch and token limits ``phase``'s engine applies on this chip unless told,
        under ``load`` ("" = the phase's) (``engine.engine_batch_defaults``: by engine,
        release date, load and GPU memory)."""
        chip = self.chip
        return engine_batch_defaults(
            phase.engine, load=load or phase.load, hbm_bytes=chip.usable_hbm_bytes,
            chip_id=chip.id, kind=chip.kind, date=phase.engine_date,
        )  # fmt: skip

    def serve_engine(
        self,
        plan: Plan,
        phase: Inference,
        *,
        slot_queue: bool = False,
        least_loaded: bool = False,
    ) -> InferPrediction:
        """Continuous batching at ``phase``'s load over ``plan.dp`` replicas (``engine.py``);
        ``slot_queue``: an rps load also waits for a free sequence slot (``Engine._slot_wait``);
        ``least_loaded``: one dispatcher sends each arrival to the replica with the fewest
        requests in flight (``Engine.least_loaded``), else each replica gets its own share."""
        spec, chip = self.spec, self.chip
        kv_dtype = phase.kv_dtype or kv_dtype_for(self.precision)
        timer = self.engine_timer(
            plan, kv_dtype, phase.spec_tokens, phase.spec_method,
            gemm_all_reduce=phase.harness in GEMM_ALL_REDUCE_HARNESSES,
            replicated_vocab=replicates_vocab(phase.engine, chip.kind, phase.engine_date),
        )  # fmt: skip
        # tokens each decoding sequence emits per step (speculative decoding's acceptance)
        accept = phase.spec_accept if phase.spec_tokens else 1.0
        overlap = engine_overlaps_host(
            phase.engine, phase.engine_date, phase.async_scheduling,
            linear_attention=spec.uses_linear_attention, speculative=phase.spec_tokens > 0,
        )  # fmt: skip
        lengths = lengths_of(phase)
        defaults = self.batch_defaults(phase)
        default_seqs, default_tokens = defaults.max_num_seqs, defaults.max_num_tokens
        if phase.harness in TRTLLM_BENCH_HARNESSES and phase.load == "max_throughput":
            # a trtllm-bench run sizes its limits from memory and lengths (trtllm_bench.py)
            default_seqs, default_tokens = trtllm_bench_limits(
                spec, precision=self.precision, kv_dtype=kv_dtype,
                hbm_bytes=chip.usable_hbm_bytes, tp=plan.tp, pp=plan.pp,
                mean_in=lengths.mean_in, mean_out=lengths.mean_out,
                max_in=float(lengths.inputs.max()),
                kv_free_fraction=KV_FREE_MEMORY_FRACTION["trtllm"],
            )  # fmt: skip
        # the context a token's KV bytes average over: sliding layers keep their window
        # where the engine holds windows only (0 = every layer keeps every token)
        kv_context = lengths.mean_context if windows_kv(phase.engine, phase.engine_date) else 0.0
        capacity = self.kv_capacity_tokens(
            plan, kv_dtype, timer, phase.engine, kv_context, phase.engine_date,
            phase.memory_fraction,
        )  # fmt: skip
        if phase.load not in ("concurrency", "rps", "max_throughput"):
            raise PlanError(
                f"the engine solves concurrency, rps and max_throughput loads, not "
                f"{phase.load!r} (a server load goes through the planner)"
            )
        pool = phase.prefill_pool
        if phase.disaggregated and pool is None and plan.dp < 2:
            raise PlanError(
                "disaggregated serving needs at least 2 replicas (dp >= 2): one prefill pool "
                "and one decode pool; use more chips or a smaller tp"
            )
        # Under attention DP every rank of an instance is an engine replica with its own
        # requests (``rank_plan``); the prefill pool's instances likewise. Splits are in
        # instances: (prefill instances, decode instances).
        ranks = rank_plan(plan).dp // plan.dp
        prefill = self._prefill_pool_step(pool, kv_dtype, phase) if pool is not None else None
        pre_ranks = (pool.tp if pool.adp else 1) if pool is not None else ranks
        if pool is not None:
            splits = [(pool.instances, plan.dp)]
        elif phase.disaggregated:
            splits = [(p, plan.dp - p) for p in range(1, plan.dp)]
        else:
            splits = [(0, plan.dp)]
        max_seqs = phase.max_num_seqs or default_seqs
        seq_limit = "max_num_seqs"
        if phase.engine == "sglang":
            # a hybrid model's running requests are capped by its state pool's slots
            slots = self.sglang_state_slot_limit(
                plan, timer, phase.engine_date, phase.memory_fraction
            )
            if slots is not None and slots < max_seqs:
                max_seqs, seq_limit = slots, "state_slots"
        max_tokens = phase.max_num_tokens or default_tokens
        eager_prefill = runs_prefill_eagerly(phase.engine, phase.engine_date)
        graph_seqs = math.inf
        if phase.engine == "sglang" and chip.kind == "gpu":
            graph_seqs = sglang_cuda_graph_max_bs(chip.usable_hbm_bytes, plan.tp, phase.engine_date)
        eager = timer.eager_host_s() if eager_prefill or graph_seqs < max_seqs else 0.0
        mixed = mixed_step_host_s_per_seq(phase.engine, spec.uses_linear_attention, chip.kind)
        step: EngineStep = BatchingStep(
            timer=timer, overlap=overlap, eager_host_s=eager, eager_prefill=eager_prefill,
            graph_max_seqs=graph_seqs, mixed_host_s_per_seq=mixed,
            host_s_per_request=step_host_s_per_request(
                phase.engine, overlap, spec.uses_linear_attention, chip.kind
            ),
            host_step_s=step_host_s(phase.engine, chip.kind),
        )  # fmt: skip
        shards = 1  # replicas one engine's decode batch spans (JetStream below)
        if phase.engine == "jetstream":
            js = self._jetstream(timer, phase, overlap, max_seqs=max_seqs, capacity=capacity)
            step, shards = js.step, js.step.shards
            max_seqs, max_tokens, capacity = js.max_seqs, js.max_tokens, js.capacity
            splits = [(0, 1)]  # one server drives every chip
        elif runs_vllm_v0_tpu(phase.engine, chip.kind, phase.engine_date):
            # prompts one at a time, padded; decodes in their own padded forward
            step = vllm_v0_tpu_step(
                timer, inputs=lengths.inputs, weights=lengths.weights,
                host_step_s=HOST_STEP_S, overlap=overlap,
            )  # fmt: skip
        best = None
        for n_prefill, instances in splits:
            replicas = instances * ranks
            engine = Engine(
                step,
                lengths,
                prefill_tokens_fraction=1.0 - phase.prefix_hit_rate,
                max_num_seqs=max_seqs,
                max_num_tokens=max_tokens,
                kv_capacity_tokens=capacity,
                seq_limit=seq_limit,
                disaggregated=phase.disaggregated,
                prefill_replicas_per_decode=n_prefill * pre_ranks / replicas,
                decode_replicas=replicas,
                prefill_step=prefill[0] if prefill is not None else None,
                prefill_budget=prefill[1] if prefill is not None else 0.0,
                kv_transfer_s_per_token=self._kv_transfer_s_per_token(timer),
                prefill_lockstep=lockstep_ranks(pool, spec) if pool is not None else 1,
                run_requests=phase.num_requests / replicas,
                lockstep_replicas=lockstep_ranks(plan, spec),
                arrival_window=HARNESS_ARRIVAL_WINDOWS.get(phase.harness),
                window_replicas=replicas,
                scheduler=phase.engine,
                client_s=api_request_s(phase.engine, lengths.mean_in)
                if api_harness(phase.harness)
                else 0.0,
                client_chunk_s=API_STREAM_S_PER_CHUNK.get(phase.engine, 0.0),
                admission_gate=HARNESS_ADMISSION_GATES.get(phase.harness),
                launched_ahead=SCHEDULER_LAUNCHED_AHEAD.get(phase.engine, 0.0) if overlap else 0.0,
                tokens_per_step=accept,
                verify_tokens=1.0 + phase.spec_tokens,
                # trtllm-bench runs the LLM API's default capacity policy,
                # GUARANTEED_NO_EVICT (its SchedulerConfig in bench/benchmark/utils/
                # general.py, llmapi/llm_args.py SchedulerConfig's default); NVIDIA's
                # MLPerf harness sets MAX_UTILIZATION (see ``engine.WINDOWED_KV_DATES``)
                reserves_output=phase.harness in TRTLLM_BENCH_HARNESSES,
                lockstep_step=step.lockstep if isinstance(step, BatchingStep) else None,
                slot_queue=slot_queue,
                least_loaded=least_loaded,
            )
            value = {
                "concurrency": phase.concurrency / replicas,
                "rps": phase.rps / replicas,
                "max_throughput": phase.num_requests / replicas,
            }[phase.load]
            cand = engine.solve(phase.load, value)
            # rps: the split that keeps up with the lowest p99 TTFT; else the most requests/s
            key = (
                (float(cand.saturated), cand.ttft_p99_s + lengths.mean_out * cand.tpot_p99_s)
                if phase.load == "rps"
                else (0.0, -cand.requests_per_s * replicas)
            )
            if best is None or key < best[0]:
                best = (key, cand, n_prefill, replicas)
        assert best is not None
        _, st, n_prefill, replicas = best
        # the prefill pool's chips: its own layout's, or the split-off replicas of the plan
        prefill_chips = pool.chips if pool is not None else n_prefill * plan.tp * plan.pp
        rate = st.rate
        # a JetStream server's batch spans its shards; each replica's chips hold their share
        kv_used = rate.b / shards * lengths.mean_context * timer.kv_bytes_per_token(kv_context)
        base = serve_memory(
            spec, rank_plan(plan), batch=max(1, round(rate.b / shards)), context=0,
            precision=self.precision, kv_dtype=kv_dtype, prefill_tokens=MAX_NUM_TOKENS_DEFAULT,
            chip=chip,
        )  # fmt: skip
        # The engine pre-allocates its KV pool by its own rule (kv_pool_bytes), whose
        # headroom (10 % of total for vLLM/SGLang, of free for TRT-LLM) is where allocator
        # slack goes: only the fixed runtime reserve is counted beside it, as in the sizing.
        # (Adding the caching allocator's 5 % of capacity on top said published TRT-LLM runs
        # at the default free_gpu_memory_fraction did not fit.)
        memory = MemoryUse(
            weights_bytes=base.weights_bytes + self._layout_padding_bytes(plan, phase.engine),
            kv_cache_bytes=kv_used,
            activations_bytes=base.activations_bytes,
            other_bytes=RESERVE_FIXED_BYTES.get(chip.kind, RESERVE_FIXED_BYTES["gpu"]),
        )
        in_system = st.in_system if st.in_system != float("inf") else rate.b
        result = ServingLoadResult(
            load=phase.load,
            requests_per_s=st.requests_per_s * replicas,
            output_tokens_per_s=st.requests_per_s * replicas * lengths.mean_out,
            tokens_per_s=st.requests_per_s * replicas * (lengths.mean_in + lengths.mean_out),
            decode_batch_per_replica=rate.b,
            in_system_per_replica=in_system,
            max_seqs_per_replica=st.max_seqs,
            kv_capacity_tokens_per_replica=st.kv_capacity_tokens,
            ttft_p50_s=st.ttft_p50_s,
            ttft_p99_s=st.ttft_p99_s,
            tpot_p50_s=st.tpot_p50_s,
            tpot_p99_s=st.tpot_p99_s,
            saturated=st.saturated,
            limit=st.limit,
            prefill_chips=prefill_chips,
        )
        # batch = requests in the system by Little's law (X x (TTFT + L_out TPOT))
        ttft_mean = st.ttft_mean_s if not st.saturated else st.prefill_s
        out_len = max(1.0, lengths.mean_out)
        tpot = rate.step_s / accept
        batch = st.requests_per_s * (ttft_mean + out_len * tpot) * replicas
        t0 = rate.t0_s
        # host time the device waits for (none when the engine overlaps it and the step is
        # longer than the host's work)
        host = t0 - step.device_s(rate.b, lengths.mean_context)
        return InferPrediction(
            workload=spec.name,
            chip_id=chip.id,
            chips=plan.chips + (pool.chips if pool is not None else 0),
            precision=self.precision,
            plan=plan,
            batch=max(1, round(batch)),
            input_len=round(lengths.mean_in),
            output_len=round(out_len),
            ttft_s=ttft_mean,
            # the mean of the requests' TPOTs (a finite run's stalls and preemptions
            # included); ``batch`` above counts by the mean step instead (Little's law)
            tpot_s=st.tpot_mean_s,
            memory=memory,
            capacity_bytes=chip.usable_hbm_bytes,  # what the engine sized its pool from
            prefill=Breakdown(compute_s=st.prefill_s),
            decode=Breakdown(  # per output token: a step emits ``accept`` of them
                memory_s=(t0 - host) / accept,
                compute_s=(rate.step_s - t0) / accept,
                overhead_s=host / accept,
            ),
            assumptions=serve_assumptions(
                engine=True,
                kv_dtype=kv_dtype,
                engine_name=phase.engine,
                overlap=overlap,
                memory_fraction=phase.memory_fraction,
                kind=chip.kind,
            )
            + self.model_assumptions,
            engine=result,
        )

    def _jetstream(
        self,
        timer: EngineStepTimer,
        phase: Inference,
        overlap: bool,
        *,
        max_seqs: int,
        capacity: float,
    ) -> _JetStreamServer:
        """A JetStream server over the plan's chips: a generate step over every slot plus one
        padded batch-1 prefill per admitted prompt (perf/step/jetstream.py); no token
        budget, free slots bound admission."""
        if self.chip.kind != "tpu":
            raise PlanError(
                f"the jetstream engine serves on TPUs (XLA), not {self.chip.id!r}: use "
                "--engine vllm, sglang or trtllm"
            )
        if phase.slot_cache_len:
            # the slots are allocated whole at start-up: as many as their caches fit
            max_seqs = max(1, min(max_seqs, int(capacity // phase.slot_cache_len)))
            capacity = float(max_seqs * phase.slot_cache_len)
        # one server drives every chip: the plan's dp replicas are shards of one decode
        # state (--shard_on_batch), their prefills replicated (jetstream.py)
        shards = timer.plan.dp
        lengths = lengths_of(phase)
        step = jetstream_step(
            timer, slots=max_seqs * shards, inputs=lengths.inputs, weights=lengths.weights,
            host_step_s=HOST_STEP_S, overlap=overlap, cache_len=phase.slot_cache_len,
            shards=shards,
        )  # fmt: skip
        return _JetStreamServer(
            step=step,
            max_seqs=step.slots,
            max_tokens=step.slots * (1 + prefill_bucket(float(lengths.inputs.max()))),
            capacity=capacity * shards,
        )

    def _tp_all_reduce_s(self, n_bytes: float, group: Group) -> float:
        """One tensor-parallel all-reduce of ``n_bytes``: the engine's custom all-reduce
        within a scale-up domain below ``CUSTOM_ALL_REDUCE_MAX_BYTES``, else the library's."""
        # vLLM's and SGLang's kernels take strictly smaller messages (ATOM's, AITER's port of
        # vLLM's custom all-reduce, the same); TensorRT-LLM picks its own strategy by size
        # (no source for its bound here: the same size, inclusive)
        limit = CUSTOM_ALL_REDUCE_MAX_BYTES
        strict = self.engine in ("vllm", "sglang", "atom")
        beyond = n_bytes >= limit if strict else n_bytes > limit
        if beyond or group.crosses_domains or self.chip.kind == "tpu":
            return self._collective_s("all_reduce", n_bytes, group)
        # the engine's own kernel, timed on this chip (bf16 activations; kernels.py)
        measured = measured_all_reduce_s(self.chip.id, self.engine, group.size, n_bytes / 2)
        if measured is not None:
            return measured
        net: Network | None = self.__dict__.get("_custom_all_reduce")
        if net is None:
            eff = self.network.efficiency or efficiency_for(self.chip)
            fabric = fabric_collective_latency_s(self.chip)
            if fabric != eff.collective_latency_s:
                eff = eff.with_values(
                    source="the fabric's per-step latency (kind default): serving engines' "
                    "custom all-reduce bypasses the collective library (perf/step/serve.py)",
                    collective_latency_s=fabric,
                )
            net = self.__dict__["_custom_all_reduce"] = Network(self.chip, eff)
        return net.time_s("all_reduce", n_bytes, group)

    # The NCCL table (kernels.py, nccl.csv) is nccl-tests run without CUDA graphs
    # (AIConfigurator's collector/collect_nccl.py calls all_gather_perf etc. with -t N, one
    # process driving N GPUs, and no -G), so its small-message floor (B200 all-gather: 8.8 us
    # over 2 GPUs, 11.2 over 4, 16.1 over 8) is mostly the host's launch and NCCL's per-call
    # bookkeeping: with CUDA graphs the same small all-reduce takes ~3 us on 8 B200s
    # (NVIDIA/nccl#1940, 2025-12) against 9-22 us launched from the host
    # (NVIDIA/nccl-tests#333, 2025-07: "Using CUDA Graphs is needed" for those latencies).
    # The engines replay their decode-only steps as CUDA graphs (TensorRT-LLM
    # cuda_graph_config, vLLM's and SGLang's decode graphs), collectives included: there a
    # collective pays the table's time less its launch, the intercept at zero ring steps of
    # the floors over group sizes (``measured_nccl_launch_s``: B200 all-gather 7.6 us, then
    # 1.2 us a step; h195, 2026-12-07). Until then the graph paid the fabric's assumed alpha
    # of 2 us a step (``collective_latency_s``) for the floor, 0.8 us a step more than the
    # table's own slope: 2.5 us too much per 4-GPU gather or scatter.
    def _collective_s(
        self, op: Collective, n_bytes: float, group: Group, *, graphed: bool = False
    ) -> float:
        """One NCCL collective of ``n_bytes`` (the whole buffer) over ``group``: its measured
        time on this chip where one ships and the group stays in one scale-up domain
        (kernels.py), else the fabric's collective model. ``graphed``: launched inside the
        step's CUDA graph, without the table's host launch (the comment above)."""
        if not group.crosses_domains:
            measured = measured_nccl_s(self.chip.id, op, group.size, n_bytes / 2)
            if measured is not None:
                launch = measured_nccl_launch_s(self.chip.id, op, group.size) if graphed else None
                if launch is None:
                    return measured
                return max(0.0, measured - launch)
        return self.network.time_s(op, n_bytes, group)

    def _comm(
        self, plan: Plan, g: dict[str, Group], n_bytes: float, *, graphed: bool = False
    ) -> float:
        """Per forward pass: 2 all-reduces per layer over tp, p2p between stages, and the
        all-to-alls of MoE layers over ep; under ``adp`` the MoE all-gather and
        reduce-scatter instead (``_adp_comm``). ``n_bytes``: the pass's activations
        (tokens x D) on one replica, on one rank under ``adp``; ``graphed``: a decode-only
        pass, which the engines replay as a CUDA graph (``_adp_comm``)."""
        spec = self.spec
        if plan.adp:
            return self._adp_comm(plan, g, n_bytes, graphed=graphed)
        t = 0.0
        if plan.tp > 1:
            t += 2 * spec.n_layers * self._tp_all_reduce_s(n_bytes, g["tp"])
        if plan.pp > 1:
            t += (plan.pp - 1) * self.network.time_s("p2p", n_bytes / plan.tp, g["pp"])
        if spec.is_moe and plan.ep > 1:
            # Serving runs no sequence parallelism: after attention's all-reduce every tp
            # rank holds all of the step's tokens. Where expert parallelism folds over the tp
            # ranks (etp < tp), a rank picks its own experts' tokens locally and the combine
            # is the MLP all-reduce counted above (TensorRT-LLM's MoE with moe_tp_size x
            # moe_ep_size = tp_size, vLLM's --enable-expert-parallel without data-parallel
            # attention); only ep ranks that hold other tokens (ep over replicas, i.e.
            # data-parallel attention) exchange them, each sending the share of its k copies
            # bound for those ranks.
            holders = plan.ep // min(plan.ep, self._token_sharing_ep_ranks(plan))
            if holders > 1:
                share = (1 - 1 / holders) / (1 - 1 / plan.ep)
                a2a = self._collective_s(
                    "all_to_all", n_bytes * spec.experts_per_token * share, g["ep"]
                )
                t += 2 * spec.n_moe_layers * a2a
        return t

    def _adp_comm(
        self, plan: Plan, g: dict[str, Group], n_bytes: float, *, graphed: bool = False
    ) -> float:
        """Attention data parallelism, per forward pass of one rank's ``n_bytes`` of
        activations: each MoE layer all-gathers every rank's tokens (quantized to the
        matmul dtype, with their routing) over the tp group and reduce-scatters the
        experts' outputs back (activation dtype); p2p between stages. No all-reduce.
        ``graphed``: a decode-only pass, a CUDA graph, whose gather and scatter drop the
        NCCL table's host launch (``_collective_s``). The other NCCL collectives
        of a decode step (an all-reduce above the custom kernel's limit, an all-to-all
        over replicas) keep the table's times: so extended, it moved H100/H200
        TensorRT-LLM rows already over-predicted further up (SV-026/027/033: +1-4 points;
        2026-12-07, docs/performance.md)."""
        spec = self.spec
        t = 0.0
        if plan.pp > 1:
            t += (plan.pp - 1) * self.network.time_s("p2p", n_bytes, g["pp"])
        if spec.is_moe and plan.tp > 1:
            act = activation_bytes(self.precision)
            tokens = n_bytes / (spec.d_model * act)
            matmul = dtype_bytes(Dtypes.for_precision(self.precision).matmul)
            per_token = spec.d_model * matmul + spec.experts_per_token * ROUTING_BYTES_PER_CHOICE
            gather = self._collective_s(
                "all_gather", plan.tp * tokens * per_token, g["tp"], graphed=graphed
            )
            scatter = self._collective_s(
                "reduce_scatter", plan.tp * n_bytes, g["tp"], graphed=graphed
            )
            t += spec.n_moe_layers * (gather + scatter)
        return t

    @staticmethod
    def _token_sharing_ep_ranks(plan: Plan) -> int:
        """Ranks of one ep group that hold the same tokens: the tp ranks it folds over
        (``tp / etp`` of them, at stride ``etp``), 1 when ep spans replicas only."""
        etp = plan.expert_tp
        return 1 if etp == plan.tp else plan.tp // etp


# Token counts at which the token-proportional part of a step (every op but attention) is
# timed exactly; between two grid points it is interpolated linearly. Four points per
# octave keep the interpolation within ~1 % of the exact per-op sum (the per-op times are
# piecewise linear in tokens between GEMM tile and wave boundaries) and bound the work of
# an engine solve to a few dozen op-list timings.
_GRID_PER_OCTAVE = 4


@functools.lru_cache(maxsize=1024)  # i <= 4 log2(tokens): a few hundred at most
def _grid_point(i: int) -> int:
    return max(1, math.floor(float(2.0 ** (i / _GRID_PER_OCTAVE)) + 0.5))


def _on_grid(x: float, at: Callable[[int], float]) -> float:
    """``at`` (a timing at a whole count, exact on the grid's points) at ``x``: linear
    between the two grid points around ``x``; ``at(1)`` at or below one."""
    if x <= 1:
        return at(1)
    g = math.log2(x) * _GRID_PER_OCTAVE
    lo, hi = _grid_point(math.floor(g)), _grid_point(math.ceil(g))
    y_lo = at(lo)
    if hi == lo:
        return y_lo
    return y_lo + (at(hi) - y_lo) * (x - lo) / (hi - lo)


# Steps whose device time one ``EngineStepTimer`` keeps (``device_s``); an SLO search asks
# a timer for a few hundred distinct steps, a validation row for fewer.
_DEVICE_STEPS_KEPT = 1 << 16


# GEMM dtypes whose activations an eager engine quantises in a kernel of its own before
# the GEMM (fp8: per-token(-group) quantisation, fp4: NVFP4 / MXFP4 quantisation)
_QUANTISED_ACTIVATIONS = frozenset({"fp8", "fp4"})


def _eager_kernels(op: Op, names: set[str]) -> int:
    """Kernels an eager forward launches for ``op`` (one of a layer's ops ``names``), which
    launches at least one: its own (one fused launch for grouped expert GEMMs) and a
    low-precision GEMM's activation quantisation, unless the layer already has that cast
    as an op of its own (``<gemm>_cast``, ``layers._fp8_cast``)."""
    own = 1 if op.grouped else op.kernels
    quantised = op.mnk is not None and op.dtype in _QUANTISED_ACTIVATIONS
    return own + (1 if quantised and f"{op.name}_cast" not in names else 0)


class EngineStepTimer:
    """Seconds of one engine step of one replica under ``plan``: ``decode`` sequences each
    adding a token at ``context`` cached tokens, plus ``prefill`` prompt tokens (chunks of
    prompts ``prompt_len`` long). Weights are read once per step whatever the mix; attention
    is per sequence (decode reads its KV cache, prefill is compute-bound); TP all-reduces
    carry the step's tokens; a fixed host cost per step. With speculative decoding
    (``spec_tokens`` k > 0) each decoding sequence puts 1 + k tokens through the target
    (the token-proportional ops, the LM head and the collectives on all of them; attention
    reads each sequence's KV once for its 1 + k queries), and the drafter runs k times."""

    def __init__(
        self,
        serve: ServeModel,
        plan: Plan,
        kv_dtype: str,
        *,
        spec_tokens: int = 0,
        spec_method: str = "mtp",
        gemm_all_reduce: bool = False,
        replicated_vocab: bool = False,
    ) -> None:
        check_serving_plan(plan, serve.chip, serve.spec)
        # every rank runs the whole LM head (``replicates_vocab``): its logits at tp 1
        self.replicated_vocab = replicated_vocab
        self.serve = serve
        self.plan = plan
        self.kv_dtype = kv_dtype
        self.shard = rank_shard(plan)  # under adp: one rank, a tp=1 replica, split experts
        self.groups = groups(plan, serve.chip)
        spec = serve.spec
        self.kinds = stage_layer_kinds(spec, spec.n_layers, 1)
        self.act_bytes = activation_bytes(serve.precision)
        self._eager_host: float | None = None
        self._linear: dict[int, float] = {}
        self._attn: dict[tuple[int, int, bool, bool], float] = {}
        self._logits: dict[int, float] = {}
        self._comms: dict[tuple[int, bool], float] = {}
        self._routed: dict[int, float] = {}
        self.spec_tokens = spec_tokens
        self.spec_method = spec_method
        self.queries = 1 + spec_tokens  # tokens each decoding sequence verifies per step
        self._draft: dict[tuple[int, int], float] = {}
        # device_s of each step asked for: an engine solve asks for the same step again and
        # again (its bisections, the prefill and decode halves of a cycle); about two in
        # three of an SLO search's asks repeat one already made on this timer
        self._device: dict[tuple[float, float, float, float, float | None], float] = {}
        # TensorRT-LLM's GEMM + all-reduce kernel (GEMM_ALL_REDUCE_HARNESSES): an NVIDIA
        # tensor-parallel replica's row-parallel GEMMs, NVLink SHARP within one domain
        self.gemm_all_reduce = (
            gemm_all_reduce
            and serve.chip.vendor == "nvidia"
            and plan.tp > 1
            and not plan.adp
            and not self.groups["tp"].crosses_domains
        )
        # the layer ops as the engine runs them at this plan's tp (TensorRT-LLM's norms
        # inside the all-reduce: gpu.TP_FUSED_OPS; not beside the GEMM + all-reduce kernel,
        # which takes that all-reduce)
        tp_fused = 1 if self.gemm_all_reduce else self.shard.tp
        self._layer_model = serve.model.with_tp_fusion(tp_fused)
        # the shared expert inside the fused MoE at this plan's ep (ServeModel.fuses_shared)
        self._fused_shared = serve.fuses_shared(self.shard)
        self.fp8_context = self._runs_fp8_context_fmha()

    def _runs_fp8_context_fmha(self) -> bool:
        """Whether TensorRT-LLM runs this model's prefill attention as its FP8 context FMHA.
        Its attention op sets ``mFP8ContextFMHA = is_fp8_out || is_fp4_out || (fp8 KV cache
        && paged context FMHA)`` (cpp/tensorrt_llm/thop/attentionOp.cpp), and the PyTorch
        backend asks for an fp8 (or NVFP4) output wherever o_proj is quantised (fp8 or
        NVFP4: modules/attention.py passes o_proj.inv_input_scale as out_scale) and the KV
        cache is fp8 (attention_backend/trtllm.py TrtllmAttention.forward). So an fp8 or
        NVFP4 checkpoint's GQA/MHA layers on an fp8 cache prefill in fp8; a bf16 o_proj
        (gpt-oss's MXFP4 checkpoint quantises only its experts) keeps the 16-bit kernel.
        MLA has its own context path (not modelled here)."""
        spec = self.serve.spec
        if self.serve.engine != "trtllm" or self.kv_dtype != "fp8" or spec.uses_mla:
            return False
        o_proj = [
            op.dtype
            for moe, sliding, _ in self.kinds
            for op in self._layer_ops(1, moe, sliding)
            if op.name == "o_proj"
        ]
        return bool(o_proj) and all(dtype in ("fp8", "fp4") for dtype in o_proj)

    def share_timings(self, other: EngineStepTimer) -> None:
        """Use ``other``'s cached timings from now on (a timer of the same replica step:
        ``ServeModel.engine_timer``)."""
        if other is self:
            return
        self._linear, self._attn, self._logits = other._linear, other._attn, other._logits
        self._comms, self._routed, self._draft = other._comms, other._routed, other._draft
        self._device = other._device

    def eager_launches(self, tokens: int = 1024) -> int:
        """Kernels one eager forward over ``tokens`` prompt tokens launches: each layer's
        ops that launch a kernel of their own (fused ones launch nothing, ``_eager_kernels``)
        and, under tensor parallelism, its two all-reduces (``comm_s``), by layer kind."""
        all_reduces = 2 if self.shard.tp > 1 else 0
        total = 0
        for moe, sliding, count in self.kinds:
            ops = self._layer_ops(tokens, moe, sliding)
            timed = self.serve.time_ops(ops, model=self._layer_model)
            names = {op.name for op in ops}
            launches = sum(_eager_kernels(t.op, names) for t in timed if t.overhead_s > 0)
            total += count * (launches + all_reduces)
        return total

    def eager_host_s(self) -> float:
        """Host seconds an eager forward spends issuing its kernels
        (``EAGER_LAUNCH_HOST_S`` per launching op), paced by the slowest of the plan's
        tensor-parallel ranks (``eager_rank_skew``); computed once per timer."""
        if self._eager_host is None:
            launches = self.eager_launches() * EAGER_LAUNCH_HOST_S
            self._eager_host = launches * eager_rank_skew(self.plan.tp)
        return self._eager_host

    def linear_s(self, tokens: float) -> float:
        """Every op but attention, for ``tokens`` tokens in the step (interpolated)."""
        return _on_grid(tokens, self._linear_at)

    def _linear_at(self, tokens: int) -> float:
        cached = self._linear.get(tokens)
        if cached is not None:
            return cached
        sv = self.serve
        kw = {"b": 1, "seq_len": tokens, "shard": self.shard, "precision": sv.precision}
        layers = self._layers_s(tokens, lambda op: not is_sequence_op(op))
        t = layers + sv._time(embedding_ops(sv.spec, **kw)).total_s  # type: ignore[arg-type]
        self._linear[tokens] = t
        return t

    def _layers_s(
        self, tokens: int, keep: Callable[[Op], bool], *, moe_only: bool = False
    ) -> float:
        """Seconds of the layers' ops that ``keep`` selects, for ``tokens`` tokens in the step
        (``moe_only``: the MoE layers alone)."""
        total = Cost()
        for moe, sliding, count in self.kinds:
            if moe_only and not moe:
                continue
            kept = tuple(op for op in self._layer_ops(tokens, moe, sliding) if keep(op))
            total = total + self.serve.cost(kept, model=self._layer_model).scaled(count)
        return total.total_s

    def _layer_ops(self, tokens: int, moe: bool, sliding: bool | None) -> tuple[Op, ...]:
        """One layer's ops for ``tokens`` tokens in the step, as the engine runs them (its
        fused MLA down-projection, the shared expert inside the fused MoE where it is)."""
        sv = self.serve
        return layer_ops(sv.spec, b=1, seq_len=tokens, shard=self.shard, precision=sv.precision,
                         moe=moe, sliding=sliding, serving=True,
                         fused_shared=self._fused_shared)  # fmt: skip

    def attention_s(self, seqs: float, context: int, *, decode: bool, dense: bool = False) -> float:
        """Attention of ``seqs`` decode tokens at ``context`` cached tokens each (a KV-cache
        read; ``dense``: an einsum over a contiguous cache array, not a paged kernel), or of
        ``seqs`` prefill tokens of prompts ``context`` long (compute-bound); interpolated
        between grid points in ``seqs`` like ``linear_s``."""
        return _on_grid(seqs, lambda n: self._attention_at(n, context, decode=decode, dense=dense))

    def _attention_at(self, seqs: int, context: int, *, decode: bool, dense: bool = False) -> float:
        key = (seqs, context, decode, dense)
        cached = self._attn.get(key)
        if cached is not None:
            return cached
        sv, spec = self.serve, self.serve.spec
        dt = Dtypes.for_precision(sv.precision)
        total = Cost()
        for moe, sliding, count in self.kinds:
            del moe
            window = layer_window(spec, sliding)
            if not decode and is_linear_kind(spec, sliding):
                continue  # the chunked delta rule follows tokens: in ``linear_s``
            if decode:
                ops = decode_layer_ops(
                    spec, batch=seqs, context=context, shard=self.shard,
                    precision=sv.precision, kv_dtype=self.kv_dtype, moe=False, sliding=sliding,
                )  # fmt: skip
            else:
                ops = tuple(
                    attention_ops(spec, b=1, s=seqs, shard=self.shard, dt=dt, s_kv=context,
                                  window=window, fused_qkv_a=True)
                )  # fmt: skip
            core = tuple(op for op in ops if is_sequence_op(op))
            if not decode and self.fp8_context:
                core = tuple(fp8_context_attention(op) for op in core)
            if decode and dense:
                core = tuple(replace(op, dense=True) for op in core)
            if decode and self.queries > 1:
                core = tuple(self._verify_attention(op) for op in core)
            total = total + sv._time(core).scaled(count)
        self._attn[key] = total.total_s
        return total.total_s

    def _verify_attention(self, op: Op) -> Op:
        """A decode attention op with ``queries`` queries per sequence (speculative
        decoding's verification): the same KV read, ``queries`` times the FLOPs (FlashMLA and
        TensorRT-LLM's XQA take several query tokens per sequence for MTP / EAGLE)."""
        q = self.queries
        mnk = op.mnk if op.mnk is None else (q * op.mnk[0], op.mnk[1], op.mnk[2])
        return replace(op, flops=op.flops * q, mnk=mnk)

    def draft_s(self, seqs: float, context: float) -> float:
        """The drafter's ``spec_tokens`` passes for ``seqs`` decoding sequences at
        ``context`` cached tokens (0 without speculative decoding; interpolated on the grid
        in ``seqs``)."""
        if not self.spec_tokens or seqs <= 0:
            return 0.0
        ctx = max(1, round(context))
        return _on_grid(seqs, lambda n: self._draft_at(n, ctx))

    def _draft_at(self, seqs: int, context: int) -> float:
        cached = self._draft.get((seqs, context))
        if cached is not None:
            return cached
        sv, spec, k = self.serve, self.serve.spec, self.spec_tokens
        precision = draft_precision(self.spec_method, sv.precision)
        kw = {"b": seqs, "seq_len": 1, "shard": self.shard, "precision": precision}
        d = spec.d_model
        mtp = self.spec_method == "mtp"
        # one decoder layer: an MoE layer for MTP on an MoE model (DeepSeek-V3's module), a
        # dense one for an EAGLE-3 head
        block = decode_layer_ops(
            spec, batch=seqs, context=context, shard=self.shard, precision=precision,
            kv_dtype=self.kv_dtype, moe=mtp and spec.is_moe, sliding=False,
            fused_shared=self._fused_shared,
        )  # fmt: skip
        # its share of the step's collectives: one layer's all-reduces (or, under adp, one
        # MoE layer's all-gather and reduce-scatter)
        per_layer = spec.n_moe_layers if self.plan.adp and spec.is_moe else spec.n_layers
        comm = (
            self.comm_s(seqs, graphed=True) / max(1, per_layer)
            if (mtp or not self.plan.adp)
            else 0.0
        )
        fuse = 2 * d if mtp else 3 * d  # MTP's projection M per pass; EAGLE-3's fc once
        proj = projection_op("draft_proj", seqs, -(-d // self.shard.tp), fuse, precision)
        head_spec = spec if mtp else replace(spec, vocab_size=min(spec.vocab_size,
                                                                  EAGLE_DRAFT_VOCAB))  # fmt: skip
        head = head_ops(head_spec, loss=False, quantised_checkpoint=True, **kw)  # type: ignore[arg-type]
        embed = embedding_ops(spec, **kw)  # type: ignore[arg-type]
        one = sv._time(block + head + embed).total_s + comm
        proj_s = sv._time((proj,)).total_s
        t = k * (one + (proj_s if mtp else 0.0)) + (0.0 if mtp else proj_s)
        self._draft[seqs, context] = t
        return t

    def logits_s(self, seqs: float) -> float:
        """Final norm and LM head for ``seqs`` sampled tokens (interpolated on the grid)."""
        return _on_grid(seqs, self._logits_at)

    def _logits_at(self, seqs: int) -> float:
        cached = self._logits.get(seqs)
        if cached is not None:
            return cached
        self._logits[seqs] = t = self._logits_exact(seqs)
        return t

    def _logits_exact(self, seqs: int) -> float:
        sv, spec = self.serve, self.serve.spec
        shard = replace(self.shard, tp=1) if self.replicated_vocab else self.shard
        kw = {"b": seqs, "seq_len": 1, "shard": shard, "precision": sv.precision}
        ends = head_ops(spec, loss=False, quantised_checkpoint=True, **kw)  # type: ignore[arg-type]
        return sv._time(ends).total_s

    def comm_s(self, tokens: float, *, graphed: bool = False) -> float:
        """TP all-reduces (2 per layer), PP hand-offs and EP all-to-alls for the step
        (``graphed``: a decode-only step, replayed as a CUDA graph: ``ServeModel._comm``)."""
        key = (max(1, round(tokens)), graphed)
        cached = self._comms.get(key)
        if cached is None:
            n_bytes = key[0] * self.serve.spec.d_model * self.act_bytes
            cached = self.serve._comm(self.plan, self.groups, n_bytes, graphed=graphed)
            if self.gemm_all_reduce:
                cached -= self._gemm_hidden_all_reduce_s(key[0], n_bytes)
            self._comms[key] = cached
        return cached

    def _gemm_hidden_all_reduce_s(self, tokens: int, n_bytes: float) -> float:
        """Seconds of the step's all-reduces that TensorRT-LLM's GEMM + all-reduce kernel
        hides behind its row-parallel GEMMs (``GEMM_ALL_REDUCE_HARNESSES``): a tile's
        reduction runs while the GEMM computes the tiles after it, so of each all-reduce
        only what outlasts its GEMM, and at least the last wave of tiles' share, stays."""
        sv = self.serve
        all_reduce = sv._tp_all_reduce_s(n_bytes, self.groups["tp"])
        units = max(1, sv.chip.units)
        hidden = 0.0
        for moe, sliding, count in self.kinds:
            for op in self._layer_ops(tokens, moe, sliding):
                if op.name not in GEMM_ALL_REDUCE_OPS or op.mnk is None or op.routed_expert:
                    continue
                gemm = sv.cost((op,), model=self._layer_model).total_s
                m, n, _ = op.mnk
                tm, tn = GEMM_ALL_REDUCE_TILE
                waves = math.ceil(math.ceil(m / tm) * math.ceil(n / tn) / units)
                exposed = max(all_reduce - gemm, all_reduce / waves)
                hidden += count * (all_reduce - exposed)
        return hidden

    def step_s(
        self,
        decode: float,
        context: float,
        prefill: float,
        prompt_len: float,
        routed_prefill: float | None = None,
        *,
        overlap: bool = ENGINE_OVERLAPS_HOST,
        host_s: float = HOST_STEP_S,
    ) -> float:
        """One step: ``decode`` sequences at ``context``, ``prefill`` prompt tokens
        (``routed_prefill``: see ``device_s``); the host's ``host_s`` of work either hidden
        behind the device's (``overlap``) or added."""
        device = self.device_s(decode, context, prefill, prompt_len, routed_prefill)
        if overlap:
            return max(device, host_s)
        return device + host_s

    def device_s(
        self,
        decode: float,
        context: float,
        prefill: float,
        prompt_len: float,
        routed_prefill: float | None = None,
    ) -> float:
        """Device time of one step (no host work). ``routed_prefill``: under attention DP,
        the prompt tokens per rank the shared routed experts run on average when the ranks'
        prompts differ (``prefill`` is then the busiest rank's, which its attention and
        dense work wait for); None = every rank has ``prefill``."""
        key = (decode, context, prefill, prompt_len, routed_prefill)
        cached = self._device.get(key)
        if cached is None:
            if len(self._device) >= _DEVICE_STEPS_KEPT:
                self._device.clear()
            cached = self._device[key] = self._device_s(*key)
        return cached

    def _device_s(
        self,
        decode: float,
        context: float,
        prefill: float,
        prompt_len: float,
        routed_prefill: float | None,
    ) -> float:
        dec = max(0.0, decode)
        pre = max(0.0, prefill)
        verified = dec * self.queries  # each decoding sequence's token and its drafts
        tokens = self.padded_tokens(verified + pre)
        t = self.linear_s(max(1.0, tokens))
        if routed_prefill is not None and routed_prefill < pre and self._shares_experts():
            routed = self.padded_tokens(verified + max(0.0, routed_prefill))
            t += self.routed_s(max(1.0, routed)) - self.routed_s(max(1.0, tokens))
        if dec > 0:
            t += self.attention_s(dec, max(1, round(context)), decode=True)
            t += self.draft_s(dec, context)
        if pre > 0:
            prompt_attention = self.attention_s(pre, max(1, round(prompt_len)), decode=False)
            t += prompt_attention
            if self.spec_tokens:
                # the drafter's layer also runs over the prompt (MTP and EAGLE keep their own
                # KV cache): one layer's share of the chunk's work
                t += (self.linear_s(pre) + prompt_attention) / self.serve.spec.n_layers
        sampled = verified + (max(1.0, pre / max(1.0, prompt_len)) if pre > 0 else 0.0)
        t += self.logits_s(max(1.0, sampled))
        # a decode-only step is the CUDA graph the engines capture; a step with prompt
        # tokens runs eagerly (TensorRT-LLM, SGLang) or as piecewise graphs (vLLM), timed
        # here with the collectives' launches
        comm = self.comm_s(tokens, graphed=pre <= 0)
        return t + comm * (1 - (SERVE_TP_OVERLAP if pre > verified else 0.0))

    def _shares_experts(self) -> bool:
        """Whether the ranks' tokens meet in shared routed experts (attention DP, MoE)."""
        return bool(self.plan.adp) and self.serve.spec.is_moe

    def routed_s(self, tokens: float) -> float:
        """The routed experts' share of ``linear_s`` (dispatch, expert GEMMs and their
        activation, combine) for ``tokens`` tokens on every rank (interpolated)."""
        return _on_grid(tokens, self._routed_at)

    def _routed_at(self, tokens: int) -> float:
        cached = self._routed.get(tokens)
        if cached is None:
            cached = self._layers_s(tokens, _routed_op, moe_only=True)
            self._routed[tokens] = cached
        return cached

    def padded_tokens(self, tokens: float) -> float:
        """Tokens the step's token-proportional ops run on: on a TPU the engine compiles one
        program per token bucket (``TPU_TOKEN_BUCKET_MIN`` doubling up to the step budget),
        so a step of ``tokens`` pays for the next bucket; a GPU runs the exact count."""
        if self.serve.chip.kind != "tpu" or tokens <= 0:
            return tokens
        bucket = float(TPU_TOKEN_BUCKET_MIN)
        while bucket < tokens:
            bucket *= 2
        return bucket

    def kv_bytes_per_token(self, context: float = 0.0, *, with_state: bool = True) -> float:
        """KV-cache bytes one token of context takes on one chip (all its layers; every
        key/value head on one rank under ``adp``); averaged over a sequence of ``context``
        tokens whose sliding layers keep only their window (0 = every layer keeps it).
        A linear-attention layer caches no tokens whatever ``context``; its fixed state is
        spread over the ``context`` tokens unless it sits in a pool of its own
        (``with_state`` False: SGLang's)."""
        spec = self.serve.spec
        layers = layers_per_stage(spec.n_layers, self.plan.pp)
        per_layer = kv_bytes_per_token_per_layer(spec, self.shard.tp, self.kv_dtype)
        if spec.uses_linear_attention:
            # every engine that runs the hybrid keeps KV for the full-attention layers only
            cached = kv_cached_tokens(spec, 1, layers) * per_layer
            if not with_state or context < 1.0:
                return cached
            return cached + self.state_bytes_per_sequence() / round(context)
        if context < 1.0 or not spec.n_local_layers:
            return layers * per_layer
        return kv_cached_tokens(spec, round(context), layers) * per_layer / round(context)

    def state_bytes_per_sequence(self) -> float:
        """Bytes of one sequence's linear-attention state on one chip (its stage's layers;
        0 without linear attention)."""
        spec = self.serve.spec
        layers = layers_per_stage(spec.n_layers, self.plan.pp)
        return recurrent_state_bytes(spec, self.shard.tp, layers)


class EngineStep(Protocol):
    """An engine's step (``engine.StepFn``) that also tells the device time of a decode-only
    step, so the host time the device waits for can be split out of a predicted step."""

    def __call__(
        self, decode: float, context: float, prefill: float, prompt_len: float
    ) -> float: ...
    def device_s(self, decode: float, context: float) -> float: ...


@dataclass(frozen=True, slots=True)
class BatchingStep:
    """The step of a continuously batching engine (vLLM, SGLang, TensorRT-LLM): decode and
    prefill chunks in one forward, the host's work hidden (``overlap``) or added."""

    timer: EngineStepTimer
    overlap: bool
    # host seconds issuing an eager forward's kernels (``EngineStepTimer.eager_host_s``; 0 =
    # no forward runs eagerly): an eager step takes at least that long
    eager_host_s: float = 0.0
    # whether a step with prompt tokens runs eagerly (EAGER_PREFILL_ENGINES; False = the
    # engine runs prompts in CUDA graphs or compiled)
    eager_prefill: bool = True
    # decode batches of more sequences than this run eagerly (SGLang's --cuda-graph-max-bs,
    # ``sglang_cuda_graph_max_bs``; inf = every decode batch is graphed)
    graph_max_seqs: float = math.inf
    # host seconds per decoding sequence a step with prompt tokens beyond the CUDA graphs
    # adds in series (mixed_step_host_s_per_seq; 0 = none)
    mixed_host_s_per_seq: float = 0.0
    # host seconds per scheduled request that every step adds to ``host_step_s``
    # (step_host_s_per_request; 0 = none)
    host_s_per_request: float = 0.0
    # host seconds of every step before its per-request work (step_host_s)
    host_step_s: float = HOST_STEP_S

    def __call__(self, decode: float, context: float, prefill: float, prompt_len: float) -> float:
        return self._step(decode, context, prefill, prompt_len, None)

    def lockstep(
        self, decode: float, context: float, prefill: float, prompt_len: float, routed: float
    ) -> float:
        """A step of attention-DP ranks whose busiest has ``prefill`` prompt tokens and the
        ranks ``routed`` on average (``engine.LockstepStepFn``)."""
        return self._step(decode, context, prefill, prompt_len, routed)

    def _step(
        self, decode: float, context: float, prefill: float, prompt_len: float,
        routed: float | None,
    ) -> float:  # fmt: skip
        timer = self.timer
        tokens = max(0.0, decode) * timer.queries + prefill
        if prefill > 0 and self.mixed_host_s_per_seq > 0 and tokens > VLLM_CUDA_GRAPH_MAX_TOKENS:
            # the host's work in series with the device (VLLM_GDN_MIXED_HOST_S_PER_SEQ)
            device = timer.device_s(decode, context, prefill, prompt_len, routed)
            t = device + self.host_step_s + max(0.0, decode) * self.mixed_host_s_per_seq
        else:
            requests = max(0.0, decode) + (prefill / max(1.0, prompt_len) if prefill > 0 else 0.0)
            host = self.host_step_s + requests * self.host_s_per_request
            t = timer.step_s(
                decode, context, prefill, prompt_len, routed, overlap=self.overlap, host_s=host
            )
        return self._eager(t, decode, prefill)

    def _eager(self, step: float, decode: float, prefill: float) -> float:
        """``step`` held to the eager forward's host launches when it runs eagerly (it
        carries prompt tokens, or more decoding sequences than the CUDA graphs hold): the
        host issues kernels while the device runs them, so the slower binds (the step's own
        scheduling work stays where ``overlap`` puts it)."""
        eager = (prefill > 0 and self.eager_prefill) or decode > self.graph_max_seqs
        if not eager or self.eager_host_s <= 0:
            return step
        series = 0.0 if self.overlap else HOST_STEP_S
        return max(step, self.eager_host_s + series)

    def device_s(self, decode: float, context: float) -> float:
        """Device time of a decode-only step."""
        return self.timer.device_s(decode, context, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class _JetStreamServer:
    """A JetStream server's step and the limits it runs under (whole server, all shards)."""

    step: JetStreamStep
    max_seqs: int
    max_tokens: int
    capacity: float
