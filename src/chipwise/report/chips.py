"""Render the hardware catalog: rich tables and a stable JSON form.

JSON schema of one chip (``chipwise chips --json`` prints a list of these)::

    {"id", "name", "vendor", "kind", "architecture", "aliases": [..],
     "figures": {"dense_flops_per_s.bf16": {"value", "source", "date", "note"}, ...},
     "memory_type", "unit_name", "clouds": [..], "purchasable", "software": [..],
     "features": [..],  # capability names (hardware.schema.FEATURES); [] when none listed
     "offers": [{"provider", "pricing", "usd_per_chip_hour", "region", "instance",
                 "source", "date", "note", "confidence", "stale", "age_days"}],
                # usd_per_chip_hour: the whole machine (GPUs + host VM + bundled disk) / chips
     "no_public_price": {"why", "source", "date"} | null,
     "purchase": {"usd", "source", "date"} | null}
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from chipwise.hardware import Catalog, Chip, PriceOffer
from chipwise.units import GB, TERA, format_bytes, format_rate, format_seconds

JSON_SCHEMA_VERSION = 1


def offer_to_dict(o: PriceOffer) -> dict[str, Any]:
    """One offer as JSON, with its age and the ``stale`` / ``confidence`` flags."""
    return {
        "chip": o.chip_id,
        "provider": o.provider,
        "pricing": o.pricing,
        "usd_per_chip_hour": o.usd_per_chip_hour,
        "region": o.region,
        "instance": o.instance,
        "source": o.source,
        "date": o.date,
        "note": o.note,
        "confidence": o.confidence,
        "stale": o.is_stale(),
        "age_days": o.age_days(),
    }


def chip_to_dict(chip: Chip, catalog: Catalog) -> dict[str, Any]:
    """A JSON-ready dict of ``chip`` with every figure's source and date."""
    purchase = catalog.purchase_for(chip.id)
    unpriced = catalog.no_price_for(chip.id)
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
        "features": list(chip.features),
        "offers": [offer_to_dict(o) for o in catalog.offers_for(chip.id)],
        "no_public_price": None
        if unpriced is None
        else {"why": unpriced.why, "source": unpriced.source, "date": unpriced.date},
        "purchase": None
        if purchase is None
        else {"usd": purchase.usd, "source": purchase.source, "date": purchase.date},
    }


def _tflops(chip: Chip, dtype: str) -> str:
    return f"{chip.dense_flops_per_s[dtype] / TERA:.4g}" if chip.supports(dtype) else "—"


# Short scale-up topology names, so the catalog table fits 80 columns.
_TOPOLOGY_SHORT = {
    "switch": "sw", "all-to-all": "a2a", "torus-2d": "2D", "torus-3d": "3D",
    "pcie": "pcie", "none": "none",
}  # fmt: skip
_TABLE_CAPTION = (
    "bf16, fp8, fp64: dense TFLOP/s. up: scale-up topology x chips per domain (sw switch, a2a "
    "all-to-all, 2D/3D torus). $/h: cheapest on-demand offer per chip-hour. "
    "'chipwise chips show ID' gives every figure with its source."
)


def chips_table(chips: tuple[Chip, ...], catalog: Catalog) -> Table:
    """One row per chip: dense peaks, memory, scale-up, power, cheapest on-demand price.

    Laid out to stay readable at 80 columns (no borders between columns, short headers).
    """
    table = Table(
        title="chipwise hardware catalog (dense peak per chip)",
        title_justify="left",
        caption=_TABLE_CAPTION,
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col, justify in [
        ("id", "left"), ("bf16", "right"), ("fp8", "right"), ("fp64", "right"),
        ("HBM GB", "right"), ("TB/s", "right"), ("up", "left"), ("W", "right"),
        ("$/h", "right"), ("buy", "left"),
    ]:  # fmt: skip
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for c in chips:
        on_demand = [o.usd_per_chip_hour for o in catalog.offers_for(c.id)
                     if o.pricing == "on-demand"]  # fmt: skip
        topology = _TOPOLOGY_SHORT.get(c.scale_up.topology, c.scale_up.topology)
        table.add_row(
            c.id,
            _tflops(c, "bf16"),
            _tflops(c, "fp8"),
            _tflops(c, "fp64"),
            f"{c.hbm_capacity_bytes / GB:.0f}",
            f"{c.hbm_bytes_per_s / TERA:.2f}",
            topology if c.scale_up.domain_chips <= 1 else f"{topology}×{c.scale_up.domain_chips}",
            f"{c.tdp_w:.0f}",
            f"{min(on_demand):.2f}" if on_demand else "—",
            "yes" if c.purchasable else "no",
        )
    return table


def _figure_value(path: str, value: float) -> str:
    """A figure with its unit, read from its dotted path (``memory.capacity_bytes``)."""
    if path == "release_year":
        return f"{value:.0f}"
    if path.endswith("_chips") or path.endswith(".units") or path.endswith("_per_unit"):
        return f"{value:,.0f}"
    if path.endswith("bytes_per_s") or "bytes_per_s_" in path:
        return format_rate(value, "B/s")
    if path.endswith("_bytes"):
        return format_bytes(value)
    if "flops_per_s" in path:
        return format_rate(value, "OP/s" if path.endswith(".int8") else "FLOP/s")
    if path.endswith("_hz"):
        return format_rate(value, "Hz")
    if path.endswith("_w"):
        return f"{value:.0f} W"
    if path.endswith("_s"):
        return format_seconds(value)
    return f"{value:.4g}"


# Readable names of catalog figures, in the order a reader wants them (peak rates first).
FIGURE_LABELS: dict[str, str] = {
    "dense_flops_per_s.fp4": "FP4 dense",
    "dense_flops_per_s.fp8": "FP8 dense",
    "dense_flops_per_s.int8": "INT8 dense",
    "dense_flops_per_s.bf16": "BF16 dense",
    "dense_flops_per_s.fp16": "FP16 dense",
    "dense_flops_per_s.tf32": "TF32 dense",
    "dense_flops_per_s.fp32": "FP32",
    "dense_flops_per_s.fp64": "FP64",
    "compute.vector_flops_per_s": "FP32 vector units",
    "memory.capacity_bytes": "memory",
    "memory.bandwidth_bytes_per_s": "memory bandwidth",
    "power.tdp_w": "power (TDP)",
    "power.typical_w": "power (typical)",
    "scale_up.bytes_per_s_per_chip_unidirectional": "scale-up link (one way)",
    "scale_up.domain_chips": "chips per scale-up domain",
    "scale_up.max_chips": "largest scale-up domain",
    "scale_out.bytes_per_s_per_chip_unidirectional": "scale-out network (one way)",
    "scale_out.max_chips": "largest job on record",
    "compute.units": "compute units (SM/CU)",
    "compute.matrix_units_per_unit": "matrix units per compute unit",
    "compute.matrix_unit_dim": "matrix unit size",
    "compute.clock_hz": "clock",
    "compute.l2_bytes": "L2 / last-level cache",
    "compute.sram_per_unit_bytes": "SRAM per compute unit",
    "release_year": "released",
}


def short_source(source: str) -> str:
    """'stas00/ml-engineering:compute/... @744d01e' -> 'stas00/ml-engineering';
    'https://glennklockwood.com/garden/...' -> 'glennklockwood.com'."""
    text = source.strip()
    for prefix in ("https://", "http://", "url:", "github:"):
        text = text.removeprefix(prefix)
    cut = len(text)
    for sep in (":", " ", "/garden", "@"):
        i = text.find(sep)
        if 0 < i < cut:
            cut = i
    head = text[:cut]
    if head.count("/") > 1:  # a URL path: keep the host
        head = head.split("/")[0]
    return head[:32]


def figure_label(path: str) -> str:
    """'dense_flops_per_s.bf16' -> 'BF16 dense'; unknown paths become words."""
    return FIGURE_LABELS.get(path, path.replace(".", " ").replace("_", " "))


def _order(path: str) -> tuple[int, str]:
    keys = list(FIGURE_LABELS)
    return (keys.index(path) if path in keys else len(keys), path)


def chip_detail_table(chip: Chip, *, verbose: bool = True) -> Table:
    """Every figure of one chip with a readable label, its unit, date and source.

    ``verbose`` (``chips show --verbose``, the golden's form): each figure takes two rows,
    value and date, then its full source and note underneath. Otherwise one row per figure
    with the source cut to the column, so the table fits a screen.
    """
    table = Table(
        title=f"{chip.name} ({chip.id})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    if verbose:
        table.add_column("figure / source", ratio=1)
        table.add_column("value", justify="right", no_wrap=True)
        table.add_column("date", no_wrap=True)
    else:
        table.add_column("figure")
        table.add_column("value", justify="right", no_wrap=True, min_width=12)
        table.add_column("date", no_wrap=True, min_width=10)
        table.add_column("source", style="dim", no_wrap=True, overflow="ellipsis")
    for path, f in sorted(chip.figures.items(), key=lambda kv: _order(kv[0])):
        label = Text(figure_label(path), style="bold")
        if not verbose:
            table.add_row(label, _figure_value(path, f.value), f.date, short_source(f.source))
            continue
        table.add_row(label, _figure_value(path, f.value), f.date)
        source = f.source + (f" — {f.note}" if f.note else "")
        table.add_row(Padding(Text(source, style="dim", overflow="fold"), (0, 0, 0, 2)), "", "")
    return table
