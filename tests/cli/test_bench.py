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


# ---- --db and --json before a subcommand ----------------------------------------------------


@pytest.mark.parametrize("sub", ["list", "compare"])
def test_db_and_json_before_the_subcommand_apply_to_it(db: Path, sub: str) -> None:
    from tests.bench.conftest import make

    store.add_measurements(db, [make()])
    before = runner.invoke(app, ["bench", "--db", str(db), "--json", sub])
    after = runner.invoke(app, ["bench", sub, "--db", str(db), "--json"])
    assert before.exit_code == 0 and after.exit_code == 0, before.output
    assert json.loads(before.stdout) == json.loads(after.stdout)
    assert json.loads(before.stdout)["schema_version"] == 1
    env_store = db.parent / "env.sqlite"  # $CHIPWISE_DB: must not be the one read
    assert not store.list_measurements(env_store)


def test_the_same_db_before_and_after_is_fine_two_different_is_an_error(db: Path) -> None:
    same = runner.invoke(app, ["bench", "--db", str(db), "list", "--db", str(db)])
    assert same.exit_code == 0, same.output
    other = runner.invoke(app, ["bench", "--db", str(db), "list", "--db", str(db) + "2"])
    assert other.exit_code == 2
    assert "--db given twice" in _one_line_error(other.output)


@pytest.mark.parametrize(
    "option", [["--quick"], ["--device", "cpu"], ["--only", "gemm"], ["--no-store"], ["-q"]]
)
def test_run_options_before_a_subcommand_are_refused_not_ignored(
    db: Path, option: list[str]
) -> None:
    result = runner.invoke(app, ["bench", *option, "list", "--db", str(db)])
    assert result.exit_code == 2
    line = _one_line_error(result.output)
    assert option[0] in line and "'chipwise bench list'" in line


# ---- tables ---------------------------------------------------------------------------------


def test_measurement_tables_fit_80_columns_and_scale_their_units() -> None:
    from tests.bench.conftest import make
    from tests.report.golden import render_text

    from chipwise.cli.bench import measurements_table

    rows = (
        make(id=1),
        make(id=2, benchmark="copy", shape="1024", flops=0.0),
        make(id=3, chip_id=None, device_name="Some CPU", shape="32x32x32", dtype="fp32",
             flops=65536.0, time_s=5e-6, achieved_flops_per_s=1.3e10,
             achieved_bytes_per_s=2.4e9),
    )  # fmt: skip
    text = render_text(measurements_table(rows, stored=True), width=80)
    assert max(len(ln) for ln in text.splitlines()) <= 80
    assert "…" not in text  # no cell cut off
    assert "TFLOP/s" in text and "GFLOP/s" in text  # each rate in its own unit
    cpu_only = render_text(measurements_table(rows[2:], stored=True), width=80)
    assert "%peak" in text and "%peak" not in cpu_only  # no empty column for a CPU


def test_every_json_key_is_documented(db: Path) -> None:
    pytest.importorskip("torch")
    import chipwise.cli.bench as bench_cli

    doc = bench_cli.__doc__ or ""
    run = runner.invoke(app, ["bench", "--quick", "--device", "cpu", "--only", "copy",
                              "--db", str(db), "--json"])  # fmt: skip
    data = json.loads(run.stdout)
    keys = set(data) | set(data["device"])
    compare = json.loads(runner.invoke(app, ["bench", "compare", "--db", str(db), "--json"]).stdout)
    keys |= set(compare)
    cal = json.loads(runner.invoke(app, ["calibrate", "--db", str(db), "--json"]).stdout)
    keys |= set(cal) | {k for v in cal["values"] for k in v}
    for key in keys:
        assert f'"{key}"' in doc, key
