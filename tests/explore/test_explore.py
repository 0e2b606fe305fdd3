"""``chipwise.explore``: grids, one row per point, the cache, the pool, the public API."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import chipwise
from chipwise.explore import (
    COLUMN_NAMES,
    ExploreError,
    ExploreTable,
    grid_from,
    load_grid,
    run_grid,
)
from chipwise.explore.table import read_csv_rows

MYCHIP = Path(__file__).parents[1] / "hardware" / "data" / "mychip.toml"
SMALL = {
    "workloads": ["gpt2", "llama3-8b"],
    "chips": ["h100-sxm", "h100-sxm:hbm_bandwidth*1.5", "tpu-v5e"],
    "counts": [1, 2],
    "phases": ["infer", "train"],
    "global_batch": [16],
    "seq_len": [1024],
}


def test_grid_size_is_the_product_of_its_axes() -> None:
    grid = grid_from({**SMALL, "precisions": ["bf16", "fp8"], "batch": [1, 8]})
    # 2 workloads x 3 chips x 2 counts x 2 precisions x (infer: 2 batches + train: 1)
    assert grid.size(3) == 2 * 3 * 2 * 2 * 3
    assert len(list(grid.points(["a", "b", "c"]))) == grid.size(3)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"workloads": ["gpt2"], "chips": ["h100"], "countz": [1]}, "countz: Extra inputs"),
        ({"workloads": ["gpt2"], "chips": ["h100"], "counts": [0]}, "counts must be in 1.."),
        ({"workloads": ["gpt2"], "chips": ["h100"], "counts": [1 << 30]}, "1..1,048,576"),
        ({"workloads": ["gpt2"], "chips": ["h100"], "tokens": 1e30}, "grid tokens"),
        ({"workloads": ["gpt2"], "chips": ["h100"], "phases": ["serve"]}, "phases.0"),
        ({"workloads": ["gpt2"]}, "names no chip"),
    ],
)
def test_a_bad_grid_is_one_clear_line(data: dict[str, object], says: str) -> None:
    with pytest.raises(ExploreError) as err:
        grid_from(data)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_serving_loads_multiply_only_the_serving_points_and_batch_only_the_batch_load() -> None:
    grid = grid_from({**SMALL, "loads": ["batch", "concurrency=16", "max-throughput"],
                      "batch": [1, 8]})  # fmt: skip
    # 2 workloads x 3 chips x 2 counts x (train: 1 + infer: 2 batches + 2 engine loads)
    assert grid.size(3) == 2 * 3 * 2 * (1 + 2 + 2)
    rows = list(run_grid(grid_from({**SMALL, "workloads": ["gpt2"], "chips": ["h100"],
                                    "phases": ["infer"], "loads": ["rps=3", "batch"],
                                    "ttft_slo_s": 10.0})).table)  # fmt: skip
    assert [(r["load"], r["batch"]) for r in rows] == [("rps=3", None)] * 2 + [("batch", 1)] * 2
    rps = rows[0]
    assert rps["requests_per_s"] == 3.0 and rps["ttft_p99_s"] is not None
    assert all(r["meets_slo"] is True for r in rows)


@pytest.mark.parametrize("load", ["rps=0", "concurrency=0", "poisson", "rps=x"])
def test_a_bad_load_names_the_forms(load: str) -> None:
    with pytest.raises(ExploreError, match="batch, concurrency=N, rps=R or max_throughput"):
        grid_from({**SMALL, "loads": [load]})


def test_max_points_refuses_a_large_grid_before_any_work() -> None:
    with pytest.raises(ExploreError, match="has 24 points, over --max-points 10"):
        run_grid(grid_from(SMALL), max_points=10)


def test_every_point_is_a_row_and_failures_say_why() -> None:
    run = run_grid(grid_from(SMALL))
    rows = list(run.table)
    assert len(rows) == 24 and run.computed == 24 and run.cached == 0
    assert all(tuple(r) == COLUMN_NAMES for r in rows)
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] != "ok"]
    assert ok and failed and all(r["reason"] for r in failed)
    # llama3-8b training does not fit one 16 GB v5e: a row with the bytes, not a crash
    v5e = next(r for r in failed if r["chip"] == "tpu-v5e" and r["workload"] == "llama3-8b")
    assert v5e["status"] == "does-not-fit" and "GB" in str(v5e["reason"])
    priced = [r for r in ok if r["usd"] is not None]
    assert priced and all(float(r["usd"]) > 0 and r["price_source"] for r in priced)  # type: ignore[arg-type]
    derived = [r for r in rows if r["chip"] == "h100-sxm:hbm_bandwidth*1.5"]
    assert derived and all(str(r["chip_provenance"]).startswith("user-supplied") for r in derived)
    assert all(r["chip_base"] == "h100-sxm" for r in derived)


def test_faster_hbm_in_a_grid_speeds_up_decode() -> None:
    rows = list(run_grid(grid_from({**SMALL, "phases": ["infer"]})).table)
    pick = {(r["workload"], r["chip"], r["chips"]): r for r in rows}
    base = pick[("llama3-8b", "h100-sxm", 1)]
    fast = pick[("llama3-8b", "h100-sxm:hbm_bandwidth*1.5", 1)]
    assert float(fast["tpot_s"]) < float(base["tpot_s"])  # type: ignore[arg-type]


def test_a_pool_gives_the_same_rows_bit_for_bit() -> None:
    grid = grid_from(SMALL)
    assert run_grid(grid, workers=2).table.rows == run_grid(grid).table.rows


def test_an_interrupted_run_resumes_without_recomputing_finished_points(tmp_path: Path) -> None:
    grid = grid_from(SMALL)
    full = run_grid(grid)

    def stop_after_half(done: int, total: int) -> None:
        if done >= total // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_grid(grid, cache_dir=tmp_path, progress=stop_after_half)
    resumed = run_grid(grid, cache_dir=tmp_path)
    assert resumed.cached >= 12 and resumed.computed == 24 - resumed.cached
    assert resumed.table.rows == full.table.rows
    again = run_grid(grid, cache_dir=tmp_path)
    assert again.computed == 0 and again.cached == 24 and again.runner == "cache"


def test_a_changed_setting_is_a_new_point(tmp_path: Path) -> None:
    run_grid(grid_from(SMALL), cache_dir=tmp_path)
    other = run_grid(grid_from({**SMALL, "tokens": 2e9}), cache_dir=tmp_path)
    assert other.computed == 12 and other.cached == 12  # training rows price the run


def test_grid_file_with_a_chip_file_beside_it(tmp_path: Path) -> None:
    (tmp_path / "mychip.toml").write_text(MYCHIP.read_text())
    (tmp_path / "grid.toml").write_text(
        'workloads = ["gpt2"]\nchips = ["h100"]\nchip_files = ["mychip.toml"]\n'
        'phases = ["infer"]\ncounts = [1]\n'
    )
    rows = list(run_grid(load_grid(tmp_path / "grid.toml")).table)
    assert [r["chip"] for r in rows] == ["h100-sxm", "my-chip"]
    assert rows[1]["chip_provenance"] == "user-supplied: mychip.toml"
    assert rows[1]["usd_per_chip_hour"] == 5.0 and rows[1]["price_provider"] == "user"


def test_a_yaml_grid_reads_like_toml(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    (tmp_path / "grid.yaml").write_text(
        "workloads: [gpt2]\nchips: [h100, 'h100-sxm:hbm_bandwidth*2']\ncounts: [1, 2]\n"
    )
    grid = load_grid(tmp_path / "grid.yaml")
    assert grid.spec.chips == ["h100", "h100-sxm:hbm_bandwidth*2"] and grid.size(2) == 4
    (tmp_path / "bad.yml").write_text("- just\n- a list\n")
    with pytest.raises(ExploreError, match="top level must be a mapping"):
        load_grid(tmp_path / "bad.yml")


def test_csv_reads_back_the_same_numbers(tmp_path: Path) -> None:
    table = run_grid(grid_from(SMALL)).table
    back = read_csv_rows(table.write_csv(tmp_path / "points.csv"))
    assert len(back) == len(table)
    for row, text in zip(table, back, strict=True):
        for name in ("ttft_s", "step_time_s", "usd"):
            value = row[name]
            assert (text[name] == "") if value is None else float(text[name]) == value


def test_parquet_has_a_fixed_schema(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    table = run_grid(grid_from(SMALL)).table
    back = pq.read_table(table.write_parquet(tmp_path / "points.parquet"))
    assert back.column_names == list(COLUMN_NAMES) and back.num_rows == len(table)
    assert str(back.schema.field("chips").type) == "int64"
    assert back.column("ttft_s").to_pylist() == [r["ttft_s"] for r in table]


def test_public_api_returns_a_dataframe_or_the_table() -> None:
    result = chipwise.explore({**SMALL, "workloads": ["gpt2"], "phases": ["infer"]})
    try:
        import pandas as pd
    except ImportError:
        assert isinstance(result, ExploreTable) and len(result) == 6
        return
    assert isinstance(result, pd.DataFrame) and list(result.columns) == list(COLUMN_NAMES)
    assert len(result) == 6 and not math.isnan(result["tpot_s"].iloc[0])
