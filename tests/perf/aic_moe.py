"""Measured fused-MoE op times split over expert-parallel ranks (NVIDIA AIConfigurator's
kernel database, ``tests/perf/data/aiconfigurator-moe-{fp4,w4a16,fp8-block}.csv``) and the
per-op model's time for the same MoE block: what the measured-MoE tests compare."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import Dtypes, Shard, mlp_ops
from chipwise.workload.ir import TransformerSpec

# ops of the layer the measured MoE op does not contain (it is handed the router's logits)
OUTSIDE = ("mlp_norm", "mlp_residual", "router")


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    """One measured fused-MoE op time: ``tokens`` tokens routed top-``topk`` over
    ``experts`` experts split ``ep`` ways (moe_tp 1), on ``chip`` under ``engine``."""

    chip: str
    engine: str
    dtype: str
    hidden: int
    inter: int
    experts: int
    topk: int
    ep: int
    tokens: int
    us: float


def read_measured(path: Path) -> list[Measured]:
    """The rows of one table (``#`` lines cite its source)."""
    lines = (line for line in path.read_text().splitlines() if not line.startswith("#"))
    return [
        Measured(chip=r["chip"], engine=r["engine"], dtype=r["moe_dtype"], ep=int(r["moe_ep"]),
                 us=float(r["us"]),
                 **{k: int(r[k]) for k in ("hidden", "inter", "experts", "topk", "tokens")})
        for r in csv.DictReader(lines)
    ]  # fmt: skip


def modelled_us(
    m: Measured,
    precision: str,
    *,
    engine: str,
    eff: Efficiency | None = None,
    expert_quant: str = "",
    fp8_weight_block: int = 0,
) -> float:
    """The per-op model's MoE block for the measured shape at ``precision`` under
    ``engine``: each of ``ep`` ranks routes tokens / ep of the tokens, so its experts see all
    of them, as the kernel's one rank does."""
    spec = TransformerSpec(
        name="moe-shape", n_layers=1, d_model=m.hidden, n_heads=64, n_kv_heads=4,
        head_dim=128, d_ff=m.inter, vocab_size=1024, n_experts=m.experts,
        experts_per_token=m.topk, moe_d_ff=m.inter, expert_quant=expert_quant,
        fp8_weight_block=fp8_weight_block,
    )  # fmt: skip
    model = GpuModel(chip(m.chip), eff).for_engine(engine)
    ops = mlp_ops(spec, b=max(1, m.tokens // m.ep), s=1, shard=Shard(tp=1, ep=m.ep),
                  dt=Dtypes.for_precision(precision), moe=True)  # fmt: skip
    return sum(model.op_time(op).seconds for op in ops if op.name not in OUTSIDE) * 1e6
