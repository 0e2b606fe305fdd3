"""``chipwise scan`` through the CLI: tables, --json, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.compat import PLATFORMS, scan_project

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def test_scan_prints_a_table_per_platform_and_the_findings() -> None:
    result = runner.invoke(app, ["scan", str(FIXTURES / "cuda_ext")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("Google TPU", "does-not-run", "AMD ROCm: runs-with-changes", "findings",
                 "csrc/kernel.cu:4", "rewrite in Pallas"):  # fmt: skip
        assert text in result.output


def test_scan_json_is_parsable_and_matches_the_library() -> None:
    project = FIXTURES / "triton_proj"
    result = runner.invoke(app, ["scan", str(project), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    report = scan_project(project)
    assert data["schema_version"] == 1
    assert [p["platform"] for p in data["platforms"]] == list(PLATFORMS)
    assert [p["verdict"] for p in data["platforms"]] == [p.verdict for p in report.platforms]
    assert data["custom_kernels"] == ["triton-kernel"]
    kernel = next(f for f in data["findings"] if f["key"] == "triton-kernel")
    assert (kernel["file"], kernel["line"]) == ("kernels.py", 17)
    assert [i["platform"] for i in kernel["impacts"]] == list(PLATFORMS)
    assert set(data) >= {"frameworks", "uses_cuda_specific_libs", "needs_fp64", "needs_graphics",
                         "tpu_ready_signals", "knowledge_last_checked"}  # fmt: skip


def test_a_bad_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, ["scan", str(missing)])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("error: cannot scan") and "nowhere" in lines[0]
