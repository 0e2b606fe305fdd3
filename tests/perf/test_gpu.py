"""GpuModel: tiles, waves, pipeline fill, memory-bound ops, dtypes, and model_for."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.errors import CatalogError, UnsupportedOpError
from chipwise.hardware import chip, default_catalog
from chipwise.perf.efficiency import (
    Efficiency,
    default_efficiency_table,
    efficiency_for,
    parse_efficiency_table,
)
from chipwise.perf.ops import gpu
from chipwise.perf.ops.gpu import (
    K_FILL,
    GpuModel,
    balance_intensity,
    gemm_candidate,
    gemm_efficiency,
    plan_gemm,
    tensor_throttle,
)
from chipwise.perf.ops.models import model_for
from chipwise.perf.ops.tpu import TpuModel
from chipwise.workload.ir import ExpertRouting, Op, OpKind

# Catalog chips pinned to their datasheet figures, so the hand arithmetic below stays valid
# whatever the catalog later refines.
H100 = dataclasses.replace(
    chip("h100-sxm"),  # hopper: 128x256 tiles
    units=132,
    hbm_bytes_per_s=3.35e12,
    dense_flops_per_s={"fp64": 67e12, "fp32": 67e12, "bf16": 989e12, "fp8": 1979e12},
)
A100 = dataclasses.replace(
    chip("a100-sxm-80gb"),  # ampere: 128x128 tiles
    units=108,
    dense_flops_per_s={"fp32": 19.5e12, "bf16": 312e12},
)

# Round numbers so the hand arithmetic below is easy to follow.
EFF = Efficiency(
    gemm_peak_fraction=0.8,
    attention_peak_fraction=0.5,
    hbm_fraction=0.9,
    launch_overhead_s=2e-6,
    scale_up_fraction=0.8,
    scale_out_fraction=0.8,
    collective_latency_s=1e-6,
)


def mm(m: int, n: int, k: int, dtype: str = "bf16", **kw: object) -> Op:
    return Op(name="mm", kind=OpKind.MATMUL, dtype=dtype, mnk=(m, n, k), **kw)  # type: ignore[arg-type]


def test_4096_cube_bf16_on_h100_is_compute_bound_by_hand() -> None:
    # tiles = (4096/128) x (4096/256) = 512 -> ceil(512/132) = 4 waves.
    # per-SM rate = 989e12 x 0.8 / 132; one tile = 2 x 128 x 256 x (4096 + K_FILL) FLOPs.
    per_sm = 989e12 * 0.8 / 132
    tile_s = 2 * 128 * 256 * (4096 + K_FILL) / per_sm
    t = GpuModel(H100, EFF).op_time(mm(4096, 4096, 4096))
    assert t.bound == "compute"
    assert t.seconds == pytest.approx(4 * tile_s + 2e-6, rel=1e-9)
    assert t.overhead_s == pytest.approx(2e-6)
    assert "4 wave(s)" in t.notes[0]


def test_one_row_matmul_is_memory_bound_by_hand() -> None:
    # M=1: the weights (8192 x 8192 bf16 = 134 MB) dominate; read once at 0.9 x 3.35 TB/s.
    t = GpuModel(H100, EFF).op_time(mm(1, 8192, 8192))
    weights = 8192 * 8192 * 2
    io = (8192 + 8192) * 2
    assert t.bound == "memory"
    assert t.memory_s == pytest.approx((weights + io) / (3.35e12 * 0.9), rel=0.02)
    assert t.efficiency > 0.85  # near the achievable bandwidth, as a GEMV kernel is


def test_one_more_tile_than_sms_costs_a_second_wave() -> None:
    # N=256 -> 1 tile column; M = 128 x 132 fills one wave exactly; one more row adds a wave.
    def cost(m: int) -> float:
        return gemm_candidate(H100, EFF, (m, 256, 8192, 1), (128, 256), 1, 989e12, 0.0).compute_s

    assert cost(128 * 132 + 1) / cost(128 * 132) == pytest.approx(2.0)


def test_kernel_choice_softens_a_spilled_wave() -> None:
    # The model, like cuBLAS, then prefers another tile or split-K: dearer, but < 2x.
    g = GpuModel(H100, EFF)
    full = g.op_time(mm(128 * 132, 256, 8192)).compute_s
    spill = g.op_time(mm(128 * 132 + 1, 256, 8192)).compute_s
    assert full < spill < 2 * full


def test_short_k_loses_to_pipeline_fill() -> None:
    plan = plan_gemm(H100, EFF, 8192, 8192, 128, 1, 989e12, 0.0)
    assert plan.k_efficiency == pytest.approx(128 / (128 + K_FILL))


def test_large_gemms_use_128x256_tiles_on_ampere_and_hopper_128x128_before() -> None:
    # CUTLASS 2's Sm80 tensor-op default threadblock is 128x256x64 (16-bit inputs);
    # Volta/Turing parts keep the generic 128x128
    a = plan_gemm(A100, EFF, 8192, 8192, 8192, 1, 312e12, 0.0)
    h = plan_gemm(H100, EFF, 8192, 8192, 8192, 1, 989e12, 0.0)
    v = plan_gemm(chip("v100"), EFF, 8192, 8192, 8192, 1, 125e12, 0.0)
    assert a.tile == (128, 256)
    assert h.tile == (128, 256)
    # Volta has no 128x256 tile; its 64x128 tiles are fed at full rate by V100's L2
    # (2048 B/clk for 80 SMs), so at 8192^3 they tie with 128x128 and may win on waves
    assert v.tile in ((128, 128), (64, 128))


def test_fp8_runs_at_the_fp8_rate() -> None:
    g = GpuModel(H100, EFF)
    assert g.op_time(mm(8192, 8192, 8192, "fp8")).compute_s == pytest.approx(
        g.op_time(mm(8192, 8192, 8192, "bf16")).compute_s / 2, rel=0.01
    )


def test_fp64_matmul_uses_the_fp64_rate() -> None:
    g = GpuModel(H100, EFF)
    bf16 = g.op_time(mm(8192, 8192, 8192)).compute_s
    fp64 = g.op_time(mm(8192, 8192, 8192, "fp64")).compute_s
    assert fp64 / bf16 == pytest.approx(989 / 67, rel=0.01)


@pytest.mark.parametrize(("gpu", "dtype"), [(A100, "fp8"), (H100, "int4")])
def test_unsupported_dtype_raises_naming_it(gpu: object, dtype: str) -> None:
    with pytest.raises(UnsupportedOpError, match=dtype):
        GpuModel(gpu, EFF).op_time(mm(1024, 1024, 1024, dtype))  # type: ignore[arg-type]


def test_attention_runs_at_the_attention_fraction() -> None:
    op = Op(name="attn", kind=OpKind.ATTENTION, flops=1e15, bytes_read=1e9, bytes_written=1e8)
    t = GpuModel(H100, EFF).op_time(op)
    assert t.compute_s == pytest.approx(1e15 / (989e12 * 0.5))


def test_elementwise_streams_at_the_hbm_fraction() -> None:
    op = Op(
        name="add", kind=OpKind.ELEMENTWISE, flops=1e9, bytes_read=2e9, bytes_written=1e9, count=10
    )
    t = GpuModel(H100, EFF).op_time(op)
    assert t.bound == "memory"
    assert t.seconds == pytest.approx(10 * (3e9 / (3.35e12 * 0.9) + 2e-6))


def test_count_multiplies_time() -> None:
    g = GpuModel(H100, EFF)
    one = g.op_time(mm(4096, 4096, 4096))
    assert g.op_time(mm(4096, 4096, 4096, count=7)).seconds == pytest.approx(7 * one.seconds)


def test_same_peak_spread_over_more_sms_hurts_a_small_gemm() -> None:
    # 128 tiles fill 132 SMs; on 264 half-speed SMs half of them idle (a real effect:
    # small GEMMs cannot use a wider chip).
    more = dataclasses.replace(H100, units=264)
    op = mm(2048, 2048, 4096)
    assert GpuModel(more, EFF).op_time(op).seconds > GpuModel(H100, EFF).op_time(op).seconds


def test_model_for_picks_by_kind() -> None:
    assert isinstance(model_for(H100), GpuModel)
    assert isinstance(model_for(chip("gaudi3")), GpuModel)  # asic: GEMM engine + HBM
    tpu = dataclasses.replace(H100, kind="tpu", architecture="tpu-test", vendor="google")
    assert isinstance(model_for(tpu), TpuModel)


def test_assumptions_cite_every_efficiency_parameter() -> None:
    names = {a.name for a in GpuModel(H100).assumptions()}
    assert {"gemm_peak_fraction", "hbm_fraction", "launch_overhead_s", "gemm_tile"} <= names
    assert all(a.source for a in GpuModel(H100).assumptions())


# ---- efficiency table ---------------------------------------------------------------------


def test_every_catalog_chip_resolves_every_efficiency_parameter() -> None:
    for c in default_catalog().chips:
        e = efficiency_for(c)
        assert 0 < e.gemm_peak_fraction <= 1
        assert all(a.source for a in e.assumptions()), c.id


def test_every_chip_entry_in_the_table_names_a_catalog_chip() -> None:
    ids = {c.id for c in default_catalog().chips}
    assert set(default_efficiency_table().chip) <= ids


def test_most_specific_entry_wins() -> None:
    gb200 = efficiency_for(chip("gb200"))
    b200 = efficiency_for(chip("b200"))
    assert gb200.gemm_peak_fraction == pytest.approx(0.729)  # [chip.gb200]
    assert b200.gemm_peak_fraction == pytest.approx(0.776)  # [architecture.blackwell]
    assert gb200.hbm_fraction == b200.hbm_fraction  # inherited from [kind.gpu]
    assert "chip gb200" in gb200.basis


def test_cdna3_streams_hbm_and_xgmi_below_the_gpu_defaults() -> None:
    # BabelStream Copy 4.11 of 5.3 TB/s and RCCL busBw 316.8 of 448 GB/s (AZ-MI300X); the
    # MI325X shares the architecture's figures, the MI355X (CDNA 4) keeps the defaults
    mi300x, mi325x = efficiency_for(chip("mi300x")), efficiency_for(chip("mi325x"))
    default = efficiency_for(chip("mi355x"))
    assert mi300x.hbm_fraction == pytest.approx(4.11 / 5.3, abs=1e-3)
    assert mi300x.scale_up_fraction == pytest.approx(316.8 / 448, abs=1e-3)
    assert (mi325x.hbm_fraction, mi325x.scale_up_fraction) == (
        mi300x.hbm_fraction, mi300x.scale_up_fraction)  # fmt: skip
    assert default.hbm_fraction > mi300x.hbm_fraction


def test_a_skinny_gemm_streams_its_weights_at_the_gemm_hbm_fraction() -> None:
    # M=1: the weights are read once; with gemm_hbm_fraction set they stream at that share of
    # HBM, not at the copy's hbm_fraction; elementwise ops keep hbm_fraction
    eff = dataclasses.replace(EFF, gemm_hbm_fraction=0.5)
    weights = 8192 * 8192 * 2
    t = GpuModel(H100, eff).op_time(mm(1, 8192, 8192))
    assert t.memory_s == pytest.approx(weights / (3.35e12 * 0.5), rel=0.02)
    base = GpuModel(H100, EFF).op_time(mm(1, 8192, 8192))
    assert t.seconds > 1.7 * base.seconds  # 0.9 / 0.5
    add = Op(name="add", kind=OpKind.ELEMENTWISE, dtype="bf16", shape=(4096, 4096))
    assert GpuModel(H100, eff).op_time(add).seconds == GpuModel(H100, EFF).op_time(add).seconds


def test_cdna3_skinny_fp8_gemms_stream_at_the_measured_hipblaslt_rate() -> None:
    # HF-MI300-SKINNY: hipBLASLt fp8, Llama-3.1-405B TP8 projections at M=1 on one MI300X:
    # 364.9 MB of weights in 123.6 us; the model's three GEMMs land within 12 % of that (the
    # stream and launches +7 %; CDNA3's soft knee, gemm_overlap_exponent, adds the 16-row
    # tiles' MFMA time in quadrature, +3 %), and NVIDIA chips keep their copy fraction
    mi300x = chip("mi300x")
    model = GpuModel(mi300x)
    shapes = ((2304, 16384, 14.938e-6), (13312, 16384, 77.636e-6), (16384, 6656, 31.066e-6))
    total = sum(model.op_time(mm(1, n, k, "fp8")).seconds for n, k, _ in shapes)
    assert total == pytest.approx(sum(t for *_, t in shapes), rel=0.12)
    assert efficiency_for(mi300x).gemm_hbm_fraction == pytest.approx(2.95 / 5.3, abs=2e-3)
    h100 = efficiency_for(chip("h100-sxm"))
    assert h100.gemm_memory_fraction() == h100.hbm_fraction


def test_blackwell_fp4_gemms_at_decode_m_stream_at_the_measured_fp4_rate() -> None:
    # FP4-GEMV (helion PR #3046, B200, vLLM CUTLASS NVFP4 at M=1): Llama-3 8B/70B projections
    # took 145.2 us together; the model's six land within 5 % of it. fp8 and bf16 GEMMs of
    # the same shapes keep the copy fraction, and a compute-bound fp4 GEMM is unchanged
    b200 = chip("b200")
    model = GpuModel(b200)
    shapes = ((4096, 4096), (6144, 4096), (28672, 4096), (8192, 8192), (10240, 8192),
              (8192, 28672))  # fmt: skip
    fp4 = [
        mm(1, n, k, "fp4", bytes_read=n * k * 0.5625 + k * 0.5625, bytes_written=n * 2.0)
        for n, k in shapes
    ]
    total = sum(model.op_time(op).seconds for op in fp4)
    assert total == pytest.approx(145.2e-6, rel=0.05)
    eff = efficiency_for(b200)
    assert eff.gemm_memory_fraction("fp4") == eff.fp4_gemm_hbm_fraction < eff.hbm_fraction
    assert eff.gemm_memory_fraction("fp8") == eff.gemm_memory_fraction() == eff.hbm_fraction
    big = mm(8192, 8192, 8192, "fp4", bytes_read=2 * 8192 * 8192 * 0.5625,
             bytes_written=8192 * 8192 * 2.0)  # fmt: skip
    slow = dataclasses.replace(eff, fp4_gemm_hbm_fraction=0.0)
    assert model.op_time(big).seconds == GpuModel(b200, slow).op_time(big).seconds


def test_an_unknown_architecture_gets_defaults_and_says_so() -> None:
    odd = dataclasses.replace(H100, id="odd", architecture="future-arch", vendor="nvidia")
    e = efficiency_for(odd)
    assert "no entry for architecture 'future-arch'" in e.basis


def test_calibrated_values_replace_and_cite_their_source() -> None:
    e = efficiency_for(H100).with_values(source="calibrate 2026-01-01", gemm_peak_fraction=0.7)
    assert e.gemm_peak_fraction == 0.7
    assert e.sources["gemm_peak_fraction"] == "calibrate 2026-01-01"
    slower = GpuModel(H100, e).op_time(mm(8192, 8192, 8192)).seconds
    assert slower > GpuModel(H100).op_time(mm(8192, 8192, 8192)).seconds


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": {"gpu": {"hbm_fraction": {"value": 1.2, "source": "typo"}}}},
        {"kind": {"gpu": {"hbm_fractoin": {"value": 0.8, "source": "misspelt key"}}}},
        {"kind": {"gpu": {"hbm_fraction": {"value": 0.8}}}},
    ],
)
def test_a_bad_efficiency_file_is_a_catalog_error(bad: dict[str, object]) -> None:
    with pytest.raises(CatalogError, match=r"efficiency\.toml"):
        parse_efficiency_table(bad)


def test_an_efficiency_fraction_above_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="gemm_peak_fraction"):
        dataclasses.replace(EFF, gemm_peak_fraction=1.5)


def test_fp8_matmul_on_hopper_reaches_its_own_mamf_share() -> None:
    h100 = chip("h100-sxm")
    fp8 = gemm_efficiency(h100, 8192, 8192, 8192, "fp8")
    bf16 = gemm_efficiency(h100, 8192, 8192, 8192, "bf16")
    assert fp8 < bf16  # fp8 MAMF is a lower share of its (doubled) peak: 0.709 vs 0.803
    assert fp8 == pytest.approx(bf16 * 0.709 / 0.803, rel=0.02)


@pytest.mark.parametrize("cid", ["b200", "gb200"])
def test_fp4_matmul_on_blackwell_is_bounded_by_the_measured_cublaslt_share(cid: str) -> None:
    # FP4-MM (efficiency.toml): cuBLASLt MXF4 8192^3 on B200 at 5239 of 9000 TFLOP/s
    gpu = chip(cid)
    fp4 = gemm_efficiency(gpu, 8192, 8192, 8192, "fp4")
    fp8 = gemm_efficiency(gpu, 8192, 8192, 8192, "fp8")
    assert fp4 <= 0.582 * 1.001
    assert fp4 < fp8  # block scales: a lower share of the doubled peak than fp8
    # ... yet still faster in FLOP/s than fp8 for a large GEMM
    assert fp4 * gpu.peak_flops_per_s("fp4") > fp8 * gpu.peak_flops_per_s("fp8")


def test_attention_backward_is_slower_per_flop_than_forward_on_gpus() -> None:
    h100 = chip("h100-sxm")
    op = Op(name="a", kind=OpKind.ATTENTION, flops=1e13, bytes_read=1e6, bytes_written=1e6)
    model = GpuModel(h100)
    fwd = model.op_time(op)
    bwd = model.op_time(dataclasses.replace(op, backward=True))
    ratio = model.efficiency.attention_backward_ratio
    assert bwd.compute_s == pytest.approx(fwd.compute_s / ratio) and ratio < 1


GEMM_AND_TPU_CHIPS = [c.id for c in default_catalog().chips if c.kind in ("gpu", "tpu")]


def _roofs(c_id: str, m: int, n: int, k: int) -> tuple[float, float, float]:
    """(model time less launch overhead, achievable compute roof, achievable GEMM HBM roof) of a
    16-bit GEMM (bf16, fp16 on parts without bf16)."""
    c = chip(c_id)
    dtype = "bf16" if c.supports("bf16") else "fp16"
    model = model_for(c)
    eff = model.efficiency  # type: ignore[attr-defined]
    op = Op(name="gemm", kind=OpKind.MATMUL, dtype=dtype, mnk=(m, n, k), shape=(m, n))
    t = model.op_time(op)
    compute_s = 2.0 * m * n * k / (c.peak_flops_per_s(dtype) * eff.gemm_fraction(dtype))
    stream_s = (m * k + k * n + m * n) * 2.0 / (c.hbm_bytes_per_s * eff.gemm_memory_fraction())
    return t.seconds - t.overhead_s, compute_s, stream_s


@settings(max_examples=60, deadline=None)
@given(
    cid=st.sampled_from(GEMM_AND_TPU_CHIPS),
    m=st.integers(1, 4096),
    dm=st.integers(1, 512),
    n=st.sampled_from([128, 1000, 4096, 8192, 14336]),
    k=st.sampled_from([64, 1000, 4096, 8192]),
)
def test_gemm_time_is_monotone_in_m_and_never_beats_the_roofline(
    cid: str, m: int, dm: int, n: int, k: int
) -> None:
    # more rows never take less time (every candidate kernel's work and traffic grow with M,
    # and the model takes the fastest), and no kernel choice beats the achievable roofline
    t, compute_s, stream_s = _roofs(cid, m, n, k)
    t_more, _, _ = _roofs(cid, m + dm, n, k)
    assert t_more >= t * (1 - 1e-12)
    assert t >= max(compute_s, stream_s) * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(
    cid=st.sampled_from(["h100-sxm", "a100-sxm-80gb", "mi300x", "b200", "h20", "gaudi3"]),
    m=st.integers(1, 20_000),
    n=st.sampled_from([128, 1000, 2880, 7168]),
    k=st.sampled_from([64, 200, 4096, 14336]),
    batch=st.sampled_from([1, 4]),
    dtype=st.sampled_from(["bf16", "fp8"]),
    routed=st.booleans(),
)
def test_plan_gemm_is_the_fastest_candidate_kernel_bit_for_bit(
    cid: str, m: int, n: int, k: int, batch: int, dtype: str, routed: bool
) -> None:
    # plan_gemm inlines gemm_candidate's arithmetic over the tile x split-K candidates for
    # speed: it must pick what a min over gemm_candidate picks, to the last bit, ties
    # (equal time) going to the least tensor work, then to the first candidate
    c = default_catalog().chip(cid)
    if not c.supports(dtype):
        dtype = "bf16" if c.supports("bf16") else "fp16"
    eff = efficiency_for(c)
    peak, n_bytes = c.peak_flops_per_s(dtype), 2.0 * (m * k + k * n + m * n) * batch
    routing = ExpertRouting(tokens=m, topk=8, experts=256, local=32) if routed else None
    largest = gpu._LARGEST_TILE.get(c.architecture, gpu.DEFAULT_TILE)
    tiles = [largest, *(t for t in gpu._SMALL_TILES if gpu._intensity(t) < gpu._intensity(largest))]
    splits = [s for s in gpu.SPLIT_K_FACTORS if s == 1 or -(-k // s) >= 2 * gpu.TILE_K]
    candidates = [
        gemm_candidate(
            c,
            eff,
            (m, n, k, batch),
            t,
            s,
            peak,
            n_bytes,
            None,
            dtype,
            expert=routed,
            routing=routing,
        )
        for t in tiles
        for s in splits
    ]
    best = min(candidates, key=lambda g: (g.seconds, g.compute_s))
    got = plan_gemm(c, eff, m, n, k, batch, peak, n_bytes, None, dtype, expert=routed,
                    routing=routing)  # fmt: skip
    assert got == best


def test_a_chips_packaged_efficiency_is_merged_once_and_cites_the_table() -> None:
    # every collective of a serving search asks for its chip's parameters (and their
    # sources): merged and cited once per chip, the same values as a fresh lookup
    c = default_catalog().chip("h100-sxm")
    eff = efficiency_for(c)
    assert efficiency_for(dataclasses.replace(c)) is eff
    fresh = default_efficiency_table().lookup(c)
    assert eff == fresh and eff.assumptions() == fresh.assumptions()
    assert eff.assumptions() is eff.assumptions()
    # a copy with other values cites its own
    changed = eff.with_values(source="test", gemm_peak_fraction=0.5)
    cited = {a.name: (a.value, a.source) for a in changed.assumptions()}
    assert cited["gemm_peak_fraction"] == (0.5, f"[{eff.basis}] test")


_DECODE_CASES = [(cid, m) for m in (1, 64, 128) for cid in GEMM_AND_TPU_CHIPS]


@pytest.mark.parametrize("cid", ["h20", "rtx-4090", "l40", "rtx-5090"])
def test_a_throttled_part_balances_its_l2_feed_with_a_smaller_tile(cid: str) -> None:
    # H20 (a quarter of Hopper's per-clock tensor rate) and the half-rate GeForce/L40 parts
    # share their flagship's L2 feed per SM, so a smaller tile keeps their MMA pipes busy.
    catalog = default_catalog()
    chip = catalog.chip(cid)
    flagship = catalog.chip({"h20": "h100-sxm", "rtx-5090": "rtx-pro-6000"}.get(cid, "l40s"))
    assert 0.15 < tensor_throttle(chip) < 0.6
    assert tensor_throttle(flagship) == 1.0
    assert balance_intensity(chip) < balance_intensity(flagship)


@pytest.mark.parametrize(("cid", "m"), _DECODE_CASES)
def test_a_decode_gemv_streams_its_weights_near_hbm_bandwidth(cid: str, m: int) -> None:
    # A decode GEMM (M = batch <= 128 tokens, an 8192x8192 bf16 weight): the small-M tiles of
    # cuBLAS/hipBLASLt (16-64 rows, split-K) keep it at the weight-stream time wherever
    # streaming the weights takes clearly longer than the MMA work; nearer the ridge point
    # (consumer parts at M = 128) tile and wave quantisation may show, but never by much.
    t, compute_s, stream_s = _roofs(cid, m, 8192, 8192)
    assert t <= 1.4 * max(compute_s, stream_s)
    if stream_s >= 2.0 * compute_s:
        assert t <= 1.1 * stream_s


def test_cdna3_decode_attention_reads_the_kv_cache_below_a_copys_rate() -> None:
    # the fitted CDNA3 decode_attention_hbm_fraction (fp8-KV paged attention of ROCm vLLM)
    # slows a decode step's KV read, not a prefill's attention; Hopper's measured decode
    # kernels read it a little above a copy's rate (efficiency.toml DAF)
    mi300x, h100 = chip("mi300x"), chip("h100-sxm")
    eff = efficiency_for(mi300x)
    assert 0 < eff.decode_attention_hbm_fraction < eff.hbm_fraction
    assert efficiency_for(h100).decode_attention_fraction() > efficiency_for(h100).hbm_fraction
    kv = 256 * 4096 * 2 * 128.0  # 256 sequences x 4096 cached tokens x (K, V) x 128 fp8
    decode = Op(name="attn", kind=OpKind.ATTENTION, dtype="bf16", mnk=(1, 4096, 128),
                batch=256, bytes_read=kv, flops=4.0 * 256 * 4096 * 128)  # fmt: skip
    t = GpuModel(mi300x).op_time(decode)
    plain = GpuModel(mi300x, dataclasses.replace(eff, decode_attention_hbm_fraction=0.0))
    ratio = eff.hbm_fraction / eff.decode_attention_hbm_fraction
    assert t.memory_s == pytest.approx(plain.op_time(decode).memory_s * ratio, rel=1e-9)
    prefill = dataclasses.replace(decode, mnk=(4096, 4096, 128))
    assert GpuModel(mi300x).op_time(prefill).seconds == plain.op_time(prefill).seconds


def test_decode_attention_pays_its_floor_not_one_launch() -> None:
    # a near-empty cache still costs the measured floor (efficiency.toml DAF); prefill
    # attention keeps one launch
    h100 = chip("h100-sxm")
    eff = efficiency_for(h100)
    decode = Op(name="attn", kind=OpKind.ATTENTION, dtype="bf16", mnk=(1, 2, 128),
                batch=32, bytes_read=4096.0, flops=4.0 * 32 * 2 * 128)  # fmt: skip
    t = GpuModel(h100).op_time(decode)
    assert t.overhead_s == eff.decode_attention_floor_s > eff.launch_overhead_s
    prefill = dataclasses.replace(decode, mnk=(2, 2, 128))
    assert GpuModel(h100).op_time(prefill).overhead_s == eff.launch_overhead_s
