"""A serving step's dense fp8 GEMMs on Hopper against the engines' own kernels: with
``serving_fp8_sustained_fraction`` (0.92) the serving model's GEMM time agrees with
AIConfigurator's measured TensorRT-LLM, vLLM and SGLang fp8 kernels at compute-bound shapes;
with the training step's sustained share (0.711) it was 1.26-1.36x slow."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.step.timing import time_ops
from chipwise.workload.ir import Op, OpKind
from tests.perf.aic_gemm import Row, read_gemm_tables

TABLE = Path(__file__).parent / "data" / "aiconfigurator-gemm-fp8-hopper.csv"


def _tables() -> dict[tuple[str, str], list[Row]]:
    """(chip, engine) -> [(m, n, k, seconds)] of the extracted kernel table."""
    return read_gemm_tables(TABLE)


def _ratios(model: GpuModel, rows: list[Row]) -> list[float]:
    """Serving-step GEMM time / kernel time for each row (dense fp8 projections)."""
    out = []
    for m, n, k, seconds in rows:
        op = Op(name="proj", kind=OpKind.MATMUL, dtype="fp8", mnk=(m, n, k))
        (t,) = time_ops((op,), model, sustained=True, compute_bound_only=True)
        out.append(t.seconds / seconds)
    return out


def test_the_table_holds_six_engine_tables_of_36_shapes() -> None:
    tables = _tables()
    assert sorted(tables) == [
        (c, e) for c in ("h100-sxm", "h200-sxm") for e in ("sglang", "trtllm", "vllm")
    ]
    assert all(len(rows) == 36 for rows in tables.values())


@pytest.mark.parametrize("key", sorted(_tables()))
def test_hopper_serving_fp8_gemms_run_at_the_kernels_rate(key: tuple[str, str]) -> None:
    rows = _tables()[key]
    model = GpuModel(chip(key[0]))
    assert model.serving_sustained_fraction("fp8") == pytest.approx(0.92)
    assert 0.94 <= statistics.median(_ratios(model, rows)) <= 1.08
    # at the training step's share the same GEMMs were a quarter to a third slow
    eff = efficiency_for(chip(key[0])).with_values(source="test", serving_fp8_sustained_fraction=0)
    assert statistics.median(_ratios(GpuModel(chip(key[0]), eff), rows)) > 1.2


def test_other_dtypes_experts_and_training_keep_the_sustained_share() -> None:
    h100 = GpuModel(chip("h100-sxm"))
    assert h100.serving_sustained_fraction("bf16") == h100.sustained_tensor_fraction()
    assert GpuModel(chip("b200")).serving_sustained_fraction("fp8") == pytest.approx(0.711)
    op = Op(name="proj", kind=OpKind.MATMUL, dtype="fp8", mnk=(8192, 8192, 8192))
    (train,) = time_ops((op,), h100, sustained=True)  # a training step: compute_bound_only off
    (serve,) = time_ops((op,), h100, sustained=True, compute_bound_only=True)
    assert serve.seconds == pytest.approx(train.seconds * 0.711 / 0.92, rel=0.01)
