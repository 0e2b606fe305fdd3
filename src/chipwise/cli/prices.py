"""``chipwise prices``: every cloud price with its source, date, age and trust; refresh them.

``chipwise prices [CHIP] [--cloud C] [--pricing P] [--prices FILE] [--json]`` lists offers
(what a user pays per chip-hour for the whole machine), ``chipwise prices update [--from
URL|FILE]`` reads a SkyPilot ``vms.csv`` and writes the user price cache that later runs use.

JSON (schema_version 1): ``{"schema_version", "today", "stale_after_days", "cache":
{"path", "updated", "origin"} | null, "prices_file": str | null, "offers": [{"chip",
"provider", "pricing", "usd_per_chip_hour", "region", "instance", "source", "date", "note",
"confidence", "stale", "age_days"}], "no_public_price": [{"chip", "why", "source", "date"}],
"unpriced": [chip ids with no offer]}``.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from typer._click.core import Context as ClickContext
from typer.core import TyperGroup

from chipwise.cli.app import app
from chipwise.cli.output import console, print_json
from chipwise.limits import read_user_file

if TYPE_CHECKING:
    from chipwise.hardware import PriceOffer

JSON_SCHEMA_VERSION = 1
# SkyPilot's public GCP catalog, the source of the packaged GCP prices.
DEFAULT_URL = (
    "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8/gcp/vms.csv"
)
URL_TIMEOUT_S = 60
MAX_DOWNLOAD_BYTES = 64 * 2**20
_PROVIDERS = ("gcp", "aws", "azure", "lambda", "runpod", "oci", "vast", "nebius", "fluidstack")


class _ShowByDefault(TyperGroup):
    """``chipwise prices h100`` and ``chipwise prices --json`` mean ``prices show ...``."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["show", *args]
        return super().parse_args(ctx, args)


prices_app = typer.Typer(
    cls=_ShowByDefault,
    help="Cloud prices per chip-hour (whole machine) with source, date, age and trust; "
    "'chipwise prices update' refreshes them.",
    no_args_is_help=False,
)
app.add_typer(prices_app, name="prices")


class PricingChoice(StrEnum):
    on_demand = "on-demand"
    spot = "spot"
    committed_1y = "committed-1y"
    committed_3y = "committed-3y"
    capacity_block = "capacity-block"


@prices_app.command("show")
def show_prices(
    chip: str | None = typer.Argument(
        None, metavar="[CHIP]", help="Only this chip (id or alias). Default: every chip."
    ),
    cloud: str | None = typer.Option(
        None, "--cloud", help="Only this provider (gcp, aws, azure, lambda, runpod, ...)."
    ),
    pricing: PricingChoice | None = typer.Option(
        None, "--pricing", help="Only this pricing model. Default: all."
    ),
    prices: Path | None = typer.Option(
        None, "--prices", help="Also apply your own price file (TOML or CSV, offers schema)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (see the module doc)."),
) -> None:
    """List every price with provider, region, instance, $/chip-h, pricing model, source,
    date and age; stale (older than a year) and low-confidence prices are marked."""
    from chipwise.hardware.chip import STALE_AFTER_DAYS
    from chipwise.hardware.prices import read_cache, run_catalog
    from chipwise.report.chips import offer_to_dict

    catalog, user = run_catalog(prices)
    chip_id = catalog.chip(chip).id if chip else None
    offers = [
        o
        for o in catalog.offers
        if (chip_id is None or o.chip_id == chip_id)
        and (cloud is None or o.provider == cloud.lower())
        and (pricing is None or o.pricing == pricing.value)
    ]
    offers.sort(key=lambda o: (o.chip_id, o.pricing, o.usd_per_chip_hour, o.provider))
    chips = [c for c in catalog.chips if chip_id is None or c.id == chip_id]
    no_price = [n for n in catalog.no_price if any(c.id == n.chip_id for c in chips)]
    priced = {o.chip_id for o in catalog.offers}
    listed = {n.chip_id for n in no_price}
    unpriced = [c.id for c in chips if c.id not in priced and c.id not in listed]
    cache = read_cache()
    if as_json:
        print_json(
            {
                "schema_version": JSON_SCHEMA_VERSION,
                "today": dt.date.today().isoformat(),
                "stale_after_days": STALE_AFTER_DAYS,
                "cache": None
                if cache is None
                else {"path": str(cache.path), "updated": cache.updated, "origin": cache.origin},
                "prices_file": None if user is None else str(user.path),
                "offers": [offer_to_dict(o) for o in offers],
                "no_public_price": [
                    {"chip": n.chip_id, "why": n.why, "source": n.source, "date": n.date}
                    for n in no_price
                ],
                "unpriced": unpriced,
            }
        )
        return
    console.print(_table(offers))
    if cloud is not None or pricing is not None:
        return
    for n in no_price:
        console.print(f"{n.chip_id}: no public price: {n.why} ({n.source}, {n.date})")
    if unpriced:
        console.print(
            f"no price in the catalog for: {', '.join(unpriced)} (give one with --prices FILE)"
        )
    if cache is not None:
        console.print(f"price cache: {cache.path} (updated {cache.updated}, from {cache.origin})")


def _table(offers: list[PriceOffer]) -> Table:
    """Two rows per offer (what and where, then its source), readable at 80 columns."""
    from chipwise.hardware.chip import STALE_AFTER_DAYS

    table = Table(
        title="cloud prices per chip-hour: the whole machine (accelerators + host VM + disk)",
        title_justify="left",
        caption=f"stale: older than {STALE_AFTER_DAYS} days; low: third-party, estimated or "
        "suspect. 'chipwise prices --json' adds each price's note.",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("chip, provider, region, instance / source, date", ratio=1)
    table.add_column("pricing", no_wrap=True)
    table.add_column("$/chip-h", justify="right", no_wrap=True)
    table.add_column("age", justify="right", no_wrap=True)
    table.add_column("flags", no_wrap=True)
    for o in offers:
        flags = ["stale"] if o.is_stale() else []
        flags += ["low"] if o.confidence == "low" else []
        where = " ".join(p for p in (o.region, o.instance) if p and p != "not recorded")
        table.add_row(
            Text(f"{o.chip_id} {o.provider} {where}".strip(), style="bold"),
            o.pricing,
            f"{o.usd_per_chip_hour:,.2f}",
            f"{o.age_days():,}d",
            " ".join(flags),
        )
        source = Text(f"{o.source}, {o.date}", style="dim", overflow="fold")
        table.add_row(Padding(source, (0, 0, 0, 2)))
    return table


@prices_app.command("update")
def update_prices(
    origin: str = typer.Option(
        DEFAULT_URL,
        "--from",
        help="A SkyPilot vms.csv: a local file or an http(s) URL. Default: SkyPilot's public "
        "GCP catalog.",
    ),
    provider: str | None = typer.Option(
        None,
        "--provider",
        help="Whose prices the file holds (gcp, aws, ...). Default: read from the path "
        "(.../gcp/vms.csv).",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change; write nothing."),
) -> None:
    """Read SkyPilot's price catalog (GPU/TPU instances with their host VM prices), map it to
    catalog chips, show what changed and write the user price cache that later runs use."""
    from chipwise.hardware.prices import PricesFileError, read_cache, run_catalog, write_cache
    from chipwise.hardware.skypilot import parse_vms_csv

    text, source, date = _read_origin(origin)
    name = provider or _provider_from(origin)
    parsed = parse_vms_csv(text, provider=name, source=source, date=date)
    if not parsed.offers:
        raise PricesFileError(
            f"{origin}: no row maps to a catalog chip (accelerators seen: "
            f"{', '.join(parsed.unmapped) or 'none'}); nothing to update"
        )
    catalog, _ = run_catalog(None)
    before = {_key(o): o for o in catalog.offers if o.provider == name}
    after = {_key(o): o for o in parsed.offers}
    added = sorted(set(after) - set(before))
    changed = sorted(
        k for k in set(after) & set(before)
        if abs(after[k].usd_per_chip_hour - before[k].usd_per_chip_hour) > 1e-9
    )  # fmt: skip
    for k in added:
        console.print(f"+ {_describe(k)}: ${after[k].usd_per_chip_hour:,.4g}/chip-h")
    for k in changed:
        console.print(
            f"~ {_describe(k)}: ${before[k].usd_per_chip_hour:,.4g} -> "
            f"${after[k].usd_per_chip_hour:,.4g}/chip-h"
        )
    gone = sorted({(o.chip_id, o.pricing) for o in before.values()} - {(o.chip_id, o.pricing)
                  for o in after.values()})  # fmt: skip
    console.print(
        f"{name}: {len(parsed.offers)} offers read, {len(added)} new, {len(changed)} changed, "
        f"{len(after) - len(added) - len(changed)} unchanged; {len(gone)} chip/pricing pairs "
        "keep their packaged prices"
    )
    for why in parsed.skipped:
        console.print(f"skipped {why}")
    if parsed.unmapped:
        console.print(f"not in the catalog (skipped): {', '.join(parsed.unmapped)}")
    if dry_run:
        console.print("dry run: the price cache was not written")
        return
    cache = read_cache()
    kept = tuple(o for o in cache.offers if o.provider != name) if cache is not None else ()
    path = write_cache(kept + parsed.offers, origin=source)
    console.print(f"wrote {path} ({dt.date.today().isoformat()}); later runs use these prices")


def _key(o: PriceOffer) -> tuple[str, str, str, str]:
    return (o.chip_id, o.pricing, o.region, o.instance)


def _describe(key: tuple[str, str, str, str]) -> str:
    chip, pricing, region, instance = key
    return f"{chip} {pricing} {region} {instance}".strip()


def _provider_from(origin: str) -> str:
    from chipwise.hardware.prices import PricesFileError

    tokens = re.split(r"[/\\._-]+", origin.lower())
    found = [t for t in tokens if t in _PROVIDERS]
    if not found:
        raise PricesFileError(
            f"cannot tell whose prices {origin} holds; add --provider gcp (or aws, azure, ...)"
        )
    return found[-1]


def _read_origin(origin: str) -> tuple[str, str, str]:
    """(CSV text, source to cite, date of the prices) of a local file or a URL."""
    import urllib.request

    from chipwise.hardware.prices import PricesFileError

    today = dt.date.today().isoformat()
    if origin.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(origin, timeout=URL_TIMEOUT_S) as resp:
                data: Any = resp.read(MAX_DOWNLOAD_BYTES + 1)
        except OSError as err:
            raise PricesFileError(
                f"cannot fetch {origin}: {err}; download it and give --from FILE"
            ) from err
        if len(data) > MAX_DOWNLOAD_BYTES:
            raise PricesFileError(f"{origin}: larger than {MAX_DOWNLOAD_BYTES // 2**20} MiB")
        return data.decode("utf-8", errors="replace"), f"{origin} (read {today})", today
    path = Path(origin).expanduser()
    if not path.is_file():
        raise PricesFileError(f"--from {origin}: no such file")
    try:
        text = read_user_file(path, what="--from", error=PricesFileError).decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PricesFileError(f"--from {origin}: cannot read it: {err}") from err
    date = dt.date.fromtimestamp(path.stat().st_mtime).isoformat()
    return text, f"SkyPilot vms.csv {path.name} (file dated {date})", date
