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
        out.append(math.log(model.op_time(_op(m, n, k)).seconds / (float(r["us"]) * 1e-6)))
    return out


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
