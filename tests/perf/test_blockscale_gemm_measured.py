"""A block-scaled fp8 GEMM at decode M on CDNA3 against AITER's tuned CK block-scale kernels
(efficiency.toml BS-K): the kernels have no split-K, so every K = 7168 shape takes ~18-22 us
whatever N; a launch plus the longer of the weight stream and ``blockscale_gemm_k_latency_s``
per 1024 of K reproduces the table, where the bare weight stream took ~0.3 of their time."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.gpu import GpuModel
from chipwise.workload.ir import Op, OpKind

TABLE = Path(__file__).parent / "data" / "aiter-blockscale-gemm-cdna3.csv"


def _rows() -> list[tuple[int, int, int, float]]:
    with TABLE.open() as f:
        lines = (line for line in f if not line.startswith("#"))
        return [
            (int(r["m"]), int(r["n"]), int(r["k"]), float(r["us"]) * 1e-6)
            for r in csv.DictReader(lines)
        ]


def _op(m: int, n: int, k: int, *, block_scaled: bool = True) -> Op:
    return Op(name="proj", kind=OpKind.MATMUL, dtype="fp8", mnk=(m, n, k),
              block_scaled=block_scaled)  # fmt: skip


def test_the_table_holds_nine_deepseek_shapes_at_three_m() -> None:
    rows = _rows()
    assert len(rows) == 27
    assert len({(n, k) for _, n, k, _ in rows}) == 9


@pytest.mark.parametrize("chip_id", ["mi300x", "mi325x"])
def test_block_scaled_fp8_gemms_at_decode_m_run_at_the_kernels_time(chip_id: str) -> None:
    model = GpuModel(chip(chip_id))
    rows = _rows()
    ratios = [model.op_time(_op(m, n, k)).seconds / s for m, n, k, s in rows]
    assert 0.9 <= statistics.median(ratios) <= 1.15
    assert sum(abs(r - 1) <= 0.25 for r in ratios) >= 0.85 * len(ratios)
    # the bare weight stream (no K-serial term): a median ~0.3 of the kernels' time at K = 7168
    bare = [
        model.op_time(_op(m, n, k, block_scaled=False)).seconds / s
        for m, n, k, s in rows
        if k == 7168
    ]
    assert statistics.median(bare) < 0.4


def test_cdna_and_hopper_set_the_k_serial_latency() -> None:
    assert efficiency_for(chip("mi300x")).blockscale_gemm_k_latency_s == pytest.approx(2.3e-6)
    # CDNA4's own CK table (test_cdna4_serving_kernels.py, BS-K4)
    assert efficiency_for(chip("mi355x")).blockscale_gemm_k_latency_s == pytest.approx(2.6e-6)
    # Hopper's DeepGEMM / CUTLASS kernels (test_blockscale_gemm_hopper.py, BS-HOPPER)
    assert efficiency_for(chip("h100")).blockscale_gemm_k_latency_s == pytest.approx(1.2e-6)
    assert efficiency_for(chip("b200")).blockscale_gemm_k_latency_s == 0.0


def test_the_k_serial_floor_leaves_routed_experts_and_large_m_alone() -> None:
    model = GpuModel(chip("mi300x"))
    # a large-M block-scaled GEMM is set by its MMAs, not the K loop
    big = model.op_time(_op(8192, 7168, 2048))
    assert big.compute_s > 5 * 2.3e-6 * 2
    # a routed expert's GEMM (the fused-MoE kernel) does not take the dense K-serial floor
    expert = Op(name="expert_up", kind=OpKind.MATMUL, dtype="fp8", mnk=(1, 512, 7168), batch=8,
                grouped=True, block_scaled=True)  # fmt: skip
    assert not any("K-serial" in n for n in model.op_time(expert).notes)


FMOE = Path(__file__).parent / "data" / "aiter-fmoe-dsv3-cdna4.csv"


def _fmoe_rows() -> list[tuple[int, float]]:
    with FMOE.open() as f:
        lines = (line for line in f if not line.startswith("#"))
        return [(int(r["tokens"]), float(r["us"]) * 1e-6) for r in csv.DictReader(lines)]


def _expert_block_s(chip_id: str, tokens: int) -> float:
    """The per-op model's routed-expert block (up, activation, down) of one DeepSeek-V3 TP8
    decode layer under SGLang at ``tokens`` tokens, without the launches of the activations'
    fp8 quantisation kernels: AITER's tuner times the two stages on inputs it sorted and
    quantised once (gpu.AITER_ENGINES)."""
    from chipwise.perf.base import Plan
    from chipwise.perf.predictor import Predictor
    from chipwise.workload import load_workload_model
    from chipwise.workload.ir import Inference, Workload

    phase = Inference(batch=tokens, input_len=1000, output_len=2, engine="sglang")
    serve = Predictor(Workload(model=load_workload_model("deepseek-v3"), phase=phase),
                      chip_id, "fp8").serve_model()  # fmt: skip
    _, decode = serve.layer_op_times(Plan(tp=8), batch=tokens, input_len=1000, output_len=2)
    names = ("expert_up", "expert_act", "expert_down")
    launch = efficiency_for(chip(chip_id)).launch_overhead_s
    quant = sum(any("fp8 input quantised" in n for n in t.notes) for t in decode)
    assert quant == 2  # one block-fp8 quantisation kernel before each stage
    return sum(t.seconds for t in decode if t.op.name in names) - quant * launch


def test_the_fused_moe_table_holds_ten_token_counts() -> None:
    assert [t for t, _ in _fmoe_rows()] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]


def test_block_scaled_fp8_experts_at_few_tokens_take_the_k_serial_floor_on_cdna4() -> None:
    ratios = {t: _expert_block_s("mi355x", t) / s for t, s in _fmoe_rows()}
    # 1-4 tokens: the first stage's K loop (~45 us at K = 7168) sets the block (BS-MOE)
    assert all(0.85 <= ratios[t] <= 1.15 for t in (1, 2, 4))
    # 16-512 tokens: the weight stream, 0.84-0.94 of the two stages' time (16 tokens the
    # lowest: its first stage reads 2.5 TB/s)
    assert all(0.8 <= ratios[t] <= 1.1 for t in (16, 32, 64, 128, 256, 512))
