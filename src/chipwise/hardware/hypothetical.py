"""Hypothetical chips: a user's chip file, or a catalog chip with some figures changed.

Two ways to describe a chip that is not in the catalog:

* a **chip file** (``--chip-file mychip.toml``): the catalog's own schema (``schema.ChipFile``,
  see ``data/gpu/h100-sxm.toml``), except that sources are optional: a figure may be a bare
  number (``units = 132``) or a table without ``source``; such figures cite "user-supplied".
  An optional ``[price]`` table (``usd_per_chip_hour``, and ``purchase_usd`` for owned
  hardware) prices it; without one the chip has no price.
* a **derived chip** (``--chip "h100-sxm:hbm_bandwidth*1.5,memory=141GB"``): a catalog chip
  and a comma-separated list of edits, each ``FIELD*FACTOR`` or ``FIELD=VALUE`` (``FIELDS``
  lists the names; values take SI suffixes such as ``141GB``, ``4.8TB/s``, ``1.2PFLOP/s``).
  It keeps the base chip's efficiency parameters and, unless ``price=`` is given, its prices
  (each labelled as the base chip's price).

Either way the ``Chip`` has ``provenance`` set ("user-supplied: ..."), its changed figures
cite "user-supplied", and every output that shows it says so.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from chipwise.errors import CatalogError
from chipwise.hardware.catalog import Catalog, _normalise, chip_from_file
from chipwise.hardware.chip import Chip, PriceOffer, Purchase, SourcedFigure
from chipwise.hardware.schema import (
    DTYPES,
    ChipFile,
    ComputeSpec,
    MemorySpec,
    PowerSpec,
    ScaleOutSpec,
    ScaleUpSpec,
)
from chipwise.limits import read_user_file
from chipwise.units import parse_quantity

USER_SUPPLIED = "user-supplied"
_USER_SOURCE_KEY = "user"
# A derived chip stays within this factor of its base on every figure it changes: wide enough
# for any design study (a 100x faster link), narrow enough to catch a unit slip (GB vs B).
MAX_FACTOR = 100.0
MAX_EDITS = 16
MAX_SPEC_CHARS = 400


class HypotheticalChipError(CatalogError):
    """A chip file or derived-chip spec that cannot be read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UserChip:
    """A hypothetical chip with the prices it carries (none, the user's, or its base's)."""

    chip: Chip
    offers: tuple[PriceOffer, ...] = ()
    purchase: Purchase | None = None


# ---- derived chips ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Field:
    help: str  # what it is, with its unit
    figure: str  # the catalog figure it overrides (dotted path), "" if none
    get: Callable[[Chip], float | None]
    set: Callable[[Chip, float], Chip]
    integer: bool = False


def _flops_field(dtype: str) -> _Field:
    def set_(c: Chip, v: float) -> Chip:
        return replace(c, dense_flops_per_s={**c.dense_flops_per_s, dtype: v})

    return _Field(
        help=f"dense {dtype} FLOP/s",
        figure=f"dense_flops_per_s.{dtype}",
        get=lambda c: c.dense_flops_per_s.get(dtype),
        set=set_,
    )


def _scale_out_set(c: Chip, v: float) -> Chip:
    if c.scale_out is None:
        raise HypotheticalChipError(
            f"{c.id} has no scale-out network to change; drop scale_out_bandwidth"
        )
    return replace(c, scale_out=replace(c.scale_out, bytes_per_s_per_chip=v))


FIELDS: dict[str, _Field] = {
    "hbm_bandwidth": _Field(
        help="memory bandwidth, B/s",
        figure="memory.bandwidth_bytes_per_s",
        get=lambda c: c.hbm_bytes_per_s,
        set=lambda c, v: replace(c, hbm_bytes_per_s=v),
    ),
    "memory": _Field(
        help="memory capacity, bytes",
        figure="memory.capacity_bytes",
        get=lambda c: c.hbm_capacity_bytes,
        set=lambda c, v: replace(
            c, hbm_capacity_bytes=v, hbm_usable_bytes=c.hbm_usable_bytes * v / c.hbm_capacity_bytes
        ),
    ),
    **{f"{d}_flops": _flops_field(d) for d in DTYPES},
    "vector_flops": _Field(
        help="non-matrix fp32 FLOP/s",
        figure="compute.vector_flops_per_s",
        get=lambda c: c.vector_flops_per_s,
        set=lambda c, v: replace(c, vector_flops_per_s=v),
    ),
    "l2": _Field(
        help="last-level cache, bytes",
        figure="compute.l2_bytes",
        get=lambda c: c.l2_bytes,
        set=lambda c, v: replace(c, l2_bytes=v),
    ),
    "scale_up_bandwidth": _Field(
        help="scale-up link, B/s per chip one way",
        figure="scale_up.bytes_per_s_per_chip_unidirectional",
        get=lambda c: c.scale_up.bytes_per_s_per_chip,
        set=lambda c, v: replace(c, scale_up=replace(c.scale_up, bytes_per_s_per_chip=v)),
    ),
    "scale_up_domain": _Field(
        help="chips in one scale-up domain",
        figure="scale_up.domain_chips",
        get=lambda c: float(c.scale_up.domain_chips),
        set=lambda c, v: replace(
            c,
            scale_up=replace(
                c.scale_up, domain_chips=round(v), max_chips=max(c.scale_up.max_chips, round(v))
            ),
        ),
        integer=True,
    ),
    "scale_out_bandwidth": _Field(
        help="scale-out network, B/s per chip one way",
        figure="scale_out.bytes_per_s_per_chip_unidirectional",
        get=lambda c: None if c.scale_out is None else c.scale_out.bytes_per_s_per_chip,
        set=_scale_out_set,
    ),
    "tdp": _Field(
        help="board power, W",
        figure="power.tdp_w",
        get=lambda c: c.tdp_w,
        set=lambda c, v: replace(c, tdp_w=v),
    ),
}
PRICE_FIELD = "price"  # usd_per_chip_hour: replaces the base chip's offers with the user's


def field_names() -> tuple[str, ...]:
    """Every name a derived-chip edit may change, the price included."""
    return (*FIELDS, PRICE_FIELD)


_EDIT_RE = re.compile(r"^([a-z0-9_]+)\s*([*=])\s*(\S.*)$")
_UNIT_SUFFIXES = ("FLOP/s", "FLOPS", "B/s", "Hz", "W", "B", "$")


def _number(text: str, where: str) -> float:
    """``141GB`` -> 141e9, ``4.8TB/s`` -> 4.8e12, ``1.5`` -> 1.5; an error names ``where``."""
    s = text.strip().lstrip("$")
    for suffix in _UNIT_SUFFIXES:
        if s.endswith(suffix) and len(s) > len(suffix):
            s = s[: -len(suffix)]
            break
    try:
        value = parse_quantity(s)
    except ValueError:
        raise HypotheticalChipError(
            f"{where}: {text!r} is not a number; write e.g. 1.5, 141GB, 4.8TB/s or 2e15"
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise HypotheticalChipError(f"{where}: {text!r} must be a positive, finite number")
    return value


def _today() -> str:
    return dt.date.today().isoformat()


def _note(base: Chip, name: str, edit: str, old: float | None) -> str:
    was = "" if old is None else f"; {base.id} has {old:.4g}"
    ref = base.figures.get(FIELDS[name].figure) if name in FIELDS else None
    cite = "" if ref is None else f" ({ref.source}, {ref.date})"
    return f"{edit}{was}{cite}"


def derive_chip(spec: str, catalog: Catalog) -> UserChip:
    """A catalog chip with some figures changed: ``"h100-sxm:hbm_bandwidth*1.5,memory=141GB"``.

    Raises:
        HypotheticalChipError: a malformed spec, an unknown field (the message lists the valid
            ones), a value that is not a positive number or beyond ``MAX_FACTOR`` of the base.
        UnknownChipError: a base that is not in the catalog.
    """
    text = spec.strip()
    if len(text) > MAX_SPEC_CHARS:
        raise HypotheticalChipError(
            f"derived chip spec is {len(text)} characters (at most {MAX_SPEC_CHARS}); "
            "use --chip-file for a chip that differs in many ways"
        )
    base_name, sep, edits_text = text.partition(":")
    edits = [e.strip() for e in edits_text.split(",") if e.strip()]
    if not sep or not base_name.strip() or not edits:
        raise HypotheticalChipError(
            f"derived chip {spec!r} must be BASE:EDIT[,EDIT...], e.g. "
            "'h100-sxm:hbm_bandwidth*1.5,memory=141GB'"
        )
    if len(edits) > MAX_EDITS:
        raise HypotheticalChipError(
            f"derived chip {spec!r} has {len(edits)} edits (at most {MAX_EDITS})"
        )
    base = catalog.chip(base_name.strip())
    chip = base
    figures: dict[str, SourcedFigure] = dict(base.figures)
    price: float | None = None
    seen: set[str] = set()
    canonical: list[str] = []
    for edit in edits:
        m = _EDIT_RE.match(edit.lower().replace(" ", ""))
        if m is None:
            raise HypotheticalChipError(
                f"derived chip edit {edit!r} must be FIELD*FACTOR or FIELD=VALUE, e.g. "
                "hbm_bandwidth*1.5 or memory=141GB"
            )
        name, op = m.group(1), m.group(2)
        raw = edit.split(op, 1)[1].strip()
        if name not in field_names():
            raise HypotheticalChipError(
                f"unknown chip field {name!r} in {edit!r}; valid fields: {', '.join(field_names())}"
            )
        if name in seen:
            raise HypotheticalChipError(f"derived chip {spec!r} changes {name} twice")
        seen.add(name)
        value = _number(raw, f"{name} in {spec!r}")
        canonical.append(f"{name}{op}{raw}")
        if name == PRICE_FIELD:
            if op == "*":
                raise HypotheticalChipError(
                    f"price is set, not scaled: write price=USD_PER_CHIP_HOUR (got {edit!r})"
                )
            price = value
            continue
        f = FIELDS[name]
        old = f.get(chip)
        if op == "*":
            if old is None:
                raise HypotheticalChipError(
                    f"{base.id} has no {name} to scale; set it with {name}=VALUE"
                )
            if not 1 / MAX_FACTOR <= value <= MAX_FACTOR:
                raise HypotheticalChipError(
                    f"{edit!r}: factor {value:g} is outside [{1 / MAX_FACTOR:g}, {MAX_FACTOR:g}]"
                )
            new = old * value
        else:
            new = value
            if old and not 1 / MAX_FACTOR <= new / old <= MAX_FACTOR:
                raise HypotheticalChipError(
                    f"{edit!r}: {new:.4g} is more than {MAX_FACTOR:g}x away from {base.id}'s "
                    f"{old:.4g} ({f.help}); check the unit"
                )
        if f.integer:
            new = float(max(1, round(new)))
        chip = f.set(chip, new)
        figures[f.figure] = SourcedFigure(
            value=new, source=USER_SUPPLIED, date=_today(), note=_note(base, name, edit, old)
        )
    label = ",".join(canonical)
    new_id = f"{base.id}:{label}"
    chip = replace(
        chip,
        id=new_id,
        name=f"{base.name} with {label} ({USER_SUPPLIED})",
        aliases=(),
        figures=figures,
        provenance=f"{USER_SUPPLIED}: {base.id} with {label}",
        based_on=base.based_on or base.id,
    )
    if price is not None:
        return UserChip(chip=chip, offers=(_user_offer(new_id, price, f"--chip {spec!r}"),))
    basis = f"price of the catalog {base.id}, not of this hypothetical chip"
    offers = tuple(
        replace(o, chip_id=new_id, note=f"{basis}. {o.note}".strip())
        for o in catalog.offers_for(base.id)
    )
    bought = catalog.purchase_for(base.id)
    purchase = None if bought is None else replace(bought, chip_id=new_id, note=basis)
    return UserChip(chip=chip, offers=offers, purchase=purchase)


def _user_offer(chip_id: str, usd: float, where: str) -> PriceOffer:
    return PriceOffer(
        chip_id=chip_id,
        provider="user",
        provider_kind="neocloud",
        pricing="on-demand",
        usd_per_chip_hour=usd,
        region="user-supplied",
        instance="",
        source=f"{USER_SUPPLIED} ({where})",
        date=_today(),
    )


# ---- chip files ---------------------------------------------------------------------------


class UserPrice(BaseModel):
    """The optional ``[price]`` table of a user's chip file."""

    model_config = {"frozen": True, "extra": "forbid"}
    usd_per_chip_hour: float | None = None
    purchase_usd: float | None = None


def _figure_keys(model: type[BaseModel]) -> set[str]:
    return {
        k
        for k, f in model.model_fields.items()
        if f.annotation is not None and "Figure" in str(f.annotation)
    }


def _with_user_sources(raw: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Bare numbers become figures, and figures without a source cite the user."""
    used = False

    def fix(value: Any) -> Any:
        nonlocal used
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            used = True
            return {"value": value, "source": _USER_SOURCE_KEY}
        if isinstance(value, dict) and "value" in value and "source" not in value:
            used = True
            return {**value, "source": _USER_SOURCE_KEY}
        return value

    out = dict(raw)
    if "release_year" in out:
        out["release_year"] = fix(out["release_year"])
    if isinstance(out.get("dense_flops_per_s"), dict):
        out["dense_flops_per_s"] = {k: fix(v) for k, v in out["dense_flops_per_s"].items()}
    for section, model in _SECTIONS.items():
        table = out.get(section)
        if not isinstance(table, dict):
            continue
        keys = _figure_keys(model)
        out[section] = {k: fix(v) if k in keys else v for k, v in table.items()}
    for section in ("availability", "capabilities"):
        table = out.get(section)
        if isinstance(table, dict) and "source" not in table:
            out[section] = {**table, "source": _USER_SOURCE_KEY}
            used = True
    return out, used


_SECTIONS: dict[str, type[BaseModel]] = {
    "memory": MemorySpec,
    "compute": ComputeSpec,
    "power": PowerSpec,
    "scale_up": ScaleUpSpec,
    "scale_out": ScaleOutSpec,
}


def _errors(path: Path, err: ValidationError) -> str:
    """One clause per bad field: ``memory.type: Field required; vendor: ... (got 'x')``."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        bad = e.get("input")
        got = f" (got {bad!r})" if isinstance(bad, str | int | float) else ""
        parts.append(f"{loc or 'file'}: {e['msg']}{got}")
    n = len(parts)
    return f"chip file {path}: {n} bad field{'s' if n > 1 else ''}: {'; '.join(parts)}"


def load_chip_file(path: Path) -> UserChip:
    """Read a user's chip file (the catalog schema, sources optional, ``[price]`` optional).

    Raises:
        HypotheticalChipError: a missing or unreadable file; one clause per bad field.
    """
    try:
        data = read_user_file(path, what="chip file", error=HypotheticalChipError)
        raw = tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise HypotheticalChipError(f"chip file {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise HypotheticalChipError(f"chip file {path}: not readable TOML: {err}") from err
    price_raw = raw.pop("price", None)
    fixed, used = _with_user_sources(raw)
    sources = dict(fixed.get("sources") or {})
    if used:
        sources.setdefault(
            _USER_SOURCE_KEY, {"ref": f"{USER_SUPPLIED} ({Path(path).name})", "date": _today()}
        )
    fixed["sources"] = sources
    try:
        file = ChipFile.model_validate(fixed)
        price = UserPrice.model_validate(price_raw or {})
    except ValidationError as err:
        raise HypotheticalChipError(_errors(path, err)) from err
    for name, value in (("usd_per_chip_hour", price.usd_per_chip_hour),
                        ("purchase_usd", price.purchase_usd)):  # fmt: skip
        if value is not None and not (math.isfinite(value) and value > 0):
            raise HypotheticalChipError(
                f"chip file {path}: price.{name} must be a positive number (got {value!r})"
            )
    chip = replace(chip_from_file(file), provenance=f"{USER_SUPPLIED}: {Path(path).name}")
    offers: tuple[PriceOffer, ...] = ()
    if price.usd_per_chip_hour is not None:
        offers = (_user_offer(chip.id, price.usd_per_chip_hour, Path(path).name),)
    purchase = None
    if price.purchase_usd is not None:
        purchase = Purchase(
            chip_id=chip.id,
            usd=price.purchase_usd,
            source=f"{USER_SUPPLIED} ({Path(path).name})",
            date=_today(),
        )
    return UserChip(chip=chip, offers=offers, purchase=purchase)


# ---- a catalog with the user's chips ------------------------------------------------------


def with_user_chips(catalog: Catalog, user_chips: Iterable[UserChip]) -> Catalog:
    """``catalog`` plus the hypothetical chips and their prices.

    Raises:
        HypotheticalChipError: a user chip whose id or alias names a catalog chip (or another
            user chip).
    """
    extra = list(user_chips)
    if not extra:
        return catalog
    taken: dict[str, str] = {}
    for c in catalog.chips:
        for name in (c.id, *c.aliases):
            taken[_normalise(name)] = c.id
    for u in extra:
        mine = {_normalise(n): n for n in (u.chip.id, *u.chip.aliases)}
        for key, name in mine.items():
            if key in taken:
                raise HypotheticalChipError(
                    f"user-supplied chip {u.chip.id!r}: {name!r} already names {taken[key]}; "
                    "give it its own id and aliases"
                )
        taken.update({k: u.chip.id for k in mine})
    return Catalog(
        chips=(*catalog.chips, *(u.chip for u in extra)),
        offers=(*catalog.offers, *(o for u in extra for o in u.offers)),
        purchases=(*catalog.purchases, *(u.purchase for u in extra if u.purchase is not None)),
        no_price=catalog.no_price,
    )


def resolve_chip(text: str, catalog: Catalog) -> UserChip | Chip:
    """A chip named on the command line: a catalog id/alias, or a derived spec (has ':')."""
    return derive_chip(text, catalog) if ":" in text else catalog.chip(text)


def chip_option(
    chip: str | None, chip_file: Path | None, catalog: Catalog | None = None
) -> UserChip:
    """The chip a command's ``--chip`` or ``--chip-file`` names (exactly one of them).

    A catalog chip comes back as a ``UserChip`` with its catalog prices, so callers treat
    both alike.
    """
    from chipwise.hardware.catalog import default_catalog

    cat = default_catalog() if catalog is None else catalog
    if (chip is None) == (chip_file is None):
        raise HypotheticalChipError(
            "give exactly one of --chip (a catalog id such as h100, or a derived chip such as "
            "'h100-sxm:hbm_bandwidth*1.5') and --chip-file (a TOML file)"
        )
    if chip_file is not None:
        return load_chip_file(chip_file)
    assert chip is not None
    found = resolve_chip(chip, cat)
    if isinstance(found, UserChip):
        return found
    return UserChip(
        chip=found, offers=cat.offers_for(found.id), purchase=cat.purchase_for(found.id)
    )


def user_chip_notes(chips: Iterable[Chip]) -> Mapping[str, str]:
    """``{chip id: provenance}`` of the user-supplied chips among ``chips``."""
    return {c.id: c.provenance for c in chips if c.user_supplied}


__all__ = [
    "FIELDS",
    "MAX_FACTOR",
    "USER_SUPPLIED",
    "HypotheticalChipError",
    "UserChip",
    "chip_option",
    "derive_chip",
    "field_names",
    "load_chip_file",
    "resolve_chip",
    "user_chip_notes",
    "with_user_chips",
]
