"""vLLM's Marlin-MoE on MXFP4 experts with bf16 math (``Inference.moe_backend`` "marlin":
``VLLM_MXFP4_USE_MARLIN=1`` on Hopper) against its measured kernel (NVIDIA AIConfigurator's
kernel database, data/aiconfigurator-moe-marlin-mxfp4.csv; efficiency.toml MARLIN-MOE):
estimate, then compare."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import Efficiency, efficiency_for
from chipwise.perf.ops import gpu
from chipwise.perf.ops.gpu import MARLIN_MOE, GpuModel, w4a16_expert_rows
from chipwise.perf.ops.layers import Dtypes, Shard, mlp_ops
from chipwise.perf.step.timing import time_ops
from chipwise.workload.ir import Inference, TransformerSpec
from tests.perf.aic_moe import OUTSIDE, Measured, balanced_experts, read_measured

DATA = Path(__file__).parent / "data" / "aiconfigurator-moe-marlin-mxfp4.csv"


def _rows() -> list[Measured]:
    return read_measured(DATA)


def _served_us(m: Measured, backend: str, eff: Efficiency | None) -> float:
    """The MoE block of the measured shape as a serving step times it (the serving share
    of each op applied, ``step/timing.time_ops``), its experts loaded as the table's
    balanced routing loads them, under ``backend`` (``Inference.moe_backend``)."""
    spec = TransformerSpec(
        name="moe-shape", n_layers=1, d_model=m.hidden, n_heads=64, n_kv_heads=4,
        head_dim=128, d_ff=m.inter, vocab_size=1024, n_experts=m.experts,
        experts_per_token=m.topk, moe_d_ff=m.inter, expert_quant="mxfp4",
    )  # fmt: skip
    model = GpuModel(chip(m.chip), eff).for_engine("vllm").with_moe_backend(backend)
    ops = mlp_ops(spec, b=m.tokens, s=1, shard=Shard(tp=1, ep=1),
                  dt=Dtypes.for_precision("int4"), moe=True)  # fmt: skip
    ops = balanced_experts(ops, tokens=m.tokens, topk=m.topk, experts=m.experts, ep=1)
    kept = tuple(op for op in ops if op.name not in OUTSIDE)
    return sum(t.seconds for t in time_ops(kept, model, compute_bound_only=True)) * 1e6


def _log_error(m: Measured, backend: str = MARLIN_MOE, eff: Efficiency | None = None) -> float:
    """log(served model / kernel) of the MoE block (``_served_us``)."""
    return math.log(_served_us(m, backend, eff) / m.us)


def test_the_table_holds_the_mxfp4_marlin_rows_on_both_hopper_parts() -> None:
    rows = _rows()
    assert len(rows) == 270
    assert {m.chip for m in rows} == {"h100-sxm", "h200-sxm"}
    assert {m.dtype for m in rows} == {"w4a16_mxfp4"}
    # moe_tp 1-16: one rank's share of the 3072-wide intermediate
    assert {m.inter for m in rows} == {3072, 1536, 768, 384, 192}


def test_marlin_moe_blocks_match_the_kernel_they_were_fitted_on() -> None:
    """As a serving step times it (the training step's sustained share on its compute, as
    fitted): median error within 5 % and median |error| within 8 % (fitted: -0 % / 5 %, p90
    19 %), and within 10 % at prefill sizes (>= 1024 tokens: +1 % / 6 %)."""
    errors = [_log_error(m) for m in _rows()]
    assert abs(statistics.median(errors)) <= math.log(1.05)
    assert statistics.median(abs(e) for e in errors) <= math.log(1.08)
    prefill = [_log_error(m) for m in _rows() if m.tokens >= 1024]
    assert abs(statistics.median(prefill)) <= math.log(1.10)


def test_the_triton_kernels_values_time_marlin_at_prefill_sizes_about_half() -> None:
    """The Hopper default (triton_kernels matmul_ogs: warpgroup MMA at the bf16 MAMF on up to
    128-row blocks) on Marlin's rows at >= 1024 tokens: a median ~25 % too fast even with
    the serving share (43 % per op)."""
    prefill = [_log_error(m, backend="") for m in _rows() if m.tokens >= 1024]
    assert statistics.median(prefill) <= math.log(0.85)


def test_the_pipeline_fill_keeps_narrow_k_ranks_near_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At moe_tp 16 (the down projection's K is 192) the slices' K loops are short: the
    pipeline fill narrows the fit's spread from moe_tp 1 to 16 (at prefill sizes the
    moe_tp 16 rows run a median -28 % without it, -16 % with it)."""
    narrow = [m for m in _rows() if m.inter == 192 and m.tokens >= 1024]
    with_fill = statistics.median(_log_error(m) for m in narrow)
    monkeypatch.setattr(gpu, "K_FILL", 0)
    without = statistics.median(_log_error(m) for m in narrow)
    assert math.log(0.80) <= with_fill <= math.log(1.05)
    assert without <= with_fill - math.log(1.08)


def test_only_hopper_measures_marlin_and_elsewhere_the_w4a16_values_apply() -> None:
    """Ampere's own W4A16 values are Marlin-MoE's already (SGLang's INT4 table); Hopper's
    Marlin values sit below its Triton kernel's bf16 MAMF."""
    hopper = efficiency_for(chip("h100-sxm"))
    assert hopper.marlin_expert_peak_fraction == pytest.approx(0.44)
    assert hopper.marlin_expert_dequant_fraction == pytest.approx(0.24)
    assert hopper.marlin_expert_peak_fraction < hopper.gemm_peak_fraction
    assert efficiency_for(chip("a100-sxm-80gb")).marlin_expert_peak_fraction == 0.0
    m = next(m for m in _rows() if m.chip == "h100-sxm" and m.tokens == 4096 and m.inter == 3072)
    ampere = replace(m, chip="a100-sxm-80gb")
    # on Ampere the backend changes only the fused ops (the gather), not the rates
    assert _log_error(ampere) == pytest.approx(_log_error(ampere, backend=""), abs=0.05)


def test_marlin_slices_are_64_rows() -> None:
    assert w4a16_expert_rows(129, MARLIN_MOE) == (192, 3)
    assert w4a16_expert_rows(40, MARLIN_MOE) == (48, 1)


def test_the_backend_is_a_stated_choice() -> None:
    assert Inference(engine="vllm", moe_backend="marlin").moe_backend == MARLIN_MOE
