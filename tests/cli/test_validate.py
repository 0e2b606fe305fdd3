"""``chipwise validate``: every row with its error, and the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.validate import load_cases

runner = CliRunner()


def test_json_lists_every_microbenchmark_row_and_the_summary() -> None:
    result = runner.invoke(app, ["validate", "--kind", "microbench", "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    expected = [c.id for c in load_cases() if c.phase == "microbench"]
    assert [r["id"] for r in d["rows"]] == expected
    for r in d["rows"]:
        assert {"measured", "predicted", "error", "source", "why"} <= r.keys()
    assert d["summary"]["all"]["rows"] == sum(r["predicted"] is not None for r in d["rows"])


@pytest.mark.usefixtures("validated_rows")
def test_text_output_shows_rows_and_percentiles() -> None:
    result = runner.invoke(app, ["validate", "--kind", "infer"])
    assert result.exit_code == 0, result.output
    assert "median / 90th percentile" in result.output
    for c in load_cases():
        if c.phase == "infer":
            assert c.id in result.output


@pytest.mark.usefixtures("validated_rows")
def test_phase_infer_scores_throughput_ttft_tpot_and_each_vendor_apart() -> None:
    result = runner.invoke(app, ["validate", "--phase", "infer", "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    assert {r["phase"] for r in d["rows"]} == {"infer"}
    groups = d["out_of_sample"].keys()
    # one group per metric family and per vendor that has predicted rows
    families = {
        "throughput"
        if "tokens" in r["metric"] or "requests" in r["metric"]
        else r["metric"].split("_")[0]
        for r in d["rows"]
        if r["predicted"] is not None
    }
    for family in families:
        assert f"infer-{family}" in groups
    assert "infer-nvidia" in groups and "infer-amd" in groups and "infer-tpu" in groups


def test_phase_and_kind_that_disagree_are_one_line_error() -> None:
    result = runner.invoke(app, ["validate", "--phase", "infer", "--kind", "train"])
    assert result.exit_code == 2
    assert "disagree" in result.output


# ---- the table at 80 and 120 columns ------------------------------------------------------


def _render(width: int, *, wide: bool = False) -> str:
    from io import StringIO

    from rich.console import Console

    from chipwise.cli.validate import report_table
    from chipwise.validate import run_validation

    cases = [c for c in load_cases() if c.phase == "microbench" or c.id in ("TPU-008", "CW-014")]
    report = run_validation(cases=cases)
    buf = StringIO()
    Console(file=buf, width=width, color_system=None).print(report_table(report, wide=wide))
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 120])
def test_default_table_fits_the_terminal_and_keeps_every_cell_whole(width: int) -> None:
    text = _render(width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in text  # no cell is cut short
    head = next(line for line in lines if " id " in line)
    for col in ("workload", "chip", "measured", "predicted", "error"):
        assert col in head
    assert "plan" not in head and "metric" not in head
    for row_id in ("TPU-008", "CW-014", "GPU-061"):
        assert row_id in text
    assert "median / 90th percentile" in text and "microbench" in text


def test_at_120_columns_workload_names_are_on_one_line() -> None:
    text = _render(120)
    assert "maxtext-synthetic-22b-v4" in text and "matmul:10240x15360x8192" in text


def test_wide_adds_metric_plan_and_notes() -> None:
    text = _render(220, wide=True)
    head = next(line for line in text.splitlines() if " id " in line)
    assert "metric" in head and "plan (fits)" in head and "notes" in head
    assert "fits" in text.split("plan (fits)", 1)[1]


def test_wide_option_runs_through_the_cli() -> None:
    result = runner.invoke(app, ["validate", "--kind", "microbench", "--wide"])
    assert result.exit_code == 0, result.output
    assert "metric" in result.output and "achieved_tflops" in result.output


# ---- --measured: the local store ------------------------------------------------------------


def test_measured_compares_the_store_with_the_model(tmp_path: Path) -> None:
    from tests.bench.test_calibrate import SYNTHETIC_H100

    from chipwise.bench import store

    db = tmp_path / "m.sqlite"
    store.add_measurements(db, SYNTHETIC_H100)
    text = runner.invoke(app, ["validate", "--measured", "--db", str(db)])
    assert text.exit_code == 0, text.output
    assert "h100-sxm" in text.output and "median / 90th percentile" in text.output
    doc = json.loads(
        runner.invoke(app, ["validate", "--measured", "--db", str(db), "--json"]).stdout
    )
    assert doc["n"] == len(SYNTHETIC_H100) and not doc["calibrated"]
    assert doc["median_abs_error"] >= 0


def test_measured_on_an_empty_store_says_how_to_fill_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", "--measured", "--db", str(tmp_path / "e.sqlite")])
    assert result.exit_code == 0, result.output
    assert "run 'chipwise bench'" in " ".join(result.output.split())
