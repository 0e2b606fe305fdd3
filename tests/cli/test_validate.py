"""``chipwise validate``: every row with its error, and the summary."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.perf.validation import load_cases

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


def test_text_output_shows_rows_and_percentiles() -> None:
    result = runner.invoke(app, ["validate", "--kind", "infer"])
    assert result.exit_code == 0, result.output
    assert "median / 90th percentile" in result.output
    for c in load_cases():
        if c.phase == "infer":
            assert c.id in result.output
