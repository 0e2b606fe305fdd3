"""DeepSeek Sparse Attention (DeepSeek-V3.2): the attention reads at most index_topk keys per
query, the lightning indexer scores every cached key, on every tensor-parallel rank."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.hardware.catalog import chip
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.layers import (
    Dtypes,
    Shard,
    attention_ops,
    causal_pairs,
    decode_layer_ops,
    kv_bytes_per_token_per_layer,
)
from chipwise.workload.ir import Op
from chipwise.workload.presets import load_preset

V32 = load_preset("deepseek-v3.2")
V3 = load_preset("deepseek-v3")


def _decode(spec: object, context: int, tp: int = 8) -> dict[str, Op]:
    ops = decode_layer_ops(spec, batch=16, context=context, shard=Shard(tp=tp),  # type: ignore[arg-type]
                           precision="fp8", kv_dtype="fp8", moe=True)  # fmt: skip
    return {op.name: op for op in ops}


def test_decode_attention_reads_at_most_topk_latent_rows_while_the_indexer_reads_all() -> None:
    short, long = _decode(V32, 2048), _decode(V32, 65536)
    assert long["attention"].bytes_read == short["attention"].bytes_read
    assert long["attention"].mnk == (1, 2048, 576)
    # the indexer's cache read and logits grow with the whole context
    assert long["indexer"].bytes_read > 30 * short["indexer"].bytes_read
    dense = _decode(V3, 65536)
    assert dense["attention"].bytes_read > 30 * short["attention"].bytes_read


def test_the_cache_holds_the_latent_and_the_fp8_index_key() -> None:
    # 576 latent values at fp8, plus 128 fp8 index-key values and one fp32 scale per 128
    assert kv_bytes_per_token_per_layer(V32, 8, "fp8") == 576 + 128 + 4
    assert kv_bytes_per_token_per_layer(V3, 8, "fp8") == 576


def test_prefill_attention_pairs_are_capped_at_topk_per_query() -> None:
    ops = {op.name: op for op in attention_ops(V32, b=1, s=8192, shard=Shard(tp=8),
                                               dt=Dtypes.for_precision("fp8"))}  # fmt: skip
    capped = causal_pairs(8192, 8192, causal=True, window=2048)
    assert capped == pytest.approx(sum(min(i, 2048) for i in range(1, 8193)), rel=1e-3)
    heads, width = 128 // 8, 192 + 128
    assert ops["attention"].flops == pytest.approx(2.0 * heads * capped * width)
    # the indexer scores every causal pair with all 64 of its heads
    full = causal_pairs(8192, 8192, causal=True)
    assert ops["indexer"].flops == pytest.approx((2.0 * 128 + 3) * 64 * full)


def test_the_indexer_is_replicated_over_tensor_parallel_ranks() -> None:
    one, eight = _decode(V32, 16384, tp=1), _decode(V32, 16384, tp=8)
    for name in ("index_q_up", "index_k_proj", "indexer"):
        assert one[name].flops == eight[name].flops, name
    assert eight["attention"].flops * 8 == pytest.approx(one["attention"].flops)


def test_the_indexer_scores_at_the_fp8_rate_where_the_chip_has_one() -> None:
    scorer = next(op for op in attention_ops(V32, b=1, s=8192, shard=Shard(tp=8),
                                             dt=Dtypes.for_precision("bf16"))
                  if op.name == "indexer")  # fmt: skip
    h200 = GpuModel(chip("h200-sxm"))
    fp8, bf16 = h200.op_time(scorer), h200.op_time(replace(scorer, weight=""))
    assert fp8.compute_s == pytest.approx(bf16.compute_s / 2, rel=0.01)  # 1979 / 989 TFLOP/s
    # a chip without fp8 (A100) times it at its bf16 rate rather than refusing it
    assert GpuModel(chip("a100-sxm-80gb")).op_time(scorer).compute_s > fp8.compute_s


def test_a_long_context_decode_layer_is_cheaper_than_dense_mla_and_grows_with_context() -> None:
    model = GpuModel(chip("h200-sxm"))

    def attention_s(spec: object, context: int) -> float:
        ops = _decode(spec, context).values()
        return sum(model.op_time(op).seconds for op in ops
                   if op.name == "attention" or op.name.startswith("index"))  # fmt: skip

    contexts = (4096, 32768, 131072)
    sparse = [attention_s(V32, c) for c in contexts]
    dense = [attention_s(V3, c) for c in contexts]
    assert sparse[1] < dense[1] and sparse[2] < dense[2] / 2
    assert sparse[0] < sparse[1] < sparse[2]  # the indexer still reads the whole context
