"""User price files (--prices), the price cache and SkyPilot's vms.csv reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from chipwise.hardware import default_catalog
from chipwise.hardware.prices import (
    PricesFileError,
    load_prices_file,
    read_cache,
    run_catalog,
    write_cache,
)
from chipwise.hardware.skypilot import parse_vms_csv

FIXTURE = Path(__file__).parents[1] / "fixtures" / "prices" / "skypilot-gcp-vms.csv"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_toml_price_file_names_itself_as_the_source_and_resolves_aliases(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path,
        "deal.toml",
        'provider = "gcp"\nsource = "2026 contract"\ndate = "2026-11"\n'
        '[[offers]]\nchip = "v5p"\npricing = "committed-3y"\nusd_per_chip_hour = 1.5\n',
    )
    (offer,) = load_prices_file(path).offers
    assert (offer.chip_id, offer.provider, offer.pricing) == ("tpu-v5p", "gcp", "committed-3y")
    assert offer.source == "--prices deal.toml: 2026 contract"
    assert (offer.date, offer.provider_kind, offer.confidence) == ("2026-11", "user", "high")


def test_a_csv_price_file_reads_the_same_fields(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "p.csv",
        "chip,provider,pricing,usd_per_chip_hour,region\nh100,aws,on-demand,3.9,us-east-1\n",
    )
    (offer,) = load_prices_file(path).offers
    assert (offer.chip_id, offer.usd_per_chip_hour, offer.region) == ("h100-sxm", 3.9, "us-east-1")
    assert offer.source == "--prices p.csv"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "chip,provider,pricing,usd_per_chip_hour\nh100,aws,on-demand,-1\n"
            "h100,aws,hourly,2\nh10,aws,spot,2\n",
            r"p\.csv: 3 bad row\(s\): line 2: usd_per_chip_hour: .*greater than 0.*"
            r"line 3: pricing: .*line 4: chip: unknown chip 'h10'",
        ),
        ("chip,pricing,usd_per_chip_hour\nh100,spot,2\n", r"line 2: provider: missing"),
        ("chip,provider,pricing,usd_per_chip_hour,colour\nh100,aws,spot,2,red\n", r"colour"),
    ],
)
def test_a_bad_csv_row_is_named_with_its_line_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(PricesFileError, match=message) as err:
        load_prices_file(_write(tmp_path, "p.csv", text))
    assert "\n" not in str(err.value)


def test_a_file_that_is_not_toml_or_csv_or_is_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PricesFileError, match="no such file"):
        load_prices_file(tmp_path / "none.toml")
    with pytest.raises(PricesFileError, match=r"\.toml or \.csv"):
        load_prices_file(_write(tmp_path, "p.json", "{}"))
    with pytest.raises(PricesFileError, match="not valid TOML"):
        load_prices_file(_write(tmp_path, "p.toml", "provider = "))


def test_user_offers_replace_the_same_chip_provider_and_pricing_only(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "p.toml",
        '[[offers]]\nchip = "h100-sxm"\nprovider = "gcp"\npricing = "on-demand"\n'
        "usd_per_chip_hour = 7.0\n",
    )
    catalog, user = run_catalog(path)
    assert user is not None
    gcp_od = [
        o for o in catalog.offers_for("h100-sxm") if (o.provider, o.pricing) == ("gcp", "on-demand")
    ]
    assert [o.usd_per_chip_hour for o in gcp_od] == [7.0]
    spot = [o for o in catalog.offers_for("h100-sxm") if o.pricing == "spot"]
    assert spot == [o for o in default_catalog().offers_for("h100-sxm") if o.pricing == "spot"]


def test_energy_prices_come_from_the_energy_table(tmp_path: Path) -> None:
    path = _write(tmp_path, "e.toml", "[energy]\nusd_per_kwh = 0.05\n")
    user = load_prices_file(path)
    assert user.energy is not None and user.energy.usd_per_kwh == 0.05
    assert user.energy.grid_kg_co2e_per_kwh is None and user.offers == ()


def test_skypilot_gcp_rows_become_whole_machine_prices_per_chip() -> None:
    parsed = parse_vms_csv(FIXTURE.read_text(), provider="gcp", source="fixture", date="2026")
    by = {(o.chip_id, o.pricing, o.region): o for o in parsed.offers}
    h100 = by[("h100-sxm", "on-demand", "us-east4")]
    assert h100.usd_per_chip_hour == pytest.approx((9.46006 + 78.37241) / 8, rel=1e-6)
    assert h100.instance == "a3-highgpu-8g"
    l4 = by[("l4", "on-demand", "us-central1")]
    assert l4.usd_per_chip_hour == pytest.approx(0.14679 + 0.56004, rel=1e-6)
    # a TPU slice is priced whole: 8 v6e chips at $21.60/h; a v5p-12288 slice is 6144 chips
    assert by[("tpu-v6e", "on-demand", "us-east4")].usd_per_chip_hour == pytest.approx(2.7)
    assert by[("tpu-v5p", "on-demand", "us-central1")].usd_per_chip_hour == pytest.approx(4.2)
    # the 700.0 placeholder (asia-east1) and the unmapped P100 are not priced
    assert ("tpu-v6e", "on-demand", "asia-east1") not in by
    assert parsed.unmapped == ("P100",)


def test_a_flat_gpu_price_across_differently_priced_regions_is_left_out() -> None:
    parsed = parse_vms_csv(FIXTURE.read_text(), provider="gcp", source="fixture", date="2026")
    regions = {
        o.region for o in parsed.offers if (o.chip_id, o.pricing) == ("h100-sxm", "on-demand")
    }
    assert regions == {"us-east4", "europe-west4"}
    assert len(parsed.skipped) == 3 and all("33.606" in s for s in parsed.skipped)


def test_a_file_without_skypilot_columns_is_rejected() -> None:
    with pytest.raises(PricesFileError, match=r"not a SkyPilot vms\.csv"):
        parse_vms_csv("a,b\n1,2\n", provider="gcp", source="x", date="2026")


def test_the_cache_round_trips_and_replaces_packaged_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHIPWISE_PRICE_CACHE", str(tmp_path / "c" / "prices.json"))
    assert read_cache() is None
    parsed = parse_vms_csv(FIXTURE.read_text(), provider="gcp", source="fixture", date="2026")
    path = write_cache(parsed.offers, origin="fixture")
    assert path == tmp_path / "c" / "prices.json"
    cache = read_cache()
    assert cache is not None and cache.offers == parsed.offers and cache.origin == "fixture"
    catalog, _ = run_catalog(None)
    gcp_h100 = {o.source for o in catalog.offers_for("h100-sxm") if o.provider == "gcp"}
    assert gcp_h100 == {"fixture"}
    path.write_text("{not json")
    with pytest.raises(PricesFileError, match="delete it or run 'chipwise prices update'"):
        read_cache()
