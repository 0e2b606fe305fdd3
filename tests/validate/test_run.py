"""The validation harness against published measurements: every row, and the error bound.

The bounds are the measured errors of this version plus a margin, so a model change that
makes the fit worse fails here (and the commit message must show the before/after):
training median |error| 7.8 % and p90 21 % over 103 rows (GPU 8.8 % / 21 % over 78, TPU
5.6 % / 17 % over 25), in-sample for the sustained_tensor_fraction values; left out one
publication at a time and refitted on the rest they score 8.2 % / 21 %. The 53 A100/H100
rows CW-046..CW-098 were added before any refit: on them the model then scored 9.5 % / 20 %
out of sample. Microbenchmarks: median 2.4 %.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from rich.console import Console

from chipwise.cli.validate import report_table
from chipwise.hardware.catalog import chip as find_chip
from chipwise.validate import (
    load_cases,
    own_measurements_path,
    own_measurements_paths,
    public_cases_path,
    read_cases,
    run_case,
    run_validation,
    with_scale_out,
)
from chipwise.validate.lopo import publication

TRAIN_MEDIAN_BOUND = 0.10
TRAIN_P90_BOUND = 0.23
MICROBENCH_MEDIAN_BOUND = 0.05
MOE_MEDIAN_BOUND = 0.15
MOE_P90_BOUND = 0.65


@pytest.fixture(scope="module")
def report(validation_report):  # type: ignore[no-untyped-def]
    r = validation_report  # every row, predicted once per session (tests/conftest.py)
    Console(width=160, color_system=None).print(report_table(r))  # shown with pytest -s
    return r


def test_own_measurements_all_cite_a_source() -> None:
    rows = read_cases(own_measurements_path())
    assert len(rows) >= 30
    for c in rows:
        # a repository at a commit, or a vendor page named with its version or date
        pinned = c.source.startswith("github:") and "@" in c.source
        dated = c.source.startswith("url:") and any(ch.isdigit() for ch in c.source)
        assert pinned or dated, c.id


def test_every_measurements_table_is_loaded_and_cites_a_source() -> None:
    paths = own_measurements_paths()
    assert paths[0] == own_measurements_path()
    assert any(p.name == "measurements-scale.csv" for p in paths)
    assert any(p.name == "measurements-moe.csv" for p in paths)
    loaded = {c.id for c in load_cases()}
    for p in paths:
        for c in read_cases(p):
            assert c.id in loaded
            pinned = c.source.startswith("github:") and "@" in c.source
            dated = c.source.startswith("url:") and any(ch.isdigit() for ch in c.source)
            assert pinned or dated, c.id


def test_scale_rows_are_reported_as_their_own_group(report) -> None:  # type: ignore[no-untyped-def]
    from chipwise.validate.run import SCALE_GROUP

    summary = report.summary()
    big = [r for r in report.results if r.error is not None and r.case.chips >= 1024]
    assert SCALE_GROUP in summary
    assert summary[SCALE_GROUP].rows == sum(1 for r in big if r.case.phase == "train")


def test_every_row_is_predicted_or_says_why(report) -> None:  # type: ignore[no-untyped-def]
    assert len(report.results) == len(load_cases())
    for r in report.results:
        assert (r.predicted is not None) != bool(r.why), r.case.id
        if r.case.usable:
            assert r.predicted is not None, f"{r.case.id}: {r.why}"


def test_training_error_stays_within_the_bound(report) -> None:  # type: ignore[no-untyped-def]
    # dense models; the MoE rows (measurements-moe.csv) have their own bound below
    s = report.stats("train-dense")
    assert s is not None and s.rows >= 36
    assert s.median_abs_error <= TRAIN_MEDIAN_BOUND
    assert s.p90_abs_error <= TRAIN_P90_BOUND
    for group in ("train-gpu", "train-tpu"):
        g = report.stats(group)
        assert g is not None and g.median_abs_error <= TRAIN_MEDIAN_BOUND


def test_microbenchmarks_stay_within_the_bound(report) -> None:  # type: ignore[no-untyped-def]
    s = report.stats("microbench")
    assert s is not None and s.median_abs_error <= MICROBENCH_MEDIAN_BOUND


def test_the_moe_subset_is_reported(report) -> None:  # type: ignore[no-untyped-def]
    s = report.stats("train-moe")
    assert s is not None and s.rows >= 30
    assert "train-moe" in report.summary()
    # a regression guard at today's level (issue 11 asks for 12 % / 25 %, not reached yet)
    assert s.median_abs_error <= MOE_MEDIAN_BOUND
    assert s.p90_abs_error <= MOE_P90_BOUND


def test_the_public_cases_ship_with_the_package() -> None:
    # package data, not a folder beside the checkout: a wheel install sees the same rows
    assert public_cases_path().is_file()
    assert "site-packages" in str(public_cases_path()) or "src/chipwise" in str(public_cases_path())
    ids = {c.id for c in load_cases()}
    assert "GPU-001" in ids and "TPU-001" in ids


def test_a_public_serving_row_states_its_closed_loop_load() -> None:
    # TPU-048 was a vLLM bench run at --max-concurrency 128 against --max-num-seqs 256 and
    # --max-num-batched-tokens 512: a closed loop through the engine, not a static batch
    rows = {c.id: c for c in read_cases(public_cases_path())}
    row = rows["TPU-048"]
    assert (row.load, row.concurrency) == ("concurrency", 128)
    assert (row.max_num_seqs, row.max_num_tokens, row.num_requests) == (256, 512, 3000)
    assert rows["TPU-001"].load == "batch"  # training rows leave the columns empty
    result = run_case(row)
    assert result.predicted is not None
    assert result.predicted == pytest.approx(row.value, rel=0.10)


def test_a_gated_deltanet_row_states_its_load() -> None:
    # GDN-*: published GPU serving runs of Gated DeltaNet hybrids, chosen by rules stated
    # before scoring. Lambda's pages: vllm bench serve --dataset-name random 8192/1024 (range
    # ratio 0: fixed lengths) --num-prompts 512 --max-concurrency 32 on bf16 checkpoints; a
    # table whose engine the page does not name stays usable=no and says so
    rows = {c.id: c for c in load_cases() if c.id.startswith("GDN-")}
    lam = [c for c in rows.values() if "lambda.ai" in c.source]
    assert len(lam) == 27
    for c in lam:
        assert (c.load, c.concurrency, c.num_requests) == ("concurrency", 32, 512), c.id
        # every request exactly 8192 / 1024 tokens: a one-bucket histogram states it
        fixed = "lengths/vllm-bench-random-8192-1024-r0.csv"
        assert (c.input_len, c.output_len, c.lengths) == (8192, 1024, fixed), c.id
        assert (c.precision, c.kv_dtype, c.date, c.harness) == ("bf16", "bf16", "2026-02", "api")
        assert c.plan == f"tp={c.chips}", c.id
        assert c.usable == ("engine: sglang (the table's own label)" in c.notes.lower()), c.id
        if not c.usable:
            assert "NOT STATED" in c.notes and run_case(c).predicted is None, c.id
    sglang = rows["GDN-001"]  # the one labelled table: SGLang, 8 x B200, Qwen3.5-397B-A17B
    assert (sglang.workload, sglang.chip, sglang.chips, sglang.engine) == (
        "qwen3.5-397b",
        "b200",
        8,
        "sglang",
    )
    assert (sglang.metric, sglang.value) == ("output_tokens_per_s", 1232.0)
    assert run_case(sglang).predicted is not None
    coder = rows["GDN-013"]  # Qwen3-Coder-Next (the Qwen3-Next-80B-A3B architecture), 4 x H100
    assert (coder.workload, coder.chip, coder.chips) == ("qwen3-next-80b", "h100-sxm", 4)
    # GPUStack's Qwen3.5-35B-A3B H200 pages: guidellm at request rate 1000 is a closed loop of
    # guidellm's 512-request cap over the run's requests; at 1-16 req/s an open loop of 1000
    gps = [c for c in rows.values() if "gpustack" in c.source]
    assert gps and all(c.chip == "h200-sxm" for c in gps)
    # the bf16 checkpoint is the zoo entry; Qwen/Qwen3.5-35B-A3B-FP8 its block-scaled config
    fp8_config = "configs/qwen3.5-35b-a3b-fp8.json"
    assert all(
        c.workload == (fp8_config if c.precision == "fp8" else "qwen3.5-35b-a3b") for c in gps
    )
    for c in gps:
        if c.load == "concurrency":
            assert c.concurrency == min(512, c.num_requests), c.id
        else:
            assert (c.load, c.num_requests, c.metric) == ("rps", 1000, "ttft_s"), c.id
            assert c.rps in (1, 4, 8, 16), c.id
        assert c.metric in ("output_tokens_per_s", "ttft_s"), c.id  # TPOT/ITL not read
    # a guidellm output tokens/s row holds its run's generated tokens over its duration (both
    # on the page), not guidellm 0.5.x's rate-distribution mean over the span of token events
    for c in gps:
        if c.metric == "output_tokens_per_s":
            stated = r"duration ([\d.]+) s, total input \d+ and generated (\d+) tokens"
            m = re.search(stated, c.notes)
            assert m is not None, c.id
            assert c.value == pytest.approx(int(m.group(2)) / float(m.group(1)), abs=0.006), c.id
    base = rows["GDN-028"]  # vLLM v0.17.1 defaults, bf16, ShareGPT at rate 1000
    assert (base.engine, base.precision, base.max_num_seqs, base.max_num_tokens) == (
        "vllm",
        "bf16",
        1024,
        8192,
    )
    assert (base.input_len, base.output_len, base.date) == (342, 281, "2026-03-20")
    assert rows["GDN-059"].max_num_tokens == 16384  # --max-num-batched-tokens=16384
    # MTP speculative decoding and --performance-mode runs say why they are not scored
    for c in gps:
        params = c.notes.split("backend parameters `")[1].split("`")[0]
        if "--speculative-config" in params or "--performance-mode" in params:
            assert not c.usable and "usable=no:" in c.notes, c.id


def test_a_google_tpu_row_states_its_load_and_engine_limits() -> None:
    # SVG-*: Google's own TPU serving figures (tpu-recipes, MLPerf v4.0), chosen by a rule
    # stated before scoring. The v6e-4 vLLM guide ran benchmark_serving at request rate inf
    # (1000 ShareGPT prompts queued at once) with the engine's own limits of 2025-02; the
    # Ironwood Qwen3-32B run of 2026-07-17 queued 320 InferenceX requests against
    # --max-num-seqs 320 and --max-num-batched-tokens 4096
    rows = {c.id: c for c in load_cases() if c.id.startswith("SVG-")}
    guide = rows["SVG-001"]
    assert (guide.load, guide.num_requests, guide.harness) == ("max_throughput", 1000, "api")
    assert (guide.chip, guide.chips, guide.plan, guide.engine) == ("tpu-v6e", 4, "tp=4", "vllm")
    assert (guide.max_num_seqs, guide.max_num_tokens, guide.date) == (0, 0, "2025-02-27")
    qwen = rows["SVG-010"]
    assert (qwen.load, qwen.num_requests, qwen.max_num_seqs, qwen.max_num_tokens) == (
        "max_throughput",
        320,
        320,
        4096,
    )
    assert (qwen.chip, qwen.chips, qwen.kv_dtype, qwen.async_scheduling) == (
        "tpu-v7",
        1,
        "fp8",
        True,
    )
    assert (qwen.input_len_std, rows["SVG-011"].output_len_std) == (59.5, 473.4)
    assert (qwen.memory_fraction, guide.memory_fraction) == (0.98, 0.0)  # 0 = the default
    # Qwen3.5-397B's server runs attention DP over the 8 TensorCores (enable_dp_attention),
    # each rank capped at 64 sequences / 1024 batched tokens: per chip (two ranks) 128 / 2048
    for i in ("SVG-006", "SVG-007"):
        c = rows[i]
        assert (c.plan, c.max_num_seqs, c.max_num_tokens) == ("tp=4,ep=4,adp=1", 128, 2048), i
        assert (c.kv_dtype, c.memory_fraction) == ("fp8", 0.9), i
    # the MLPerf GPT-J Server run is Poisson arrivals at its scheduled rate
    assert (rows["SVG-009"].load, rows["SVG-009"].rps) == ("rps", 7.25)
    # the rows chipwise cannot express say why (GPT-J's beams); Qwen3.5's linear attention
    # (SVG-006/007) is expressible since 2026-12-06
    assert {i for i, c in rows.items() if not c.usable} == {"SVG-008", "SVG-009"}
    for c in rows.values():
        result = run_case(c)
        if c.usable:
            assert result.predicted is not None and result.fits, c.id
        else:
            assert "cannot express" in result.why, c.id


def test_an_inferencemax_row_states_its_closed_loop_load_and_random_lengths() -> None:
    # InferenceMAX runs kimbochen/bench_serving --max-concurrency conc --num-prompts 10 x conc
    # --dataset-name random --random-range-ratio 0.8 --ignore-eos: a closed loop over a
    # uniform [0.8 L, L] length grid, each row naming that grid and its means
    # the gpt-oss rows (IMX-NNN); the DeepSeek-R1 rows (IMX-D-*) have their own test below
    rows = {c.id: c for c in load_cases() if re.match(r"IMX-\d", c.id)}
    assert rows
    for c in rows.values():
        assert c.load == "concurrency" and c.concurrency >= 1, c.id
        assert c.num_requests == 10 * c.concurrency, c.id
        # the API client; TensorRT-LLM's attention-DP launches set enable_balance at its
        # default iterations (engine.HARNESS_ADMISSION_GATES)
        adp = c.engine == "trtllm" and "adp=1" in c.plan
        assert c.harness == ("api-trtllm-adp-50-10" if adp else "api"), c.id
        isl, osl = (int(x) for x in c.lengths.split("random-")[1].split("-r0.8")[0].split("-"))
        assert (c.input_len, c.output_len) == (
            {1024: 922, 8192: 7373}[isl],
            {1024: 922, 8192: 7373}[osl],
        ), c.id
        assert c.usable, c.id
        # the MI355X runs are AMD's ATOM (chipwise engine "atom" since 2026-12-06)
        assert (c.engine == "atom") == (c.chip == "mi355x"), c.id
    # IMX-070..072: TensorRT-LLM 1.2.0rc2 on one B200 at 128 clients, 1k/1k
    row = rows["IMX-070"]
    assert (row.chip, row.chips, row.plan, row.engine) == ("b200", 1, "tp=1", "trtllm")
    assert (row.concurrency, row.num_requests, row.max_num_seqs, row.max_num_tokens) == (
        128,
        1280,
        512,
        20000,
    )
    assert (row.kv_dtype, row.date) == ("fp8", "2026-01-06")
    assert row.lengths == "lengths/inferencemax-random-1024-1024-r0.8.csv"
    # vLLM on H100: --max-num-seqs $CONC, async scheduling on, kv cache at the checkpoint's bf16
    h100 = next(c for c in rows.values() if c.chip == "h100-sxm" and c.concurrency == 64)
    assert (h100.max_num_seqs, h100.max_num_tokens, h100.async_scheduling) == (64, 8192, True)
    assert h100.kv_dtype == "bf16" and h100.engine == "vllm"
    # TRT-LLM-Gen's MXFP4 x MXFP8 MoE: the B200 vLLM runs set
    # VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 and the TensorRT-LLM runs moe_config backend
    # TRTLLM; the H100/H200 vLLM runs set VLLM_MXFP4_USE_MARLIN=1 (Marlin-MoE); ATOM its own
    want_backend = {"b200": "trtllm-gen", "h100-sxm": "marlin", "h200-sxm": "marlin"}
    for c in rows.values():
        assert c.moe_backend == want_backend.get(c.chip, ""), c.id
    # the memory share each launch script states: vLLM --gpu-memory-utilization 0.9,
    # TensorRT-LLM free_gpu_memory_fraction 0.85; ATOM's launch states none (its default)
    for c in rows.values():
        want = {"trtllm": 0.85, "atom": 0.0}.get(c.engine, 0.9)
        assert c.memory_fraction == want, c.id
    result = run_case(row)
    assert result.predicted is not None


def test_an_inferencemax_dsr1_row_states_its_closed_loop_load_and_parallelism() -> None:
    # InferenceMAX run 20621824084, b200 sglang fp4 tp 4 ep 4, 1k/1k at --max-concurrency 4:
    # dsr1_fp4_b200_docker.sh's --max-running-requests 256 --chunked-prefill-size 16384
    # --kv-cache-dtype fp8_e4m3; NUM_PROMPTS = CONC x 10 (the -FP4-V2 name misses the launch
    # script's x50 branch); the published figure is per GPU of the 4
    rows = {c.id: c for c in load_cases()}
    row = rows["IMX-D-001"]
    assert (row.load, row.concurrency, row.num_requests) == ("concurrency", 4, 40)
    assert (row.chip, row.chips, row.plan, row.engine) == ("b200", 4, "tp=4,ep=4", "sglang")
    assert (row.max_num_seqs, row.max_num_tokens, row.kv_dtype) == (256, 16384, "fp8")
    assert row.metric == "output_tokens_per_s_per_chip"
    assert row.workload == "configs/nvidia-deepseek-r1-fp4-v2.json"
    assert row.lengths == "lengths/inferencemax-random-1024-1024-r0.8.csv"
    # the MI300X fp8 runs leave --max-running-requests and the KV dtype to SGLang
    amd = [c for c in rows.values() if c.id.startswith("IMX-D-") and c.chip == "mi300x"]
    assert amd and all((c.max_num_seqs, c.kv_dtype, c.plan) == (2048, "bf16", "tp=8") for c in amd)
    assert all(c.num_requests == 10 * c.concurrency for c in amd)
    # SGLang's scheduler flags as launched: the B200 scripts' --scheduler-recv-interval
    # (10, 30 from 16 clients), the AMD scripts' --num-continuous-decode-steps 4 (stated,
    # though it gates nothing: engine.HARNESS_ADMISSION_GATES); the H200 script sets neither
    assert row.harness == "api-sglang-recv-10"
    for c in rows.values():
        if not c.id.startswith("IMX-D-") or c.engine == "atom":
            continue
        if c.chip == "b200":
            recv = 30 if c.concurrency >= 16 and c.plan != "tp=4" else 10
            assert c.harness == f"api-sglang-recv-{recv}", c.id
        else:
            gate = "api" if c.chip == "h200-sxm" else "api-sglang-decode-steps-4"
            assert c.harness == gate, c.id
    # --mem-fraction-static as launched: 0.85 for B200 fp4, 0.95 where fp8 runs at TP 4
    # (the weights fill most of each GPU), 0.8 on AMD
    assert row.memory_fraction == 0.85
    fp8_tp4 = [c for c in rows.values() if c.id.startswith("IMX-D-") and c.chip == "b200"
               and c.precision == "fp8" and c.plan == "tp=4"]  # fmt: skip
    assert fp8_tp4 and all(c.memory_fraction == 0.95 for c in fp8_tp4)
    assert all(c.memory_fraction == 0.8 for c in amd)
    # AMD's ATOM runs on MI355X (appended from IMX-D-247): the engine's own defaults, its
    # launch stating only an fp8 KV cache; x50 prompts (x20 at OSL 8192) from the runner
    atom = [c for c in rows.values() if c.id.startswith("IMX-D-") and c.engine == "atom"]
    assert len(atom) == 81 and min(c.id for c in atom) == "IMX-D-247"
    for c in atom:
        assert (c.chip, c.harness, c.kv_dtype, c.usable) == ("mi355x", "api", "fp8", True), c.id
        assert (c.max_num_seqs, c.max_num_tokens, c.memory_fraction) == (0, 0, 0.0), c.id
        assert c.num_requests == c.concurrency * (20 if c.output_len > 1024 else 50), c.id
    # one publication with the gpt-oss InferenceMAX rows: the mantile copy of the artifacts
    assert {publication(c) for c in rows.values() if c.id.startswith("IMX-D-")} == {
        "github:gminneci/mantile"
    }
    result = run_case(row)
    assert result.predicted is not None and result.fits


def test_a_serving_row_states_whether_it_passed_async_scheduling() -> None:
    # GPUStack's "Async scheduling in vLLM" run added --async-scheduling to vllm serve;
    # its engine-selection run did not (the engine's default of that date applies)
    rows = {c.id: c for c in load_cases()}
    assert rows["GPS-007"].async_scheduling is True
    assert rows["GPS-001"].async_scheduling is None


def test_nvidia_mlperf_llama2_rows_run_the_cpp_executor_without_overlap() -> None:
    # NVIDIA's llama2-70b harness runs a TensorRT engine through the C++ executor, whose
    # overlap of iterations is opt-in (TensorRT-LLM PR #3625) and not enabled there: the
    # host's work per step is in series with the device's, in every scenario
    rows = {c.id: c for c in load_cases()}
    for row_id in ("SVM-045", "SVM-048", "SVM-049", "SVM-059", "SVM-147", "SVM-162"):
        assert rows[row_id].async_scheduling is False, row_id
    # the NVL72 rows (disaggregated context/generation servers) are left to their own model
    assert rows["SVM-104"].async_scheduling is None


def test_every_config_a_row_names_ships_beside_it() -> None:
    for c in load_cases():
        if c.workload.lower().endswith(".json"):
            assert (c.base_dir / c.workload).is_file(), c.id


def test_a_row_may_name_its_system_network() -> None:
    rows = {c.id: c for c in read_cases(own_measurements_path())}
    # Selene: 8 x 200 Gb/s HDR InfiniBand per 8-GPU node (Narayanan et al. 2021, section 5)
    assert rows["CW-046"].scale_out_bytes_per_s_per_chip == pytest.approx(25e9)
    assert rows["CW-001"].scale_out_bytes_per_s_per_chip == 0.0  # the catalog's network


def test_the_system_network_replaces_only_the_scale_out_bandwidth() -> None:
    a100 = find_chip("a100-sxm-80gb")
    assert with_scale_out(a100, 0.0) is a100
    selene = with_scale_out(a100, 25e9)
    assert selene.scale_out is not None and a100.scale_out is not None
    assert selene.scale_out.bytes_per_s_per_chip == 25e9
    assert selene.scale_out.topology == a100.scale_out.topology
    assert (selene.scale_up, selene.dense_flops_per_s) == (a100.scale_up, a100.dense_flops_per_s)


def test_a_faster_system_network_never_slows_a_multi_node_row() -> None:
    row = {c.id: c for c in read_cases(own_measurements_path())}["CW-055"]  # 3072 GPUs
    slow = run_case(replace(row, scale_out_bytes_per_s_per_chip=6.25e9))
    fast = run_case(replace(row, scale_out_bytes_per_s_per_chip=25e9))
    assert slow.predicted is not None and fast.predicted is not None
    assert fast.predicted > slow.predicted


def test_fine_tune_rows_are_predicted_with_their_method_and_summarised_apart() -> None:
    from chipwise.validate.run import own_measurements_paths, read_cases

    path = next(p for p in own_measurements_paths() if p.name == "measurements-finetune.csv")
    cases = read_cases(path)
    assert cases and all(c.phase == "finetune" and c.method == "qlora" for c in cases)
    assert all(c.source != path.name for c in cases)  # each row names its publication
    report = run_validation(cases=cases)
    memory = [r for r in report.results if r.case.metric in ("memory_bytes", "allocated_bytes")]
    assert memory and all(r.predicted is not None for r in memory)
    # a QLoRA row predicts far less than the same run trained in full would need
    assert all(r.predicted is not None and r.predicted < 40e9 for r in memory[:6])
    summary = report.summary()
    assert "finetune" in summary and "train" not in summary


def test_an_allocator_peak_row_is_the_device_total_less_context_and_fragmentation() -> None:
    from chipwise.validate.run import own_measurements_paths, read_cases

    path = next(p for p in own_measurements_paths() if p.name == "measurements-finetune.csv")
    row = {c.id: c for c in read_cases(path)}["FT-001"]
    assert row.metric == "allocated_bytes"
    allocated = run_case(row).predicted
    total = run_case(replace(row, metric="memory_bytes")).predicted
    assert allocated is not None and total is not None
    # A100 40GB: 1.5 GB CUDA context + 5 % of 40 GB fragmentation allowance
    assert total - allocated == pytest.approx(1.5e9 + 0.05 * 40e9, rel=1e-3)


def test_serving_rows_state_their_load_and_unusable_ones_say_why() -> None:
    from chipwise.workload.ir import LOADS

    serving = [
        c
        for c in load_cases()
        if c.id.startswith(
            (
                "SV-",
                "SVM-",
                "SVN-",
                "GPS-",
                "SVR-",
                "SVS-",
                "SVT-",
                "SVJ-",
                "SVG-",
                "TRP-",
                "IMX-",
                "GDN-",
            )
        )
    ]
    assert any(c.id.startswith("SVM-") for c in serving)  # MLPerf scenario rows are kept
    assert any(c.id.startswith("SVR-") for c in serving)  # AMD/TPU serving rows are kept
    assert any(c.id.startswith("SVJ-") for c in serving)  # JetStream (TPU) serving rows are kept
    for c in serving:
        assert c.load in LOADS, c.id
        if c.load == "concurrency":
            assert c.concurrency >= 1, c.id
        if c.load == "server":
            assert c.ttft_p99_target_s > 0 or c.tpot_p99_target_s > 0, c.id
        if c.load == "rps":
            assert c.rps > 0, c.id
        if not c.usable:
            why = run_case(c).why
            assert why.startswith("marked usable=no") and len(why) > 40, c.id


def test_a_row_may_name_its_dataset_length_profile(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from chipwise.workload.lengths import mean_lengths, read_lengths

    rows = {c.id: c for c in load_cases()}
    offline = rows["SVM-019"]  # MLPerf v4.1 llama2-70b Offline, 8 x H100
    assert offline.lengths and (offline.base_dir / offline.lengths).is_file()
    hist = read_lengths(offline.base_dir / offline.lengths)
    mean_in, mean_out = mean_lengths(hist)
    # the row's input_len/output_len state the profile's means
    assert (offline.input_len, offline.output_len) == (round(mean_in), round(mean_out))
    with_profile = run_case(offline)
    fixed = run_case(replace(offline, lengths=""))
    assert with_profile.predicted is not None and fixed.predicted is not None
    assert with_profile.predicted != fixed.predicted  # the histogram, not the means, is used
    # all of the profile's inputs at its longest prompt fill the KV cache sooner: fewer tokens/s
    longest = max(i for i, _, _ in hist)
    (tmp_path / "long.csv").write_text(f"input_len,output_len,count\n{longest},294,1\n")
    long = run_case(replace(offline, base_dir=tmp_path, lengths="long.csv"))
    assert long.predicted is not None and long.predicted < with_profile.predicted
    missing = run_case(replace(offline, base_dir=tmp_path, lengths="absent.csv"))
    assert missing.predicted is None and "SVM-019 lengths" in missing.why


def test_every_mlperf_server_row_states_the_rate_its_run_was_scheduled_at() -> None:
    # the scheduled samples/s of mlperf_log_summary.txt (user.conf target_qps): a
    # configuration of the run, copied from the notes by benchmarks/mlperf_scheduled_rps.py
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "mlperf_scheduled_rps.py"
    spec = importlib.util.spec_from_file_location("mlperf_scheduled_rps", script)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = [c for c in load_cases() if c.load == "server"]
    assert len(rows) > 250
    for c in rows:
        stated = mod.scheduled_rps(c.notes)
        assert c.scheduled_rps == (float(stated) if stated else 0.0), c.id
    by_id = {c.id: c for c in rows}
    assert (by_id["SVM-190"].scheduled_rps, by_id["SVM-194"].scheduled_rps) == (79.26, 88.45)
    assert by_id["SVM-004"].scheduled_rps == 73.66  # v4.1: "scheduled samples/s 73.66"
    # no other load states one
    assert all(c.scheduled_rps == 0 for c in load_cases() if c.load != "server")


def test_a_server_run_s_latency_rows_may_be_timed_at_its_scheduled_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # off by default (validate.run.LATENCY_AT_SCHEDULED_RATE, its figures there); on, a
    # run's latency rows are timed at its scheduled rate while its tokens/s row keeps the
    # rate search: two B300 gpt-oss-120b runs of one configuration scheduled at 79.26 and
    # 88.45 requests/s then differ as measured (p99 TTFT 0.32 s and 2.52 s)
    from chipwise.validate import run as validate_run

    by_id = {c.id: c for c in load_cases()}
    low, high = by_id["SVM-190"], by_id["SVM-194"]
    assert validate_run._served_rps(high) == 0.0
    searched = run_case(high).predicted
    monkeypatch.setattr(validate_run, "LATENCY_AT_SCHEDULED_RATE", True)
    assert validate_run._served_rps(high) == 88.45
    assert validate_run._served_rps(by_id["SVM-193"]) == 0.0  # its tokens/s row
    slow, fast = run_case(high).predicted, run_case(low).predicted
    assert slow is not None and fast is not None and searched is not None
    assert slow > 3 * fast
    assert slow != searched


def test_mlperf_server_rows_are_predicted_at_the_highest_rate_within_the_targets(report) -> None:  # type: ignore[no-untyped-def]
    # MLPerf Server reports the highest Poisson rate whose p99 TTFT/TPOT meet the targets and
    # the latencies at that rate: every Server row (tokens/s and latencies) is a server load
    # (an Offline row may name an "RTX PRO 6000 Blackwell Server Edition": its scenario says)
    rows = [
        c
        for c in load_cases()
        if c.id.startswith("SVM-") and "Server" in c.notes and " Offline (" not in c.notes
    ]
    assert len([c for c in rows if int(c.id[4:]) <= 36]) == 30  # the v4.1 rows
    for c in rows:
        assert c.load == "server" and c.rps == 0 and c.scheduled_rps > 0, c.id
        # later rows state the loadgen targets of their run (Interactive's are tighter)
        stated = re.search(r"ttft_latency (\d+) ns, tpot_latency (\d+) ns", c.notes)
        targets = (int(stated[1]) / 1e9, int(stated[2]) / 1e9) if stated else (2.0, 0.2)
        assert (c.ttft_p99_target_s, c.tpot_p99_target_s) == pytest.approx(targets), c.id
    # the latency rows from the session's report (a rate search is seconds of CPU), the
    # tokens/s row predicted alone: one deployment, the latency rows predicted under the
    # tokens/s row's plan, within the targets
    by_id = {r.case.id: r for r in report.results}
    ttft, tpot = by_id["SVM-022"], by_id["SVM-024"]
    tokens = run_case(by_id["SVM-020"].case)
    assert tokens == by_id["SVM-020"]
    assert tokens.plan == ttft.plan == tpot.plan
    assert ttft.predicted is not None and 0 < ttft.predicted <= 2.0
    assert tpot.predicted is not None and 0 < tpot.predicted <= 0.2


def test_a_pool_gives_the_same_report_row_for_row_and_counts_its_progress() -> None:
    # three metrics of each run (tokens/s, TTFT, TPOT) share one prediction in either runner
    cases = [c for c in load_cases() if c.id.startswith("IMX-")][:12]
    assert len(cases) == 12
    ticks: list[tuple[int, int]] = []
    serial = run_validation(cases=cases)
    pooled = run_validation(cases=cases, workers=2, progress=lambda d, t: ticks.append((d, t)))
    assert [r.case.id for r in pooled.results] == [c.id for c in cases]
    assert pooled.results == serial.results
    assert ticks[0] == (0, 12) and ticks[-1] == (12, 12)
    assert [d for d, _ in ticks] == sorted(d for d, _ in ticks)
