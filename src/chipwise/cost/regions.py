"""Electricity price and grid carbon intensity of the cloud region a run is priced in.

``data/regions.toml`` gives, per provider and region, the grid's carbon intensity (Google's
published figure for each GCP region) and, where sourced, the electricity price. A cloud
run's energy is the same wherever it runs (PUE is per facility kind), but its kg CO2e and
its electricity bill follow the region of the offer it is priced with:
``energy_in_region(energy, offer, assumptions)``. A value the user set (a ``--prices``
file's ``[energy]`` table, origin "user") or changed in code is kept; a region not listed
keeps the packaged default, and the result's assumptions say which was used.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chipwise.cost.assumptions import Assumptions, CostError, default_assumptions
from chipwise.cost.energy import RunEnergy
from chipwise.hardware.chip import PriceOffer
from chipwise.hardware.prices import EnergyPrices

_DATA_FILE = "data/regions.toml"


class _Source(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str = Field(min_length=3)
    date: str


class _Region(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    region: str
    location: str = ""
    grid_kg_co2e_per_kwh: float = Field(ge=0, lt=2)
    grid_source: str
    usd_per_kwh: float | None = Field(default=None, ge=0, lt=2)
    usd_source: str | None = None
    note: str = ""


class _RegionsFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: dict[str, _Source]
    regions: list[_Region]

    @model_validator(mode="after")
    def _cited(self) -> _RegionsFile:
        for r in self.regions:
            for key in (r.grid_source, r.usd_source):
                if key is not None and key not in self.sources:
                    raise ValueError(f"{r.provider} {r.region}: source {key!r} not in [sources]")
            if (r.usd_per_kwh is None) != (r.usd_source is None):
                raise ValueError(f"{r.provider} {r.region}: usd_per_kwh needs usd_source")
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionEnergy:
    """One region's grid carbon intensity and (where sourced) electricity price."""

    provider: str
    region: str
    location: str
    grid_kg_co2e_per_kwh: float
    grid_source: str  # "ref" of the source
    grid_date: str
    usd_per_kwh: float | None
    usd_source: str | None
    usd_date: str | None
    note: str = ""


def load_regions(path: Path | None = None) -> dict[tuple[str, str], RegionEnergy]:
    """Read ``data/regions.toml`` (or ``path``): {(provider, region): RegionEnergy}."""
    where = (
        Path(str(resources.files("chipwise.cost").joinpath(_DATA_FILE))) if path is None else path
    )
    try:
        with where.open("rb") as fh:
            parsed = _RegionsFile.model_validate(tomllib.load(fh))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as err:
        raise CostError(f"{where.name}: cannot read region energy data: {err}") from err
    out: dict[tuple[str, str], RegionEnergy] = {}
    for r in parsed.regions:
        grid = parsed.sources[r.grid_source]
        usd = parsed.sources[r.usd_source] if r.usd_source else None
        out[(r.provider, r.region)] = RegionEnergy(
            provider=r.provider,
            region=r.region,
            location=r.location,
            grid_kg_co2e_per_kwh=r.grid_kg_co2e_per_kwh,
            grid_source=grid.ref,
            grid_date=grid.date,
            usd_per_kwh=r.usd_per_kwh,
            usd_source=None if usd is None else usd.ref,
            usd_date=None if usd is None else usd.date,
            note=r.note,
        )
    return out


@cache
def default_regions() -> dict[tuple[str, str], RegionEnergy]:
    return load_regions()


def regional_assumptions(
    provider: str, region: str, assumptions: Assumptions | None = None
) -> Assumptions:
    """``assumptions`` with the region's grid intensity and electricity price, where the
    region is listed and the value was not set by the user or in code."""
    a = default_assumptions() if assumptions is None else assumptions
    found = default_regions().get((provider, region))
    if found is None:
        return a
    where = f"{provider} {region}" + (f" ({found.location})" if found.location else "")
    if a.origin_of("grid_kg_co2e_per_kwh") == "packaged":
        a = a.sourced(
            "grid_kg_co2e_per_kwh",
            found.grid_kg_co2e_per_kwh,
            source=f"{where}: {found.grid_source}" + (f"; {found.note}" if found.note else ""),
            date=found.grid_date,
            origin="region",
        )
    if found.usd_per_kwh is not None and a.origin_of("usd_per_kwh") == "packaged":
        a = a.sourced(
            "usd_per_kwh",
            found.usd_per_kwh,
            source=f"{where}: {found.usd_source}",
            date=found.usd_date or "",
            origin="region",
        )
    return a


def energy_in_region(
    energy: RunEnergy, offer: PriceOffer, assumptions: Assumptions | None = None
) -> RunEnergy:
    """``energy`` with kg CO2e and electricity cost at the offer's region (kWh unchanged)."""
    a = regional_assumptions(offer.provider, offer.region, assumptions)
    names = ("grid_kg_co2e_per_kwh", "usd_per_kwh")
    kept = tuple(x for x in energy.assumptions if x.name not in names)
    return dataclasses.replace(
        energy,
        kg_co2e=energy.facility_kwh * a.grid_kg_co2e_per_kwh,
        usd_electricity=energy.facility_kwh * a.usd_per_kwh,
        assumptions=kept + a.cited(*names),
    )


def with_energy_prices(
    energy: EnergyPrices | None, assumptions: Assumptions | None = None
) -> Assumptions | None:
    """The assumptions with a ``--prices`` file's electricity price and grid intensity
    (cited to the file; a region's figure no longer replaces them); None when the file sets
    neither."""
    if energy is None or (energy.usd_per_kwh is None and energy.grid_kg_co2e_per_kwh is None):
        return assumptions
    a = default_assumptions() if assumptions is None else assumptions
    today = dt.date.today().isoformat()
    for name, value in (
        ("usd_per_kwh", energy.usd_per_kwh),
        ("grid_kg_co2e_per_kwh", energy.grid_kg_co2e_per_kwh),
    ):
        if value is not None:
            a = a.sourced(name, value, source=energy.source, date=today, origin="user")
    return a
