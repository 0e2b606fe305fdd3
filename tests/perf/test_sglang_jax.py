"""SGLang-JAX on TPU: its overlapped host work per step (``serve.SGLANG_JAX_HOST_STEP_S`` plus
``SGLANG_JAX_HOST_S_PER_REQUEST`` per scheduled request) and, before sgl-project/sglang-jax
PR #259 (``serve.SGLANG_JAX_VOCAB_TP_DATE``), its embedding and LM head whole on every
tensor-parallel rank."""

from __future__ import annotations

import pytest

from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.step.serve import (
    HOST_STEP_S,
    SGLANG_JAX_HOST_S_PER_REQUEST,
    SGLANG_JAX_HOST_STEP_S,
    SGLANG_JAX_VOCAB_TP_DATE,
    BatchingStep,
    ServeModel,
    replicates_vocab,
    step_host_s,
    step_host_s_per_request,
)
from chipwise.workload.presets import load_preset

V6E = chip("tpu-v6e")
QWEN3_8B = load_preset("qwen3-8b")
PLAN = Plan(tp=4)


def _serve() -> ServeModel:
    return ServeModel(QWEN3_8B, V6E, "bf16", model_for(V6E), Network(V6E), engine="sglang")


def test_only_sglang_on_a_tpu_pays_sglang_jaxs_host() -> None:
    assert step_host_s("sglang", "tpu") == SGLANG_JAX_HOST_STEP_S
    assert step_host_s_per_request("sglang", True, kind="tpu") == SGLANG_JAX_HOST_S_PER_REQUEST
    assert step_host_s("sglang", "gpu") == HOST_STEP_S
    assert step_host_s("vllm", "tpu") == HOST_STEP_S
    assert step_host_s_per_request("sglang", True, kind="gpu") == 0.0
    assert step_host_s_per_request("vllm", False, kind="tpu") == 0.0


def test_the_host_binds_a_small_decode_batch_and_hides_under_a_long_step() -> None:
    timer = _serve().engine_timer(PLAN, "bf16")
    step = BatchingStep(
        timer=timer, overlap=True, eager_prefill=False,
        host_s_per_request=SGLANG_JAX_HOST_S_PER_REQUEST, host_step_s=SGLANG_JAX_HOST_STEP_S,
    )  # fmt: skip
    # 8 sequences at 1.5k context: the device step (~5 ms) is shorter than the host's work
    host = SGLANG_JAX_HOST_STEP_S + 8 * SGLANG_JAX_HOST_S_PER_REQUEST
    assert step.device_s(8.0, 1536.0) < host
    assert step(8.0, 1536.0, 0.0, 0.0) == pytest.approx(host)
    # 64 sequences at 8.7k context: the KV-cache read outlasts the host's work
    device = step.device_s(64.0, 8704.0)
    assert device > SGLANG_JAX_HOST_STEP_S + 64 * SGLANG_JAX_HOST_S_PER_REQUEST
    assert step(64.0, 8704.0, 0.0, 0.0) == pytest.approx(device)


def test_sglang_jax_replicated_its_vocabulary_until_pr_259() -> None:
    assert replicates_vocab("sglang", "tpu", "2025-09-12")
    assert not replicates_vocab("sglang", "tpu", SGLANG_JAX_VOCAB_TP_DATE)
    assert not replicates_vocab("sglang", "tpu", "")  # today's build splits it
    assert not replicates_vocab("sglang", "gpu", "2025-09-12")
    assert not replicates_vocab("vllm", "tpu", "2025-09-12")


def test_a_replicated_lm_head_costs_its_whole_read_and_its_memory() -> None:
    serve = _serve()
    split = serve.engine_timer(PLAN, "bf16")
    whole = serve.engine_timer(PLAN, "bf16", replicated_vocab=True)
    # a decode step reads the whole vocab x d_model head on each chip: ~4x the tp-4 share
    head_bytes = QWEN3_8B.vocab_size * QWEN3_8B.d_model * 2
    extra = whole.logits_s(8.0) - split.logits_s(8.0)
    assert extra == pytest.approx(0.75 * head_bytes / (V6E.hbm_bytes_per_s * 0.9), rel=0.1)
    # both tables whole on every rank: the KV pool loses 3/4 of two tables' bytes
    # (the rows' --mem-fraction-static 0.8, so that only the tables differ between builds)
    kw = {"engine": "sglang", "memory_fraction": 0.8}
    before = serve.kv_capacity_tokens(PLAN, "bf16", split, date="2025-09-12", **kw)
    after = serve.kv_capacity_tokens(PLAN, "bf16", split, date="2025-11-01", **kw)
    lost = 2 * head_bytes * 0.75 / split.kv_bytes_per_token()
    assert after - before == pytest.approx(lost, rel=1e-6)
