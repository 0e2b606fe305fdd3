"""Dense block-scaled fp8 GEMMs at decode M on Hopper against the serving engines' own
kernels (AIConfigurator's SGLang DeepGEMM and TensorRT-LLM tables,
data/aiconfigurator-gemm-fp8-block-hopper.csv; efficiency.toml BS-HOPPER): the kernels split
no K at decode M, so a K = 7168 projection takes 11-14 us whatever N and a K = 256 one ~5 us;
a launch, ``blockscale_gemm_latency_s`` and the longer of the weight stream and
``blockscale_gemm_k_latency_s`` per 1024 of K reproduce them, where the per-tensor fp8
GEMM's fixed cost and the bare weight stream ran the K = 7168 shapes 20-30 % fast and the
short-K ones up to 1.8x slow."""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.step.timing import time_ops
from chipwise.workload.ir import Op, OpKind

TABLE = Path(__file__).parent / "data" / "aiconfigurator-gemm-fp8-block-hopper.csv"


def _rows() -> list[dict[str, str]]:
    with TABLE.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _op(m: int, n: int, k: int) -> Op:
    return Op(name="proj", kind=OpKind.MATMUL, dtype="fp8", mnk=(m, n, k), block_scaled=True)


def _log_errors(*, refit: bool = True) -> list[float]:
    out = []
    for r in _rows():
        eff = efficiency_for(chip(r["chip"]))
        if not refit:  # the model before BS-HOPPER: the per-tensor fp8 GEMM's fixed cost
            eff = replace(eff, blockscale_gemm_latency_s=0.0, blockscale_gemm_k_latency_s=0.0)
        model = GpuModel(chip(r["chip"]), eff).for_engine(r["engine"])
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        out.append(math.log(_gemm_s(model, _op(m, n, k)) / (float(r["us"]) * 1e-6)))
    return out


def _gemm_s(model: GpuModel, op: Op) -> float:
    """The op's time less its input quantisation's launch where SGLang / vLLM launch it on
    its own (BLOCKSCALE_INPUT_QUANT): the tables time the block GEMM on a quantised input."""
    t = model.op_time(op)
    quant = any("input quantised per 1x128 group" in note for note in t.notes)
    return t.seconds - (model.efficiency.launch_overhead_s if quant else 0.0)


def test_the_table_holds_seven_deepseek_shapes_on_two_chips_under_two_engines() -> None:
    rows = _rows()
    assert len(rows) == 112
    assert {r["chip"] for r in rows} == {"h100-sxm", "h200-sxm"}
    assert {r["engine"] for r in rows} == {"sglang", "trtllm"}
    assert len({(r["n"], r["k"]) for r in rows}) == 7


def test_block_scaled_fp8_gemms_at_decode_m_run_at_the_kernels_time() -> None:
    fitted, before = _log_errors(), _log_errors(refit=False)
    assert abs(statistics.median(fitted)) <= math.log(1.08), statistics.median(fitted)
    assert statistics.mean(abs(e) for e in fitted) <= 0.13
    p90 = sorted(abs(e) for e in fitted)[int(0.9 * len(fitted))]
    assert p90 <= math.log(1.30)
    assert statistics.mean(abs(e) for e in before) > 2 * statistics.mean(abs(e) for e in fitted)


def test_the_k_loop_sets_the_time_of_a_long_k_projection_and_not_a_short_one() -> None:
    model = GpuModel(chip("h200-sxm")).for_engine("sglang")
    long_k = model.op_time(_op(4, 2112, 7168))  # DeepSeek-V3's fused q/kv down-projection
    assert any("K-serial" in note for note in long_k.notes)
    assert long_k.memory_s == pytest.approx(1.2e-6 * 7)
    short_k = model.op_time(_op(4, 7168, 2048))  # its o_proj at tp 8: the weights stream
    assert not any("K-serial" in note for note in short_k.notes)


def test_per_tensor_fp8_gemms_keep_their_own_fixed_cost() -> None:
    eff = efficiency_for(chip("h100"))
    model = GpuModel(chip("h100")).for_engine("vllm")
    per_tensor = Op(name="proj", kind=OpKind.MATMUL, dtype="fp8", mnk=(4, 4096, 4096))
    t = model.op_time(per_tensor)
    assert any(f"{eff.fp8_gemm_latency_s * 1e6:.1f} us fixed" in note for note in t.notes)
    blocked = model.op_time(replace(per_tensor, block_scaled=True))
    assert any(
        f"{eff.blockscale_gemm_latency_s * 1e6:.1f} us fixed" in note for note in blocked.notes
    )


WIDE = Path(__file__).parent / "data" / "aiconfigurator-gemm-fp8-block-hopper-wide.csv"


def _wide(kind: str) -> list[dict[str, str]]:
    with WIDE.open() as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return [r for r in rows if r["kind"] == kind]


def _wide_ratios(kind: str, eff_change: dict[str, float] | None = None) -> list[float]:
    out = []
    for r in _wide(kind):
        eff = efficiency_for(chip(r["chip"]))
        if eff_change:
            eff = replace(eff, **eff_change)
        model = GpuModel(chip(r["chip"]), eff).for_engine(r["engine"])
        op = _op(int(r["m"]), int(r["n"]), int(r["k"]))
        if kind == "compute":
            (t,) = time_ops((op,), model, sustained=True, compute_bound_only=True)
            seconds = t.seconds
        else:
            seconds = _gemm_s(model, op)
        out.append(seconds / (float(r["latency_ms"]) * 1e-3))
    return out


def test_the_wide_table_holds_seven_streaming_shapes_and_a_compute_grid() -> None:
    decode, compute = _wide("decode"), _wide("compute")
    assert len(decode) == 112 and len({(r["n"], r["k"]) for r in decode}) == 7
    assert len(compute) == 72 and {r["engine"] for r in compute} == {"trtllm"}


def test_weight_streaming_block_gemms_run_below_the_dense_stream_rate() -> None:
    """BS-STREAM: Qwen3's projections at decode M (weights >= 16 MB) take what the per-tensor
    kernels take; at the dense GEMM's stream rate the model ran them 12 % fast (median
    0.88), at 0.9 of it 6 % (0.94; the fraction is fitted over all 5736 rows of the tables,
    where the shapes >= 8 MB sit at -1.3 %)."""
    assert efficiency_for(chip("h100-sxm")).blockscale_gemm_stream_fraction == pytest.approx(0.9)
    fitted = statistics.median(_wide_ratios("decode"))
    before = statistics.median(_wide_ratios("decode", {"blockscale_gemm_stream_fraction": 0.0}))
    assert 0.92 <= fitted <= 1.05, fitted
    assert before < 0.9, before


def test_trtllm_block_gemms_at_compute_bound_m_run_at_their_own_rate() -> None:
    """BS-TRTLLM: TensorRT-LLM's block GEMM runs ~0.9 of the per-tensor fp8 rate."""
    eff = efficiency_for(chip("h200-sxm"))
    assert eff.trtllm_blockscale_gemm_peak_fraction == pytest.approx(0.64)
    fitted = statistics.median(_wide_ratios("compute"))
    before = statistics.median(
        _wide_ratios("compute", {"trtllm_blockscale_gemm_peak_fraction": 0.0})
    )
    assert 0.95 <= fitted <= 1.05, fitted
    assert before < 0.93, before


def test_sglang_and_vllm_quantise_a_block_linear_input_in_a_kernel_of_their_own() -> None:
    op = _op(4, 6144, 4096)
    for engine in ("sglang", "vllm"):
        t = GpuModel(chip("h100-sxm")).for_engine(engine).op_time(op)
        assert any("input quantised per 1x128 group" in note for note in t.notes), engine
    # TensorRT-LLM's table holds its quantisation; a per-tensor GEMM and Blackwell add none
    trt = GpuModel(chip("h100-sxm")).for_engine("trtllm").op_time(op)
    per_tensor = (
        GpuModel(chip("h100-sxm")).for_engine("sglang").op_time(replace(op, block_scaled=False))
    )
    b200 = GpuModel(chip("b200")).for_engine("sglang").op_time(op)
    for t in (trt, per_tensor, b200):
        assert not any("input quantised per 1x128 group" in note for note in t.notes)
