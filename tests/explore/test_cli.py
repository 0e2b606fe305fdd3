"""``chipwise explore``: options or a grid file in, a table, a summary and a cache out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.explore.table import read_csv_rows

runner = CliRunner()
ARGS = ["explore", "-w", "gpt2", "--chip", "h100", "--chip", "h100-sxm:hbm_bandwidth*1.5",
        "--count", "1,2", "--phase", "infer", "--workers", "1"]  # fmt: skip


def test_explore_writes_the_table_and_resumes_from_its_cache(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = runner.invoke(app, [*ARGS, "-o", str(out), "--json"])
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["points"] == 4 and data["computed"] == 4 and data["statuses"] == {"ok": 4}
    rows = read_csv_rows(out / "points.csv")
    assert [r["chips"] for r in rows] == ["1", "2", "1", "2"]
    again = json.loads(runner.invoke(app, [*ARGS, "-o", str(out), "--json"]).output)
    assert again["computed"] == 0 and again["cached"] == 4


def test_explore_reads_a_grid_file_and_options_replace_its_axes(tmp_path: Path) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(
        'workloads = ["gpt2"]\nchips = ["v5e"]\ncounts = [1, 2, 4]\nphases = ["infer"]\n'
    )
    result = runner.invoke(
        app, ["explore", str(grid), "--count", "1", "-o", str(tmp_path / "o"), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["points"] == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--max-points", "3"], "has 4 points, over --max-points 3"),
        (["--chip", "h100:bogus*2"], "valid fields: hbm_bandwidth"),
        (["--count", "two"], "--count 'two' is not a whole number"),
    ],
)
def test_explore_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    result = runner.invoke(app, [*ARGS, *args, "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and says in result.output
    assert result.output.count("\n") <= 2  # one message (the terminal may wrap it once)


def test_explore_without_workloads_says_how_to_give_them(tmp_path: Path) -> None:
    result = runner.invoke(app, ["explore", "--chip", "h100", "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no workloads" in result.output
