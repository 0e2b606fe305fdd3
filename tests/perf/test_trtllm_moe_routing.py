"""Routing in TensorRT-LLM's own fused-MoE op (gpu.routed_row_tiles) against its measured
layer times under balanced and power-law routing (NVIDIA AIConfigurator's kernel database,
data/aiconfigurator-moe-routing-trtllm.csv): block-scaled fp8 experts on Hopper
(TRTLLM-FP8-MOE) and NVFP4 experts on Blackwell (FP4-MOE), both fitted on the balanced
column; the served steps' uniform random routing must cost at least the balanced time and
no more than the harsher power law does."""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.perf.aic_moe import Measured, modelled_us

DATA = Path(__file__).parent / "data" / "aiconfigurator-moe-routing-trtllm.csv"
# the checkpoint each table's experts come from: DeepSeek-R1's 128 x 128 fp8 weight blocks,
# NVFP4 (chipwise's fp4)
PRECISION = {"fp8_block": ("fp8", 128), "nvfp4": ("fp4", 0)}


@dataclass(frozen=True, slots=True)
class Pair:
    """One shape's measured op under the table's balanced and power-law routings."""

    balanced: Measured
    power_law_us: float


def _pairs() -> list[Pair]:
    lines = (line for line in DATA.read_text().splitlines() if not line.startswith("#"))
    by: dict[tuple[str, ...], dict[str, Measured]] = defaultdict(dict)
    for r in csv.DictReader(lines):
        sizes = {k: int(r[k]) for k in ("hidden", "inter", "experts", "topk", "tokens")}
        m = Measured(chip=r["chip"], engine=r["engine"], dtype=r["moe_dtype"],
                     ep=int(r["moe_ep"]), us=float(r["us"]), **sizes)  # fmt: skip
        key = (m.chip, m.dtype, str(m.hidden), str(m.tokens))
        by[key][r["distribution"]] = m
    return [Pair(v["balanced"], v["power_law_1.01"].us) for v in by.values()]


def _model_us(m: Measured, *, balanced: bool) -> float:
    precision, block = PRECISION[m.dtype]
    return modelled_us(m, precision, engine="trtllm", fp8_weight_block=block, balanced=balanced)


def test_the_table_pairs_every_shape_under_both_routings() -> None:
    pairs = _pairs()
    assert len(pairs) == 36
    assert {(p.balanced.chip, p.balanced.dtype) for p in pairs} == {
        ("h100-sxm", "fp8_block"), ("h200-sxm", "fp8_block"),
        ("b200", "nvfp4"), ("gb200", "nvfp4"),
    }  # fmt: skip


def test_the_balanced_model_matches_the_balanced_column() -> None:
    """The model under the table's own balanced routing (the column TRTLLM-FP8-MOE and
    FP4-MOE were fitted on, over all ep and 1-16384 tokens): each chip's median within
    0.8-1.2x here (H100 0.94, H200 1.08, B200 0.86, GB200 1.11) and no shape beyond
    0.55-1.75x (the fast end Qwen3-30B's small experts, which the kernel runs slower than
    one rate allows; the slow end DeepSeek-R1 at 1024 tokens on H200 and 16384 on B200)."""
    by_chip: dict[str, list[float]] = defaultdict(list)
    for p in _pairs():
        by_chip[p.balanced.chip].append(_model_us(p.balanced, balanced=True) / p.balanced.us)
    for chip_id, ratios in by_chip.items():
        assert 0.8 <= statistics.median(ratios) <= 1.2, (chip_id, sorted(ratios))
        assert all(0.55 <= r <= 1.75 for r in ratios), (chip_id, sorted(ratios))


def test_random_routing_costs_about_what_the_measured_skew_does() -> None:
    """The served steps' uniform random routing against the table's power law (the only
    skewed column measured): the model's random/balanced ratio is >= 1 on every shape and
    <= 1.45, and each chip's median within 10 % of the measured power-law/balanced median
    (model 1.04-1.05; measured H100 1.06, H200 1.10, B200 1.08, GB200 0.99: on one rank a
    power law also leaves cold experts idle, which saves their weight reads). The largest
    model ratio is where the mean load fills a 128-row tile exactly (DeepSeek-R1 at 4096
    tokens: 1.36-1.41, half the experts spill a second tile), against 1.14-1.83 measured
    under the power law there. The experts' rates were fitted on the balanced column, so
    the spill is not counted twice."""
    model: dict[str, list[float]] = defaultdict(list)
    measured: dict[str, list[float]] = defaultdict(list)
    for p in _pairs():
        m = p.balanced
        r = _model_us(m, balanced=False) / _model_us(m, balanced=True)
        assert 1.0 - 1e-9 <= r <= 1.45, (m, r)
        model[m.chip].append(r)
        measured[m.chip].append(p.power_law_us / m.us)
    for chip_id, ratios in model.items():
        mm, pp = statistics.median(ratios), statistics.median(measured[chip_id])
        assert abs(math.log(mm / pp)) <= math.log(1.10), (chip_id, mm, pp)
    deepseek = [p for p in _pairs() if p.balanced.experts == 256 and p.balanced.tokens == 4096]
    assert len(deepseek) == 4
    for p in deepseek:
        r = _model_us(p.balanced, balanced=False) / _model_us(p.balanced, balanced=True)
        assert 1.3 <= r <= 1.45, (p, r)
        assert p.power_law_us / p.balanced.us > 1.1
