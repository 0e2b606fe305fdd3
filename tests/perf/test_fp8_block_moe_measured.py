"""Served MoE blocks with block-scaled fp8 experts on Hopper under TensorRT-LLM against its
measured CUTLASS fused-MoE kernels (NVIDIA AIConfigurator's kernel database,
data/aiconfigurator-moe-fp8-block.csv): estimate, then compare with a measurement."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import Efficiency, efficiency_for
from tests.perf.aic_moe import Measured, modelled_us, read_measured

DATA = Path(__file__).parent / "data" / "aiconfigurator-moe-fp8-block.csv"


def _rows() -> list[Measured]:
    return read_measured(DATA)


def _model_us(
    m: Measured, eff: Efficiency | None = None, engine: str = "trtllm", block: int = 128
) -> float:
    """The per-op model's MoE block for the measured shape, a checkpoint with ``block`` x
    ``block`` fp8 weight scales (0 = per-tensor), its experts loaded as the table's balanced
    routing loads them."""
    return modelled_us(m, "fp8", engine=engine, eff=eff, fp8_weight_block=block, balanced=True)


def _log_errors(*, dense: bool = False) -> list[float]:
    out = []
    for m in _rows():
        eff = None
        if dense:  # the experts at the dense fp8 GEMM's rate (the model before TRTLLM-FP8-MOE)
            eff = replace(efficiency_for(chip(m.chip)), trtllm_fp8_expert_peak_fraction=0.0)
        out.append(math.log(_model_us(m, eff) / m.us))
    return out


def test_the_table_covers_the_served_fp8_moe_shapes_on_h100_and_h200() -> None:
    rows = _rows()
    assert {m.chip for m in rows} == {"h100-sxm", "h200-sxm"}
    assert {m.hidden for m in rows} == {7168, 4096, 2048}


def test_cutlass_fp8_block_moe_blocks_match_the_kernels_they_were_fitted_on() -> None:
    """TensorRT-LLM's CUTLASS block-fp8 fused MoE (the TRTLLM-FP8-MOE fit's table, zoo
    shapes, 1-16384 tokens; 0.28 centres its >= 1024-token rows, so the whole sample runs
    slow at <= 768 tokens): median error within 10 % and median |error| within 20 %, where
    the dense fp8 GEMM's rate ran the experts a median 13 % fast with a p90 of 2x."""
    fitted, dense = _log_errors(), _log_errors(dense=True)
    assert abs(statistics.median(fitted)) <= math.log(1.10), statistics.median(fitted)
    assert statistics.median(abs(e) for e in fitted) <= math.log(1.20)
    p90 = sorted(abs(e) for e in fitted)[int(0.9 * len(fitted))]
    p90_dense = sorted(abs(e) for e in dense)[int(0.9 * len(dense))]
    assert p90 < p90_dense


def test_only_tensorrt_llm_experts_take_the_cutlass_rate() -> None:
    """vLLM and SGLang run their Triton fused_moe (fused_moe_fp8_gemm_peak_fraction); a
    dense fp8 projection keeps the dense rate; chips without a measurement keep it too."""
    eff = efficiency_for(chip("h200-sxm"))
    assert eff.grouped_gemm_fraction("fp8", fused_moe=False, trtllm_moe=True) == 0.28
    assert eff.grouped_gemm_fraction("fp8", fused_moe=False) == eff.gemm_fraction("fp8")
    assert eff.grouped_gemm_fraction("fp8", fused_moe=True) == (
        eff.fused_moe_fp8_gemm_peak_fraction
    )
    b200 = efficiency_for(chip("b200"))
    assert b200.grouped_gemm_fraction("fp8", fused_moe=False, trtllm_moe=True) == (
        b200.gemm_fraction("fp8")
    )
    m = next(r for r in _rows() if r.tokens == 16384)
    assert _model_us(m, engine="trtllm") > _model_us(m, engine="none")
    # per-tensor fp8 experts (Mixtral's and NVIDIA's Qwen3 FP8 checkpoints) run at the dense
    # fp8 rate in the same tables: only a block-scaled checkpoint's take the CUTLASS one
    assert _model_us(m, engine="trtllm", block=0) == _model_us(m, engine="none", block=0)
