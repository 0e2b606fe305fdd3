"""Measured fused-MoE op times split over expert-parallel ranks (NVIDIA AIConfigurator's
kernel database, ``tests/perf/data/aiconfigurator-moe-{fp4,w4a16,fp8-block}.csv``) and the
per-op model's time for the same MoE block: what the measured-MoE tests compare."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

from chipwise.hardware.catalog import chip
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import Dtypes, Shard, mlp_ops
from chipwise.units import dtype_bytes
from chipwise.workload.ir import Op, TransformerSpec

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
    balanced: bool = False,
    moe_backend: str = "",
) -> float:
    """The per-op model's MoE block for the measured shape at ``precision`` under
    ``engine``: each of ``ep`` ranks routes tokens / ep of the tokens, so its experts see all
    of them, as the kernel's one rank does (``moe_backend``: ``Inference.moe_backend``).
    ``balanced``: the experts as the table's
    balanced routing loads them (``balanced_experts``), not as the model's uniform random
    routing does."""
    spec = TransformerSpec(
        name="moe-shape", n_layers=1, d_model=m.hidden, n_heads=64, n_kv_heads=4,
        head_dim=128, d_ff=m.inter, vocab_size=1024, n_experts=m.experts,
        experts_per_token=m.topk, moe_d_ff=m.inter, expert_quant=expert_quant,
        fp8_weight_block=fp8_weight_block,
    )  # fmt: skip
    model = GpuModel(chip(m.chip), eff).for_engine(engine).with_moe_backend(moe_backend)
    ops = mlp_ops(spec, b=max(1, m.tokens // m.ep), s=1, shard=Shard(tp=1, ep=m.ep),
                  dt=Dtypes.for_precision(precision), moe=True)  # fmt: skip
    if balanced:
        ops = balanced_experts(ops, tokens=m.tokens, topk=m.topk, experts=m.experts, ep=m.ep)
    return sum(model.op_time(op).seconds for op in ops if op.name not in OUTSIDE) * 1e6


def balanced_experts(ops: list[Op], *, tokens: int, topk: int, experts: int, ep: int) -> list[Op]:
    """``ops`` with the expert GEMMs and activation re-shaped to the kernel tables' balanced
    routing: the rank's tokens x topk / ep token-expert pairs spread evenly over its
    experts, so min(local experts, pairs) of them run (all tokens x topk at 1-32 tokens on
    one rank, where uniform random routing hits fewer: 51 of 128 at 16 tokens top-4), each
    on ceil(pairs / active) rows."""
    pairs = tokens * topk / ep
    active = max(1, min(experts // ep, math.ceil(pairs)))
    rows = max(1, math.ceil(pairs / active))
    down = next(op for op in ops if op.name == "expert_down")
    width = down.mnk[2] if down.mnk is not None else 0
    out = []
    for op in ops:
        if op.name in ("expert_up", "expert_down") and op.mnk is not None:
            m, n, k = op.mnk
            a, w = dtype_bytes(op.dtype), dtype_bytes(op.weight or op.dtype)
            o = op.bytes_written / max(1, op.batch * m * n)
            routing = op.routing and replace(op.routing, balanced=True)
            op = replace(op, mnk=(rows, n, k), batch=active, shape=(rows, n), routing=routing,
                         flops=2.0 * active * rows * n * k,
                         bytes_read=active * (rows * k * a + k * n * w),
                         bytes_written=active * rows * n * o)  # fmt: skip
        elif op.name == "expert_act" and op.shape and width:
            scale = active * rows * width / op.shape[0]
            op = replace(op, flops=op.flops * scale, bytes_read=op.bytes_read * scale,
                         bytes_written=op.bytes_written * scale,
                         shape=(round(op.shape[0] * scale),))  # fmt: skip
        out.append(op)
    return out
