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


def test_bench_calibrate_profile_end_to_end_on_the_cpu(db: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    bench = ["bench", "--quick", "--device", "cpu", "--db", str(db), "--quiet"]
    assert runner.invoke(app, [*bench, "--only", "gemm,copy"]).exit_code == 0
    cal = runner.invoke(app, ["calibrate", "--db", str(db), "--json"])
    assert cal.exit_code == 0, cal.output
    doc = json.loads(cal.stdout)
    assert doc["chip_id"] is None and doc["efficiency"] is None
    assert doc["measured"]["gemm_flops_per_s"]["fp32"] > 0
    assert doc["measured"]["bytes_per_s"] > 0
    model = tmp_path / "tiny_cli_model.py"
    model.write_text(
        "import torch\nfrom torch import nn\n\n\ndef build(n_in=16):\n"
        "    return nn.Linear(n_in, 4), (torch.empty(2, n_in),)\n"
    )
    spec = f"{model}:build"
    prof = runner.invoke(app, ["profile", spec, "--trust-code", "--device", "cpu", "--steps",
                               "2", "--db", str(db), "--json", "--arg", "n_in=8"])  # fmt: skip
    assert prof.exit_code == 0, prof.output
    result = json.loads(prof.stdout)
    assert len(result["step_times_s"]) == 2
    assert result["predicted_step_s"] > 0
    assert result["error"] == pytest.approx(
        result["predicted_step_s"] / result["measured_step_s"] - 1
    )
    text = runner.invoke(app, ["profile", spec, "--trust-code", "--device", "cpu", "--steps",
                               "1", "--db", str(db)])  # fmt: skip
    assert "measured step:" in text.stdout and "predicted step:" in text.stdout


def test_profile_without_trust_code_is_refused_in_one_line(db: Path) -> None:
    spec = "chipwise.workload.examples.gpt2_like:build"
    result = runner.invoke(app, ["profile", spec, "--db", str(db)])
    assert result.exit_code == 2
    assert _one_line_error(result.output) == (
        f"error: importing {spec!r} runs its code; pass --trust-code"
    )


def test_calibrate_and_compare_a_catalog_chip_from_stored_measurements(db: Path) -> None:
    from tests.bench.test_calibrate import SYNTHETIC_H100

    store.add_measurements(db, SYNTHETIC_H100)
    cal = runner.invoke(app, ["calibrate", "--db", str(db), "--chip", "h100", "--json"])
    assert cal.exit_code == 0, cal.output
    doc = json.loads(cal.stdout)
    assert doc["chip_id"] == "h100-sxm"
    assert doc["efficiency"]["gemm_peak_fraction"] == pytest.approx(0.8)
    table = runner.invoke(app, ["calibrate", "--db", str(db), "--chip", "h100", "--no-save"])
    assert "packaged" in table.stdout and "gemm_peak_fraction" in table.stdout
    cmp = runner.invoke(app, ["bench", "compare", "--db", str(db), "--json"])
    assert cmp.exit_code == 0, cmp.output
    rows = json.loads(cmp.stdout)
    assert rows["n"] == len(SYNTHETIC_H100)
    assert rows["median_abs_error"] >= 0
    text = runner.invoke(app, ["bench", "compare", "--db", str(db), "--calibrated"])
    assert "calibrated efficiencies: median |error|" in text.stdout


def test_calibrate_an_empty_store_is_a_one_line_error(db: Path) -> None:
    result = runner.invoke(app, ["calibrate", "--db", str(db)])
    assert result.exit_code == 2
    assert "run 'chipwise bench' first" in _one_line_error(result.output)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["n_layer=12"], {"n_layer": 12}),
        (["lr=0.5", "bias=False", "name=gpt"], {"lr": 0.5, "bias": False, "name": "gpt"}),
        ([], {}),
    ],
)
def test_factory_args_are_typed(args: list[str], expected: dict[str, object]) -> None:
    from chipwise.cli.bench import parse_factory_args

    assert parse_factory_args(args) == expected


def test_a_factory_arg_without_equals_is_a_one_line_error(db: Path) -> None:
    spec = "chipwise.workload.examples.gpt2_like:build"
    result = runner.invoke(app, ["profile", spec, "--trust-code", "--arg", "n_layer"])
    assert result.exit_code == 2
    assert "KEY=VALUE" in _one_line_error(result.output)
