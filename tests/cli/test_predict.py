"""``chipwise predict``: the command-line contract scripts depend on."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from chipwise.cli import app

runner = CliRunner()

TRAIN_KEYS = {
    "step_time_s", "tokens_per_s", "tokens_per_s_per_chip", "model_flops_per_token", "mfu",
    "memory_per_chip_bytes", "fits", "plan", "breakdown", "assumptions",
}  # fmt: skip
INFER_KEYS = {
    "ttft_s", "tpot_s", "tokens_per_s", "output_tokens_per_s", "memory_per_chip_bytes",
    "fits", "plan", "breakdown", "assumptions",
}  # fmt: skip
BREAKDOWN_KEYS = {"compute_s", "memory_s", "communication_s", "bubble_s", "overhead_s"}


def _json(args: list[str]) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["predict", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_train_json_has_every_contract_key() -> None:
    d = _json(["llama3-8b", "--chip", "h100", "--chips", "8", "--seq-len", "4096",
               "--global-batch", "64"])  # fmt: skip
    assert d.keys() >= TRAIN_KEYS and d["breakdown"].keys() >= BREAKDOWN_KEYS
    assert d["fits"] and d["plan_source"] == "planner" and "planner chose" in d["plan_reason"]
    assert d["tokens_per_s"] == pytest.approx(d["tokens_per_s_per_chip"] * 8)
    assert 0 < d["mfu"] < 1


def test_infer_json_has_every_contract_key() -> None:
    d = _json(["llama3-8b", "--chip", "h100", "--phase", "infer", "--batch", "8",
               "--input-len", "512", "--output-len", "128"])  # fmt: skip
    assert d.keys() >= INFER_KEYS and d["breakdown"].keys() >= BREAKDOWN_KEYS
    assert d["ttft_s"] > 0 and d["tpot_s"] > 0


@pytest.mark.parametrize(
    ("workload", "chips", "key"),
    [
        ("matmul:8192x8192x8192", "1", "achieved_tflops"),
        ("copy:8589934592", "1", "achieved_bytes_per_s"),
        ("allreduce:8589934592", "8", "bus_bytes_per_s"),
    ],
)
def test_primitive_json(workload: str, chips: str, key: str) -> None:
    d = _json([workload, "--chip", "h100", "--chips", chips])
    assert d["time_s"] > 0 and d[key] > 0


def test_a_full_plan_is_used_as_given_and_reports_fit() -> None:
    d = _json(["llama3-8b", "--chip", "h100", "--chips", "8", "--global-batch", "16",
               "--plan", "fsdp=8,microbatch=1,recompute=full"])  # fmt: skip
    assert d["plan_source"] == "given"
    assert d["plan"].startswith("dp=1,fsdp=8,tp=1,pp=1")


def test_a_plan_that_does_not_fit_is_reported_not_fitting() -> None:
    d = _json(["llama3-70b", "--chip", "h100", "--chips", "8", "--global-batch", "8",
               "--plan", "dp=8,microbatch=1,recompute=none"])  # fmt: skip
    assert d["fits"] is False and d["memory_per_chip_bytes"] > d["capacity_per_chip_bytes"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["llama3-405b", "--chip", "h100", "--chips", "8"], "does not fit"),
        (["llama3-8b", "--chip", "v5e", "--precision", "fp8"], "no fp8 rate"),
        (["llama3-8b", "--chip", "h100", "--chips", "8", "--plan", "tp=3"], "divide"),
        (["no-such-model", "--chip", "h100"], "unknown"),
    ],
)
def test_impossible_requests_exit_2_with_one_line(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["predict", *args])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0]


def test_text_output_names_the_plan_and_time() -> None:
    result = runner.invoke(app, ["predict", "llama3-8b", "--chip", "h100", "--chips", "8"])
    assert result.exit_code == 0
    assert "step time" in result.output and "planner" in result.output


# ---- --calibrated -----------------------------------------------------------------------------


def test_calibrated_without_a_calibration_is_one_clear_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "empty.sqlite"
    result = runner.invoke(app, ["predict", "llama3-8b", "--chip", "h100", "--calibrated",
                                 "--db", str(db)])  # fmt: skip
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no calibration for h100-sxm" in lines[0]
    assert "chipwise calibrate --chip h100-sxm" in lines[0]


def test_calibrated_uses_the_stored_calibration(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.bench.test_calibrate import SYNTHETIC_H100

    from chipwise.bench import store

    db = tmp_path / "store.sqlite"
    store.add_measurements(db, SYNTHETIC_H100)
    cal = runner.invoke(app, ["calibrate", "--db", str(db), "--chip", "h100", "--json"])
    assert cal.exit_code == 0, cal.output
    args = ["matmul:8192x8192x8192", "--chip", "h100"]
    packaged = _json(args)
    calibrated = _json([*args, "--calibrated", "--db", str(db)])
    assert packaged["efficiency"] == "packaged" and calibrated["efficiency"] == "calibrated"
    gemm = {a["name"]: a for a in calibrated["assumptions"]}["gemm_peak_fraction"]
    assert gemm["value"] == pytest.approx(0.8) and "calibrate" in gemm["source"]
    assert calibrated["achieved_tflops"] != pytest.approx(packaged["achieved_tflops"])


# ---- readability and plan strings ------------------------------------------------------------


@pytest.mark.parametrize("columns", ["80", "120"])
@pytest.mark.parametrize("phase", ["train", "infer"])
def test_the_table_fits_the_terminal_and_cuts_nothing(columns: str, phase: str) -> None:
    args = ["predict", "llama3-8b", "--chip", "h100", "--chips", "8", "--phase", phase]
    result = runner.invoke(app, args, env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    assert max(len(ln) for ln in result.output.splitlines()) <= int(columns)
    assert "…" not in result.output  # the plan and its reason are wrapped, never cut
    assert "recompute=" in result.output
    if phase == "infer":
        assert "time split (one request)" in result.output


@pytest.mark.parametrize("blank", ["", " ", ",,"])
def test_a_blank_plan_leaves_the_choice_to_the_planner(blank: str) -> None:
    data = _json(["llama3-8b", "--chip", "h100", "--chips", "8", "--plan", blank])
    planned = _json(["llama3-8b", "--chip", "h100", "--chips", "8"])
    assert data["plan_source"] == "planner" and data["plan"] == planned["plan"]


def test_a_plan_may_have_spaces_after_commas() -> None:
    data = _json(["llama3-8b", "--chip", "h100", "--chips", "8", "--plan",
                  "tp=2, pp=2, microbatch=1, recompute=none"])  # fmt: skip
    assert data["plan_source"] == "given"
    assert "tp=2" in data["plan"] and "pp=2" in data["plan"]


def test_json_stays_clean_when_the_planner_runs() -> None:
    """--json output is one JSON document: no spinner or banner on stdout."""
    result = runner.invoke(app, ["predict", "llama3-70b", "--chip", "h100", "--chips", "64",
                                 "--json"])  # fmt: skip
    assert result.exit_code == 0
    assert json.loads(result.stdout)["schema_version"] == 1
    assert result.stderr == ""


def test_engine_trtllm_sizes_a_larger_kv_cache_and_cuts_a_kv_bound_loops_ttft() -> None:
    base = ["llama3-70b", "--chip", "h100", "--chips", "2", "--phase", "infer",
            "--precision", "fp8", "--concurrency", "100", "--input-len", "5000",
            "--output-len", "500"]  # fmt: skip
    vllm = _json([*base, "--engine", "vllm"])
    trt = _json([*base, "--engine", "trtllm"])
    assert trt["kv_capacity_tokens_per_replica"] > vllm["kv_capacity_tokens_per_replica"]
    assert trt["ttft_s"] < vllm["ttft_s"]


def test_engine_names_are_taken_in_any_case() -> None:
    base = ["llama3-8b", "--chip", "h100", "--chips", "1", "--phase", "infer",
            "--concurrency", "8", "--input-len", "512", "--output-len", "128"]  # fmt: skip
    assert _json([*base, "--engine", "TRTLLM"]) == _json([*base, "--engine", "trtllm"])
    result = runner.invoke(app, ["predict", *base, "--engine", "tgi"])
    assert result.exit_code != 0


def test_the_atom_engine_serves_on_amd_gpus_and_says_so_elsewhere() -> None:
    base = ["gpt-oss-120b", "--phase", "infer", "--precision", "fp4", "--engine", "atom",
            "--concurrency", "4", "--input-len", "1024", "--output-len", "256"]  # fmt: skip
    assert _json([*base, "--chip", "mi355x"])["output_tokens_per_s"] > 0
    result = runner.invoke(app, ["predict", *base, "--chip", "h100"])
    assert result.exit_code != 0
    assert "runs on AMD GPUs only" in result.output and "Traceback" not in result.output


def test_engine_date_picks_the_vllm_release_whose_batch_limit_applies() -> None:
    base = ["llama3-8b", "--chip", "h100", "--phase", "infer", "--max-throughput"]
    old = _json([*base, "--engine-date", "2024-10-10"])  # vLLM V0: 256 sequences
    new = _json(base)  # the newest: 1024 on an 80 GB H100
    assert old["decode_batch_per_replica"] == 256
    assert new["decode_batch_per_replica"] > 256
    bad = runner.invoke(app, ["predict", *base, "--engine-date", "v0.6.3"])
    assert bad.exit_code != 0 and "engine_date" in bad.output


def test_num_requests_bounds_a_max_throughput_runs_batch() -> None:
    data = _json(["llama3-8b", "--chip", "h100", "--phase", "infer",
                  "--max-throughput", "--num-requests", "100"])  # fmt: skip
    assert data["decode_batch_per_replica"] <= 100


def test_a_prefill_pool_of_its_own_takes_its_chips_before_the_plan() -> None:
    d = _json(["qwen3-30b-a3b", "--chip", "h100", "--chips", "8", "--phase", "infer",
               "--precision", "fp8", "--rps", "20", "--engine", "trtllm", "--disaggregated",
               "--prefill-pool", "instances=1,tp=2,adp=1",
               "--plan", "tp=2,ep=2,adp=1"])  # fmt: skip
    assert d["chips"] == 8 and d["plan"].startswith("dp=3,") and d["prefill_chips"] == 2
    result = runner.invoke(app, ["predict", "qwen3-30b-a3b", "--chip", "h100", "--chips", "8",
                                 "--phase", "infer", "--rps", "20", "--disaggregated",
                                 "--prefill-pool", "instances=1,tp=2,dp=3"])  # fmt: skip
    assert result.exit_code == 2 and "not one of" in result.output


def test_the_trtllm_gen_moe_backend_speeds_gpt_oss_decode_on_blackwell_only() -> None:
    """--moe-backend trtllm-gen: gpt-oss's MXFP4 experts at TRT-LLM-Gen's measured rates on
    B200 (a faster decode step at 4 clients); on an H100 (no fp4 tensor cores, W4A16
    experts) the choice moves nothing."""
    base = ["gpt-oss-120b", "--chips", "1", "--phase", "infer", "--precision", "fp4",
            "--concurrency", "4", "--input-len", "1024", "--output-len", "1024"]  # fmt: skip
    b200 = _json([*base, "--chip", "b200"])["tpot_s"]
    b200_gen = _json([*base, "--chip", "b200", "--moe-backend", "trtllm-gen"])["tpot_s"]
    assert b200_gen < 0.9 * b200
    h100 = _json([*base, "--chip", "h100"])["tpot_s"]
    assert _json([*base, "--chip", "h100", "--moe-backend", "trtllm-gen"])["tpot_s"] == h100
    bad = runner.invoke(app, ["predict", *base, "--chip", "b200", "--moe-backend", "x"])
    assert bad.exit_code == 2


def test_the_marlin_moe_backend_slows_gpt_oss_prefill_on_hopper() -> None:
    """--moe-backend marlin: gpt-oss's MXFP4 experts on an H100 at Marlin-MoE's measured
    rates (MARLIN-MOE), ~2x the Triton kernel's time at prefill sizes: an 8k-token prompt's
    TTFT grows by a tenth or more."""
    base = ["gpt-oss-120b", "--chip", "h100", "--chips", "2", "--phase", "infer",
            "--precision", "fp4", "--concurrency", "4", "--input-len", "8192",
            "--output-len", "1024"]  # fmt: skip
    triton = _json(base)["ttft_s"]
    assert _json([*base, "--moe-backend", "marlin"])["ttft_s"] > 1.1 * triton


def test_a_stated_memory_fraction_sizes_the_kv_cache() -> None:
    """--memory-fraction replaces the engine's default share: a larger SGLang
    --mem-fraction-static leaves a larger KV pool (DeepSeek-R1 fp8 at TP 4 on B200, whose
    weights fill most of the memory: the default leaves none, InferenceMAX's 0.95 room for 8
    clients); out of [0, 1] and
    under JetStream (no such knob) it is one clear error."""
    base = ["deepseek-r1", "--chip", "b200", "--chips", "4", "--phase", "infer",
            "--precision", "fp8", "--engine", "sglang", "--concurrency", "8",
            "--input-len", "8192", "--output-len", "1024"]  # fmt: skip
    default = runner.invoke(app, ["predict", *base])
    assert default.exit_code != 0 and "no room for a KV cache" in default.output
    stated = _json([*base, "--memory-fraction", "0.95"])
    assert stated["kv_capacity_tokens_per_replica"] > 8 * 9216
    bad = runner.invoke(app, ["predict", *base, "--memory-fraction", "1.5"])
    assert bad.exit_code == 2
    tpu = ["llama3-8b", "--chip", "tpu-v5e", "--phase", "infer", "--engine", "jetstream",
           "--concurrency", "4", "--memory-fraction", "0.9"]  # fmt: skip
    result = runner.invoke(app, ["predict", *tpu])
    assert result.exit_code != 0 and "memory-fraction" in result.output
