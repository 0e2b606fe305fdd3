"""The packaged hardware catalog: complete, sourced, and physically plausible.

These tests read the real data files. A failure means a catalog figure is missing, unsourced
or inconsistent with the others, not that the code is wrong.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

import chipwise
from chipwise import UnknownChipError
from chipwise.hardware import Chip, default_catalog
from chipwise.hardware.schema import FEATURES, ChipFile, parse_date
from chipwise.workload.kinds import NON_ML_KINDS

REQUIRED_GPUS = (
    "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie", "h200-sxm", "b200", "gb200",
    "b300", "gb300", "h800", "h20", "l4", "l40", "l40s", "rtx-4090", "rtx-5090",
    "rtx-pro-6000", "mi250x", "mi300x",
    "mi325x", "mi355x", "max-1550", "a10g",
)  # fmt: skip
REQUIRED_TPUS = ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7")
REQUIRED_ASICS = ("gaudi3", "trainium2")
REQUIRED_IDS = REQUIRED_GPUS + REQUIRED_TPUS + REQUIRED_ASICS

# Common names a user types, and the chip each must find.
ALIASES = [
    ("a100", "a100-sxm-80gb"), ("A100 SXM", "a100-sxm-80gb"), ("A100 PCIe", "a100-pcie-80gb"),
    ("H100", "h100-sxm"), ("h100 sxm5", "h100-sxm"), ("H200", "h200-sxm"), ("H800", "h800"),
    ("B200", "b200"), ("GB200 NVL72", "gb200"), ("B300", "b300"), ("HGX B300", "b300"),
    ("GB300 NVL72", "gb300"), ("GB300", "gb300"), ("L40", "l40"), ("L40S", "l40s"),
    ("H20", "h20"), ("RTX PRO 6000", "rtx-pro-6000"), ("RTX 5090", "rtx-5090"),
    ("Blackwell Ultra", "b300"), ("RTX 4090", "rtx-4090"), ("5090", "rtx-5090"),
    ("mi300", "mi300x"), ("MI355X", "mi355x"), ("Max 1550", "max-1550"), ("A10G", "a10g"),
    ("Gaudi 3", "gaudi3"), ("trn2", "trainium2"), ("v4", "tpu-v4"), ("v5e", "tpu-v5e"),
    ("v5p", "tpu-v5p"), ("TPU v5p", "tpu-v5p"), ("TPU v6e", "tpu-v6e"),
    ("trillium", "tpu-v6e"), ("ironwood", "tpu-v7"), ("tpu7x", "tpu-v7"), ("TPU7x", "tpu-v7"),
]  # fmt: skip

_ISO_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")

# Dense 16-bit FLOP per matrix unit (tensor core, AMD matrix core, Intel XMX engine) per clock,
# with FP16 accumulate, by architecture. A chip's 16-bit figure may not exceed
# units x matrix_units_per_unit x clock x this (x 1.05), which catches a 2:4 sparse headline
# (2x) taken as dense. Sources: hardware.md tensor-core tables (S1, S3) and the checks there:
# A100 1410 MHz x 432 x 512 = 312 TF; H100 1830 MHz x 528 x 1024 = 989 TF; B200/GB200 2048
# (S3's estimate); AMD FMA x 2 per matrix core (CDNA2 128, CDNA3 256, CDNA4 512 FMA).
# Volta and Turing do 64 FMA = 128 FLOP (hardware.md's 256 for Volta would give V100 250 TF,
# twice its 125 TF peak). GDDR parts (GA10x, Ada, GeForce Blackwell) do 256 FLOP with FP16
# accumulate (RTX 4090: 128 x 4 x 2.52 GHz x 256 = 330 TF, S18). Intel Xe-HPC: 4096 BF16
# ops/clk per Xe core over 8 XMX engines (Tom's Hardware, Architecture Day 2021).
FLOP_PER_MATRIX_UNIT_CLOCK = {
    "volta": 128, "turing": 128, "ampere": 512, "ampere-ga10x": 256, "ada": 256, "hopper": 1024,
    "blackwell": 2048, "blackwell-rtx": 256, "cdna2": 256, "cdna3": 512, "cdna4": 1024,
    "xe-hpc": 512,
}  # fmt: skip
# Published figures are allowed this much above the product (rounding, boost clocks).
PEAK_TOLERANCE = 1.05
# A 16-bit figure below this share of the product is probably per die or mis-scaled. GeForce
# parts sit at exactly 0.5 (FP32 accumulate, see rtx-4090.toml).
MIN_SHARE_OF_PRODUCT = 0.45


def _catalog_files() -> list[Path]:
    base = Path(str(resources.files("chipwise.hardware").joinpath("data")))
    return sorted(p for kind in ("gpu", "tpu", "asic") for p in (base / kind).glob("*.toml"))


def _sixteen_bit(chip: Chip) -> float:
    return chip.dense_flops_per_s.get("bf16") or chip.dense_flops_per_s["fp16"]


CHIPS = default_catalog().chips


def test_packaged_catalog_loads_every_chip_file() -> None:
    assert len(CHIPS) == len(_catalog_files())


@pytest.mark.parametrize("chip_id", REQUIRED_IDS)
def test_required_chip_is_in_the_catalog(chip_id: str) -> None:
    assert chipwise.chip(chip_id).id == chip_id


@pytest.mark.parametrize(
    ("ids", "kind"), [(REQUIRED_GPUS, "gpu"), (REQUIRED_TPUS, "tpu"), (REQUIRED_ASICS, "asic")]
)
def test_required_chips_have_their_kind(ids: tuple[str, ...], kind: str) -> None:
    assert {chipwise.chip(i).kind for i in ids} == {kind}


def test_chip_ids_are_unique() -> None:
    ids = [c.id for c in CHIPS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.id)
def test_every_id_and_alias_resolves_to_its_chip(chip: Chip) -> None:
    for name in (chip.id, *chip.aliases, chip.id.upper()):
        assert chipwise.chip(name).id == chip.id, name


@pytest.mark.parametrize(("name", "chip_id"), ALIASES)
def test_common_names_resolve(name: str, chip_id: str) -> None:
    assert chipwise.chip(name).id == chip_id


@pytest.mark.parametrize(
    ("name", "chip_id"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # as nvidia-smi prints the parts
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("AMD Instinct MI300X", "mi300x"),
        ("Google Cloud TPU v5p", "tpu-v5p"),
    ],
)
def test_vendor_words_before_a_part_name_are_dropped(name: str, chip_id: str) -> None:
    assert chipwise.chip(name).id == chip_id


def test_a_vendor_word_alone_is_not_a_chip() -> None:
    with pytest.raises(UnknownChipError):
        chipwise.chip("NVIDIA ")


@pytest.mark.parametrize(
    ("name", "suggested"), [("h10", "h100-sxm"), ("tpu-v5x", "tpu-v5p"), ("mi300z", "mi300x")]
)
def test_unknown_chip_raises_with_close_matches(name: str, suggested: str) -> None:
    with pytest.raises(UnknownChipError, match=re.escape(repr(suggested))) as err:
        chipwise.chip(name)
    assert repr(name) in str(err.value)


def test_unknown_chip_with_no_close_match_says_where_to_look() -> None:
    with pytest.raises(UnknownChipError, match="chipwise chips") as err:
        chipwise.chip("quantum-toaster-9000")
    assert "did you mean" not in str(err.value)


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.id)
def test_every_figure_has_a_source_and_a_past_date(chip: Chip) -> None:
    assert chip.figures, "no figures"
    for path, fig in chip.figures.items():
        assert len(fig.source) > 3, path
        assert _ISO_DATE.fullmatch(fig.date), (path, fig.date)
        assert parse_date(fig.date) <= dt.date.today(), (path, fig.date)


@pytest.mark.parametrize("path", _catalog_files(), ids=lambda p: p.name)
def test_every_listed_source_is_cited(path: Path) -> None:
    file = ChipFile.model_validate(tomllib.loads(path.read_text()))
    assert set(file.sources) == file.cited_sources()


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.id)
def test_precision_rates_are_ordered(chip: Chip) -> None:
    """fp32 <= tf32 <= bf16 <= fp8 where a chip lists them (lower precision is never slower)."""
    rates = chip.dense_flops_per_s
    order = [d for d in ("fp32", "tf32", "bf16", "fp8") if d in rates]
    assert [rates[d] for d in order] == sorted(rates[d] for d in order), order


@pytest.mark.parametrize("chip", [c for c in CHIPS if c.kind == "gpu"], ids=lambda c: c.id)
def test_data_centre_gpus_run_fp16_at_the_bf16_rate(chip: Chip) -> None:
    rates = chip.dense_flops_per_s
    if "fp16" not in rates or "bf16" not in rates or not chip.memory_type.startswith("HBM"):
        pytest.skip("not an HBM data-centre GPU listing both fp16 and bf16")
    assert rates["fp16"] == rates["bf16"]


def _gpus_with_clock() -> list[Chip]:
    return [
        c
        for c in CHIPS
        if c.kind == "gpu" and c.clock_hz is not None and c.matrix_units_per_unit is not None
    ]


def test_every_clocked_gpu_architecture_has_a_flop_per_clock_entry() -> None:
    missing = {c.architecture for c in _gpus_with_clock()} - set(FLOP_PER_MATRIX_UNIT_CLOCK)
    assert not missing


@pytest.mark.parametrize("chip", _gpus_with_clock(), ids=lambda c: c.id)
def test_gpu_dense_peak_matches_its_matrix_units(chip: Chip) -> None:
    """A 2:4 sparse headline taken as dense would be 2x the units x clock product."""
    assert chip.clock_hz is not None and chip.matrix_units_per_unit is not None
    product = (
        chip.units
        * chip.matrix_units_per_unit
        * chip.clock_hz
        * FLOP_PER_MATRIX_UNIT_CLOCK[chip.architecture]
    )
    assert _sixteen_bit(chip) <= product * PEAK_TOLERANCE
    assert _sixteen_bit(chip) >= product * MIN_SHARE_OF_PRODUCT


def _systolic_chips() -> list[Chip]:
    return [c for c in CHIPS if c.matrix_unit_dim is not None and c.clock_hz is not None]


def test_tpus_with_a_clock_are_checked_against_their_systolic_arrays() -> None:
    ids = {c.id for c in _systolic_chips()}
    assert {"tpu-v4", "tpu-v5e", "tpu-v5p", "gaudi3"} <= ids


@pytest.mark.parametrize("chip", _systolic_chips(), ids=lambda c: c.id)
def test_systolic_peak_is_units_x_arrays_x_side_squared_x_2_x_clock(chip: Chip) -> None:
    """TPU MXUs and Gaudi MMEs: one d x d multiply-accumulate array per unit per clock."""
    assert chip.matrix_unit_dim is not None and chip.clock_hz is not None
    per_unit = chip.matrix_units_per_unit or 1
    expected = chip.units * per_unit * chip.matrix_unit_dim**2 * 2 * chip.clock_hz
    assert chip.peak_flops_per_s("bf16") == pytest.approx(expected, rel=0.05)


@pytest.mark.parametrize("chip", [c for c in CHIPS if c.kind == "tpu"], ids=lambda c: c.id)
def test_tpus_have_no_fp64_and_are_rent_only_on_gcp(chip: Chip) -> None:
    assert not chip.supports("fp64")
    assert not chip.purchasable
    assert chip.clouds == ("gcp",)
    assert chip.scale_up.topology in ("torus-2d", "torus-3d")
    assert chip.matrix_unit_dim in (128, 256)


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.id)
def test_figures_are_in_si_base_units(chip: Chip) -> None:
    """Catches a figure written in GB, TB/s or TFLOP/s instead of bytes, B/s and FLOP/s."""
    assert 8e9 <= chip.hbm_capacity_bytes <= 1e12
    assert 1e11 <= chip.hbm_bytes_per_s <= 5e13
    assert all(1e11 <= r <= 1e17 for r in chip.dense_flops_per_s.values())
    assert 1e9 <= chip.scale_up.bytes_per_s_per_chip <= 5e12
    if chip.scale_out is not None:
        assert 1e9 <= chip.scale_out.bytes_per_s_per_chip <= chip.scale_up.bytes_per_s_per_chip
    assert 30 <= chip.tdp_w <= 2000
    assert 2015 <= chip.release_year <= dt.date.today().year


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.id)
def test_scale_up_domain_matches_topology(chip: Chip) -> None:
    up = chip.scale_up
    if up.topology == "pcie":
        # the GPUs one server or VM holds, talking over PCIe: 8 at most in the sources
        assert 1 <= up.domain_chips <= 8
    else:
        assert up.domain_chips >= 2
    assert up.max_chips >= 1


# A server or VM holds several PCIe data-centre cards (AWS g6e.48xlarge: 8 L40S; GCP
# g2-standard-96: 8 L4; Azure NC96ads_A100_v4: 4 A100 PCIe; AWS g5.48xlarge: 8 A10G and
# g4dn.metal: 8 T4; an Aurora node: 6 Max 1550 over Xe Link, priced at the PCIe floor);
# GeForce cards stay single.
PCIE_SERVER_GPUS = [
    ("l40s", 8), ("l4", 8), ("l40", 8), ("h100-pcie", 8), ("rtx-pro-6000", 8),
    ("a100-pcie-80gb", 4), ("rtx-4090", 1), ("rtx-5090", 1), ("a10g", 8), ("t4", 8),
    ("max-1550", 6),
]  # fmt: skip


@pytest.mark.parametrize(("chip_id", "gpus"), PCIE_SERVER_GPUS)
def test_a_pcie_domain_is_the_gpus_one_server_holds(chip_id: str, gpus: int) -> None:
    up = chipwise.chip(chip_id).scale_up
    assert up.topology == "pcie"
    assert up.domain_chips == gpus


# [capabilities]: what non-ML workloads need beyond FLOP/s (graphics, fp64 HPC, video, ...).

# (chip, feature, listed?): facts the sources state plainly. Data-centre NVIDIA parts decode
# video (NVDEC) but have no encoder (NVENC); Ada and GeForce cards carry NVENC and RT cores.
KNOWN_FEATURES = [
    ("h100-sxm", "media-decode", True), ("h100-sxm", "media-encode", False),
    ("a100-sxm-80gb", "media-encode", False), ("b200", "rt-cores", False),
    ("h200-sxm", "display", False), ("l4", "media-encode", True), ("l4", "rt-cores", True),
    ("l40s", "rt-cores", True), ("l40s", "media-encode", True), ("l40", "media-encode", True),
    ("rtx-4090", "display", True),
    ("rtx-4090", "raster", True), ("rtx-5090", "media-encode", True),
    ("rtx-pro-6000", "media-encode", True), ("rtx-pro-6000", "rt-cores", True),
    ("t4", "rt-cores", True), ("a10g", "media-encode", True), ("a10g", "display", False),
    ("mi300x", "media-decode", True), ("mi300x", "media-encode", False),
    ("mi300x", "raster", False), ("gaudi3", "media-decode", True),
    ("gaudi3", "general-compute", False), ("trainium2", "general-compute", False),
    ("tpu-v5p", "general-compute", False),
]  # fmt: skip


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.id)
def test_every_chip_has_a_sourced_capabilities_table_with_known_names(chip: Chip) -> None:
    assert chip.features_sources, "no [capabilities] table"
    assert all(_ISO_DATE.search(ref) for ref in chip.features_sources)
    assert set(chip.features) <= set(FEATURES)
    assert chip.features_note, "say which source backs which feature and what was left out"


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.id)
def test_a_chip_with_an_fp64_rate_lists_the_fp64_feature(chip: Chip) -> None:
    assert chip.supports("fp64") <= chip.has_feature("fp64")


@pytest.mark.parametrize("chip", [c for c in CHIPS if c.kind == "gpu"], ids=lambda c: c.id)
def test_every_gpu_runs_general_compute_kernels(chip: Chip) -> None:
    assert chip.has_feature("general-compute")


@pytest.mark.parametrize("chip", [c for c in CHIPS if c.kind == "tpu"], ids=lambda c: c.id)
def test_tpus_have_no_graphics_media_or_fp64_features(chip: Chip) -> None:
    assert chip.features == ()


@pytest.mark.parametrize(("chip_id", "feature", "listed"), KNOWN_FEATURES)
def test_known_capabilities(chip_id: str, feature: str, listed: bool) -> None:
    assert chipwise.chip(chip_id).has_feature(feature) is listed


def test_every_non_ml_capability_but_bandwidth_is_a_catalog_feature() -> None:
    """The advisor matches kinds.py requirements to chip features by name."""
    needed = {r.capability for k in NON_ML_KINDS for r in k.requirements}
    assert needed - set(FEATURES) == {"memory-bandwidth"}  # a figure, not a feature


def test_graphics_and_video_encode_have_capable_gpus_and_fp64_hpc_ranks_by_matrix_rate() -> None:
    def capable(kind: str) -> set[str]:
        needs = {r.capability for k in NON_ML_KINDS if k.name == kind for r in k.requirements}
        return {c.id for c in CHIPS if needs - {"memory-bandwidth"} <= set(c.features)}

    assert capable("graphics") >= {"rtx-4090", "rtx-5090", "l40s"}
    assert not capable("graphics") & {"h100-sxm", "a100-sxm-80gb", "mi300x", "tpu-v5p"}
    assert capable("video-encode") >= {"l4", "l40s", "t4"}
    assert not capable("video-encode") & {"h100-sxm", "h200-sxm", "b200", "mi300x", "gaudi3"}
    fp64 = sorted(
        capable("fp64-hpc"), key=lambda i: (-chipwise.chip(i).peak_flops_per_s("fp64"), i)
    )
    assert fp64[:3] == ["mi300x", "mi325x", "mi250x"]  # 163.4, 163.4, 95.7 TF matrix FP64


def test_largest_job_is_sourced_where_recorded() -> None:
    from chipwise.hardware import chip

    # recorded on the scale-out network, with its source: GPU clusters and TPU multislice
    for cid in ("h100-sxm", "tpu-v5e", "tpu-v6e"):
        c = chip(cid)
        assert c.largest_job_chips is not None and c.largest_job_chips > 8192
        assert "scale_out.max_chips" in c.figures
        assert c.figures["scale_out.max_chips"].date
    # a TPU with no record falls back to its largest slice; a GPU with none has no limit
    assert chip("tpu-v7").largest_job_chips == chip("tpu-v7").scale_up.max_chips
    assert chip("l40s").largest_job_chips is None


def test_amd_mi3xx_chips_have_a_sourced_scale_out_network() -> None:
    """MI300X/MI325X/MI355X clusters join 8-GPU nodes over one 400 Gb/s NIC per GPU (AMD's
    MI3XX reference design, ROCm multi-node docs); without a scale-out tier the planner would
    refuse every run beyond one node."""
    from chipwise.hardware.catalog import chip

    for chip_id in ("mi300x", "mi325x", "mi355x"):
        out = chip(chip_id).scale_out
        assert out is not None, chip_id
        assert out.bytes_per_s_per_chip == 50e9, chip_id
        assert out.max_chips >= 8192, chip_id


def test_blackwell_ultra_keeps_b200_matrix_rates_but_cuts_int8_and_fp64() -> None:
    """B300 runs bf16/fp8 at B200's dense rates (DGX B300 datasheet) but NVIDIA's HGX B300
    table cuts INT8 to 2 POPS and FP64 to 10 TF per 8 GPUs; copying B200's INT8 would make
    int8 serving on B300 look 30x faster than it is."""
    b200, b300 = chipwise.chip("b200"), chipwise.chip("b300")
    for dtype in ("bf16", "fp8"):
        assert b300.peak_flops_per_s(dtype) == b200.peak_flops_per_s(dtype)
    assert b300.peak_flops_per_s("fp4") > b200.peak_flops_per_s("fp4")
    assert b300.peak_flops_per_s("int8") < b300.peak_flops_per_s("bf16") / 10
    assert b300.peak_flops_per_s("fp64") < b200.peak_flops_per_s("fp64") / 10
    assert b300.hbm_capacity_bytes > b200.hbm_capacity_bytes


def test_gb300_is_blackwell_ultra_in_a_72_gpu_nvlink_domain() -> None:
    """GB300 NVL72 runs the Blackwell Ultra die at GB200's 16-bit/FP8 clocks, keeps the B300's
    INT8 cut, and shares one NVLink domain across the rack."""
    gb200, gb300 = chipwise.chip("gb200"), chipwise.chip("gb300")
    assert gb300.peak_flops_per_s("bf16") == gb200.peak_flops_per_s("bf16")
    assert gb300.peak_flops_per_s("fp4") > gb200.peak_flops_per_s("fp4")
    assert gb300.peak_flops_per_s("int8") < gb300.peak_flops_per_s("bf16") / 10
    assert gb300.scale_up.domain_chips == 72
    assert gb300.tdp_w > gb200.tdp_w


def test_l40_has_the_l40s_memory_and_half_its_16_bit_tensor_rate() -> None:
    """NVIDIA's L40/L40S datasheet: same AD102 SMs and 48 GB at 864 GB/s; the L40's dense
    BF16 is 181 TF against the L40S's 362 (taking one for the other doubles or halves it)."""
    l40, l40s = chipwise.chip("l40"), chipwise.chip("l40s")
    assert l40.hbm_bytes_per_s == l40s.hbm_bytes_per_s
    assert l40.hbm_capacity_bytes == l40s.hbm_capacity_bytes
    half = l40s.peak_flops_per_s("bf16") / 2
    assert l40.peak_flops_per_s("bf16") == pytest.approx(half, rel=0.01)


def test_h20_is_a_bandwidth_part_with_a_seventh_of_h100s_tensor_rate() -> None:
    """The export-compliant H20: more and faster HBM than H100 SXM, about 15 % of its FLOP/s,
    so decode-bound serving is where it competes."""
    h20, h100 = chipwise.chip("h20"), chipwise.chip("h100-sxm")
    assert h20.hbm_bytes_per_s > h100.hbm_bytes_per_s
    assert h20.hbm_capacity_bytes > h100.hbm_capacity_bytes
    assert 0.1 < h20.peak_flops_per_s("bf16") / h100.peak_flops_per_s("bf16") < 0.2
    assert h20.scale_up.bytes_per_s_per_chip == h100.scale_up.bytes_per_s_per_chip


def test_rtx_pro_6000_is_the_5090_die_with_96_gb_and_full_rate_fp32_accumulate() -> None:
    """GB202 with 188 SMs: more memory than any GDDR part in the catalog, and professional
    tensor rates (FP32 accumulate at the FP16 rate) that are over twice the GeForce 5090's."""
    pro, rtx = chipwise.chip("rtx-pro-6000"), chipwise.chip("rtx-5090")
    assert pro.architecture == rtx.architecture == "blackwell-rtx"
    assert pro.hbm_capacity_bytes == 3 * rtx.hbm_capacity_bytes
    assert pro.peak_flops_per_s("bf16") > 2 * rtx.peak_flops_per_s("bf16")
    assert pro.scale_up.topology == "pcie"
