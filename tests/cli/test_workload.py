"""``chipwise workload list/show`` readability (their content is tested in tests/workload)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.workload.presets import PRESETS

runner = CliRunner()


@pytest.mark.parametrize("columns", [80, 120])
def test_the_zoo_table_fits_and_cuts_no_id_or_alias(columns: int) -> None:
    result = runner.invoke(app, ["workload", "list"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(ln) for ln in lines) <= columns
    assert "…" not in result.output
    ids = {ln.split()[0] for ln in lines if ln.strip()}
    assert {p.id for p in PRESETS} <= ids  # every id whole, on its own row
    words = set(result.output.replace(",", " ").split())
    short = {a for p in PRESETS for a in p.aliases[:2] if "/" not in a and " " not in a}
    assert short <= words  # every listed alias printed whole


@pytest.mark.parametrize("columns", [80, 120])
def test_show_fits_the_terminal(columns: int) -> None:
    result = runner.invoke(app, ["workload", "show", "deepseek-v3"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    assert max(len(ln) for ln in result.output.splitlines()) <= columns
