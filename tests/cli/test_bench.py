"""The bench, calibrate and profile commands, run through the CLI on the CPU."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipwise.bench import store
from chipwise.cli import app

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CHIPWISE_DB", str(tmp_path / "env.sqlite"))
    return tmp_path / "store.sqlite"


def _one_line_error(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_bench_quick_json_runs_on_the_cpu_and_stores_the_results(db: Path) -> None:
    pytest.importorskip("torch")
    args = ["bench", "--quick", "--device", "cpu", "--db", str(db), "--json"]
    result = runner.invoke(app, [*args, "--only", "gemm,copy"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # stdout is pure JSON: no progress, no banner
    assert doc["schema_version"] == 1
    assert doc["device"]["kind"] == "cpu"
    assert doc["db"] == str(db)
    benchmarks = {m["benchmark"] for m in doc["measurements"]}
    assert benchmarks == {"gemm", "copy"}
    stored = store.list_measurements(db)
    assert len(stored) == len(doc["measurements"])
    assert {m.run_id for m in stored} == {doc["run_id"]}
    assert not (db.parent / "env.sqlite").exists()


def test_bench_writes_to_chipwise_db_when_no_db_is_given(db: Path) -> None:
    result = runner.invoke(
        app, ["bench", "--quick", "--device", "cpu", "--only", "copy", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    assert "stored in" in result.stdout
    assert store.list_measurements(db.parent / "env.sqlite", benchmark="copy")


def test_bench_no_store_leaves_the_store_alone(db: Path) -> None:
    args = ["bench", "--quick", "--device", "cpu", "--only", "reduction", "--db", str(db)]
    result = runner.invoke(app, [*args, "--no-store", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "reduction" in result.stdout
    assert store.list_measurements(db) == ()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--only", "matmul"], "unknown benchmark 'matmul'"),
        (["--dtypes", "fp128"], "unknown dtype 'fp128'"),
        (["--device", "gpu"], "unknown device 'gpu'"),
    ],
)
def test_bench_bad_options_are_one_line_errors(db: Path, args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["bench", "--quick", "--db", str(db), *args])
    assert result.exit_code == 2
    assert needle in _one_line_error(result.output)


def test_bench_list_filters_and_prints_json(db: Path) -> None:
    from tests.bench.conftest import make

    store.add_measurements(db, [make(), make(benchmark="copy", shape="1024", flops=0.0)])
    result = runner.invoke(app, ["bench", "list", "--db", str(db), "--benchmark", "gemm",
                                 "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["measurements"]
    assert [(r["benchmark"], r["chip_id"]) for r in rows] == [("gemm", "h100-sxm")]
    table = runner.invoke(app, ["bench", "list", "--db", str(db), "--device", "h100"])
    assert table.exit_code == 0
    assert "4096x4096x4096" in table.stdout
    assert "2 measurements from 1 run(s) on h100-sxm" in table.stdout


def test_bench_list_on_an_empty_store_says_how_to_fill_it(db: Path) -> None:
    result = runner.invoke(app, ["bench", "list", "--db", str(db)])
    assert result.exit_code == 0
    assert "run 'chipwise bench'" in result.stdout
