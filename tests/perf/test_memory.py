"""Bytes per chip: ZeRO levels, Korthikanti activations, recompute, KV cache, reserve."""

from __future__ import annotations

import dataclasses

import pytest

from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.layers import weight_bytes
from chipwise.perf.plan.memory import (
    activation_bytes_per_token_layer,
    in_flight_microbatches,
    reserve_bytes,
    serve_memory,
    stage_params,
    train_memory,
)
from chipwise.workload.ir import TransformerSpec
from chipwise.workload.presets import load_preset

H100 = dataclasses.replace(chip("h100-sxm"), hbm_capacity_bytes=80e9)
D = 1024
# GPT-style: MHA, non-gated 4d MLP, no dropout; Korthikanti's 34 s*b*h minus the 2 bytes of
# dropout masks = 32 bytes per token per unit of width.
GPT = TransformerSpec(
    name="gpt-tiny", n_layers=4, d_model=D, n_heads=16, n_kv_heads=16, head_dim=64,
    d_ff=4 * D, vocab_size=32000, gated_mlp=False,
)  # fmt: skip
LAYER_PARAMS = 4 * D * D + 2 * D * 4 * D
EMBED = 32000 * D


def test_stage_params_count_layers_embedding_and_head() -> None:
    assert stage_params(GPT, Plan()).total == 4 * LAYER_PARAMS + 2 * EMBED
    # pp=2: half the layers plus the heavier end; tp splits everything
    assert stage_params(GPT, Plan(pp=2, tp=2)).total == (2 * LAYER_PARAMS + EMBED) / 2


@pytest.mark.parametrize(
    ("recompute", "bytes_per_token"),
    [("none", 32 * D), ("selective", 18 * D), ("full", 2 * D)],
)
def test_activation_bytes_follow_korthikanti(recompute: str, bytes_per_token: int) -> None:
    plan = Plan(recompute=recompute)  # type: ignore[arg-type]
    assert activation_bytes_per_token_layer(GPT, plan, "bf16", moe=False) == bytes_per_token
    # sequence parallelism divides every saved tensor by tp (Korthikanti §4.2.2)
    tp2 = Plan(tp=2, recompute=recompute)  # type: ignore[arg-type]
    assert activation_bytes_per_token_layer(GPT, tp2, "bf16", moe=False) == bytes_per_token / 2


def test_one_chip_training_memory_by_hand() -> None:
    p = 4 * LAYER_PARAMS + 2 * EMBED
    m = train_memory(GPT, Plan(), seq_len=2048, microbatches=1, precision="bf16", chip=H100)
    assert m.weights_bytes == 2 * p and m.grads_bytes == 2 * p and m.optimizer_bytes == 12 * p
    acts = 32 * D * 4 * 2048  # 4 layers x 2048 tokens
    logits = 2048 * 32000 * 4.0  # bf16 logits + their gradient
    assert m.activations_bytes == pytest.approx(acts + logits)
    assert m.other_bytes == reserve_bytes(H100)


def test_zero_levels_shard_what_they_say() -> None:
    kw = {"seq_len": 2048, "microbatches": 1, "precision": "bf16", "chip": H100}
    base = train_memory(GPT, Plan(), **kw)
    zero1 = train_memory(GPT, Plan(dp=4), **kw)  # dp: optimizer states sharded
    zero3 = train_memory(GPT, Plan(fsdp=4), **kw)  # fsdp: everything sharded
    assert zero1.weights_bytes == base.weights_bytes
    assert zero1.optimizer_bytes == base.optimizer_bytes / 4
    assert zero3.weights_bytes == base.weights_bytes / 4
    assert zero3.grads_bytes == base.grads_bytes / 4
    assert zero3.optimizer_bytes == base.optimizer_bytes / 4


def test_full_recompute_keeps_layer_inputs_plus_one_working_layer() -> None:
    kw = {"seq_len": 2048, "microbatches": 1, "precision": "bf16", "chip": H100}
    full = train_memory(GPT, Plan(recompute="full"), **kw)
    logits = 2048 * 32000 * 4.0
    assert full.activations_bytes == pytest.approx(2 * D * 4 * 2048 + 32 * D * 2048 + logits)


def test_pipeline_first_stage_holds_pp_microbatches() -> None:
    assert in_flight_microbatches(Plan(pp=4), microbatches=16) == 4
    assert in_flight_microbatches(Plan(pp=4), microbatches=2) == 2
    assert in_flight_microbatches(Plan(pp=4, vp=2), microbatches=16) == 4 * (1 + 3 / 8)


def test_kv_cache_of_gqa_serving() -> None:
    llama = TransformerSpec(
        name="gqa", n_layers=2, d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128,
        d_ff=14336, vocab_size=128256,
    )  # fmt: skip
    m = serve_memory(llama, Plan(tp=2, dp=1), batch=4, context=1000, precision="bf16",
                     kv_dtype="bf16", prefill_tokens=4000, chip=H100)  # fmt: skip
    # K and V, 4 of 8 KV heads per tp rank, 128 dims, 2 bytes, 2 layers, 4 x 1000 tokens
    assert m.kv_cache_bytes == 2 * 4 * 128 * 2 * 2 * 4 * 1000


@pytest.mark.parametrize("precision", ["fp8", "fp4", "int4"])
def test_a_quantised_checkpoint_keeps_its_embedding_and_lm_head_in_bf16(precision: str) -> None:
    llama = TransformerSpec(
        name="gqa", n_layers=2, d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128,
        d_ff=14336, vocab_size=128256,
    )  # fmt: skip
    plan = Plan(tp=2)

    def weights(p: str) -> float:
        return serve_memory(llama, plan, batch=1, context=0, precision=p, kv_dtype="bf16",
                            prefill_tokens=1, chip=H100).weights_bytes  # fmt: skip

    params = stage_params(llama, plan)
    ends = 2 * 128256 * 4096 / 2  # untied embedding + LM head, split over tp=2
    assert params.ends_per_chip == ends
    assert weights(precision) == pytest.approx(
        (params.total - ends) * weight_bytes(precision) + ends * 2.0
    )
    assert weights("bf16") == pytest.approx(params.total * 2.0)


def test_experts_shard_over_ep_and_fsdp_once_not_twice() -> None:
    """ep is carved out of the fsdp ranks: mixtral on 8 chips with fsdp=8, ep=8 holds 1/8
    of every weight (published 46.7e9 params, bf16), not 1/64 of the experts."""
    from chipwise.perf.base import Plan
    from chipwise.perf.plan.memory import sharded_params
    from chipwise.workload.accounting import params_total
    from chipwise.workload.load import load_workload_model

    spec = load_workload_model("mixtral-8x7b")
    plan = Plan(fsdp=8, ep=8)
    held, opt = sharded_params(
        spec, pp=1, vp=1, tp=1, ep=plan.ep, weight_shards=8, optimizer_shards=8
    )
    assert held == pytest.approx(params_total(spec) / 8, rel=0.02)
    assert opt == pytest.approx(params_total(spec) / 8, rel=0.02)


def test_zero3_on_xla_gathers_two_tensors_not_two_layers() -> None:
    """MaxText (TPU) gathers each weight just before its matmul; PyTorch FSDP a whole block
    and the next one. On the tiny GPT: the largest tensor is the [d, vocab] head (tied
    here), the largest layer tensor one d x 4d MLP projection."""
    v6e = chip("tpu-v6e")
    kw = {"seq_len": 2048, "microbatches": 1, "precision": "bf16"}
    plan = Plan(fsdp=4, recompute="full")
    tpu = train_memory(GPT, plan, chip=v6e, **kw)
    gpu = train_memory(GPT, plan, chip=H100, **kw)
    assert tpu.other_bytes - reserve_bytes(v6e) == pytest.approx(2 * (EMBED + 4 * D * D))
    assert gpu.other_bytes - reserve_bytes(H100) == pytest.approx(2 * 2 * (LAYER_PARAMS
                                                                     + 2 * EMBED / 4))  # fmt: skip


def test_published_maxtext_405b_fits_and_a_smaller_slice_does_not() -> None:
    """tpu-recipes ran Llama 3.1 405B on 2 x v6e-256 (fsdp 512, per-device batch 1, seq 8192,
    decoder-layer inputs offloaded; CW-028); on one v6e-256 the 16 bytes per parameter alone
    (25 GB) leave no room for the activations and the gathered weights."""
    from chipwise.workload.load import load_workload_model

    spec = load_workload_model("llama3-405b")
    assert isinstance(spec, TransformerSpec)
    v6e = chip("tpu-v6e")
    kw = {"seq_len": 8192, "microbatches": 1, "precision": "bf16", "chip": v6e}
    ran = train_memory(spec, Plan(fsdp=512, recompute="full"), **kw)
    assert ran.total_bytes <= v6e.hbm_capacity_bytes
    assert train_memory(spec, Plan(fsdp=256, recompute="full"), **kw).total_bytes > (
        v6e.hbm_capacity_bytes
    )


def test_the_fragmentation_allowance_is_a_margin_not_a_requirement() -> None:
    m = train_memory(GPT, Plan(), seq_len=2048, microbatches=1, precision="bf16", chip=H100)
    assert m.slack_bytes == pytest.approx(0.05 * 80e9)  # RESERVE_FRACTION of capacity
    assert m.slack_bytes < m.other_bytes  # part of the reserve, not beside it
    inside = m.total_bytes - m.slack_bytes / 2  # a capacity the total overshoots by half
    assert m.fits_in(inside) and m.tight_in(inside)
    assert m.fits_in(m.total_bytes) and not m.tight_in(m.total_bytes)
    assert not m.fits_in(m.total_bytes - m.slack_bytes - 1)


def test_published_mpt_run_at_its_largest_microbatch_fits_tight_and_the_planner_finds_it() -> None:
    """llm-foundry ran MPT-1B on 128 x A100 40GB at micro-batch 10, seq 2048, FSDP, no
    activation checkpointing (CW-088): it needs part of the fragmentation allowance; the
    planner, finding nothing with the allowance kept free at that micro-batch, returns the
    tight plan instead of refusing it."""
    from importlib import resources

    from chipwise.perf.base import TrainPrediction
    from chipwise.perf.predict import predict
    from chipwise.workload.ir import Training, Workload
    from chipwise.workload.load import load_workload_model

    path = resources.files("chipwise.validate") / "data" / "configs" / "mpt-1b.json"
    spec = load_workload_model(str(path))
    a100 = chip("a100-sxm-40gb")
    wl = Workload(model=spec, phase=Training(seq_len=2048, global_batch=1280))
    pinned = predict(wl, a100, 128, plan=Plan(fsdp=128, microbatch=10))
    assert isinstance(pinned, TrainPrediction) and pinned.fits and pinned.tight
    # held to that micro-batch and no recompute, the planner returns the tight plan
    from chipwise.perf import Predictor

    keys = {"fsdp": 128, "dp": 1, "tp": 1, "pp": 1, "microbatch": 10, "recompute": "none"}
    chosen = Predictor(wl, a100).train(128, plan_keys=keys)
    assert chosen.plan == pinned.plan and chosen.tight
    # free to choose, it keeps the allowance: a plan that is not tight
    assert not Predictor(wl, a100).train(128).tight


def test_bf16_states_keep_eight_bytes_per_parameter_not_sixteen() -> None:
    """MaxText weight_dtype bfloat16: bf16 weights, gradients, mu (inherits weight_dtype)
    and nu (optax keeps it in the weights' dtype); no fp32 master copy."""
    p = 4 * LAYER_PARAMS + 2 * EMBED
    kw = {"seq_len": 2048, "microbatches": 1, "precision": "bf16", "chip": H100}
    mixed = train_memory(GPT, Plan(), **kw)
    bf16 = train_memory(GPT, Plan(states="bf16"), **kw)
    assert mixed.weights_bytes + mixed.grads_bytes + mixed.optimizer_bytes == 16 * p
    assert bf16.weights_bytes + bf16.grads_bytes + bf16.optimizer_bytes == 8 * p
    assert bf16.activations_bytes == mixed.activations_bytes


def test_the_published_70b_run_on_32_v6e_fits_with_bf16_states_and_gpus_never_use_them() -> None:
    """tpu-recipes ran Llama 3.1 70B on v6e-32 (fsdp 32, per-device batch 2, seq 8192,
    weight_dtype bfloat16; CW-027): with fp32 states the 16 bytes per parameter alone need
    35 GB of the 32; the planner falls back to bf16 states only when nothing else fits, and
    only on TPUs (MaxText), never for GPUs."""
    from chipwise.perf import Predictor
    from chipwise.perf.base import parse_plan
    from chipwise.workload.ir import Training, Workload
    from chipwise.workload.load import load_workload_model

    spec = load_workload_model("llama3-70b")
    wl = Workload(model=spec, phase=Training(seq_len=8192, global_batch=64))
    ran = Predictor(wl, chip("tpu-v6e")).train(32, plan_keys={"fsdp": 32, "dp": 1})
    assert ran.fits and ran.plan.states == "bf16"
    assert "states=bf16" in str(ran.plan) and parse_plan(str(ran.plan)) == ran.plan
    big = Workload(model=spec, phase=Training(seq_len=8192, global_batch=256))
    roomy = Predictor(big, chip("tpu-v6e")).train(256, plan_keys={"fsdp": 256, "dp": 1})
    assert roomy.plan.states == "fp32" and "states" not in str(roomy.plan)
    h100 = Predictor(wl, chip("h100-sxm")).train(32, plan_keys={"fsdp": 32, "dp": 1},
                                                 allow_unfit=True)  # fmt: skip
    assert h100.plan.states == "fp32"


def test_memory_counts_the_stage_layers_after_the_plans_pipeline_split() -> None:
    """With the embedding and the loss each taking a layer's slot (end_slots=1), 32 layers
    on pp=4 run as 34 slots: the busiest stage holds 9 layers, not 8, in memory too."""
    spec = load_preset("llama3-8b")
    base = Plan(pp=4, dp=2, microbatch=1)
    plain = train_memory(spec, base, seq_len=4096, microbatches=8, precision="bf16", chip=H100)
    split = train_memory(
        spec, dataclasses.replace(base, end_slots=1), seq_len=4096, microbatches=8,
        precision="bf16", chip=H100,
    )  # fmt: skip
    assert split.weights_bytes > plain.weights_bytes
    assert split.activations_bytes > plain.activations_bytes
