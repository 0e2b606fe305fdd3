"""Read SkyPilot's public price catalogs (``skypilot-org/skypilot-catalog``, ``vms.csv``).

The packaged cloud prices were copied from these catalogs; ``chipwise prices update`` reads a
newer copy and turns it into catalog offers. Two layouts exist:

- **GCP** (``catalogs/v*/gcp/vms.csv``): accelerator-optimized VMs are billed as two SKUs, so
  the catalog has a row per VM type (``InstanceType`` set, no accelerator) and a row per GPU
  configuration (``InstanceType`` empty, ``AcceleratorName``/``AcceleratorCount`` set). The
  whole-machine price of a GPU configuration is its GPU row plus the row of the machine type
  that carries it (``GCP_HOST``), per region. TPU rows name the slice (``tpu-v5p-8``) and
  give the whole slice's price, host included.
- **Everything else** (AWS, Azure, Lambda, RunPod, ...): one row per instance type with its
  accelerators and the whole instance's price.

Every offer is per chip-hour: the row's price divided by the chips it holds. Zones of one
region collapse to the region's lowest price. A price of 0, or a per-chip price above
``MAX_PLAUSIBLE_USD_PER_CHIP_HOUR`` (the catalog uses 700.0 as a placeholder for TPU slices
that are not sold in a region), is skipped. A GCP GPU on-demand price shared exactly by three or
more regions whose host VMs are priced differently is left out (and listed as skipped):
on-demand prices follow the region, so a flat price is likely another SKU (flex-start or
committed). The packaged gcp.toml leaves the same rows out.
"""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from chipwise.hardware.chip import PriceOffer

# SkyPilot accelerator names -> catalog chip ids. A name not here is skipped (and listed).
ACCELERATORS: dict[str, str] = {
    "A100": "a100-sxm-40gb",
    "A100-80GB": "a100-sxm-80gb",
    "H100": "h100-sxm",
    "H100-MEGA": "h100-sxm",
    "H200": "h200-sxm",
    "B200": "b200",
    "GB200": "gb200",
    "L4": "l4",
    "L40S": "l40s",
    "T4": "t4",
    "V100-32GB": "v100",
    "MI300X": "mi300x",
    "MI325X": "mi325x",
    "MI355X": "mi355x",
    "RTX4090": "rtx-4090",
    "RTX5090": "rtx-5090",
    "Trainium2": "trainium2",
}
# GCP: the machine type that carries each GPU configuration (accelerator, count). Other counts
# (a2-highgpu-1g, ...) use the same family; only the ones below are priced.
GCP_HOST: dict[tuple[str, int], str] = {
    ("A100", 8): "a2-highgpu-8g",
    ("A100-80GB", 8): "a2-ultragpu-8g",
    ("H100", 8): "a3-highgpu-8g",
    ("H100-MEGA", 8): "a3-megagpu-8g",
    ("H200", 8): "a3-ultragpu-8g",
    ("B200", 8): "a4-highgpu-8g",
    ("L4", 1): "g2-standard-4",
    ("T4", 1): "n1-standard-2",
}
# TPU slice names -> (chip id, chips per "size" unit): v2-v5p slices are named by TensorCores
# (2 per chip), v5litepod and v6e by chips.
_TPU = re.compile(r"^tpu-(v3|v4|v5p|v5litepod|v6e)-(\d+)$")
_TPU_CHIP = {
    "v3": "tpu-v3",
    "v4": "tpu-v4",
    "v5p": "tpu-v5p",
    "v5litepod": "tpu-v5e",
    "v6e": "tpu-v6e",
}
_TPU_CORES_PER_CHIP = {"v3": 2, "v4": 2, "v5p": 2, "v5litepod": 1, "v6e": 1}
MAX_PLAUSIBLE_USD_PER_CHIP_HOUR = 100.0
# A GCP GPU price shared by this many regions with differently priced VMs is flagged.
FLAT_PRICE_REGIONS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedCatalog:
    """Offers read from one ``vms.csv``, and what was skipped."""

    offers: tuple[PriceOffer, ...]
    unmapped: tuple[str, ...]  # accelerator names with no catalog chip
    skipped: tuple[str, ...] = ()  # rows left out, and why


def _float(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


def _count(text: str | None) -> int:
    value = _float(text)
    return round(value) if value else 0


@dataclass(frozen=True, slots=True)
class _Price:
    chip_id: str
    instance: str
    region: str
    pricing: str
    usd_per_chip_hour: float
    note: str


def _lowest_per_region(prices: Iterable[_Price]) -> list[_Price]:
    best: dict[tuple[str, str, str, str], _Price] = {}
    for p in prices:
        key = (p.chip_id, p.instance, p.region, p.pricing)
        if key not in best or p.usd_per_chip_hour < best[key].usd_per_chip_hour:
            best[key] = p
    return list(best.values())


def _gcp(rows: list[dict[str, str]]) -> tuple[list[_Price], set[str], list[str]]:
    vm: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for r in rows:
        if r.get("InstanceType") and not r.get("AcceleratorName"):
            vm[(r["InstanceType"], r["Region"])] = (_float(r["Price"]), _float(r["SpotPrice"]))
    out: list[_Price] = []
    unmapped: set[str] = set()
    skipped: list[str] = []
    gpu_rows: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        name = r.get("AcceleratorName") or ""
        if not name or r.get("InstanceType"):
            continue
        tpu = _TPU.match(name)
        if tpu:
            chips = int(tpu.group(2)) // _TPU_CORES_PER_CHIP[tpu.group(1)]
            for pricing, column in (("on-demand", "Price"), ("spot", "SpotPrice")):
                price = _float(r.get(column))
                if price is None or chips < 1:
                    continue
                per_chip = price / chips
                if per_chip <= MAX_PLAUSIBLE_USD_PER_CHIP_HOUR:
                    out.append(
                        _Price(_TPU_CHIP[tpu.group(1)], name, r["Region"], pricing, per_chip,
                               f"${price:,.5g}/h for the {chips}-chip slice, host included")
                    )  # fmt: skip
            continue
        if name.startswith("tpu-"):
            continue
        if name not in ACCELERATORS:
            unmapped.add(name)
            continue
        gpu_rows[(name, _count(r.get("AcceleratorCount")))].append(r)
    for (name, count), group in gpu_rows.items():
        host = GCP_HOST.get((name, count))
        if host is None or count < 1:
            continue
        flat = _flat_prices(group, host, vm)
        for r in group:
            vm_on, vm_spot = vm.get((host, r["Region"]), (None, None))
            for pricing, gpu, host_price in (
                ("on-demand", _float(r["Price"]), vm_on),
                ("spot", _float(r["SpotPrice"]), vm_spot),
            ):
                if gpu is None or host_price is None:
                    continue  # no whole-machine price without both SKUs
                if pricing == "on-demand" and gpu in flat:
                    skipped.append(
                        f"{host} {r['Region']}: GPU price ${gpu:.5g} for {count} {name} is the "
                        f"same in {FLAT_PRICE_REGIONS}+ regions with different VM prices"
                    )
                    continue
                out.append(
                    _Price(
                        ACCELERATORS[name],
                        host,
                        r["Region"],
                        pricing,
                        (gpu + host_price) / count,
                        f"whole VM: ${host_price:.5g} VM + ${gpu:.5g} for {count} {name}",
                    )
                )
    return out, unmapped, skipped


def _flat_prices(
    group: list[dict[str, str]],
    host: str,
    vm: Mapping[tuple[str, str], tuple[float | None, float | None]],
) -> set[float]:
    """GPU on-demand prices shared by FLAT_PRICE_REGIONS+ regions whose VMs differ in price."""
    regions: dict[float, set[str]] = defaultdict(set)
    for r in group:
        price = _float(r["Price"])
        if price is not None:
            regions[price].add(r["Region"])
    flat = set()
    for price, where in regions.items():
        vm_prices = {vm.get((host, reg), (None, None))[0] for reg in where}
        if len(where) >= FLAT_PRICE_REGIONS and len(vm_prices) > 1:
            flat.add(price)
    return flat


def _instances(rows: list[dict[str, str]]) -> tuple[list[_Price], set[str], list[str]]:
    out: list[_Price] = []
    unmapped: set[str] = set()
    for r in rows:
        name = r.get("AcceleratorName") or ""
        count = _count(r.get("AcceleratorCount"))
        if not name or count < 1:
            continue
        if name not in ACCELERATORS:
            unmapped.add(name)
            continue
        for pricing, column in (("on-demand", "Price"), ("spot", "SpotPrice")):
            price = _float(r.get(column))
            if price is None or price / count > MAX_PLAUSIBLE_USD_PER_CHIP_HOUR:
                continue
            out.append(
                _Price(ACCELERATORS[name], r.get("InstanceType", ""), r.get("Region", ""),
                       pricing, price / count, f"${price:,.5g}/h for {count} {name}")
            )  # fmt: skip
    return out, unmapped, []


def parse_vms_csv(text: str, *, provider: str, source: str, date: str) -> ParsedCatalog:
    """Offers of one provider from SkyPilot's ``vms.csv`` text (see the module docstring).

    ``source`` and ``date`` are recorded on every offer (e.g. the URL or
    ``repo@commit:path``, and the day it was read).
    """
    reader = csv.DictReader(io.StringIO(text))
    fields = set(reader.fieldnames or ())
    need = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "Price"}
    missing = sorted(need - fields)
    if missing:
        from chipwise.hardware.prices import PricesFileError

        raise PricesFileError(
            f"not a SkyPilot vms.csv: the header lacks {', '.join(missing)} (it has: "
            f"{', '.join(sorted(fields)) or 'nothing'})"
        )
    rows = [{k: (v or "").strip() for k, v in r.items() if k is not None} for r in reader]
    for r in rows:
        r.setdefault("SpotPrice", "")
    prices, unmapped, skipped = _gcp(rows) if provider == "gcp" else _instances(rows)
    offers = tuple(
        PriceOffer(
            chip_id=p.chip_id,
            provider=provider,
            provider_kind="hyperscaler"
            if provider in ("gcp", "aws", "azure", "oci")
            else "neocloud",
            pricing=p.pricing,
            usd_per_chip_hour=round(p.usd_per_chip_hour, 5),
            region=p.region or "not recorded",
            instance=p.instance,
            source=source,
            date=date,
            note=p.note,
            confidence="medium",
        )
        for p in sorted(
            _lowest_per_region(prices),
            key=lambda p: (p.chip_id, p.pricing, p.usd_per_chip_hour, p.region),
        )
    )
    return ParsedCatalog(
        offers=offers, unmapped=tuple(sorted(unmapped)), skipped=tuple(sorted(set(skipped)))
    )
