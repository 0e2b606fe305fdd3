"""JetStream's serving loop (perf/step/jetstream.py): fixed decode slots, each prompt
prefilled alone at a padded power-of-two length, dense attention over each slot's cache."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from chipwise.errors import PlanError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.jetstream import (
    PREFILL_BUCKETS,
    VLLM_V0_TPU_HOST_PER_SEQ_S,
    jetstream_step,
    prefill_bucket,
    prompt_prefill_s,
    vllm_v0_tpu_step,
)
from chipwise.perf.step.serve import HOST_STEP_S, ServeModel, runs_vllm_v0_tpu
from chipwise.workload.ir import Inference
from chipwise.workload.presets import load_preset

V5E = chip("tpu-v5e")
PLAN = Plan(tp=8)


def _serve(precision: str = "bf16", name: str = "llama2-7b") -> ServeModel:
    return ServeModel(load_preset(name), V5E, precision, model_for(V5E), Network(V5E))


def _phase(**kw: object) -> Inference:
    base: dict[str, object] = {
        "input_len": 215, "output_len": 196, "load": "max_throughput", "engine": "jetstream",
        "max_num_seqs": 96,
    }  # fmt: skip
    base.update(kw)
    return Inference(**base)  # type: ignore[arg-type]


def test_prompts_pad_to_the_next_power_of_two_bucket() -> None:
    assert [prefill_bucket(n) for n in (1, 16, 17, 215, 256, 257, 1000)] == [
        16, 16, 32, 256, 256, 512, 1024,
    ]  # fmt: skip
    assert prefill_bucket(10**6) == PREFILL_BUCKETS[-1]  # a longer prompt is cut


def test_a_prompt_costs_its_bucket_and_the_mix_its_mean_padded_prefill() -> None:
    timer = _serve().engine_timer(PLAN, "bf16")
    assert prompt_prefill_s(timer, 200) == prompt_prefill_s(timer, 256)
    assert prompt_prefill_s(timer, 257) > prompt_prefill_s(timer, 256)
    ins, w = np.array([100.0, 300.0]), np.array([0.5, 0.5])
    step = jetstream_step(timer, slots=8, inputs=ins, weights=w, host_step_s=0.0, overlap=True)
    mean = 0.5 * (prompt_prefill_s(timer, 128) + prompt_prefill_s(timer, 512))
    assert step.mean_prompt_s == pytest.approx(mean)
    # the mean prompt (200 tokens) stands for the mix, not for a 256-token bucket
    alone = step(0.0, 0.0, 200.0, 200.0)
    assert alone == pytest.approx(mean)
    assert step(0.0, 0.0, 300.0, 300.0) == pytest.approx(prompt_prefill_s(timer, 300))


def test_the_generate_step_runs_every_slot_occupied_or_not() -> None:
    timer = _serve().engine_timer(PLAN, "bf16")
    ins, w = np.array([215.0]), np.array([1.0])
    kw = {"inputs": ins, "weights": w, "host_step_s": HOST_STEP_S, "overlap": True}
    ragged = jetstream_step(timer, slots=96, **kw)  # type: ignore[arg-type]
    dense = jetstream_step(timer, slots=96, cache_len=2048, **kw)  # type: ignore[arg-type]
    # projections and LM head at 96 slots whatever runs; ragged attention reads only the
    # present sequences' context, dense attention every slot's whole cache
    assert ragged.device_s(10, 300) < ragged.device_s(96, 300)
    assert dense.device_s(10, 300) == pytest.approx(dense.device_s(96, 300))
    assert dense.device_s(96, 300) > ragged.device_s(96, 300)
    # a step that admits prompts adds one padded batch-1 prefill per prompt
    both = dense(96.0, 300.0, 2 * 215.0, 215.0)
    assert both == pytest.approx(dense.generate_s(96, 300) + 2 * dense.mean_prompt_s)


def test_dense_attention_streams_the_cache_at_the_copy_rate_not_the_paged_kernels() -> None:
    timer = _serve().engine_timer(PLAN, "bf16")
    paged = timer.attention_s(96, 2048, decode=True)
    dense = timer.attention_s(96, 2048, decode=True, dense=True)
    # efficiency.toml: TPU hbm_fraction 0.9 vs decode_attention_hbm_fraction 0.38
    assert dense < paged
    assert paged / dense == pytest.approx(0.9 / 0.38, rel=0.05)


def test_slots_beyond_what_their_caches_fit_are_not_allocated() -> None:
    sv = ServeModel(load_preset("llama2-7b"), V5E, "bf16", model_for(V5E), Network(V5E))
    one = sv.serve_engine(Plan(tp=1), _phase(max_num_seqs=1024, slot_cache_len=2048))
    assert one.engine is not None
    # 16 GB of v5e HBM holds ~14 GB of weights: a couple of 2048-position MHA slots at most
    assert one.engine.max_seqs_per_replica < 8
    eight = sv.serve_engine(PLAN, _phase(slot_cache_len=2048))
    assert eight.engine is not None and eight.engine.max_seqs_per_replica == 96


def test_int8_weights_and_cache_serve_faster_than_bf16() -> None:
    bf16 = _serve().serve_engine(PLAN, _phase(slot_cache_len=2048)).engine
    int8 = _serve("w8a16").serve_engine(PLAN, _phase(slot_cache_len=2048, kv_dtype="int8")).engine
    assert bf16 is not None and int8 is not None
    assert int8.output_tokens_per_s > 1.2 * bf16.output_tokens_per_s


def test_jetstream_serves_on_tpus_only() -> None:
    h100 = chip("h100-sxm")
    sv = ServeModel(load_preset("llama3-8b"), h100, "bf16", model_for(h100), Network(h100))
    with pytest.raises(PlanError, match="TPUs"):
        sv.serve_engine(Plan(), _phase())


def test_batch_shards_split_the_generate_step_but_not_the_prefill() -> None:
    timer = _serve("bf16", "llama3.2-1b").engine_timer(Plan(tp=1), "bf16")
    ins, w = np.array([215.0]), np.array([1.0])
    one = jetstream_step(timer, slots=64, inputs=ins, weights=w, host_step_s=0.0, overlap=True)
    eight = jetstream_step(
        timer, slots=512, inputs=ins, weights=w, host_step_s=0.0, overlap=True, shards=8
    )
    # 512 slots over 8 chips step like 64 on one; a prompt is prefilled whole, replicated
    assert eight.device_s(512.0, 400.0) == pytest.approx(one.device_s(64.0, 400.0))
    assert eight(0.0, 0.0, 215.0, 215.0) == pytest.approx(one(0.0, 0.0, 215.0, 215.0))


def test_a_data_parallel_server_prefills_one_prompt_at_a_time_for_all_its_chips() -> None:
    # a small model --shard_on_batch on v5e-8 (Gemma 2B in the SVJ rows): the server is
    # one engine, so eight chips serve well under eight times one chip's rate (the
    # prefills do not spread over the chips)
    sv = _serve("bf16", "llama3.2-1b")
    phase = _phase(max_num_seqs=64, slot_cache_len=2048)
    one = sv.serve_engine(Plan(tp=1), phase).engine
    eight = sv.serve_engine(Plan(dp=8, tp=1), phase).engine
    assert eight is not None and one is not None
    assert eight.max_seqs_per_replica == 8 * one.max_seqs_per_replica
    assert one.output_tokens_per_s < eight.output_tokens_per_s < 6 * one.output_tokens_per_s


def test_vllm_v0_on_tpu_pads_its_decode_batch_to_sixteen_not_to_every_slot() -> None:
    # vLLM V0's TPU runner: _get_padded_batch_size (8 up to 8, else the next multiple of 16)
    timer = _serve().engine_timer(PLAN, "bf16")
    ins, w = np.array([215.0]), np.array([1.0])
    step = vllm_v0_tpu_step(timer, inputs=ins, weights=w, host_step_s=0.0, overlap=True)
    step = replace(step, host_per_seq_s=0.0)  # the device's shapes alone (host: below)
    assert [step.padded_batch(n) for n in (1.0, 8.0, 9.0, 16.0, 17.0, 250.0)] == [
        8, 8, 16, 16, 32, 256,
    ]  # fmt: skip
    # nine sequences run the token-proportional ops at sixteen; attention reads the nine
    padded = timer.linear_s(16.0) + timer.logits_s(16.0) + timer.comm_s(16.0)
    read = timer.attention_s(9.0, 400, decode=True)
    assert step.device_s(9.0, 400.0) == pytest.approx(padded + read)
    # each admitted prompt is its own padded batch-1 forward, added to the decode forward
    both = step(100.0, 400.0, 2 * 215.0, 215.0)
    assert both == pytest.approx(step(100.0, 400.0, 0.0, 0.0) + 2 * prompt_prefill_s(timer, 256))


def test_vllm_v0_on_tpu_waits_out_its_hosts_per_sequence_work_every_call() -> None:
    # every call ends in a blocking .cpu(); V0's Python then handles each running sequence
    # before the next call: the decode step pays it per sequence, each prompt's forward once
    timer = _serve().engine_timer(PLAN, "bf16")
    ins, w = np.array([215.0]), np.array([1.0])
    step = vllm_v0_tpu_step(timer, inputs=ins, weights=w, host_step_s=HOST_STEP_S, overlap=False)
    assert step.host_per_seq_s == VLLM_V0_TPU_HOST_PER_SEQ_S > 0
    host = HOST_STEP_S + 200 * VLLM_V0_TPU_HOST_PER_SEQ_S
    assert step(200.0, 400.0, 0.0, 0.0) == pytest.approx(step.device_s(200.0, 400.0) + host)
    per_prompt = prompt_prefill_s(timer, 256) + HOST_STEP_S + VLLM_V0_TPU_HOST_PER_SEQ_S
    assert step(0.0, 0.0, 3 * 215.0, 215.0) == pytest.approx(3 * per_prompt)
    # JetStream's orchestrator keeps its fixed per-step host time only
    js = jetstream_step(timer, slots=96, inputs=ins, weights=w, host_step_s=HOST_STEP_S,
                        overlap=False)  # fmt: skip
    assert js(200.0, 400.0, 0.0, 0.0) == pytest.approx(js.device_s(200.0, 400.0) + HOST_STEP_S)
    assert js(0.0, 0.0, 215.0, 215.0) == pytest.approx(prompt_prefill_s(timer, 256))


def test_vllm_on_tpu_runs_its_v0_runner_before_the_v1_engine_became_the_default() -> None:
    assert runs_vllm_v0_tpu("vllm", "tpu", "2025-02-27")
    assert not runs_vllm_v0_tpu("vllm", "tpu", "2025-04-11")
    assert not runs_vllm_v0_tpu("vllm", "tpu", "")  # a question about today
    assert not runs_vllm_v0_tpu("vllm", "gpu", "2025-02-27")
    assert not runs_vllm_v0_tpu("sglang", "tpu", "2025-02-27")
    sv = ServeModel(load_preset("llama3-8b"), chip("tpu-v6e"), "bf16", model_for(V5E),
                    Network(chip("tpu-v6e")))  # fmt: skip
    base = {"input_len": 224, "output_len": 133, "load": "max_throughput", "engine": "vllm",
            "num_requests": 1000}  # fmt: skip
    v0 = sv.serve_engine(Plan(tp=4), Inference(**base, engine_date="2025-02-27")).engine  # type: ignore[arg-type]
    v1 = sv.serve_engine(Plan(tp=4), Inference(**base, engine_date="2025-04-11")).engine  # type: ignore[arg-type]
    assert v0 is not None and v1 is not None
    # a prompt at a time with the decodes held back: slower than mixed, bucketed steps
    assert v0.output_tokens_per_s < 0.9 * v1.output_tokens_per_s
