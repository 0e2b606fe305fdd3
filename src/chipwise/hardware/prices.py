"""Prices from outside the packaged catalog: a user's price file and the refreshed price cache.

A **price file** (``--prices my.toml`` or ``my.csv``) uses the offers schema
(``schema.Offer``) with the provider on each row or once at the top; ``source`` and ``date``
are optional (they default to the file and its modification date), so a negotiated price is
one line. Its offers replace the catalog's for the same chip, provider and pricing and add to
the rest, for that run only; every one of them cites the file. TOML::

    provider = "gcp"                       # default for rows without one
    source = "our 2026 GCP contract"       # optional, default: the file name
    date = "2026-11"                       # optional, default: the file's date
    [[offers]]
    chip = "tpu-v5p"                       # id or alias
    pricing = "committed-3y"
    usd_per_chip_hour = 1.85
    region = "us-east5"                    # optional
    [energy]                               # optional: overrides the cost assumptions
    usd_per_kwh = 0.065
    grid_kg_co2e_per_kwh = 0.21

CSV: a header row naming the same fields (chip, provider, pricing, usd_per_chip_hour
required; region, instance, source, date, confidence, note optional). A bad row is an error
that names the file, the row and the field.

The **price cache** (``chipwise prices update``) is a JSON file of offers in the same schema,
with the date it was written and where its prices came from. It lives in the user cache dir
(``platformdirs``) or at ``$CHIPWISE_PRICE_CACHE``; its offers replace the packaged ones the
same way, and the packaged data stays the fallback.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chipwise.errors import CatalogError, UnknownChipError
from chipwise.hardware.catalog import Catalog, default_catalog
from chipwise.hardware.chip import PriceOffer
from chipwise.hardware.schema import Confidence, Offer, Pricing, _check_iso_date
from chipwise.limits import read_user_file

CACHE_ENV = "CHIPWISE_PRICE_CACHE"
CACHE_SCHEMA_VERSION = 1
# A bad file lists at most this many bad rows in its one-line error (then a count).
_MAX_ROW_ERRORS = 3


class PricesFileError(CatalogError):
    """A ``--prices`` file or price cache that cannot be read."""


class _Row(BaseModel):
    """One offer row of a user price file: the offers schema, provider per row allowed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chip: str = Field(min_length=1)
    provider: str | None = None
    pricing: Pricing
    usd_per_chip_hour: float = Field(gt=0, allow_inf_nan=False)
    region: str = ""
    instance: str = ""
    source: str = ""
    date: str | None = None
    confidence: Confidence = "high"
    note: str = ""

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str | None) -> str | None:
        return None if v is None else _check_iso_date(v)


class _Energy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    usd_per_kwh: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    grid_kg_co2e_per_kwh: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class _Header(BaseModel):
    """The top level of a TOML price file (rows are validated one by one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str | None = None
    source: str = ""
    date: str | None = None
    offers: list[dict[str, Any]] = []
    energy: _Energy | None = None

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str | None) -> str | None:
        return None if v is None else _check_iso_date(v)


@dataclass(frozen=True, slots=True, kw_only=True)
class EnergyPrices:
    """Electricity price and grid carbon intensity a price file sets (None: not set)."""

    usd_per_kwh: float | None
    grid_kg_co2e_per_kwh: float | None
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserPrices:
    """What a ``--prices`` file holds: offers (each citing the file) and energy prices."""

    path: Path
    offers: tuple[PriceOffer, ...]
    energy: EnergyPrices | None = None

    @property
    def label(self) -> str:
        return f"--prices {self.path.name}"

    @property
    def note(self) -> str:
        """One line for a report: what the file changed in this run."""
        chips = sorted({o.chip_id for o in self.offers})
        parts = []
        if self.offers:
            parts.append(
                f"{len(self.offers)} price(s) for {', '.join(chips)} replace the catalog's for "
                "the same chip, provider and pricing"
            )
        if self.energy is not None:
            parts.append("electricity price and grid carbon intensity are set by the file")
        return f"prices from {self.label}: " + "; ".join(parts)


def _row_error(where: str, err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "row"
    bad = first.get("input")
    got = f" (got {bad!r})" if isinstance(bad, str | int | float) and loc != "row" else ""
    return f"{where}: {loc}: {first['msg'].replace('Value error, ', '')}{got}"


def _raise_rows(path: Path, errors: list[str]) -> None:
    if not errors:
        return
    shown = "; ".join(errors[:_MAX_ROW_ERRORS])
    more = f"; and {len(errors) - _MAX_ROW_ERRORS} more" if len(errors) > _MAX_ROW_ERRORS else ""
    raise PricesFileError(
        f"{path.name}: {len(errors)} bad row(s): {shown}{more} (fields: chip, provider, "
        "pricing, usd_per_chip_hour, region, instance, source, date, confidence, note)"
    )


def _file_date(path: Path) -> str:
    return dt.date.fromtimestamp(path.stat().st_mtime).isoformat()


def _raw_rows(path: Path, text: str) -> tuple[_Header, list[tuple[str, dict[str, Any]]]]:
    """(the file's header, [(where, raw row)]) for a TOML or CSV price file."""
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames:
            raise PricesFileError(f"{path.name}: empty CSV; the first row names the fields")
        rows = []
        for i, row in enumerate(reader, start=2):
            if None in row:
                raise PricesFileError(f"{path.name} line {i}: more values than header fields")
            cleaned = {k.strip(): v.strip() for k, v in row.items() if v is not None and v.strip()}
            rows.append((f"line {i}", cleaned))
        return _Header(), rows
    if path.suffix.lower() != ".toml":
        raise PricesFileError(f"--prices {path.name}: give a .toml or .csv file")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise PricesFileError(f"{path.name}: not valid TOML: {err}") from err
    try:
        header = _Header.model_validate(raw)
    except ValidationError as err:
        raise PricesFileError(_row_error(path.name, err)) from err
    return header, [(f"offers[{i}]", r) for i, r in enumerate(header.offers)]


def load_prices_file(path: Path, catalog: Catalog | None = None) -> UserPrices:
    """Read and validate a user price file; chip names may be aliases.

    Raises:
        PricesFileError: the file cannot be read, or some rows are bad (one line naming the
            file, each bad row and field).
    """
    if not path.is_file():
        raise PricesFileError(f"--prices {path}: no such file")
    try:
        text = read_user_file(path, what="--prices", error=PricesFileError).decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PricesFileError(f"--prices {path}: cannot read it: {err}") from err
    return load_prices_text(text, path, catalog, date=_file_date(path))


def load_prices_text(
    text: str, path: Path, catalog: Catalog | None = None, *, date: str | None = None
) -> UserPrices:
    """``load_prices_file`` on text already read (the web UI's upload); ``path`` names it
    (its suffix picks TOML or CSV) and ``date`` is the default date (default: today)."""
    cat = default_catalog() if catalog is None else catalog
    header, rows = _raw_rows(path, text)
    label = f"--prices {path.name}"
    errors: list[str] = []
    offers: list[PriceOffer] = []
    for where, raw in rows:
        try:
            row = _Row.model_validate(raw)
        except ValidationError as err:
            errors.append(_row_error(where, err))
            continue
        provider = row.provider or header.provider
        if not provider:
            errors.append(f"{where}: provider: missing (set it on the row or at the top)")
            continue
        try:
            chip_id = cat.chip(row.chip).id
        except UnknownChipError as err:
            errors.append(f"{where}: chip: {err}")
            continue
        source = row.source or header.source
        offers.append(
            PriceOffer(
                chip_id=chip_id,
                provider=provider.lower(),
                provider_kind="user",
                pricing=row.pricing,
                usd_per_chip_hour=row.usd_per_chip_hour,
                region=row.region or "not recorded",
                instance=row.instance,
                source=f"{label}: {source}" if source else label,
                date=row.date or header.date or date or dt.date.today().isoformat(),
                note=row.note,
                confidence=row.confidence,
            )
        )
    _raise_rows(path, errors)
    energy = None
    if header.energy is not None:
        energy = EnergyPrices(
            usd_per_kwh=header.energy.usd_per_kwh,
            grid_kg_co2e_per_kwh=header.energy.grid_kg_co2e_per_kwh,
            source=label,
        )
    if not offers and energy is None:
        raise PricesFileError(f"{path.name}: no offers and no [energy] table; nothing to use")
    return UserPrices(path=path, offers=tuple(offers), energy=energy)


# ---- the price cache --------------------------------------------------------------------


class _CachedOffer(Offer):
    provider: str = Field(min_length=1)
    provider_kind: str = "hyperscaler"


class _CacheFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int
    updated: str
    origin: str
    offers: list[_CachedOffer]


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceCache:
    """The refreshed prices: when they were written and where they came from."""

    path: Path
    updated: str
    origin: str
    offers: tuple[PriceOffer, ...]


def cache_path() -> Path:
    """``$CHIPWISE_PRICE_CACHE``, else ``prices.json`` in the user cache dir."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("chipwise")) / "prices.json"


def read_cache(path: Path | None = None) -> PriceCache | None:
    """The price cache, or None when there is none.

    Raises:
        PricesFileError: the cache exists but is not valid (delete it or run
            'chipwise prices update' again).
    """
    where = cache_path() if path is None else path
    if not where.is_file():
        return None
    try:
        parsed = _CacheFile.model_validate(json.loads(where.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as err:
        raise PricesFileError(
            f"price cache {where} is not valid ({str(err).splitlines()[0]}); delete it or run "
            "'chipwise prices update' again"
        ) from err
    return PriceCache(
        path=where,
        updated=parsed.updated,
        origin=parsed.origin,
        offers=tuple(
            PriceOffer(
                chip_id=o.chip,
                provider=o.provider,
                provider_kind=o.provider_kind,
                pricing=o.pricing,
                usd_per_chip_hour=o.usd_per_chip_hour,
                region=o.region,
                instance=o.instance,
                source=o.source,
                date=o.date,
                note=o.note,
                confidence=o.confidence,
            )
            for o in parsed.offers
        ),
    )


def write_cache(offers: tuple[PriceOffer, ...], origin: str, path: Path | None = None) -> Path:
    """Write ``offers`` as the price cache (dated today); returns its path."""
    where = cache_path() if path is None else path
    data = {
        "schema_version": CACHE_SCHEMA_VERSION,
        "updated": dt.date.today().isoformat(),
        "origin": origin,
        "offers": [
            {
                "chip": o.chip_id,
                "provider": o.provider,
                "provider_kind": o.provider_kind,
                "pricing": o.pricing,
                "usd_per_chip_hour": o.usd_per_chip_hour,
                "region": o.region,
                "instance": o.instance,
                "source": o.source,
                "date": o.date,
                "confidence": o.confidence,
                "note": o.note,
            }
            for o in offers
        ],
    }
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    except OSError as err:
        raise PricesFileError(
            f"cannot write the price cache {where}: {err}; set ${CACHE_ENV} to a writable path"
        ) from err
    return where


def run_catalog(prices: Path | None = None) -> tuple[Catalog, UserPrices | None]:
    """The catalog a command runs with: packaged prices, then the price cache, then the
    user's ``--prices`` file, each replacing the previous ones for the same chip, provider
    and pricing."""
    catalog = default_catalog()
    cache = read_cache()
    if cache is not None:
        catalog = catalog.with_offers(cache.offers)
    user = None if prices is None else load_prices_file(prices, catalog)
    if user is not None:
        catalog = catalog.with_offers(user.offers)
    return catalog, user
