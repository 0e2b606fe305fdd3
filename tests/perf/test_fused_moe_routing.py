"""Routing skew in the serving engines' fused-MoE expert GEMMs (gpu.routed_row_tiles) against
the bf16 Triton fused_moe's measured layer times under balanced and power-law routing
(NVIDIA AIConfigurator's kernel database, data/aiconfigurator-moe-routing.csv): the model is
fitted on the balanced column (FUSED-MOE-BAL on Ampere) and its uniform random routing, the
served steps' own, must lie between the balanced and the harsher power-law times."""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel, routed_row_tiles
from chipwise.perf.ops.layers import Dtypes, Shard, mlp_ops
from chipwise.workload.ir import ExpertRouting, TransformerSpec
from tests.perf.aic_moe import balanced_experts

DATA = Path(__file__).parent / "data" / "aiconfigurator-moe-routing.csv"
OUTSIDE = ("mlp_norm", "mlp_residual")
Shape = tuple[str, int, int, int, int, int, int]  # chip, hidden, inter, experts, topk, tp, tokens


@dataclass(frozen=True, slots=True)
class Pair:
    """One shape's measured times under the table's balanced and power-law routings."""

    balanced_us: float
    power_law_us: float


def _pairs() -> dict[Shape, Pair]:
    lines = (line for line in DATA.read_text().splitlines() if not line.startswith("#"))
    by: dict[Shape, dict[str, float]] = defaultdict(dict)
    for r in csv.DictReader(lines):
        key = (r["chip"], *(int(r[k]) for k in ("hidden", "inter", "experts", "topk")),
               int(r["moe_tp"]), int(r["tokens"]))  # fmt: skip
        by[key][r["distribution"]] = float(r["us"])
    return {k: Pair(v["balanced"], v["power_law_1.01"]) for k, v in by.items()}


def _model_us(shape: Shape, *, balanced: bool) -> float:
    chip_id, hidden, inter, experts, topk, tp, tokens = shape
    spec = TransformerSpec(
        name="moe-shape", n_layers=1, d_model=hidden, n_heads=64, n_kv_heads=4,
        head_dim=128, d_ff=inter, vocab_size=1024, n_experts=experts,
        experts_per_token=topk, moe_d_ff=inter,
    )  # fmt: skip
    model = GpuModel(chip(chip_id)).for_engine("sglang")
    ops = mlp_ops(spec, b=tokens, s=1, shard=Shard(tp=tp), dt=Dtypes.for_precision("bf16"),
                  moe=True)  # fmt: skip
    if balanced:
        ops = balanced_experts(ops, tokens=tokens, topk=topk, experts=experts, ep=1)
    return sum(model.op_time(op).seconds for op in ops if op.name not in OUTSIDE) * 1e6


def test_the_table_pairs_every_shape_under_both_routings() -> None:
    pairs = _pairs()
    assert len(pairs) == 36
    assert {k[0] for k in pairs} == {"h100-sxm", "a100-sxm-80gb"}


def test_random_routing_pads_more_tiles_than_balanced_where_the_mean_fills_a_tile() -> None:
    """256 experts top-8 at 2048 tokens: 64 rows each on the mean; balanced fills one 64-row
    tile per expert, random routing's Binomial loads spill a second tile on about half."""
    random = ExpertRouting(tokens=2048, topk=8, experts=256, local=256)
    balanced = ExpertRouting(tokens=2048, topk=8, experts=256, local=256, balanced=True)
    assert routed_row_tiles(balanced, 64) == 256
    assert 1.4 < routed_row_tiles(random, 64) / 256 < 1.55
    # a tile twice the mean load absorbs the spread
    assert routed_row_tiles(random, 128) == pytest.approx(routed_row_tiles(balanced, 128))
    # at decode few experts are hit: random routing's empty experts run no tile
    few = ExpertRouting(tokens=16, topk=8, experts=256, local=256)
    assert routed_row_tiles(few, 16) < 16 * 8


def test_the_balanced_model_matches_the_balanced_column() -> None:
    """The model under the table's own balanced routing at the zoo's shapes: each chip's
    median within 0.9-1.25x and no shape beyond 0.65-1.65x (A100 SGLang 0.5.10 at 0.41 of
    the bf16 peak, FUSED-MOE-BAL, fitted on the whole table's >= 1024-token balanced rows,
    median 1.14 here; H100 vLLM 0.24 keeps 0.55, median 1.2 here: its table's median-zero
    0.66 left the served Hopper bf16 rows worse, efficiency.toml)."""
    by_chip: dict[str, list[float]] = defaultdict(list)
    for shape, pair in _pairs().items():
        by_chip[shape[0]].append(_model_us(shape, balanced=True) / pair.balanced_us)
    for chip_id, ratios in by_chip.items():
        assert 0.9 <= statistics.median(ratios) <= 1.25, (chip_id, ratios)
        assert all(0.65 <= r <= 1.65 for r in ratios), (chip_id, ratios)


def test_random_routing_costs_about_what_the_measured_skew_does() -> None:
    """The served steps' uniform random routing against the table's power law (a harsher
    skew, the only skewed column measured): the model's random/balanced ratio is >= 1 on
    every shape and <= 1.25 (nowhere near the hottest expert's ~25x), and each chip's median
    within 10 % of the measured power-law/balanced median (H100 1.05 vs 1.13; A100 1.12 vs
    1.06: on A100 the model's 64-row tiles, which balanced loads fill exactly, lose more to
    random spill than the kernel loses to the power law at 1024-2048 tokens)."""
    model: dict[str, list[float]] = defaultdict(list)
    measured: dict[str, list[float]] = defaultdict(list)
    for shape, pair in _pairs().items():
        model[shape[0]].append(_model_us(shape, balanced=False) / _model_us(shape, balanced=True))
        measured[shape[0]].append(pair.power_law_us / pair.balanced_us)
    for chip_id, ratios in model.items():
        assert all(1.0 - 1e-9 <= r <= 1.25 for r in ratios), (chip_id, ratios)
        m, p = statistics.median(ratios), statistics.median(measured[chip_id])
        assert abs(math.log(m / p)) <= math.log(1.10), (chip_id, m, p)
    # the skew costs time in the kernel
    assert statistics.median(r for ratios in measured.values() for r in ratios) > 1.0
