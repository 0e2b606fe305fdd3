"""``chipwise advise`` for fine-tunes: the default names its method; QLoRA on one small GPU."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise.cli import app

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

runner = CliRunner()
CHIPS = ["--chips", "h100-sxm,l4,l40s,tpu-v6e", "--max-chips", "8"]


def _run(*args: str) -> str:
    result = runner.invoke(app, ["advise", *args], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(*args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_run(*args, "--json"))
    return data


def test_the_default_fine_tune_is_lora_and_says_so() -> None:
    data = _json(*CHIPS)
    assert data["training"]["method"] == "lora" and data["training"]["lora_rank"] == 16
    assert "LoRA fine-tune" in _run(*CHIPS).splitlines()[0]


def test_a_sized_pre_training_run_trains_every_weight() -> None:
    assert _json("llama3-8b", "--tokens", "1T", *CHIPS)["training"]["method"] == "full"


def test_qlora_excludes_tpus_and_names_the_smallest_gpu_it_fits_on_with_memory() -> None:
    data = _json("--method", "qlora", *CHIPS)
    assert "bitsandbytes" in {e["chip"]: e["why"] for e in data["excluded"]}["tpu-v6e"]
    text = _run("--method", "qlora", *CHIPS, "--objective", "time")
    line = next(x for x in text.splitlines() if "on one workstation card" in x)
    assert "L4 24GB" in line and " of 24 GB" in line


def test_an_unknown_lora_target_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["advise", "--lora-targets", "q_proj,wq"])
    assert result.exit_code == 2 and "wq" in result.output


def test_own_hardware_prints_a_purchase_payback_and_break_even() -> None:
    args = ["mistral-7b", "--own-hardware", "--tokens", "500M", "--chips", "b200,h100-sxm,mi300x"]
    data = _json(*args)
    own = data["ownership"]
    assert own["units"] >= 1 and own["chips_bought"] % own["unit_chips"] == 0
    assert own["rent_usd"] > 0 and own["rent"]["chip"] in {"b200", "h100-sxm", "mi300x"}
    text = _run(*args)
    assert "buy: 1 ×" in text and "8-GPU server" in text
    assert "pays back" in text and "utilization" in text


def test_a_higher_utilization_pays_back_sooner() -> None:
    args = ["mistral-7b", "--own-hardware", "--tokens", "500M", "--chips", "mi300x"]
    low = _json(*args, "--utilization", "0.5")["ownership"]
    high = _json(*args, "--utilization", "0.95")["ownership"]
    assert (low["utilization"], high["utilization"]) == (0.5, 0.95)
    assert high["payback_years"] < (low["payback_years"] or float("inf"))
