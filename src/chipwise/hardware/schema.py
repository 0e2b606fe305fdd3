"""Pydantic schema of the catalog data files (one TOML per chip, one per cloud's offers).

Every number in a catalog file is a *figure*: ``{ value = ..., source = "S1" }`` where
``S1`` is a key of the file's ``[sources]`` table, which gives the reference and its date.
``extra="forbid"`` everywhere, so a misspelled key is an error at load, not a silent default.

TOML layout of a chip file (see ``data/gpu/h100-sxm.toml`` for a full example)::

    id = "h100-sxm"            # kebab-case
    name = "NVIDIA H100 SXM5 80GB"
    vendor = "nvidia"          # nvidia | amd | intel | google | aws
    kind = "gpu"               # gpu | tpu | asic
    architecture = "hopper"
    aliases = ["h100", "H100 SXM"]
    [sources.S1]
    ref = "stas00/ml-engineering:compute/accelerator/README.md @744d01e"
    date = "2026-08-22"
    [release_year] ...         # figure
    [dense_flops_per_s]        # dense (never 2:4 sparse) peak per chip, per dtype
    bf16 = { value = 989e12, source = "S1" }
    [memory] ... [compute] ... [power] ... [scale_up] ... [scale_out] ... [availability]
    [capabilities]             # optional: non-numeric hardware features, see below
    features = ["general-compute", "int32", "fp64", "media-decode"]
    source = "C1"

``dense_flops_per_s.fp64`` is the chip's best *native* dense IEEE binary64 rate: the
matrix/tensor-core (DGEMM) rate where the chip has FP64 matrix units (A100, H100, H200,
MI250X, MI300X, MI325X), otherwise the vector rate (V100, Ada and Turing cards, Max 1550).
On Blackwell (B200, GB200) and CDNA 4 (MI355X) both units run FP64 at the same rate. The
other rate, where sourced, is given in the figure's note. Rates reached only by emulation
(FP64 from lower-precision tensor-core passes) are never used. It is the DGEMM (HPL) peak, as
bf16/fp16/fp8/int8 are matrix-unit peaks. ``fp32`` keeps a different convention: the vector
(non-tensor) FP32 rate, since TF32 is its own dtype (MI250X's 95.7 TF matrix FP32 is in a note).

``[capabilities].features`` names what a non-ML workload needs beyond FLOP/s (the
capability names of ``chipwise.workload.kinds``; memory bandwidth is a figure, not a
feature). A chip lists a feature only when a cited source supports it; a feature left out
means "absent or not sourced", and the table's ``note`` says which::

    fp64              IEEE binary64 arithmetic in hardware
    int32             32-bit integer add, logic and shift on general ALUs
    general-compute   arbitrary kernels (CUDA, HIP, SYCL/OpenCL): not XLA-only, not TPC-C
    raster            graphics pipeline: rasterizer, texture units, ROPs
    rt-cores          ray-tracing units (BVH traversal, ray-triangle tests)
    display           display engine with outputs (scan-out)
    media-encode      fixed-function video encoder (NVENC, AMD VCN encode)
    media-decode      fixed-function video decoder (NVDEC, AMD VCN, Gaudi media engine)
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Dtype = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
DTYPES: tuple[Dtype, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
Vendor = Literal["nvidia", "amd", "intel", "google", "aws"]
Kind = Literal["gpu", "tpu", "asic"]
Topology = Literal["switch", "all-to-all", "torus-2d", "torus-3d", "pcie", "none"]
# capacity-block: capacity reserved ahead for a fixed span of days (AWS EC2 Capacity Blocks
# for ML), paid up front; not a 1-3 year commitment.
Pricing = Literal["on-demand", "spot", "committed-1y", "committed-3y", "capacity-block"]
# How far a price can be trusted: "high" a provider's own price list (or the user's own
# contract), "medium" a maintained scrape of provider APIs (SkyPilot's catalogs), "low" a
# third-party survey or blog, an estimate, or a row that disagrees with its neighbours.
Confidence = Literal["high", "medium", "low"]
CONFIDENCES: tuple[Confidence, ...] = ("high", "medium", "low")
Feature = Literal[
    "fp64",
    "int32",
    "general-compute",
    "raster",
    "rt-cores",
    "display",
    "media-encode",
    "media-decode",
]
FEATURES: tuple[Feature, ...] = (
    "fp64",
    "int32",
    "general-compute",
    "raster",
    "rt-cores",
    "display",
    "media-encode",
    "media-decode",
)

_ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _check_iso_date(v: str) -> str:
    if not re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", v):
        raise ValueError(f"date {v!r} is not YYYY, YYYY-MM or YYYY-MM-DD")
    return v


class SourceRef(_Frozen):
    """Where figures came from: a repo@commit:path, URL or document, and its date."""

    ref: str = Field(min_length=3)
    date: str = Field(description="ISO date (YYYY, YYYY-MM or YYYY-MM-DD) of the source")

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str) -> str:
        return _check_iso_date(v)


class Figure(_Frozen):
    """One sourced number. ``source`` is a key of the file's ``[sources]`` table."""

    value: float
    source: str
    note: str = ""


class MemorySpec(_Frozen):
    capacity_bytes: Figure  # the datasheet figure (what cost and advice quote)
    bandwidth_bytes_per_s: Figure
    type: str  # HBM3, HBM2e, GDDR6X, ...
    # what the runtime reports as the device's total (torch.cuda.mem_get_info / HIP): the
    # base serving engines size their KV cache from; absent = capacity_bytes
    usable_bytes: Figure | None = None


class ComputeSpec(_Frozen):
    """Compute units: SMs (NVIDIA), CUs (AMD), Xe cores / MMEs (Intel), TensorCores (TPU)."""

    unit_name: str  # "SM", "CU", "TensorCore", "NeuronCore", "MME", "Xe-core"
    units: Figure  # per chip
    matrix_units_per_unit: Figure | None = None  # tensor cores per SM, MXUs per TensorCore
    matrix_unit_dim: Figure | None = None  # systolic array side (TPU MXU 128 or 256)
    clock_hz: Figure | None = None  # the clock the dense peak is quoted at
    l2_bytes: Figure | None = None  # last-level on-chip cache (GPU L2, TPU CMEM)
    sram_per_unit_bytes: Figure | None = None  # shared memory / L1 per SM, VMEM per TensorCore
    vector_flops_per_s: Figure | None = None  # non-matrix fp32 rate (CUDA cores, TPU VPU)


class PowerSpec(_Frozen):
    tdp_w: Figure
    typical_w: Figure | None = None  # measured mean where published (TPU v3/v4)


class ScaleUpSpec(_Frozen):
    """The fast domain: NVLink/NVSwitch, Infinity Fabric, TPU ICI, PCIe when nothing else."""

    name: str
    bytes_per_s_per_chip_unidirectional: Figure
    topology: Topology
    domain_chips: Figure  # chips in one scale-up domain (8 for HGX, 72 NVL72, 256 v5e pod)
    max_chips: Figure | None = None  # largest job size (e.g. TPU pod / multislice limit)
    link_latency_s: Figure | None = None


class ScaleOutSpec(_Frozen):
    """Between scale-up domains: InfiniBand, RoCE, EFA, TPU DCN.

    ``max_chips`` is the largest training job or single-fabric cluster of this chip a
    source records (e.g. 16,384 H100 for Llama 3, 50,944 TPU v5e in one multislice job):
    how far ``advise`` searches. Left out when no source gives one.
    """

    name: str
    bytes_per_s_per_chip_unidirectional: Figure
    max_chips: Figure | None = None
    # Fabric above the NICs: ``pod_chips`` chips share full bisection bandwidth; traffic
    # between pods crosses a tier ``oversubscription``:1 oversubscribed (1 = non-blocking,
    # e.g. NVIDIA's rail-optimized fat tree; Meta's Llama 3 RoCE cluster: 3,072-GPU pods,
    # 1:7 above). Left out: non-blocking.
    pod_chips: Figure | None = None
    oversubscription: Figure | None = None

    @field_validator("oversubscription")
    @classmethod
    def _at_least_one(cls, v: Figure | None) -> Figure | None:
        if v is not None and v.value < 1:
            raise ValueError(f"oversubscription is a ratio >= 1 (1 = non-blocking), got {v.value}")
        return v


class AvailabilitySpec(_Frozen):
    clouds: list[str]  # lower-case provider ids: gcp, aws, azure, oci, lambda, runpod, ...
    purchasable: bool
    source: str
    note: str = ""


class CapabilitiesSpec(_Frozen):
    """Non-numeric hardware features (names in the module docstring), with their sources.

    ``source`` backs the list as a whole; ``more_sources`` are further keys of the file's
    ``[sources]`` table when one reference does not cover every feature, and ``note`` says
    which source backs which feature and which features were left out for want of one.
    """

    features: list[Feature]
    source: str
    more_sources: list[str] = []
    note: str = ""

    @field_validator("features")
    @classmethod
    def _no_repeats(cls, v: list[Feature]) -> list[Feature]:
        repeated = sorted({f for f in v if v.count(f) > 1})
        if repeated:
            raise ValueError(f"features listed twice: {', '.join(repeated)}")
        return v

    def cited(self) -> list[str]:
        """Every ``[sources]`` key this table cites."""
        return [self.source, *self.more_sources]


class ChipFile(_Frozen):
    """The validated content of one ``data/<kind>/<id>.toml`` file."""

    id: str
    name: str
    vendor: Vendor
    kind: Kind
    architecture: str
    aliases: list[str] = []
    sources: dict[str, SourceRef]
    release_year: Figure
    dense_flops_per_s: dict[Dtype, Figure]
    memory: MemorySpec
    compute: ComputeSpec
    power: PowerSpec
    scale_up: ScaleUpSpec
    scale_out: ScaleOutSpec | None = None
    availability: AvailabilitySpec
    software: list[str]  # "cuda", "rocm", "xla", "pytorch", "jax", "tensorflow", ...
    capabilities: CapabilitiesSpec | None = None
    notes: str = ""

    @field_validator("id")
    @classmethod
    def _kebab(cls, v: str) -> str:
        if not _ID_RE.match(v):
            raise ValueError(f"chip id {v!r} is not kebab-case (like 'h100-sxm')")
        return v

    @model_validator(mode="after")
    def _sources_resolve(self) -> ChipFile:
        missing = sorted(self.cited_sources() - set(self.sources))
        if missing:
            raise ValueError(
                f"figures or [capabilities] cite sources not in [sources]: {', '.join(missing)}"
            )
        for name, fig in self.figures().items():
            if fig.value < 0:
                raise ValueError(f"{name} is negative ({fig.value})")
        return self

    @model_validator(mode="after")
    def _fp64_rate_means_fp64_feature(self) -> ChipFile:
        caps = self.capabilities
        if caps is not None and "fp64" in self.dense_flops_per_s and "fp64" not in caps.features:
            raise ValueError(
                "dense_flops_per_s.fp64 is given but [capabilities].features lacks 'fp64'; "
                "add it (a chip with an fp64 rate has fp64 hardware)"
            )
        return self

    def cited_sources(self) -> set[str]:
        """Every ``[sources]`` key the file cites: figures, availability and capabilities."""
        cited = {f.source for f in self.figures().values()} | {self.availability.source}
        if self.capabilities is not None:
            cited |= set(self.capabilities.cited())
        return cited

    def figures(self) -> dict[str, Figure]:
        """Every figure in the file by dotted path, e.g. ``'memory.capacity_bytes'``."""
        out: dict[str, Figure] = {"release_year": self.release_year}
        out.update({f"dense_flops_per_s.{k}": v for k, v in self.dense_flops_per_s.items()})
        for section in ("memory", "compute", "power", "scale_up", "scale_out"):
            model = getattr(self, section)
            if model is None:
                continue
            for key in type(model).model_fields:
                value = getattr(model, key)
                if isinstance(value, Figure):
                    out[f"{section}.{key}"] = value
        return out


class Offer(_Frozen):
    """A price for one chip-hour of ``chip`` at ``provider``.

    ``usd_per_chip_hour`` is what a user pays for the whole machine that holds the chip
    (accelerators + host vCPUs, memory and the local disk the instance type includes),
    divided by its chips: never a component price.
    """

    chip: str
    pricing: Pricing
    usd_per_chip_hour: float = Field(gt=0)
    region: str
    instance: str = ""
    source: str = Field(min_length=3)
    date: str
    confidence: Confidence = "medium"
    note: str = ""

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str) -> str:
        return _check_iso_date(v)


class OfferFile(_Frozen):
    """A ``data/offers/<provider>.toml`` file: one provider's prices."""

    provider: str
    kind: Literal["hyperscaler", "neocloud"]
    note: str = ""
    offers: list[Offer]


class NoPrice(_Frozen):
    """A chip known to have no public price (e.g. sold only through an account team)."""

    chip: str
    why: str = Field(min_length=3)
    source: str = Field(min_length=3)
    date: str

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str) -> str:
        return _check_iso_date(v)


class NoPriceFile(_Frozen):
    """``data/offers/no_price.toml``: chips with no public price, and where that is said."""

    no_price: list[NoPrice]


class PurchasePrice(_Frozen):
    chip: str
    usd: float = Field(gt=0)
    source: str = Field(min_length=3)
    date: str
    note: str = ""

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str) -> str:
        return _check_iso_date(v)


class PurchaseFile(_Frozen):
    """``data/offers/purchase.toml``: list prices (or street MSRP) of chips you can buy."""

    purchases: list[PurchasePrice]


def parse_date(text: str) -> dt.date:
    """Earliest day a (possibly partial) ISO date can mean; used to sort by age."""
    parts = [int(p) for p in text.split("-")] + [1, 1]
    return dt.date(parts[0], parts[1], parts[2])
