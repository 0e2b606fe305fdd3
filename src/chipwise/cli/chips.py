"""``chipwise chips``: list and show the hardware catalog."""

from __future__ import annotations

from enum import StrEnum

import typer
from rich.console import Group
from rich.text import Text
from typer._click.exceptions import UsageError

from chipwise.cli.app import app
from chipwise.cli.output import console, print_json

chips_app = typer.Typer(
    help="The hardware catalog: every figure with its source and date.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(chips_app, name="chips")


class KindChoice(StrEnum):
    gpu = "gpu"
    tpu = "tpu"
    asic = "asic"


@chips_app.callback()
def list_chips(
    ctx: typer.Context,
    kind: KindChoice | None = typer.Option(
        None, "--kind", help="Only this kind of chip. Default: all."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON (schema_version 1, documented in report/chips.py)."
    ),
) -> None:
    """List the catalog (dense peak FLOP/s, memory, interconnect, power, price)."""
    if ctx.invoked_subcommand is not None:
        if kind is not None:
            raise UsageError(
                f"--kind lists chips; 'chipwise chips {ctx.invoked_subcommand}' does not take "
                "it: drop it",
                ctx,
            )
        ctx.ensure_object(dict)["chips_json"] = as_json  # 'chips --json show ID' works too
        return
    # imported here, not above: 'chips show --help' runs this callback too
    from chipwise.hardware.prices import run_catalog
    from chipwise.report.chips import JSON_SCHEMA_VERSION, chip_to_dict, chips_table

    catalog, _ = run_catalog()  # packaged prices, refreshed by 'chipwise prices update'
    chosen = tuple(c for c in catalog.chips if kind is None or c.kind == kind.value)
    if as_json:
        print_json(
            {
                "schema_version": JSON_SCHEMA_VERSION,
                "chips": [chip_to_dict(c, catalog) for c in chosen],
            }
        )
        return
    console.print(chips_table(chosen, catalog))


@chips_app.command("show")
def show_chip(
    ctx: typer.Context,
    chip_id: str = typer.Argument(
        ..., metavar="ID", help="Chip id or alias, e.g. 'h100' or 'v5p'."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Each figure's full source and note (default: one line)."
    ),
) -> None:
    """Show every figure of one chip with its source and date."""
    from chipwise.hardware.prices import run_catalog
    from chipwise.report.chips import JSON_SCHEMA_VERSION, chip_detail_table, chip_to_dict

    as_json = as_json or bool((ctx.obj or {}).get("chips_json"))
    catalog, _ = run_catalog()  # packaged prices, refreshed by 'chipwise prices update'
    chip = catalog.chip(chip_id)
    if as_json:
        print_json({"schema_version": JSON_SCHEMA_VERSION, "chip": chip_to_dict(chip, catalog)})
        return
    offers = catalog.offers_for(chip.id)
    lines = [
        f"{o.provider} {o.pricing}: ${o.usd_per_chip_hour:.2f}/chip-h "
        f"({o.region}{', ' + o.instance if o.instance else ''}; {o.source}, {o.date})"
        + "".join(f" [{c}]" for c in o.caveats())
        for o in offers
    ]
    if offers:
        lines.insert(0, "prices per chip-hour, whole machine (accelerators + host VM + disk):")
    unpriced = catalog.no_price_for(chip.id)
    if unpriced is not None:
        lines.append(f"no public price: {unpriced.why} ({unpriced.source}, {unpriced.date})")
    elif not offers:
        lines.append(
            "no cloud price in the catalog yet (give one with --prices FILE or "
            "'chipwise prices update')"
        )
    console.print(
        Group(
            chip_detail_table(chip, verbose=verbose),
            Text(f"clouds: {', '.join(chip.clouds)}; purchasable: {chip.purchasable}"),
            Text(f"software: {', '.join(chip.software)}"),
            Text("\n".join(lines)),
        )
    )
