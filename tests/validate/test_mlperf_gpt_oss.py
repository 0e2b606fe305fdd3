"""The MLPerf Inference v6.0 gpt-oss-120b rows (SVM-177..296) and their length profile."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from chipwise.validate.run import load_cases, run_case

LENGTHS = Path(__file__).parents[2] / "src/chipwise/validate/data/lengths/mlperf-gpt-oss-120b.csv"


def test_the_gpt_oss_length_profile_is_the_performance_set() -> None:
    # perf_eval_ref.parquet: 6,396 prompts, inputs mean 5,010.64 (sum 32,048,077), min 600,
    # max 15,330 (openshift-psap/performance-dashboard datasets/summaries/gpt-oss.csv, and
    # NVIDIA's v6.0 code/gpt-oss-120b README: 6,396 samples, max ISL 15,330); outputs fixed
    # at the 1,278.2-token reference mean (mlcommons/inference compliance/TEST09)
    with LENGTHS.open(newline="", encoding="utf-8") as fh:
        rows = [
            (int(r["input_len"]), int(r["output_len"]), int(r["count"])) for r in csv.DictReader(fh)
        ]
    n = sum(c for _, _, c in rows)
    assert n == 6396
    assert sum(i * c for i, _, c in rows) / n == pytest.approx(5010.64, abs=0.05)
    assert max(i for i, _, _ in rows) == 15330
    assert min(i for i, _, _ in rows) == 600
    assert {o for _, o, _ in rows} == {1278}


def test_an_mlperf_gpt_oss_server_row_states_its_load() -> None:
    # NVIDIA's v6.0 B300 x8 Server run: eight single-GPU TensorRT-LLM instances
    # (closed/NVIDIA/configs/B300-SXM-270GBx8/Server/gpt-oss-120b.py: tensor_parallelism 1,
    # gpu_batch_size 128 * 7, runtime max_num_tokens 4638 * 3, fp8 KV, 'fp4') under the
    # benchmark's Server targets, p99 TTFT 3 s and p99 TPOT 80 ms
    rows = {c.id: c for c in load_cases()}
    row = rows["SVM-249"]
    assert (row.workload, row.chip, row.chips, row.metric) == (
        "gpt-oss-120b",
        "b300",
        8,
        "output_tokens_per_s",
    )
    assert (row.load, row.ttft_p99_target_s, row.tpot_p99_target_s) == ("server", 3.0, 0.08)
    assert (row.max_num_seqs, row.max_num_tokens, row.kv_dtype) == (896, 13914, "fp8")
    assert row.lengths == "lengths/mlperf-gpt-oss-120b.csv"
    assert run_case(row).predicted is not None
    # the Interactive rows are the same Server scenario at 2 s / 15 ms
    assert (rows["SVM-252"].ttft_p99_target_s, rows["SVM-252"].tpot_p99_target_s) == (2.0, 0.015)
    # a chip outside the catalog is kept, unscored, with its reason
    assert not rows["SVM-232"].usable
