"""``chipwise chips``: the catalog as JSON and as tables that fit 80 columns."""

from __future__ import annotations

import json
import re
from typing import Any

from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.hardware import default_catalog

from .test_catalog_data import REQUIRED_IDS, REQUIRED_TPUS

runner = CliRunner()
_ISO_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")


def _json(*args: str) -> Any:
    result = runner.invoke(app, ["chips", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_chips_json_lists_every_required_chip_with_sourced_dated_figures() -> None:
    data = _json("--json")
    assert data["schema_version"] == 1
    by_id = {c["id"]: c for c in data["chips"]}
    assert set(REQUIRED_IDS) <= set(by_id)
    assert len(by_id) == len(default_catalog().chips)
    for chip in data["chips"]:
        assert "dense_flops_per_s.bf16" in chip["figures"] or chip["id"] in ("t4", "v100")
        for path, fig in chip["figures"].items():
            assert fig["source"], (chip["id"], path)
            assert _ISO_DATE.fullmatch(fig["date"]), (chip["id"], path)
            assert isinstance(fig["value"], float)
        for offer in chip["offers"]:
            assert offer["source"] and _ISO_DATE.fullmatch(offer["date"])


def test_chips_kind_tpu_lists_only_tpus() -> None:
    chips = _json("--kind", "tpu", "--json")["chips"]
    assert {c["kind"] for c in chips} == {"tpu"}
    assert set(REQUIRED_TPUS) <= {c["id"] for c in chips}


def test_chips_show_finds_a_chip_by_alias() -> None:
    result = runner.invoke(app, ["chips", "show", "v5p"])
    assert result.exit_code == 0, result.output
    assert "Google TPU v5p (tpu-v5p)" in result.output
    assert "459 TFLOP/s" in result.output
    assert "gcp on-demand: $4.20/chip-h" in result.output


def test_chips_show_json_has_offers_and_no_purchase_for_a_tpu() -> None:
    chip = _json("show", "TPU v5p", "--json")["chip"]
    assert chip["id"] == "tpu-v5p"
    assert chip["purchase"] is None
    assert {o["pricing"] for o in chip["offers"]} >= {"on-demand", "spot"}


def test_chips_show_unknown_chip_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["chips", "show", "tpu-v5x"])
    assert result.exit_code == 2
    assert "did you mean 'tpu-v5p'" in result.output


def test_chips_table_fits_80_columns_and_shows_every_id_in_full() -> None:
    result = runner.invoke(app, ["chips"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    first_cells = {line.split()[0] for line in lines if line.strip()}
    assert {c.id for c in default_catalog().chips} <= first_cells


def test_chips_show_fits_80_columns() -> None:
    result = runner.invoke(app, ["chips", "show", "h800"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_chips_json_lists_each_chips_features() -> None:
    by_id = {c["id"]: c for c in _json("--json")["chips"]}
    assert {"media-decode", "general-compute"} <= set(by_id["h100-sxm"]["features"])
    assert "media-encode" not in by_id["h100-sxm"]["features"]
    assert {"rt-cores", "media-encode"} <= set(by_id["l4"]["features"])
    assert by_id["tpu-v5p"]["features"] == []
    assert all(
        c["features"] == list(default_catalog().chip(c["id"]).features) for c in by_id.values()
    )


def test_chips_show_json_has_features() -> None:
    chip = _json("show", "RTX 4090", "--json")["chip"]
    assert {"raster", "rt-cores", "display", "fp64"} <= set(chip["features"])
