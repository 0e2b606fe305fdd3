"""Porting effort in the pick: as-is wins unless the port pays for itself (CUDA-kernel project)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise.advise.porting import EFFORT_DAYS, ENGINEER_USD_PER_DAY, _short
from chipwise.cli import app

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

CUDA_EXT = Path(__file__).parents[1] / "compat" / "fixtures" / "cuda_ext"
ARGS = ["--project", str(CUDA_EXT), "--chips", "h100-sxm,mi300x", "--max-chips", "8"]
runner = CliRunner()


def advise(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["advise", *ARGS, *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def port_reason(data: dict[str, Any]) -> str:
    texts = [r["text"] for r in data["reasons"] if r["rule"] == "porting-effort"]
    assert len(texts) == 1, data["reasons"]
    return str(texts[0])


def cheapest(data: dict[str, Any]) -> str:
    return str(min(data["options"], key=lambda o: o["usd"])["chip"])


def test_a_small_saving_does_not_pay_for_the_port_so_the_as_is_chip_is_picked() -> None:
    data = advise()
    assert cheapest(data) == "mi300x"  # the numbers alone favour the chip that needs a port
    assert data["pick"]["chip"] == "h100-sxm"
    text = port_reason(data)
    saved = min(o["usd"] for o in data["options"] if o["chip"] == "h100-sxm") - min(
        o["usd"] for o in data["options"] if o["chip"] == "mi300x"
    )
    assert f"saves ${saved:,.0f} over h100-sxm" in text
    assert "hipify" in text and "medium effort" in text and "costs more than it saves" in text


def test_a_saving_larger_than_the_port_keeps_the_cheaper_chip_and_says_so() -> None:
    data = advise("--tokens", "100B")
    assert data["pick"]["chip"] == cheapest(data) == "mi300x"
    assert "pays for the port" in port_reason(data)


def test_allow_porting_picks_by_the_numbers_and_as_is_excludes_ports() -> None:
    assert advise("--allow-porting")["pick"]["chip"] == "mi300x"
    data = advise("--as-is")
    assert data["pick"]["chip"] == "h100-sxm"
    assert "needs changes on amd-rocm" in {e["chip"]: e["why"] for e in data["excluded"]}["mi300x"]


def test_both_porting_flags_are_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["advise", *ARGS, "--allow-porting", "--as-is"])
    assert result.exit_code == 2 and "contradict" in result.output


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("hipify (torch's BuildExtension ...); fix warp size", "hipify"),
        ("swap for X", "swap for X"),
    ],
)
def test_a_port_is_named_by_its_first_clause(text: str, short: str) -> None:
    assert _short(text) == short


def test_a_medium_port_costs_a_week_of_an_engineer() -> None:
    assert EFFORT_DAYS["medium"] * ENGINEER_USD_PER_DAY == pytest.approx(5 * 132_270 / 260)


def test_non_ml_work_gets_time_and_cost_and_cloud_rendering_gpus_qualify() -> None:
    result = runner.invoke(app, ["advise", "fp64-hpc", "--json"])
    assert result.exit_code == 0, result.output
    nonml = json.loads(result.stdout)["non_ml"]
    first = nonml["options"][0]
    assert first["hours"] > 0 and first["usd"] is not None and not first["lower_bound"]
    # 1e18 fp64 FLOPs at 65 % of the chip's fp64 peak (Top500 Rmax/Rpeak)
    from chipwise.hardware.catalog import chip as find_chip

    peak = find_chip(first["chip"]).peak_flops_per_s("fp64")
    assert first["hours"] == pytest.approx(1e18 / (0.65 * peak) / 3600)
    graphics = runner.invoke(app, ["advise", "graphics", "--json", "--work", "2e18"])
    g = json.loads(graphics.stdout)["non_ml"]
    assert {"l4", "t4"} <= set(g["capable_chips"])  # render and stream without a display
    assert all(o["lower_bound"] for o in g["options"]) and "--work" in g["work"]
