"""TpuModel: MXU padding, (8, 128) tiles, VPU, XLA fusion, slow paths, fp64."""

from __future__ import annotations

import dataclasses
import math

import pytest

from chipwise.errors import UnsupportedOpError
from chipwise.hardware import chip
from chipwise.hardware.chip import Chip, Interconnect
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.ops.graph import time_graph
from chipwise.perf.ops.roofline import op_bytes
from chipwise.perf.ops.tpu import (
    DYNAMIC_BUCKET_PAD,
    GATHER_AMPLIFICATION,
    VPU_FRACTION_OF_MXU,
    TpuModel,
    bitonic_stages,
    padding_factor,
    tiled_elements,
    vpu_rate,
)
from chipwise.workload.ir import ExpertRouting, Graph, Op, OpKind

EFF = Efficiency(
    gemm_peak_fraction=0.9,
    attention_peak_fraction=0.8,
    hbm_fraction=0.9,
    launch_overhead_s=2e-6,
    scale_up_fraction=0.8,
    scale_out_fraction=0.8,
    collective_latency_s=1e-6,
)


def tpu(mxu: int = 128, vector: float | None = None) -> Chip:
    """A TPU-like chip (v5p-ish figures: 459 TF bf16, 2.765 TB/s, 3D torus)."""
    base = chip("h100-sxm")
    return dataclasses.replace(
        base,
        id=f"tpu-test-{mxu}",
        vendor="google",
        kind="tpu",
        architecture="tpu-test",
        dense_flops_per_s={"bf16": 459e12, "int8": 918e12},
        hbm_bytes_per_s=2.765e12,
        units=2,
        matrix_unit_dim=mxu,
        vector_flops_per_s=vector,
        sram_per_unit_bytes=64 * 2**20,
        scale_up=Interconnect(
            name="ICI",
            bytes_per_s_per_chip=600e9,
            topology="torus-3d",
            domain_chips=8960,
            max_chips=8960,
        ),
    )


def mm(m: int, n: int, k: int, dtype: str = "bf16") -> Op:
    return Op(name="mm", kind=OpKind.MATMUL, dtype=dtype, mnk=(m, n, k))


def test_m_129_costs_like_m_256_on_a_128_mxu() -> None:
    model = TpuModel(tpu(128), EFF)
    assert model.op_time(mm(129, 4096, 4096)).compute_s == pytest.approx(
        model.op_time(mm(256, 4096, 4096)).compute_s
    )
    assert (
        model.op_time(mm(128, 4096, 4096)).compute_s < model.op_time(mm(129, 4096, 4096)).compute_s
    )


def test_256_mxu_pads_to_256() -> None:
    model = TpuModel(tpu(256), EFF)
    t = model.op_time(mm(8192, 8192, 300))  # K=300 pads to 512
    assert t.compute_s == pytest.approx(2 * 8192 * 8192 * 512 / (459e12 * 0.9))
    assert "MXU padding to 256: 1.71x" in t.notes[0]


def test_aligned_matmul_by_hand() -> None:
    t = TpuModel(tpu(128), EFF).op_time(mm(8192, 8192, 8192))
    assert t.bound == "compute"
    assert t.seconds == pytest.approx(2 * 8192**3 / (459e12 * 0.9) + 2e-6)


@pytest.mark.parametrize(
    ("shape", "tiled"),
    [
        ((8, 128), 8 * 128),
        ((1, 1), 8 * 128),
        ((9, 129), 16 * 256),
        ((4, 3, 130), 4 * 8 * 256),
        ((1000,), 1024),
    ],
)
def test_arrays_pad_to_8_by_128_tiles(shape: tuple[int, ...], tiled: int) -> None:
    assert tiled_elements(shape) == tiled
    assert padding_factor(shape) == pytest.approx(tiled / math.prod(shape))


def test_padded_array_traffic_counts_the_tiles() -> None:
    op = Op(
        name="add",
        kind=OpKind.ELEMENTWISE,
        bytes_read=2 * 4 * 100,
        bytes_written=4 * 100,
        shape=(1, 100),
        dtype="fp32",
    )
    t = TpuModel(tpu(), EFF).op_time(op)
    assert t.memory_s == pytest.approx(1200 * (8 * 128 / 100) / (2.765e12 * 0.9))


def test_vpu_defaults_to_a_thirtieth_of_the_mxu() -> None:
    assert vpu_rate(tpu()) == pytest.approx(459e12 * VPU_FRACTION_OF_MXU)
    assert vpu_rate(tpu(vector=10e12)) == 10e12


@pytest.mark.parametrize("kind", [OpKind.MATMUL, OpKind.ELEMENTWISE, OpKind.FP64])
def test_fp64_on_a_tpu_raises(kind: OpKind) -> None:
    op = Op(name="dgemm", kind=kind, dtype="fp64", flops=1e9)
    with pytest.raises(UnsupportedOpError, match="TPUs have no fp64"):
        TpuModel(tpu(), EFF).op_time(op)


def test_dtype_without_an_mxu_rate_raises() -> None:
    with pytest.raises(UnsupportedOpError, match="fp8"):
        TpuModel(tpu(), EFF).op_time(mm(1024, 1024, 1024, "fp8"))


def test_gather_is_slower_than_a_copy_of_the_same_bytes() -> None:
    model = TpuModel(tpu(), EFF)
    copy = Op(name="c", kind=OpKind.COPY, bytes_read=1e9, bytes_written=1e9)
    gather = dataclasses.replace(copy, name="g", kind=OpKind.GATHER)
    ratio = model.op_time(gather).memory_s / model.op_time(copy).memory_s
    assert ratio == pytest.approx(GATHER_AMPLIFICATION)


def test_bitonic_sort_stage_count() -> None:
    # n = 2^10: 10 x 11 / 2 = 55 compare-exchange stages (Batcher 1968).
    assert bitonic_stages(1024) == 55


def test_sort_scales_as_n_log_squared_n() -> None:
    model = TpuModel(tpu(), EFF)

    def sort(n: int) -> float:
        op = Op(
            name="s",
            kind=OpKind.SORT,
            dtype="fp32",
            shape=(n,),
            bytes_read=4 * n,
            bytes_written=4 * n,
        )
        return model.op_time(op).compute_s

    assert sort(2**20) / sort(2**10) == pytest.approx(2**10 * (20 * 21) / (10 * 11))


def test_dynamic_shapes_pay_the_bucket_padding() -> None:
    model = TpuModel(tpu(), EFF)
    static = Op(name="x", kind=OpKind.ELEMENTWISE, bytes_read=1e9, bytes_written=1e9)
    t = model.op_time(dataclasses.replace(static, dynamic=True))
    assert t.memory_s == pytest.approx(model.op_time(static).memory_s * DYNAMIC_BUCKET_PAD)
    assert any("recompiles" in n for n in t.notes)


def test_xla_fuses_elementwise_after_matmul_in_a_graph() -> None:
    model = TpuModel(tpu(), EFF)
    out = 8192 * 8192 * 2.0
    matmul = Op(
        name="mm", kind=OpKind.MATMUL, mnk=(8192, 8192, 8192), bytes_read=2 * out, bytes_written=out
    )
    gelu = Op(
        name="gelu",
        kind=OpKind.ELEMENTWISE,
        flops=8 * 8192 * 8192,
        bytes_read=out,
        bytes_written=out,
    )
    fused = time_graph(Graph(name="g", ops=(matmul, gelu)), model)
    alone = model.op_time(gelu)
    gelu_fused = fused.op_times[1]
    assert gelu_fused.memory_s == 0.0
    assert gelu_fused.overhead_s == 0.0
    assert gelu_fused.seconds < alone.seconds
    assert "fused into 'mm'" in gelu_fused.notes[-1]


def test_elementwise_after_a_copy_is_not_fused() -> None:
    model = TpuModel(tpu(), EFF)
    copy = Op(name="c", kind=OpKind.COPY, bytes_read=1e6, bytes_written=1e6)
    add = Op(name="a", kind=OpKind.ELEMENTWISE, bytes_read=1e6, bytes_written=1e6)
    g = time_graph(Graph(name="g", ops=(copy, add)), model)
    assert g.op_times[1] == model.op_time(add)


# ---- attention on the MXU, its backward, fp8 ------------------------------------------------


def _attention(head_dim: int, *, backward: bool = False) -> Op:
    b, h, s = 2, 16, 4096
    flops = 2.0 * b * h * s * s / 2 * 2 * head_dim
    return Op(name="attn", kind=OpKind.ATTENTION, flops=flops, bytes_read=1e6,
              bytes_written=1e6, shape=(b, h, s, head_dim), mnk=(s, s, head_dim),
              batch=b * h, backward=backward)  # fmt: skip


@pytest.mark.parametrize(
    ("mxu", "head_dim", "factor"),
    [(128, 64, 2.0), (128, 128, 1.0), (256, 64, 4.0), (256, 128, 2.0)],
)
def test_attention_head_dims_pad_to_the_mxu_side(mxu: int, head_dim: int, factor: float) -> None:
    model = TpuModel(tpu(mxu), EFF)
    op = _attention(head_dim)
    assert model.attention_padding(op) == factor
    t = model.op_time(op)
    assert t.compute_s == pytest.approx(op.flops * factor / (459e12 * EFF.attention_peak_fraction))


def test_attention_backward_runs_at_its_own_lower_rate() -> None:
    eff = dataclasses.replace(EFF, attention_backward_ratio=0.86)
    model = TpuModel(tpu(128), eff)
    fwd, bwd = model.op_time(_attention(128)), model.op_time(_attention(128, backward=True))
    assert bwd.compute_s == pytest.approx(fwd.compute_s / 0.86)


def test_packaged_backward_ratio_is_below_one_everywhere() -> None:
    from chipwise.perf.efficiency import efficiency_for

    for cid in ("h100-sxm", "a100-sxm-80gb", "mi300x", "tpu-v5p", "tpu-v6e"):
        e = efficiency_for(chip(cid))
        assert 0 < e.attention_fraction(backward=True) < e.attention_fraction(backward=False)


def test_fp8_gemms_use_their_measured_fraction_where_there_is_one() -> None:
    from chipwise.perf.efficiency import efficiency_for

    h100 = efficiency_for(chip("h100-sxm"))
    assert h100.gemm_fraction("fp8") == pytest.approx(0.709)
    assert h100.gemm_fraction("bf16") == pytest.approx(0.803)
    v7 = efficiency_for(chip("tpu-v7"))
    assert v7.gemm_fraction("fp8") == v7.gemm_fraction("bf16")  # not measured: the bf16 one


# ---- decode attention: the paged KV-cache read ----------------------------------------------


def _decode_attention(batch: int = 64, ctx: int = 4096, head_dim: int = 128) -> Op:
    heads, kv_heads = 8, 1
    cache = batch * ctx * 2 * kv_heads * head_dim * 2.0
    return Op(name="attn", kind=OpKind.ATTENTION, flops=4.0 * batch * ctx * heads * head_dim,
              bytes_read=cache, bytes_written=batch * heads * head_dim * 2.0,
              shape=(batch, heads, 1, head_dim), mnk=(1, ctx, head_dim),
              batch=batch * heads)  # fmt: skip


def test_decode_attention_reads_the_cache_at_its_own_fraction() -> None:
    eff = dataclasses.replace(EFF, decode_attention_hbm_fraction=0.45)
    op = _decode_attention()
    plain, paged = TpuModel(tpu(256), EFF).op_time(op), TpuModel(tpu(256), eff).op_time(op)
    assert plain.memory_s == pytest.approx(op_bytes(op) / (2.765e12 * 0.9))
    assert paged.memory_s == pytest.approx(op_bytes(op) / (2.765e12 * 0.45))
    # a prefill (many query tokens) keeps the compute-bound fused-attention path
    prefill = _attention(128)
    assert TpuModel(tpu(256), eff).op_time(prefill) == TpuModel(tpu(256), EFF).op_time(prefill)


def test_unset_decode_fraction_falls_back_to_the_copy_fraction() -> None:
    assert EFF.decode_attention_fraction() == EFF.hbm_fraction
    with pytest.raises(ValueError, match="decode_attention_hbm_fraction"):
        dataclasses.replace(EFF, decode_attention_hbm_fraction=1.5)


def test_packaged_tpus_read_the_paged_cache_below_a_copy() -> None:
    from chipwise.perf.efficiency import efficiency_for

    for cid in ("tpu-v5e", "tpu-v6e", "tpu-v7"):
        e = efficiency_for(chip(cid))
        assert 0 < e.decode_attention_fraction() < e.hbm_fraction
    # a GPU with no measured decode kernel rate reads its cache at a copy's rate
    assert efficiency_for(chip("a100-sxm-80gb")).decode_attention_fraction() == pytest.approx(
        efficiency_for(chip("a100-sxm-80gb")).hbm_fraction
    )


def _moe_rows(name: str, kind: OpKind, tokens: int) -> Op:
    """A dispatch or combine of ``tokens`` x 8 rows over ep = 4 (a quarter of them local)."""
    routing = ExpertRouting(tokens=tokens, topk=8, experts=160, local=40)
    n = tokens * 8 // 4 * 6144
    return Op(name=name, kind=kind, dtype="bf16", bytes_read=2.0 * n, bytes_written=2.0 * n,
              shape=(n,), routing=routing)  # fmt: skip


def test_early_vllm_tpu_moves_every_tokens_moe_rows_on_every_device() -> None:
    # tpu-inference's GMM_EP before its ragged gather (2026-04-04): each TensorCore (two a
    # TPU7x chip) gathers all tokens x top-k rows, not its own experts' quarter
    v7 = TpuModel(chip("tpu-v7"))
    old, new = v7.for_engine("vllm", "2026-03-30"), v7.for_engine("vllm", "2026-04-23")
    assert isinstance(old, TpuModel) and isinstance(new, TpuModel)
    assert new is v7 and v7.for_engine("jetstream", "2026-03-30") is v7
    permute = _moe_rows("moe_permute", OpKind.GATHER, 64)
    assert old.moe_row_replicas(permute) == 8.0 and new.moe_row_replicas(permute) == 1.0
    assert old.op_time(permute).memory_s == pytest.approx(8 * new.op_time(permute).memory_s)
    # the combine too where it is XLA's gather; above 8192 rows a SparseCore kernel takes it
    assert old.moe_row_replicas(_moe_rows("moe_unpermute", OpKind.SCATTER, 64)) == 8.0
    assert old.moe_row_replicas(_moe_rows("moe_unpermute", OpKind.SCATTER, 2048)) == 1.0
    assert old.moe_row_replicas(_moe_rows("moe_permute", OpKind.GATHER, 2048)) == 8.0
    # one device per chip on v6e
    v6e = TpuModel(chip("tpu-v6e")).for_engine("vllm", "2026-03-30")
    assert isinstance(v6e, TpuModel) and v6e.moe_row_replicas(permute) == 4.0
