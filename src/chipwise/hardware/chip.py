"""The domain objects the rest of chipwise sees: ``Chip`` and ``PriceOffer``, plain and frozen."""

from __future__ import annotations

import datetime as dt
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
    # scale-up: the largest slice (TPU) or domain; scale-out: the largest job or cluster a
    # source records on this network (0 = none recorded)
    max_chips: int = 1
    # scale-out only: chips under full bisection bandwidth (0 = the whole fabric), and the
    # oversubscription of the tier above them (1 = non-blocking)
    pod_chips: int = 0
    oversubscription: float = 1.0


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
    hbm_capacity_bytes: float  # the datasheet figure
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
    # Bytes the runtime reports as the device's total (``memory.usable_bytes``); 0 = the
    # datasheet capacity. Serving engines size their KV cache from this figure.
    hbm_usable_bytes: float = 0.0

    @property
    def usable_hbm_bytes(self) -> float:
        """Device memory as the runtime reports it (what engines size from), else the
        datasheet capacity."""
        return self.hbm_usable_bytes or self.hbm_capacity_bytes

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

    @property
    def largest_job_chips(self) -> int | None:
        """The largest job the catalog records for this chip: its scale-out network's
        recorded cluster or job size, else (a TPU without one) its largest slice; None when
        no source records any (a GPU's NVLink domain is not a job limit)."""
        if self.scale_out is not None and self.scale_out.max_chips > 0:
            return max(self.scale_out.max_chips, self.scale_up.max_chips)
        if self.kind == "tpu":
            return max(self.scale_up.max_chips, self.scale_up.domain_chips)
        return None

    def supports(self, dtype: str) -> bool:
        return dtype in self.dense_flops_per_s

    def has_feature(self, feature: str) -> bool:
        """Whether the catalog lists ``feature`` (e.g. ``"media-encode"``) for this chip.

        False means absent *or not sourced*; ``features_note`` says which.
        """
        return feature in self.features


# A price older than this is flagged stale: cloud GPU prices move every few months (AWS cut
# P4/P5 on-demand prices by up to 45% in June 2025; usage.ai, 2026-06-30).
STALE_AFTER_DAYS = 365


def earliest_day(date: str) -> dt.date:
    """The earliest day a (possibly partial) ISO date can mean: '2025' -> 2025-01-01.

    Ages are counted from it, so a price dated only by its year is never younger than it is.
    """
    parts = [int(p) for p in date.split("-")] + [1, 1]
    return dt.date(parts[0], parts[1], parts[2])


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceOffer:
    """USD per chip-hour of one chip at one provider under one pricing model.

    The price is for the whole machine that holds the chip (accelerators, host vCPUs, memory
    and bundled local disk) divided by its chips. ``confidence`` is high | medium | low
    (``hardware.schema.Confidence``); ``date`` is the source's date (YYYY[-MM[-DD]]).
    """

    chip_id: str
    provider: str
    provider_kind: str  # hyperscaler | neocloud | user
    pricing: str  # on-demand | spot | committed-1y | committed-3y | capacity-block
    usd_per_chip_hour: float
    region: str
    instance: str
    source: str
    date: str
    note: str = ""
    confidence: str = "medium"

    def age_days(self, today: dt.date | None = None) -> int:
        """Days since the source's date (counted from its earliest possible day)."""
        return ((today or dt.date.today()) - earliest_day(self.date)).days

    def is_stale(self, today: dt.date | None = None) -> bool:
        """Older than ``STALE_AFTER_DAYS``."""
        return self.age_days(today) > STALE_AFTER_DAYS

    def caveats(self, today: dt.date | None = None) -> tuple[str, ...]:
        """Why this price may be off: 'low confidence', 'stale (701 days old)'; () if none."""
        out = []
        if self.confidence == "low":
            out.append("low confidence")
        if self.is_stale(today):
            out.append(f"stale ({self.age_days(today):,} days old)")
        return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class NoPublicPrice:
    """A chip with no public cloud price, and the source that says so."""

    chip_id: str
    why: str
    source: str
    date: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Purchase:
    """What one chip costs to buy (list price or street MSRP), with its source."""

    chip_id: str
    usd: float
    source: str
    date: str
    note: str = ""
