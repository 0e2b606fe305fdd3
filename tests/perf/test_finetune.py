"""LoRA / QLoRA: trainable parameters, memory and step time against the published accounting."""

from __future__ import annotations

import pytest

from chipwise.errors import WorkloadError
from chipwise.perf import Plan, TrainPrediction, predict
from chipwise.perf.ops.adapters import QLORA_WEIGHT_BYTES
from chipwise.perf.step.train import training_flops_per_token
from chipwise.workload.accounting import model_flops_per_token, params_total
from chipwise.workload.finetune import lora_params
from chipwise.workload.ir import Training, Workload
from chipwise.workload.load import load_workload_model

LLAMA3_8B = load_workload_model("llama3-8b")
PLAN = Plan(microbatch=1, recompute="full")


def _train(method: str, chip: str = "h100-sxm", **kw: object) -> TrainPrediction:
    phase = Training(seq_len=2048, global_batch=8, method=method, **kw)  # type: ignore[arg-type]
    pred = predict(Workload(model=LLAMA3_8B, phase=phase), chip, 1, plan=PLAN)
    assert isinstance(pred, TrainPrediction)
    return pred


def test_llama3_8b_rank_16_on_all_projections_has_peft_s_41_9m_trainable_parameters() -> None:
    # 32 x 16 x (2 x 8192 + 2 x 5120 + 3 x 18432), PEFT's print_trainable_parameters()
    assert lora_params(LLAMA3_8B, Training(method="lora")) == 41_943_040


def test_adapters_scale_with_rank_and_targets() -> None:
    r16 = lora_params(LLAMA3_8B, Training(method="lora", lora_rank=16))
    assert lora_params(LLAMA3_8B, Training(method="lora", lora_rank=64)) == 4 * r16
    qv = lora_params(LLAMA3_8B, Training(method="lora", lora_targets=("q_proj", "v_proj")))
    assert qv == 32 * 16 * (8192 + 5120)
    assert lora_params(LLAMA3_8B, Training(method="full")) == 0.0


@pytest.mark.parametrize(
    ("kw", "word"),
    [({"method": "dora"}, "method"), ({"lora_rank": 0}, "rank"), ({"lora_targets": ("x",)}, "x")],
)
def test_a_bad_fine_tuning_setting_is_a_clear_error(kw: dict[str, object], word: str) -> None:
    with pytest.raises(WorkloadError, match=word):
        Training(**kw)  # type: ignore[arg-type]


def test_lora_skips_the_frozen_weight_gradients_about_a_third_of_the_flops() -> None:
    full = model_flops_per_token(LLAMA3_8B, 2048)
    lora = training_flops_per_token(LLAMA3_8B, Training(seq_len=2048, method="lora"))
    assert 0.62 < lora / full < 0.72  # 4 of 6 FLOPs per weight + attention + adapters


def test_lora_keeps_no_gradients_or_adam_states_for_the_frozen_base() -> None:
    full, lora = _train("full", "b200"), _train("lora", "b200")
    n = params_total(LLAMA3_8B)
    assert full.memory.optimizer_bytes == pytest.approx(12 * n, rel=0.01)
    adapters = 41_943_040
    assert lora.memory.grads_bytes == pytest.approx(4 * adapters, rel=0.01)
    assert lora.memory.optimizer_bytes == pytest.approx(8 * adapters, rel=0.01)
    assert lora.memory.weights_bytes == pytest.approx(2 * n + 4 * adapters, rel=0.01)
    # activations are still stored for the backward through the frozen layers; the
    # Hugging Face loss adds 12 bytes per logit (fp32 logits, shifted copy, log-softmax,
    # fp32 gradient: 16 against the fused loss's 4)
    tokens = full.plan.microbatch * 2048
    extra = 12 * tokens * LLAMA3_8B.vocab_size
    assert lora.memory.activations_bytes == pytest.approx(full.memory.activations_bytes + extra)


def test_qlora_stores_the_base_matmuls_in_about_half_a_byte() -> None:
    lora, qlora = _train("lora"), _train("qlora")
    embed_and_head = 2 * 128256 * 4096
    matmuls = params_total(LLAMA3_8B) - embed_and_head
    saved = lora.memory.weights_bytes - qlora.memory.weights_bytes
    assert saved == pytest.approx(matmuls * (2 - QLORA_WEIGHT_BYTES), rel=0.01)
    assert pytest.approx(0.516, abs=0.001) == QLORA_WEIGHT_BYTES  # QLoRA §3: 4.127 bits


def test_lora_is_faster_than_full_and_qlora_pays_for_dequantization() -> None:
    full, lora, qlora = _train("full", "b200"), _train("lora", "b200"), _train("qlora", "b200")
    # LoRA drops the base weights' gradient GEMMs (a third of the GEMM FLOPs) and their
    # optimizer update; the forward, the data-gradient GEMMs and attention remain
    assert lora.step_time_s < 0.9 * full.step_time_s
    assert lora.step_time_s < qlora.step_time_s


def test_qlora_fits_an_8b_fine_tune_on_one_24_gb_gpu_where_full_training_does_not() -> None:
    assert _train("qlora", "l4").fits
    assert not _train("full", "l4").fits


def test_qlora_fits_a_65b_fine_tune_on_one_48_gb_gpu_as_the_qlora_paper_reports() -> None:
    # Dettmers et al. 2023, abstract: "finetune a 65B parameter model on a single 48GB GPU"
    # (LLaMA 65B: 80 layers, d=8192, 64 heads, d_ff=22016, vocab 32000; r=64 on all linear
    # layers, micro-batch 1 with gradient checkpointing, as in the paper's setup).
    from chipwise.workload.ir import TransformerSpec

    llama65 = TransformerSpec(
        name="llama-65b", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=64, head_dim=128,
        d_ff=22016, vocab_size=32000,
    )  # fmt: skip
    gpu_48gb = 48 * 2**30  # the paper's 48 GB GPUs (RTX A6000, A40): 48 GiB
    for method, fits in (("qlora", True), ("lora", False)):
        phase = Training(seq_len=512, global_batch=16, method=method, lora_rank=64)
        pred = predict(Workload(model=llama65, phase=phase), "a100-sxm-80gb", 1, plan=PLAN)
        assert isinstance(pred, TrainPrediction)
        assert (pred.memory.total_bytes <= gpu_48gb) is fits, pred.memory.total_bytes / 2**30


def test_double_quantisation_dequantises_the_absmax_before_each_nf4_weight() -> None:
    from chipwise.perf.ops.adapters import QLORA_BLOCK, dequant_ops
    from chipwise.workload.ir import Op, OpKind

    mm = Op(name="mlp_down", kind=OpKind.MATMUL, dtype="bf16", flops=2.0 * 8 * 4096 * 14336,
            bytes_read=0.0, bytes_written=0.0, shape=(8, 4096), mnk=(8, 4096, 14336))  # fmt: skip
    ops = dequant_ops((mm,), Training(method="qlora"))
    # bitsandbytes dequantize_4bit: dequantize_blockwise(absmax), absmax += offset, NF4 kernel
    assert [o.name for o in ops] == [
        "mlp_down_absmax_dequant", "mlp_down_absmax_offset", "mlp_down_dequant",
    ]  # fmt: skip
    blocks = 4096 * 14336 / QLORA_BLOCK
    assert ops[0].bytes_written == ops[1].bytes_written == 4 * blocks  # fp32 absmax
    assert ops[2].bytes_written == 2 * 4096 * 14336  # the bf16 copy the GEMM reads
    assert dequant_ops((mm,), Training(method="lora")) == ()
