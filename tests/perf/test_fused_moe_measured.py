"""The per-op MoE block (router, top-k, permute, the two expert GEMMs, activation,
unpermute) against measured fused-MoE layer times at serving shapes (NVIDIA AIConfigurator's
kernel database, data/aiconfigurator-moe.csv): estimate, then compare with a measurement."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import Dtypes, Shard, mlp_ops
from chipwise.workload.ir import TransformerSpec
from tests.perf.aic_moe import balanced_experts

DATA = Path(__file__).parent / "data" / "aiconfigurator-moe.csv"
# the table's dtype names -> chipwise precision (fp8_block: 128x128 block-scaled fp8 weights
# and per-token-group fp8 activations, DeepSeek-V3's recipe; fp8: per-tensor scales)
PRECISION = {"bfloat16": "bf16", "fp8_block": "fp8", "fp8": "fp8"}
# ops of the layer that the measured MoE op does not contain
OUTSIDE = ("mlp_norm", "mlp_residual")


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    """One measured fused-MoE layer time."""

    chip: str
    engine: str
    dtype: str
    hidden: int
    inter: int
    experts: int
    topk: int
    tp: int
    tokens: int
    us: float


def _measured(r: dict[str, str]) -> Measured:
    ints = {k: int(r[k]) for k in ("hidden", "inter", "experts", "topk", "tokens")}
    return Measured(chip=r["chip"], engine=r["engine"], dtype=r["moe_dtype"],
                    tp=int(r["moe_tp"]), us=float(r["us"]), **ints)  # fmt: skip


def _rows() -> list[Measured]:
    lines = (line for line in DATA.read_text().splitlines() if not line.startswith("#"))
    return [_measured(r) for r in csv.DictReader(lines)]


def _model_us(m: Measured, *, balanced: bool = True) -> float:
    """The per-op model's MoE block for the measured shape, as the row's engine runs it, its
    experts loaded as the table's balanced routing loads them (``balanced``), not at random."""
    spec = TransformerSpec(
        name="moe-shape", n_layers=1, d_model=m.hidden, n_heads=64, n_kv_heads=4,
        head_dim=128, d_ff=m.inter, vocab_size=1024, n_experts=m.experts,
        experts_per_token=m.topk, moe_d_ff=m.inter,
    )  # fmt: skip
    model = GpuModel(chip(m.chip)).for_engine(m.engine)
    ops = mlp_ops(spec, b=m.tokens, s=1, shard=Shard(tp=m.tp),
                  dt=Dtypes.for_precision(PRECISION[m.dtype]), moe=True)  # fmt: skip
    if balanced:  # the experts as the table's balanced routing loads them
        ops = balanced_experts(ops, tokens=m.tokens, topk=m.topk, experts=m.experts, ep=1)
    return sum(model.op_time(op).seconds for op in ops if op.name not in OUTSIDE) * 1e6


def _ratios() -> dict[tuple[str, str, str], list[tuple[Measured, float]]]:
    out: dict[tuple[str, str, str], list[tuple[Measured, float]]] = defaultdict(list)
    for m in _rows():
        out[m.chip, m.engine, m.dtype].append((m, _model_us(m) / m.us))
    return out


def test_the_table_covers_triton_and_cutlass_on_ampere_and_hopper() -> None:
    groups = set(_ratios())
    assert ("a100-sxm-80gb", "sglang", "bfloat16") in groups
    assert ("h100-sxm", "vllm", "bfloat16") in groups
    assert ("h100-sxm", "trtllm", "fp8") in groups


def test_bf16_and_cutlass_moe_blocks_match_the_measured_kernels() -> None:
    """bf16 Triton fused_moe (vLLM, SGLang) and TensorRT-LLM's CUTLASS grouped GEMM (bf16,
    per-tensor fp8): the model within 0.6-1.45x of every measured row (1 to 1024 tokens)
    and each group's median within 15 %: the experts' weight stream and tile padding already
    account for these kernels at serving shapes. (A100's fraction, fitted on the whole
    table's >= 1024-token balanced rows (FUSED-MOE-BAL), puts Mixtral-8x7B tp 2 at 1024
    tokens at 1.42x: the table's shapes scatter about that fit with a p90 of 54 %.)"""
    for (chip_id, engine, dtype), pairs in _ratios().items():
        if dtype == "fp8_block":
            continue
        ratios = [r for _, r in pairs]
        assert 0.85 <= statistics.median(ratios) <= 1.15, (chip_id, engine, dtype, ratios)
        assert all(0.6 <= r <= 1.45 for r in ratios), (chip_id, engine, dtype, ratios)


def test_block_fp8_triton_moe_blocks_match_the_measured_kernels() -> None:
    """Block-fp8 Triton fused_moe (vLLM 0.24.0 on H100) at Hopper's FUSED-MOE-FP8 rate,
    fitted on AIConfigurator's full Triton block-fp8 tables (this file's rows are a subset):
    the group's median within 10 % and every row within 0.6-1.7x. At the dense Triton
    GEMM's 0.205 the model was 1.3-2.4x the kernel from 64 tokens on (DeepSeek-V3's shape
    stays 1.5-1.65x there: vLLM 0.24.0's kernel runs it ~1.8x faster than vLLM 0.14-0.22's
    and SGLang's, which the fit centres)."""
    ratios = [r for _, r in _ratios()["h100-sxm", "vllm", "fp8_block"]]
    assert 0.90 <= statistics.median(ratios) <= 1.10, ratios
    assert all(0.6 <= r <= 1.7 for r in ratios), ratios
