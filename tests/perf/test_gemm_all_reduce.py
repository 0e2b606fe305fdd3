"""TensorRT-LLM's GEMM + all-reduce fusion (``serve.GEMM_ALL_REDUCE_HARNESSES``): the
all-reduce after each row-parallel GEMM runs tile by tile inside the GEMM, so a step pays
only what the GEMM cannot hide, and at least the last wave of tiles' share."""

from __future__ import annotations

from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network
from chipwise.perf.predict import predict
from chipwise.perf.step.serve import ServeModel
from chipwise.workload.ir import Inference, Workload
from chipwise.workload.presets import load_preset

B200 = chip("b200")
LLAMA_405B = load_preset("llama3-405b")


def _timers(plan: Plan, chip_id: str = "b200"):  # type: ignore[no-untyped-def]
    c = chip(chip_id)
    sv = ServeModel(LLAMA_405B, c, "fp4", model_for(c).for_engine("trtllm"), Network(c))
    return sv.engine_timer(plan, "fp8"), sv.engine_timer(plan, "fp8", gemm_all_reduce=True)


def test_a_prefill_chunk_hides_most_of_its_all_reduces_behind_the_gemms() -> None:
    plain, fused = _timers(Plan(tp=4))
    # a 2048-token chunk: the down projection (2048 x 16384 x 13312 per rank) outlasts its
    # 64 MiB all-reduce, the output projection does not; about 7 waves of 128 x 256 tiles
    assert fused.comm_s(2048) < 0.5 * plain.comm_s(2048)
    assert fused.comm_s(2048) > plain.comm_s(2048) / 10  # the last waves stay exposed
    # the rest of the step is the same work (the norms leave the all-reduce kernel, a
    # little more than before)
    assert fused.linear_s(2048) >= plain.linear_s(2048)
    assert fused.device_s(64, 9000, 1984, 9000) < plain.device_s(64, 9000, 1984, 9000)


def test_a_decode_step_of_one_wave_hides_nothing() -> None:
    plain, fused = _timers(Plan(tp=4))
    # 32 sequences: one 128-row tile per column, 64 tiles on 148 SMs, all finishing together
    assert fused.comm_s(32) == plain.comm_s(32)


def test_nothing_changes_without_tensor_parallelism_or_off_nvidia() -> None:
    plain, fused = _timers(Plan(tp=1))
    assert fused.comm_s(2048) == plain.comm_s(2048) == 0.0
    plain, fused = _timers(Plan(tp=8), "mi355x")
    assert fused.comm_s(2048) == plain.comm_s(2048) > 0


def test_the_harness_turns_it_on_for_a_server_run() -> None:
    def run(harness: str) -> float:
        phase = Inference(
            load="rps", rps=1.0, input_len=8000, output_len=600, engine="trtllm",
            max_num_tokens=2048, harness=harness,
        )  # fmt: skip
        p = predict(Workload(model=LLAMA_405B, phase=phase), B200, 4, "fp4", plan=Plan(tp=4))
        assert p.engine is not None and p.engine.ttft_p50_s is not None
        return p.engine.ttft_p50_s

    assert run("nvidia-mlperf-gemm-ar") < run("")
