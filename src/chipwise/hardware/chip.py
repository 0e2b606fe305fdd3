"""The domain objects the rest of chipwise sees: ``Chip`` and ``PriceOffer``, plain and frozen."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from chipwise.errors import UnsupportedOpError


@dataclass(frozen=True, slots=True, kw_only=True)
class SourcedFigure:
    """A catalog number with the reference and date it came from."""

    value: float
    source: str
    date: str
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Interconnect:
    """A network tier: scale-up (NVLink, ICI) or scale-out (InfiniBand, DCN)."""

    name: str
    bytes_per_s_per_chip: float  # unidirectional, per chip
    topology: str = "switch"  # switch | all-to-all | torus-2d | torus-3d | pcie | none
    domain_chips: int = 1
    max_chips: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Chip:
    """One accelerator, as the performance model needs it. Units are in the names."""

    id: str
    name: str
    vendor: str
    kind: str  # gpu | tpu | asic
    architecture: str
    aliases: tuple[str, ...]
    dense_flops_per_s: Mapping[str, float]  # per dtype, dense peak, per chip
    hbm_capacity_bytes: float
    hbm_bytes_per_s: float
    memory_type: str
    unit_name: str
    units: int  # SMs / CUs / TensorCores per chip
    matrix_units_per_unit: int | None
    matrix_unit_dim: int | None  # MXU side (TPU); None for GPUs
    clock_hz: float | None
    l2_bytes: float | None
    sram_per_unit_bytes: float | None
    vector_flops_per_s: float | None
    tdp_w: float
    typical_w: float | None
    scale_up: Interconnect
    scale_out: Interconnect | None
    clouds: tuple[str, ...]
    purchasable: bool
    software: tuple[str, ...]
    release_year: int
    figures: Mapping[str, SourcedFigure] = field(default_factory=dict)
    # Non-numeric capabilities (schema.FEATURES), the references backing them ("ref (date)")
    # and what was left out; () when the catalog file has no [capabilities] table.
    features: tuple[str, ...] = ()
    features_sources: tuple[str, ...] = ()
    features_note: str = ""
    notes: str = ""
    # A hypothetical chip (``hardware.hypothetical``) says what it is here: "user-supplied:
    # <file or derivation>"; "" for a catalog chip. ``based_on`` is the catalog id a derived
    # chip started from (its efficiency parameters are that chip's).
    provenance: str = ""
    based_on: str = ""

    @property
    def user_supplied(self) -> bool:
        """Whether the chip's figures came from the user, not the cited catalog."""
        return bool(self.provenance)

    def peak_flops_per_s(self, dtype: str) -> float:
        """Dense peak for ``dtype``; an unsupported dtype is an error, never a fallback."""
        try:
            return self.dense_flops_per_s[dtype]
        except KeyError:
            have = ", ".join(self.dense_flops_per_s) or "none"
            raise UnsupportedOpError(
                f"{self.id} has no {dtype} rate in the catalog (it supports: {have}); "
                f"choose one of those with --precision"
            ) from None

    def supports(self, dtype: str) -> bool:
        return dtype in self.dense_flops_per_s

    def has_feature(self, feature: str) -> bool:
        """Whether the catalog lists ``feature`` (e.g. ``"media-encode"``) for this chip.

        False means absent *or not sourced*; ``features_note`` says which.
        """
        return feature in self.features


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceOffer:
    """USD per chip-hour of one chip at one provider under one pricing model."""

    chip_id: str
    provider: str
    provider_kind: str  # hyperscaler | neocloud
    pricing: str  # on-demand | spot | committed-1y | committed-3y
    usd_per_chip_hour: float
    region: str
    instance: str
    source: str
    date: str
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Purchase:
    """What one chip costs to buy (list price or street MSRP), with its source."""

    chip_id: str
    usd: float
    source: str
    date: str
    note: str = ""
