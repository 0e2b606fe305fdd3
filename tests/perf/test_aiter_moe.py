"""AITER's fused MoE under the ROCm engines (gpu.AITER_ENGINES): the gather beside the
expert GEMMs is AITER's moe_sorting kernel (efficiency.toml AITER-SORT), the activation runs in
stage 1's epilogue and the combine inside stage 2, and an MXFP4 (a4w4) checkpoint's experts
quantise each stage's input with a kernel of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from chipwise.perf.base import Plan
from chipwise.perf.predictor import Predictor
from chipwise.workload import load_workload_model
from chipwise.workload.ir import Inference, Workload

MXFP4_DSR1 = (
    Path(__file__).parents[2]
    / "src/chipwise/validate/data/configs/amd-deepseek-r1-0528-mxfp4-preview.json"
)


def _moe_ops(model: str, chip_id: str, precision: str, engine: str) -> dict[str, object]:
    """One decode layer's routed-expert op times at 4 tokens, TP8, by op name."""
    phase = Inference(batch=4, input_len=1000, output_len=2, engine=engine)
    serve = Predictor(Workload(model=load_workload_model(model), phase=phase), chip_id,
                      precision).serve_model()  # fmt: skip
    _, decode = serve.layer_op_times(Plan(tp=8), batch=4, input_len=1000, output_len=2)
    return {t.op.name: t for t in decode}


@pytest.mark.parametrize("engine", ["sglang", "atom"])
def test_the_gather_is_aiters_sorting_kernel_under_the_rocm_engines(engine: str) -> None:
    ops = _moe_ops("deepseek-v3", "mi355x", "fp8", engine)
    assert ops["moe_permute"].seconds == pytest.approx(13.6e-6, rel=0.05)
    assert ops["expert_act"].seconds == 0.0  # in stage 1's epilogue
    assert ops["moe_unpermute"].overhead_s == 0.0  # accumulated by stage 2
    assert any("AITER moe_sorting" in n for n in ops["moe_permute"].notes)


def test_vllm_and_nvidia_keep_the_per_op_moe_passes() -> None:
    for model, chip_id, precision, engine in (
        ("deepseek-v3", "mi355x", "fp8", "vllm"),
        ("deepseek-v3", "h200-sxm", "fp8", "sglang"),
    ):
        ops = _moe_ops(model, chip_id, precision, engine)
        assert ops["moe_permute"].seconds < 5e-6
        assert ops["expert_act"].seconds > 0.0


def test_only_4_bit_activations_pay_the_mxfp4_quantisation_kernel() -> None:
    a4w4 = _moe_ops(str(MXFP4_DSR1), "mi355x", "fp4", "atom")
    assert all(
        any("MXFP4 MoE input" in n for n in a4w4[name].notes)
        for name in ("expert_up", "expert_down")
    )
    # gpt-oss: MXFP4 weights with bf16 activations, nothing quantised
    w4a16 = _moe_ops("gpt-oss-120b", "mi355x", "fp4", "atom")
    assert not any("MXFP4 MoE input" in n for n in w4a16["expert_up"].notes)


def test_aiter_bf16_gemms_at_decode_m_run_at_the_tuned_kernels_time() -> None:
    import csv
    import math
    import statistics

    from chipwise.hardware.catalog import chip
    from chipwise.perf.ops.gpu import GpuModel
    from chipwise.workload.ir import Op, OpKind

    path = Path(__file__).parent / "data" / "aiter-bf16-gemm-cdna4.csv"
    with path.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == 40
    model = GpuModel(chip("mi355x")).for_engine("atom")
    plain = GpuModel(chip("mi355x")).for_engine("vllm")
    ratios, bare = [], []
    for r in rows:
        op = Op(name="proj", kind=OpKind.MATMUL, dtype="bf16",
                mnk=(int(r["m"]), int(r["n"]), int(r["k"])))  # fmt: skip
        ratios.append(model.op_time(op).seconds / (float(r["us"]) * 1e-6))
        bare.append(plain.op_time(op).seconds / (float(r["us"]) * 1e-6))
    assert 0.95 <= statistics.median(ratios) <= 1.05
    assert statistics.mean(abs(math.log(x)) for x in ratios) < 0.12
    assert all(0.75 <= x <= 1.3 for x in ratios)
    assert statistics.median(bare) < 0.65  # without it: a launch and the weight stream
