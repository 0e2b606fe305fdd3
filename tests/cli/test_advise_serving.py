"""``chipwise advise --phase infer`` sized by an arrival rate and p99 targets (issue 13's
done-when command), its --kv-dtype and --precision options."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.pool import run_tasks

runner = CliRunner()
# the module (chipwise.advise exports its function of the same name)
recommend_module = importlib.import_module("chipwise.advise.recommend")


def _advise(*args: str) -> Any:
    result = runner.invoke(app, ["advise", *args, "--json"])  # confidence.json, packaged
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_issue_command_meets_both_targets_over_the_whole_catalog() -> None:
    data = _advise("llama3-70b", "--phase", "infer", "--rps", "20", "--ttft", "2000",
                   "--tpot", "50")  # fmt: skip
    pick = data["pick"]
    assert pick["ttft_p99_s"] <= 2.0 and pick["tpot_p99_s"] <= 0.05
    assert pick["usd_per_million_output_tokens"] > 0 and pick["load"] == "rps"
    assert data["constraints"]["kv_dtype"] == "auto"
    # every listed option meets the targets too, and the serving confidence is quoted
    assert all(o["ttft_p99_s"] <= 2.0 and o["tpot_p99_s"] <= 0.05 for o in data["options"])
    assert data["confidence"]["what"] == "serving-throughput"


def test_chips_searched_on_worker_processes_give_the_same_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # --workers 2 searches the chips on two processes (chipwise.pool): the same options,
    # pick and exclusions, bit for bit, as one process
    pools: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> None:
        pools.append(args[2])  # the worker count
        run_tasks(*args, **kwargs)

    monkeypatch.setattr(recommend_module, "run_tasks", counted)
    args = ("llama3-70b", "--phase", "infer", "--rps", "20", "--ttft", "2000", "--tpot", "50",
            "--chips", "h100,mi300x,v5e,l4")  # fmt: skip
    assert _advise(*args, "--workers", "2") == _advise(*args, "--workers", "1")
    assert pools == [2]


def test_kv_dtype_without_the_engine_is_refused_with_the_fix() -> None:
    result = runner.invoke(app, ["advise", "llama3-8b", "--phase", "infer", "--kv-dtype", "fp8"])
    assert result.exit_code == 2
    assert "--kv-dtype fp8" in result.output and "--rps" in result.output


def test_no_disaggregation_needs_the_slo_search_and_is_in_the_constraints() -> None:
    refused = runner.invoke(app, ["advise", "llama3-8b", "--phase", "infer", "--no-disaggregation"])
    assert refused.exit_code == 2 and "--no-disaggregation" in refused.output
    assert "--rps" in refused.output
    args = ["advise", "llama3-8b", "--phase", "infer", "--rps", "2", "--tpot", "50", "--chips",
            "h100-sxm", "--no-disaggregation", "--json"]  # fmt: skip
    ok = runner.invoke(app, args)
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    assert data["constraints"]["disaggregation"] is False
    assert not any(o.get("disaggregated") for o in data["options"])


def test_kv_dtype_is_an_option_of_serving() -> None:
    result = runner.invoke(app, ["advise", "llama3-8b", "--kv-dtype", "fp8"])
    assert result.exit_code == 2 and "--phase infer" in result.output


def test_an_fp8_kv_cache_is_in_the_constraints() -> None:
    data = _advise("llama3-8b", "--phase", "infer", "--rps", "4", "--kv-dtype", "fp8",
                   "--chips", "h100-sxm", "--max-chips", "8")  # fmt: skip
    assert data["constraints"]["kv_dtype"] == "fp8" and data["pick"] is not None
