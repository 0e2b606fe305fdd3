"""Load, validate and look up the hardware catalog (chips, cloud offers, purchase prices).

The catalog is data: ``data/{gpu,tpu,asic}/*.toml`` (one chip each) and
``data/offers/*.toml``. Files are validated by ``schema.py`` when first loaded.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from chipwise.errors import CatalogError, UnknownChipError
from chipwise.hardware.chip import (
    Chip,
    Interconnect,
    NoPublicPrice,
    PriceOffer,
    Purchase,
    SourcedFigure,
)
from chipwise.hardware.schema import ChipFile, Figure, NoPriceFile, OfferFile, PurchaseFile

_DATA = "data"
_KIND_DIRS = ("gpu", "tpu", "asic")


@dataclass(frozen=True, slots=True)
class Catalog:
    """All chips and prices, with an alias index for look-up."""

    chips: tuple[Chip, ...]
    offers: tuple[PriceOffer, ...]
    purchases: tuple[Purchase, ...]
    no_price: tuple[NoPublicPrice, ...] = ()
    _index: dict[str, Chip] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", _alias_index(self.chips))

    def chip(self, name: str) -> Chip:
        """Find a chip by id or alias, case- and punctuation-insensitively; failing that,
        without the vendor's leading words ('NVIDIA H200', 'AMD Instinct MI300X')."""
        index = self._index
        for key in (_normalise(name), _normalise(_VENDOR_WORDS.sub("", name))):
            if key in index:
                return index[key]
        candidates = sorted({c.id for c in self.chips} | {a for c in self.chips for a in c.aliases})
        close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
        close_ids = list(dict.fromkeys(index[_normalise(c)].id for c in close))
        hint = f"; did you mean {', '.join(repr(c) for c in close_ids)}?" if close_ids else ""
        raise UnknownChipError(f"unknown chip {name!r}{hint} (see 'chipwise chips')")

    def offers_for(self, chip_id: str) -> tuple[PriceOffer, ...]:
        return tuple(o for o in self.offers if o.chip_id == chip_id)

    def purchase_for(self, chip_id: str) -> Purchase | None:
        return next((p for p in self.purchases if p.chip_id == chip_id), None)

    def no_price_for(self, chip_id: str) -> NoPublicPrice | None:
        """Why the chip has no public price, where the catalog records one."""
        return next((n for n in self.no_price if n.chip_id == chip_id), None)

    def with_offers(self, offers: Iterable[PriceOffer]) -> Catalog:
        """A copy where ``offers`` replace every offer of the same chip, provider and pricing
        (a negotiated or refreshed price replaces that provider's list prices) and add to
        the rest. Unknown chip ids are an error."""
        new = tuple(offers)
        known = {c.id for c in self.chips}
        for o in new:
            if o.chip_id not in known:
                close = difflib.get_close_matches(o.chip_id, sorted(known), n=1, cutoff=0.5)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise CatalogError(f"offer for unknown chip id {o.chip_id!r}{hint}")
        replaced = {(o.chip_id, o.provider, o.pricing) for o in new}
        kept = tuple(o for o in self.offers if (o.chip_id, o.provider, o.pricing) not in replaced)
        return Catalog(
            chips=self.chips, offers=kept + new, purchases=self.purchases, no_price=self.no_price
        )


# Vendor and brand words before a part's name, as nvidia-smi, rocm-smi and cloud pages
# print it ('NVIDIA GeForce RTX 4090', 'AMD Instinct MI300X', 'Google Cloud TPU v5p').
_VENDOR_WORDS = re.compile(
    r"^\s*(?:(?:nvidia|amd|instinct|radeon|geforce|tesla|google|cloud|intel|habana|aws)[\s_-]+)+",
    re.IGNORECASE,
)


def _normalise(name: str) -> str:
    """'TPU v5p' -> 'tpuv5p', 'H100-SXM' -> 'h100sxm'."""
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _alias_index(chips: tuple[Chip, ...]) -> dict[str, Chip]:
    """Map every normalised id and alias to its chip; a clash is a catalog error."""
    index: dict[str, Chip] = {}
    for c in chips:
        for name in (c.id, *c.aliases):
            key = _normalise(name)
            if key in index and index[key].id != c.id:
                raise CatalogError(f"alias {name!r} names both {index[key].id} and {c.id}")
            index[key] = c
    return index


def _sourced(f: Figure, file: ChipFile) -> SourcedFigure:
    src = file.sources[f.source]
    return SourcedFigure(value=f.value, source=src.ref, date=src.date, note=f.note)


def _opt(f: Figure | None) -> float | None:
    return None if f is None else f.value


def _opt_int(f: Figure | None) -> int | None:
    return None if f is None else round(f.value)


def _cite(key: str, file: ChipFile) -> str:
    src = file.sources[key]
    return f"{src.ref} ({src.date})"


def chip_from_file(file: ChipFile) -> Chip:
    """Turn a validated file into the domain ``Chip``."""
    up = file.scale_up
    out = file.scale_out
    caps = file.capabilities
    return Chip(
        id=file.id,
        name=file.name,
        vendor=file.vendor,
        kind=file.kind,
        architecture=file.architecture,
        aliases=tuple(file.aliases),
        dense_flops_per_s={k: v.value for k, v in file.dense_flops_per_s.items()},
        hbm_capacity_bytes=file.memory.capacity_bytes.value,
        hbm_usable_bytes=_opt(file.memory.usable_bytes) or file.memory.capacity_bytes.value,
        hbm_bytes_per_s=file.memory.bandwidth_bytes_per_s.value,
        memory_type=file.memory.type,
        unit_name=file.compute.unit_name,
        units=round(file.compute.units.value),
        matrix_units_per_unit=_opt_int(file.compute.matrix_units_per_unit),
        matrix_unit_dim=_opt_int(file.compute.matrix_unit_dim),
        clock_hz=_opt(file.compute.clock_hz),
        l2_bytes=_opt(file.compute.l2_bytes),
        sram_per_unit_bytes=_opt(file.compute.sram_per_unit_bytes),
        vector_flops_per_s=_opt(file.compute.vector_flops_per_s),
        tdp_w=file.power.tdp_w.value,
        typical_w=_opt(file.power.typical_w),
        scale_up=Interconnect(
            name=up.name,
            bytes_per_s_per_chip=up.bytes_per_s_per_chip_unidirectional.value,
            topology=up.topology,
            domain_chips=round(up.domain_chips.value),
            max_chips=round(up.max_chips.value) if up.max_chips else round(up.domain_chips.value),
        ),
        scale_out=None
        if out is None
        else Interconnect(
            name=out.name,
            bytes_per_s_per_chip=out.bytes_per_s_per_chip_unidirectional.value,
            topology="switch",
            max_chips=round(out.max_chips.value) if out.max_chips else 0,
            pod_chips=round(out.pod_chips.value) if out.pod_chips else 0,
            oversubscription=out.oversubscription.value if out.oversubscription else 1.0,
        ),
        clouds=tuple(file.availability.clouds),
        purchasable=file.availability.purchasable,
        software=tuple(file.software),
        release_year=round(file.release_year.value),
        figures={k: _sourced(v, file) for k, v in file.figures().items()},
        features=() if caps is None else tuple(caps.features),
        features_sources=() if caps is None else tuple(_cite(k, file) for k in caps.cited()),
        features_note="" if caps is None else caps.note,
        notes=file.notes,
    )


def _read_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise CatalogError(f"{path.name}: not valid TOML: {err}") from err


def _validation_message(path: Path, err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    bad = first.get("input")
    got = f" (got {bad!r})" if isinstance(bad, str | int | float) else ""
    return f"{path.name}: {loc}: {first['msg']}{got} ({err.error_count()} error(s) in file)"


def _check_known(path: Path, chip_id: str, known: set[str]) -> None:
    """An offer or purchase must name a chip id of the catalog (not an alias)."""
    if chip_id not in known:
        close = difflib.get_close_matches(chip_id, sorted(known), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise CatalogError(f"{path.name}: unknown chip id {chip_id!r}{hint}")


def load_catalog(root: Path | None = None) -> Catalog:
    """Read and validate every catalog file under ``root`` (default: the packaged data)."""
    base = Path(str(resources.files("chipwise.hardware").joinpath(_DATA))) if root is None else root
    chips: list[Chip] = []
    for kind in _KIND_DIRS:
        for path in sorted((base / kind).glob("*.toml")):
            try:
                file = ChipFile.model_validate(_read_toml(path))
            except ValidationError as err:
                raise CatalogError(_validation_message(path, err)) from err
            if path.stem != file.id:
                raise CatalogError(f"{path.name}: file name must equal its id {file.id!r}")
            if file.kind != kind:
                raise CatalogError(f"{path.name}: kind {file.kind!r} but lies in {kind}/")
            chips.append(chip_from_file(file))
    ids = [c.id for c in chips]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise CatalogError(f"duplicate chip ids: {', '.join(dupes)}")
    known = set(ids)
    offers: list[PriceOffer] = []
    purchases: list[Purchase] = []
    no_price: list[NoPublicPrice] = []
    for path in sorted((base / "offers").glob("*.toml")):
        raw = _read_toml(path)
        try:
            if path.stem == "no_price":
                for n in NoPriceFile.model_validate(raw).no_price:
                    _check_known(path, n.chip, known)
                    no_price.append(
                        NoPublicPrice(chip_id=n.chip, why=n.why, source=n.source, date=n.date)
                    )
                continue
            if path.stem == "purchase":
                for p in PurchaseFile.model_validate(raw).purchases:
                    _check_known(path, p.chip, known)
                    purchases.append(
                        Purchase(chip_id=p.chip, usd=p.usd, source=p.source, date=p.date,
                                 note=p.note)
                    )  # fmt: skip
                continue
            of = OfferFile.model_validate(raw)
        except ValidationError as err:
            raise CatalogError(_validation_message(path, err)) from err
        for o in of.offers:
            _check_known(path, o.chip, known)
            offers.append(
                PriceOffer(
                    chip_id=o.chip,
                    provider=of.provider,
                    provider_kind=of.kind,
                    pricing=o.pricing,
                    usd_per_chip_hour=o.usd_per_chip_hour,
                    region=o.region,
                    instance=o.instance,
                    source=o.source,
                    date=o.date,
                    note=o.note,
                    confidence=o.confidence,
                )
            )
    return Catalog(
        chips=tuple(chips),
        offers=tuple(offers),
        purchases=tuple(purchases),
        no_price=tuple(no_price),
    )


@cache
def default_catalog() -> Catalog:
    """The packaged catalog, loaded once per process."""
    return load_catalog()


def chip(name: str) -> Chip:
    """Look up a chip in the packaged catalog: ``chip("H100")``, ``chip("TPU v5p")``."""
    return default_catalog().chip(name)


def chips(kind: str | None = None) -> tuple[Chip, ...]:
    """All chips in the packaged catalog, optionally only one kind (gpu | tpu | asic)."""
    return tuple(c for c in default_catalog().chips if kind is None or c.kind == kind)
