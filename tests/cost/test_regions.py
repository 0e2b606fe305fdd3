"""Grid carbon intensity and electricity price follow the cloud region of the price."""

from __future__ import annotations

import pytest

from chipwise.cost import (
    default_assumptions,
    load_regions,
    regional_assumptions,
    with_energy_prices,
)
from chipwise.hardware import default_catalog
from chipwise.hardware.prices import EnergyPrices


def test_every_region_row_is_sourced_and_plausible() -> None:
    regions = load_regions()
    assert ("gcp", "us-central1") in regions
    for r in regions.values():
        assert 0 <= r.grid_kg_co2e_per_kwh < 1.2, r
        assert len(r.grid_source) > 3 and r.grid_date
        assert (r.usd_per_kwh is None) == (r.usd_source is None)


def test_every_gcp_offer_region_has_its_grid_intensity() -> None:
    regions = load_regions()
    gcp = {o.region for o in default_catalog().offers if o.provider == "gcp"}
    missing = sorted(r for r in gcp if ("gcp", r) not in regions and r != "us-east")
    assert not missing


def test_a_listed_region_replaces_the_world_average_and_cites_google() -> None:
    a = regional_assumptions("gcp", "europe-north1")
    assert a.grid_kg_co2e_per_kwh == pytest.approx(0.02984)
    (cited,) = a.cited("grid_kg_co2e_per_kwh")
    assert "region-carbon-info" in cited.source and "override" not in cited.source


def test_an_unlisted_region_keeps_the_packaged_default() -> None:
    base = default_assumptions()
    assert regional_assumptions("lambda", "us") == base


def test_a_users_energy_price_wins_over_the_region() -> None:
    user = with_energy_prices(
        EnergyPrices(usd_per_kwh=0.04, grid_kg_co2e_per_kwh=None, source="--prices e.toml")
    )
    a = regional_assumptions("gcp", "us-east4", user)
    assert a.usd_per_kwh == 0.04  # the file's, not Virginia's 0.0895
    assert a.grid_kg_co2e_per_kwh == pytest.approx(0.34348)  # the region's
    (usd,) = a.cited("usd_per_kwh")
    assert usd.source.startswith("--prices e.toml")
