"""The numbers the cost & energy stage assumes, each with a unit, a source and a date.

Defaults live in ``data/assumptions.toml`` and are validated by pydantic when loaded. Inside,
they are one frozen ``Assumptions`` value that every cost and energy function takes, so a
caller can change any of them (``Assumptions.override(usd_per_kwh=0.2)``) and every result
says which values it used and where they came from (``Assumptions.cited``).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chipwise.errors import ChipwiseError
from chipwise.perf import Assumption

_DATA_FILE = "data/assumptions.toml"


class CostError(ChipwiseError):
    """A cost, energy or TCO input that cannot be priced (bad assumption, mismatched offer)."""


class _Entry(BaseModel):
    """One assumption in the TOML file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float
    unit: str = Field(min_length=1)
    source: str = Field(min_length=3)
    date: str
    note: str = ""

    @field_validator("date")
    @classmethod
    def _iso_date(cls, v: str) -> str:
        parts = v.split("-")
        if not (1 <= len(parts) <= 3 and all(p.isdigit() for p in parts) and len(parts[0]) == 4):
            raise ValueError(f"date {v!r} is not YYYY, YYYY-MM or YYYY-MM-DD")
        return v


class _AssumptionsFile(BaseModel):
    """The whole file: exactly the keys ``Assumptions`` has, no more, no fewer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    usd_per_kwh: _Entry
    grid_kg_co2e_per_kwh: _Entry
    pue_cloud: _Entry
    pue_owned: _Entry
    idle_fraction_gpu: _Entry
    idle_fraction_tpu: _Entry
    mfu_at_full_power: _Entry
    host_power_factor_gpu: _Entry
    host_power_factor_tpu: _Entry
    amortisation_years: _Entry
    hosting_fraction_of_chip_price: _Entry
    network_fraction_of_chip_price: _Entry
    ops_usd_per_chip_hour: _Entry
    owned_duty_cycle: _Entry


@dataclass(frozen=True, slots=True, kw_only=True)
class AssumptionSource:
    """Where a value came from. ``default`` is the value the source gives, to detect
    overrides; ``origin`` is "packaged" (assumptions.toml), "region" (the cloud region's
    figure, cost/data/regions.toml) or "user" (a --prices file)."""

    default: float
    unit: str
    source: str
    date: str
    note: str = ""
    origin: str = "packaged"


@dataclass(frozen=True, slots=True, kw_only=True)
class Assumptions:
    """Every number the cost stage assumes. Units are in the names.

    ``idle_fraction_*`` and ``host_power_factor_*`` have a value per chip kind; kind ``asic``
    (Gaudi, Trainium) uses the GPU value (see ``for_kind``).
    """

    usd_per_kwh: float
    grid_kg_co2e_per_kwh: float
    pue_cloud: float
    pue_owned: float
    idle_fraction_gpu: float
    idle_fraction_tpu: float
    mfu_at_full_power: float
    host_power_factor_gpu: float
    host_power_factor_tpu: float
    amortisation_years: float
    hosting_fraction_of_chip_price: float
    network_fraction_of_chip_price: float
    ops_usd_per_chip_hour: float
    owned_duty_cycle: float
    sources: Mapping[str, AssumptionSource] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )

    def __post_init__(self) -> None:
        def check(name: str, ok: bool, want: str) -> None:
            if not ok:
                value = getattr(self, name)
                raise CostError(f"assumption {name}={value!r} is invalid: it must be {want}")

        for name in ("usd_per_kwh", "grid_kg_co2e_per_kwh", "ops_usd_per_chip_hour"):
            check(name, getattr(self, name) >= 0, ">= 0")
        for name in ("hosting_fraction_of_chip_price", "network_fraction_of_chip_price"):
            check(name, getattr(self, name) >= 0, ">= 0")
        for name in ("pue_cloud", "pue_owned", "host_power_factor_gpu", "host_power_factor_tpu"):
            check(name, getattr(self, name) >= 1, ">= 1 (a ratio of total to chip power)")
        for name in ("idle_fraction_gpu", "idle_fraction_tpu"):
            check(name, 0 <= getattr(self, name) < 1, "in [0, 1) (a fraction of TDP)")
        check("mfu_at_full_power", 0 < self.mfu_at_full_power <= 1, "in (0, 1]")
        check("owned_duty_cycle", 0 < self.owned_duty_cycle <= 1, "in (0, 1]")
        check("amortisation_years", self.amortisation_years > 0, "> 0")

    def override(self, **values: float) -> Assumptions:
        """A copy with some values changed; unknown names are an error."""
        known = {f.name for f in dataclasses.fields(self)} - {"sources"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise CostError(
                f"unknown assumption(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        changes: dict[str, Any] = dict(values)
        return dataclasses.replace(self, **changes)

    def sourced(
        self, name: str, value: float, *, source: str, date: str, origin: str
    ) -> Assumptions:
        """A copy with ``name`` set to ``value`` and cited to ``source`` (not as an
        override): a region's grid intensity, or a --prices file's electricity price."""
        old = self.sources.get(name)
        unit = old.unit if old is not None else ""
        sources = dict(self.sources)
        sources[name] = AssumptionSource(
            default=value, unit=unit, source=source, date=date, origin=origin
        )
        return dataclasses.replace(
            self.override(**{name: value}), sources=MappingProxyType(sources)
        )

    def origin_of(self, name: str) -> str:
        """packaged | region | user | override (changed in code without a source)."""
        src = self.sources.get(name)
        if src is None or float(getattr(self, name)) != src.default:
            return "override"
        return src.origin

    def idle_fraction(self, kind: str) -> tuple[str, float]:
        """(name, value) of the idle fraction of TDP for a chip ``kind``."""
        name = "idle_fraction_tpu" if kind == "tpu" else "idle_fraction_gpu"
        return name, float(getattr(self, name))

    def host_power_factor(self, kind: str) -> tuple[str, float]:
        """(name, value) of server power per unit of chip power for a chip ``kind``."""
        name = "host_power_factor_tpu" if kind == "tpu" else "host_power_factor_gpu"
        return name, float(getattr(self, name))

    def cited(self, *names: str) -> tuple[Assumption, ...]:
        """The named assumptions as ``Assumption`` records (name, value, source with date).

        A value that differs from the file's default is cited as an override.
        """
        out: list[Assumption] = []
        for name in names:
            value = float(getattr(self, name))
            src = self.sources.get(name)
            if src is None:
                source = "caller-supplied (no packaged default)"
            elif value != src.default:
                source = f"override (default {src.default:g} {src.unit}: {src.source}, {src.date})"
            else:
                source = f"{src.source} ({src.date}) [{src.unit}]"
            out.append(Assumption(name=name, value=value, source=source))
        return tuple(out)


def _default_path() -> Path:
    return Path(str(resources.files("chipwise.cost").joinpath(_DATA_FILE)))


def load_assumptions(path: Path | None = None) -> Assumptions:
    """Read and validate an assumptions TOML file (default: the packaged one)."""
    path = _default_path() if path is None else path
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise CostError(f"{path.name}: cannot read assumptions: {err}") from err
    try:
        parsed = _AssumptionsFile.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise CostError(
            f"{path.name}: {loc}: {first['msg']} ({err.error_count()} error(s) in file)"
        ) from err
    entries: dict[str, _Entry] = {name: getattr(parsed, name) for name in type(parsed).model_fields}
    sources = MappingProxyType(
        {
            name: AssumptionSource(
                default=e.value, unit=e.unit, source=e.source, date=e.date, note=e.note
            )
            for name, e in entries.items()
        }
    )
    values = {name: e.value for name, e in entries.items()}
    return Assumptions(**values, sources=sources)


@cache
def default_assumptions() -> Assumptions:
    """The packaged defaults, loaded once per process (the value is frozen)."""
    return load_assumptions()
