"""``chipwise prices``, ``chipwise prices update`` and ``--prices`` on advise."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.hardware import default_catalog

runner = CliRunner()
# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "prices" / "skypilot-gcp-vms.csv"
_ISO_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")
# 70B on <= 64 chips takes ~200-330 days: past the default deadline, so one is given.
SMALL = ["--chips", "h100-sxm,tpu-v5p", "--max-chips", "64", "--deadline-days", "400"]


def _json(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_prices_json_lists_every_offer_with_source_date_and_flags() -> None:
    data = _json("prices")
    assert len(data["offers"]) == len(default_catalog().offers)
    for o in data["offers"]:
        assert len(o["source"]) > 3 and _ISO_DATE.fullmatch(o["date"]), o
        assert isinstance(o["stale"], bool) and o["confidence"] in ("high", "medium", "low")
        assert o["age_days"] >= 0
        assert o["stale"] == (o["age_days"] > data["stale_after_days"])
    listed = {n["chip"] for n in data["no_public_price"]}
    assert listed == {n.chip_id for n in default_catalog().no_price}
    assert {"tpu-v7", "gb200", "mi355x", "h800"} <= listed


def test_prices_filters_by_chip_cloud_and_pricing() -> None:
    data = _json("prices", "h100", "--cloud", "gcp", "--pricing", "on-demand")
    assert data["offers"]
    for o in data["offers"]:
        assert (o["chip"], o["provider"], o["pricing"]) == ("h100-sxm", "gcp", "on-demand")
        assert o["instance"].startswith("a3-") and o["region"].startswith("us-")


def test_prices_table_marks_stale_and_low_confidence_prices() -> None:
    result = runner.invoke(app, ["prices", "h100"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "stale" in result.output and "low" in result.output
    assert "a3-highgpu-8g" in result.output


def test_prices_for_an_unknown_chip_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["prices", "h10"])
    assert result.exit_code == 2
    assert "unknown chip 'h10'" in result.output


def test_update_writes_the_cache_and_a_following_advise_uses_and_names_it(
    tmp_path: Path,
) -> None:
    env = {"CHIPWISE_PRICE_CACHE": str(tmp_path / "prices.json"), "COLUMNS": "200"}
    result = runner.invoke(app, ["prices", "update", "--from", str(FIXTURE)], env=env)
    assert result.exit_code == 0, result.output
    assert "skipped a3-highgpu-8g us-central1" in result.output
    assert "not in the catalog (skipped): P100" in result.output
    assert (tmp_path / "prices.json").is_file()
    data = _json("prices", "tpu-v5p", "--pricing", "spot", env=env)
    assert data["cache"]["updated"] == data["today"]
    (spot,) = data["offers"]
    assert FIXTURE.name in spot["source"]
    rec = _json("advise", "llama3-70b", *SMALL, "--cloud", "gcp", env=env)
    labels = [o["price"] for o in rec["options"]]
    assert labels and all(FIXTURE.name in label for label in labels), labels


def test_update_dry_run_writes_nothing(tmp_path: Path) -> None:
    env = {"CHIPWISE_PRICE_CACHE": str(tmp_path / "prices.json")}
    args = ["prices", "update", "--from", str(FIXTURE), "--dry-run"]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert "dry run" in result.output and not (tmp_path / "prices.json").exists()


def test_update_from_a_file_of_unknown_provider_asks_for_provider(tmp_path: Path) -> None:
    path = tmp_path / "vms.csv"
    path.write_text(FIXTURE.read_text())
    result = runner.invoke(app, ["prices", "update", "--from", str(path)])
    assert result.exit_code == 2
    assert "--provider gcp" in result.output


def test_advise_with_a_prices_file_uses_and_names_its_price(tmp_path: Path) -> None:
    path = tmp_path / "my.toml"
    path.write_text(
        'provider = "gcp"\n[[offers]]\nchip = "tpu-v5p"\npricing = "on-demand"\n'
        'usd_per_chip_hour = 1.25\nregion = "us-east5"\n'
    )
    rec = _json("advise", "llama3-70b", *SMALL, "--prices", str(path))
    (tpu,) = [o for o in rec["options"] if o["chip"] == "tpu-v5p"]
    assert "$1.25/chip-h; --prices my.toml" in tpu["price"]
    assert any("--prices my.toml" in n for n in rec["notes"])


@pytest.mark.parametrize(
    "text",
    [
        '[[offers]]\nchip = "tpu-v5p"\npricing = "on-demand"\nusd_per_chip_hour = 0\n',
        "not toml at all = = =",
    ],
)
def test_advise_with_a_malformed_prices_file_is_one_line_and_exit_2(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "my.toml"
    path.write_text(text)
    result = runner.invoke(app, ["advise", "llama3-70b", *SMALL, "--prices", str(path)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "my.toml" in result.output


def test_the_google_scale_reason_states_its_break_even_and_that_price_flips_or_ties(
    tmp_path: Path,
) -> None:
    args = ["advise", "llama3-70b", "--chips", "mi300x,tpu-v6e", "--max-chips", "128"]
    args += ["--deadline-days", "400"]
    before = _json(*args)
    (reason,) = [r for r in before["reasons"] if r["rule"] == "massive-training"]
    flip = reason["break_even"]
    assert flip is not None and flip["side"] == "tpu", reason
    assert before["pick"]["kind"] == "gpu"
    assert f"wins below ${flip['usd_per_chip_hour']:.2f}/chip-h" in reason["text"]
    assert flip["today_usd_per_chip_hour"] == before["best_tpu"]["offer"]["usd_per_chip_hour"]
    assert any("low confidence" in r or "stale" in r for r in flip["rests_on"])
    path = tmp_path / "flip.toml"
    path.write_text(
        f'[[offers]]\nchip = "{flip["chip"]}"\nprovider = "{flip["provider"]}"\n'
        f'pricing = "{flip["pricing"]}"\nusd_per_chip_hour = {flip["usd_per_chip_hour"]!r}\n'
    )
    after = _json(*args, "--prices", str(path))
    tpu, gpu = after["best_tpu"], after["best_gpu"]
    assert after["pick"]["kind"] == "tpu" or tpu["usd"] == pytest.approx(gpu["usd"], rel=1e-9)
    assert tpu["usd"] == pytest.approx(gpu["usd"], rel=1e-9)  # at the break-even: a tie


def test_predict_prices_a_step_with_the_files_price_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("chip,provider,pricing,usd_per_chip_hour\nv5p,gcp,on-demand,2.0\n")
    args = ["predict", "llama3-8b", "--chip", "v5p", "--chips", "8", "--prices", str(path)]
    data = _json(*args)
    price = data["price"]
    assert price["offer"]["source"] == "--prices mine.csv"
    assert price["usd_per_step"] == pytest.approx(data["step_time_s"] * 8 * 2.0 / 3600)


def test_advise_energy_prices_from_the_file_set_the_carbon(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text("[energy]\ngrid_kg_co2e_per_kwh = 0.02\n")
    args = ["advise", "llama3-8b", "--chips", "h100,tpu-v5p", "--max-chips", "8"]
    rec = _json(*args, "--prices", str(path))
    for o in rec["options"]:
        assert o["kg_co2e"] == pytest.approx(o["kwh"] * 0.02)
    assert any("grid carbon intensity are set by the file" in n for n in rec["notes"])
