"""Measured context-attention op times (NVIDIA AIConfigurator's kernel database, extracted to
``tests/perf/data/aiconfigurator-context-attention*.csv``): the table reader and the op the
model times for one of its rows."""

from __future__ import annotations

import csv
from pathlib import Path

from chipwise.perf.ops.graph import OpKind
from chipwise.perf.ops.layers import Shard, layer_ops
from chipwise.workload.ir import Op, TransformerSpec


def read_table(path: Path) -> list[dict[str, str]]:
    """The rows of an extracted kernel table ('#' lines are its header notes)."""
    lines = (line for line in path.read_text().splitlines() if not line.startswith("#"))
    return list(csv.DictReader(lines))


def context_attention(heads: int, kv_heads: int, batch: int, isl: int, precision: str) -> Op:
    """The causal prefill attention op of ``batch`` prompts of ``isl`` tokens, ``heads`` /
    ``kv_heads`` query / KV heads of 128, as ``layer_ops`` builds it."""
    spec = TransformerSpec(
        name="gqa-shape", n_layers=1, d_model=heads * 128, n_heads=heads,
        n_kv_heads=kv_heads, head_dim=128, d_ff=4096, vocab_size=1024,
    )  # fmt: skip
    ops = layer_ops(spec, b=batch, seq_len=isl, shard=Shard(), precision=precision, moe=False)
    (attention,) = (op for op in ops if op.kind is OpKind.ATTENTION)
    return attention
