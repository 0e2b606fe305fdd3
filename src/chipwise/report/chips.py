"""Render the hardware catalog: rich tables and a stable JSON form.

JSON schema of one chip (``chipwise chips --json`` prints a list of these)::

    {"id", "name", "vendor", "kind", "architecture", "aliases": [..],
     "figures": {"dense_flops_per_s.bf16": {"value", "source", "date", "note"}, ...},
     "memory_type", "unit_name", "clouds": [..], "purchasable", "software": [..],
     "offers": [{"provider", "pricing", "usd_per_chip_hour", "region", "instance",
                 "source", "date"}],
     "purchase": {"usd", "source", "date"} | null}
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from chipwise.hardware import Catalog, Chip
from chipwise.units import GB, TERA

JSON_SCHEMA_VERSION = 1


def chip_to_dict(chip: Chip, catalog: Catalog) -> dict[str, Any]:
    """A JSON-ready dict of ``chip`` with every figure's source and date."""
    purchase = catalog.purchase_for(chip.id)
    return {
        "id": chip.id,
        "name": chip.name,
        "vendor": chip.vendor,
        "kind": chip.kind,
        "architecture": chip.architecture,
        "aliases": list(chip.aliases),
        "figures": {
            path: {"value": f.value, "source": f.source, "date": f.date, "note": f.note}
            for path, f in sorted(chip.figures.items())
        },
        "memory_type": chip.memory_type,
        "unit_name": chip.unit_name,
        "scale_up": chip.scale_up.name,
        "scale_out": chip.scale_out.name if chip.scale_out else None,
        "clouds": list(chip.clouds),
        "purchasable": chip.purchasable,
        "software": list(chip.software),
        "offers": [
            {
                "provider": o.provider,
                "pricing": o.pricing,
                "usd_per_chip_hour": o.usd_per_chip_hour,
                "region": o.region,
                "instance": o.instance,
                "source": o.source,
                "date": o.date,
            }
            for o in catalog.offers_for(chip.id)
        ],
        "purchase": None
        if purchase is None
        else {"usd": purchase.usd, "source": purchase.source, "date": purchase.date},
    }


def _tflops(chip: Chip, dtype: str) -> str:
    return f"{chip.dense_flops_per_s[dtype] / TERA:.4g}" if chip.supports(dtype) else "—"


def chips_table(chips: tuple[Chip, ...], catalog: Catalog) -> Table:
    """One row per chip: dense peaks, memory, scale-up, power, cheapest on-demand price."""
    table = Table(title="chipwise hardware catalog (dense peak per chip)", title_justify="left")
    for col, justify in [
        ("id", "left"), ("kind", "left"), ("bf16 TF", "right"), ("fp8 TF", "right"),
        ("fp64 TF", "right"), ("HBM GB", "right"), ("HBM GB/s", "right"),
        ("scale-up ×chips", "left"), ("TDP W", "right"), ("$/chip-h", "right"),
        ("buy", "left"),
    ]:  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in chips:
        on_demand = [o.usd_per_chip_hour for o in catalog.offers_for(c.id)
                     if o.pricing == "on-demand"]  # fmt: skip
        table.add_row(
            c.id,
            c.kind,
            _tflops(c, "bf16"),
            _tflops(c, "fp8"),
            _tflops(c, "fp64"),
            f"{c.hbm_capacity_bytes / GB:.0f}",
            f"{c.hbm_bytes_per_s / GB:.0f}",
            f"{c.scale_up.topology} ×{c.scale_up.domain_chips}",
            f"{c.tdp_w:.0f}",
            f"{min(on_demand):.2f}" if on_demand else "—",
            "yes" if c.purchasable else "no",
        )
    return table


def chip_detail_table(chip: Chip) -> Table:
    """Every figure of one chip with its source and date."""
    table = Table(title=f"{chip.name} ({chip.id})", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("source")
    table.add_column("date")
    for path, f in sorted(chip.figures.items()):
        table.add_row(path, f"{f.value:.4g}", f.source + (f" — {f.note}" if f.note else ""), f.date)
    return table
