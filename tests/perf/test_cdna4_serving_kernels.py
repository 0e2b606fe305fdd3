"""CDNA serving ops against AMD's own kernel tables (efficiency.toml BS-K4, BS-PEAK4,
FP4-MOE-CDNA4, AITER-MLA): a block-scaled fp8 dense GEMM at decode M on CDNA4 (AITER's CK
kernels have no split-K, so ~20 us at K = 7168 whatever N, as on CDNA3) and at prefill M (its
own rate, not the per-tensor fp8 GEMM's), the MXFP4 fused-MoE expert block of DeepSeek-R1 TP8
at decode token counts and of DeepSeek-R1 TP8 and gpt-oss-120b at prefill token counts
(FP4-MOE-CDNA4-PREFILL), and the MLA decode op's fixed cost."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.gpu import GpuModel
from chipwise.workload.ir import Op, OpKind

DATA = Path(__file__).parent / "data"
GEMMS = DATA / "aiter-blockscale-gemm-cdna4.csv"
PREFILL_GEMMS = DATA / "aiter-blockscale-gemm-cdna4-prefill.csv"
FMOE = DATA / "aiter-fmoe-fp4-dsv3-cdna4.csv"
FMOE_PREFILL = DATA / "aiter-fmoe-fp4-prefill-cdna4.csv"
MXFP4_DSR1 = (
    Path(__file__).parents[2]
    / "src/chipwise/validate/data/configs/amd-deepseek-r1-0528-mxfp4-preview.json"
)


def _table(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _op(m: int, n: int, k: int, *, block_scaled: bool = True) -> Op:
    return Op(name="proj", kind=OpKind.MATMUL, dtype="fp8", mnk=(m, n, k),
              block_scaled=block_scaled)  # fmt: skip


def test_the_gemm_table_holds_ten_deepseek_shapes() -> None:
    rows = _table(GEMMS)
    assert len(rows) == 46
    assert len({(r["n"], r["k"]) for r in rows}) == 10


def test_block_scaled_fp8_gemms_at_decode_m_run_at_the_cdna4_kernels_time() -> None:
    model = GpuModel(chip("mi355x"))
    rows = [(int(r["m"]), int(r["n"]), int(r["k"]), float(r["us"]) * 1e-6) for r in _table(GEMMS)]
    ratios = [model.op_time(_op(m, n, k)).seconds / s for m, n, k, s in rows]
    assert 0.95 <= statistics.median(ratios) <= 1.05
    assert statistics.mean(abs(math.log(r)) for r in ratios) < 0.08
    # the bare weight stream took about half the kernels' time
    bare = [model.op_time(_op(m, n, k, block_scaled=False)).seconds / s for m, n, k, s in rows]
    assert statistics.median(bare) < 0.6
    assert efficiency_for(chip("mi355x")).blockscale_gemm_k_latency_s == pytest.approx(2.6e-6)


def test_block_scaled_fp8_gemms_at_prefill_m_run_at_the_cdna4_kernels_rate() -> None:
    from chipwise.perf.step.timing import time_ops

    eff = efficiency_for(chip("mi355x"))
    assert eff.blockscale_gemm_peak_fraction == pytest.approx(0.34)
    rows = [(int(r["m"]), int(r["n"]), int(r["k"]), float(r["us"]) * 1e-6)
            for r in _table(PREFILL_GEMMS)]  # fmt: skip
    assert len(rows) == 27 and min(m for m, _, _, _ in rows) == 1024

    def ratios(model: GpuModel) -> list[float]:
        # as a serving step times them (the sustained share stretches compute-bound ops)
        return [
            time_ops((_op(m, n, k),), model, sustained=True, compute_bound_only=True)[0].seconds / s
            for m, n, k, s in rows
        ]

    served = ratios(GpuModel(chip("mi355x")).for_engine("atom"))
    assert 0.9 <= statistics.median(served) <= 1.1
    assert statistics.mean(abs(math.log(r)) for r in served) < 0.2
    # at the per-tensor fp8 GEMM's rate the same ops ran 1.8x faster than the kernels
    per_tensor = GpuModel(
        chip("mi355x"), eff.with_values(source="test", blockscale_gemm_peak_fraction=0.0)
    )
    assert statistics.median(ratios(per_tensor.for_engine("atom"))) < 0.6
    # the rate is the block-scaled kernels' own: a per-tensor fp8 GEMM keeps its fraction
    plain = _op(8192, 7168, 2048, block_scaled=False)
    assert GpuModel(chip("mi355x")).op_time(plain).seconds == pytest.approx(
        per_tensor.op_time(plain).seconds
    )


def _expert_block_s(tokens: int) -> float:
    """The per-op model's routed-expert block (up, activation, down) of one layer of the MXFP4
    DeepSeek-R1 checkpoint at TP8 under SGLang on MI355X at ``tokens`` decode tokens, without
    the launches of the activations' MXFP4 quantisation kernels: AITER's tuner times the two
    stages on inputs it sorted and quantised once (gpu.AITER_ENGINES)."""
    from chipwise.perf.base import Plan
    from chipwise.perf.predictor import Predictor
    from chipwise.workload import load_workload_model
    from chipwise.workload.ir import Inference, Workload

    phase = Inference(batch=tokens, input_len=1000, output_len=2, engine="sglang")
    model = load_workload_model(str(MXFP4_DSR1))
    serve = Predictor(Workload(model=model, phase=phase), "mi355x", "fp4").serve_model()
    _, decode = serve.layer_op_times(Plan(tp=8), batch=tokens, input_len=1000, output_len=2)
    names = ("expert_up", "expert_act", "expert_down")
    launch = efficiency_for(chip("mi355x")).launch_overhead_s
    quant = sum(any("MXFP4 MoE input" in n for n in t.notes) for t in decode)
    assert quant == 2  # one MXFP4 quantisation kernel before each stage
    return sum(t.seconds for t in decode if t.op.name in names) - quant * launch


def test_mxfp4_experts_at_decode_tokens_run_at_the_ck_kernels_time() -> None:
    rows = [(int(r["tokens"]), float(r["us"]) * 1e-6) for r in _table(FMOE)]
    assert [t for t, _ in rows][:10] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    ratios = {t: _expert_block_s(t) / s for t, s in rows if t <= 512}
    # 1-4 tokens: the kernels' fixed cost (fp4_expert_latency_s per expert GEMM) sets the block
    assert all(0.85 <= ratios[t] <= 1.15 for t in (1, 2, 4))
    assert all(0.85 <= r <= 1.15 for r in ratios.values())
    assert statistics.mean(abs(math.log(r)) for r in ratios.values()) < 0.07


def _fp4_expert_block_s(
    table: str, tokens: int, routed_fraction: float | None = None, engine: str = ""
) -> float:
    """The per-op model's routed-expert block (up, activation, down) of one layer at ``tokens``
    tokens on MI355X, as in ``_expert_block_s``: DeepSeek-R1 MXFP4 at TP8 under SGLang for the
    ``dsv3`` table, gpt-oss-120b at TP1 under ATOM for the others; ``routed_fraction`` replaces
    ``fp4_expert_routed_peak_fraction``; ``engine`` replaces the engine."""
    from chipwise.perf.base import Plan
    from chipwise.perf.predictor import Predictor
    from chipwise.workload import load_workload_model
    from chipwise.workload.ir import Inference, Workload

    ds = table.startswith("dsv3")
    default, tp = ("sglang", 8) if ds else ("atom", 1)
    engine = engine or default
    phase = Inference(batch=tokens, input_len=1000, output_len=2, engine=engine)
    model = load_workload_model(str(MXFP4_DSR1) if ds else "gpt-oss-120b")
    eff = efficiency_for(chip("mi355x"))
    if routed_fraction is not None:
        eff = eff.with_values(source="test", fp4_expert_routed_peak_fraction=routed_fraction)
    workload = Workload(model=model, phase=phase)
    serve = Predictor(workload, "mi355x", "fp4", efficiency=eff).serve_model()
    _, decode = serve.layer_op_times(Plan(tp=tp), batch=tokens, input_len=1000, output_len=2)
    names = ("expert_up", "expert_act", "expert_down")
    launch = efficiency_for(chip("mi355x")).launch_overhead_s
    quant = sum(any("MXFP4 MoE input" in n for n in t.notes) for t in decode)
    return sum(t.seconds for t in decode if t.op.name in names) - quant * launch


def test_mxfp4_experts_at_prefill_tokens_run_at_the_aiter_kernels_rate() -> None:
    assert efficiency_for(chip("mi355x")).fp4_expert_routed_peak_fraction == pytest.approx(0.13)
    rows = [(r["table"], int(r["tokens"]), float(r["us"]) * 1e-6) for r in _table(FMOE_PREFILL)]
    assert len(rows) == 19 and min(t for _, t, _ in rows) == 1024
    ratios = [_fp4_expert_block_s(name, t) / s for name, t, s in rows]
    assert 0.85 <= statistics.median(ratios) <= 1.15
    assert statistics.mean(abs(math.log(r)) for r in ratios) < 0.3
    # on the tile plan alone (the dense MXFP4 GEMM's rate) the blocks ran ~2x the kernels' speed
    free = [_fp4_expert_block_s(name, t, 0.0) / s for name, t, s in rows]
    assert statistics.median(free) < 0.6
    # decode-size blocks keep their tile plan: the ceiling binds only on many routed rows
    assert _fp4_expert_block_s("dsv3", 64) == pytest.approx(_fp4_expert_block_s("dsv3", 64, 0.0))
    # only AITER's fused MoE (SGLang, ATOM) was timed: vLLM's Triton a8w4 MoE keeps its plan
    vllm = _fp4_expert_block_s("gptoss", 8192, engine="vllm")
    assert vllm == pytest.approx(_fp4_expert_block_s("gptoss", 8192, 0.0, engine="vllm"))


def _decode_attention(*, mla: bool) -> Op:
    """One decode step's attention of 4 sequences at context 1384: DeepSeek-V3 MLA at TP8
    (16 heads reading the 576-wide latent, writing 128-wide heads) or GQA (8 KV heads of 128)."""
    width, heads, cache = (576, 16, 4 * 1384 * 576 * 2) if mla else (128, 8, 4 * 1384 * 2048 * 2)
    out = 4 * heads * 128 * 2
    return Op(name="attention", kind=OpKind.ATTENTION, dtype="bf16", flops=1.0,
              bytes_read=cache + out, bytes_written=out, shape=(4, heads, 1, 128),
              mnk=(1, 1384, width), batch=4 * heads)  # fmt: skip


@pytest.mark.parametrize(("chip_id", "floor"), [("mi355x", 12.1e-6), ("mi300x", 15.5e-6)])
def test_mla_decode_pays_the_aiter_kernels_fixed_cost_on_cdna(chip_id: str, floor: float) -> None:
    eff = efficiency_for(chip(chip_id))
    assert eff.mla_decode_attention_floor_s == pytest.approx(floor)
    assert eff.decode_attention_floor_s == 0.0  # GQA decode on CDNA: one launch, as before
    model = GpuModel(chip(chip_id))
    assert model.op_time(_decode_attention(mla=True)).seconds >= floor
    assert model.op_time(_decode_attention(mla=False)).seconds < floor


def test_only_mla_ops_count_as_latent_decode_attention() -> None:
    from chipwise.perf.ops.gpu import is_latent_decode_attention

    assert is_latent_decode_attention(_decode_attention(mla=True))
    assert not is_latent_decode_attention(_decode_attention(mla=False))


# ROCm/aiter PR #3116 (2026-05-14), its reviewer's pre-patch run of bench_moe_gemm_a8w4.py
# --shape 2880 5760 --experts 128 4 on MI355X: the gpt-oss-120b down GEMM of AITER's Triton
# a8w4 MoE (vLLM's ROCm MXFP4 experts), kernel us by tokens (efficiency.toml A8W4-MOE)
A8W4_DOWN_US = {64: 132.35, 128: 150.30, 256: 153.28, 1024: 237.18}


def _gpt_oss_expert_down_s(tokens: int, engine: str) -> float:
    """gpt-oss-120b's routed down GEMM of one layer at ``tokens`` tokens on one MI355X."""
    from chipwise.perf.base import Plan
    from chipwise.perf.predictor import Predictor
    from chipwise.workload import load_workload_model
    from chipwise.workload.ir import Inference, Workload

    phase = Inference(batch=tokens, input_len=1000, output_len=2, engine=engine)
    workload = Workload(model=load_workload_model("gpt-oss-120b"), phase=phase)
    serve = Predictor(workload, "mi355x", "fp4").serve_model()
    _, decode = serve.layer_op_times(Plan(tp=1), batch=tokens, input_len=1000, output_len=2)
    return next(t.seconds for t in decode if t.op.name == "expert_down")


def test_a8w4_block_m_follows_aiters_routing() -> None:
    from chipwise.perf.efficiency import a8w4_block_m

    # max(16, min(next_power_of_2(tokens x top_k // experts), 128))
    assert [a8w4_block_m(r) for r in (0.5, 2, 16, 17, 22.3, 32, 33, 100, 500)] == [
        16, 16, 16, 32, 32, 32, 64, 128, 128,
    ]  # fmt: skip


@pytest.mark.parametrize("tokens", sorted(A8W4_DOWN_US))
def test_vllm_mxfp4_experts_stream_at_the_triton_a8w4_kernels_rate(tokens: int) -> None:
    eff = efficiency_for(chip("mi355x"))
    assert (eff.a8w4_expert_hbm_fraction, eff.a8w4_expert_wide_hbm_fraction) == (0.50, 0.33)
    model = _gpt_oss_expert_down_s(tokens, "vllm")
    assert model == pytest.approx(A8W4_DOWN_US[tokens] * 1e-6, rel=0.05)
    # AITER's CK / FlyDSL fused MoE (ATOM, SGLang) keeps its own, faster weight stream
    assert _gpt_oss_expert_down_s(tokens, "atom") < 0.8 * model
