"""Serving: prefill is compute-bound, decode reads weights and the KV cache every token."""

from __future__ import annotations

import pytest

from chipwise.errors import PlanError
from chipwise.hardware import chip
from chipwise.perf.base import Plan
from chipwise.perf.efficiency import efficiency_for
from chipwise.perf.ops.kernels import (
    measured_all_reduce_s,
    measured_nccl_launch_s,
    measured_nccl_s,
)
from chipwise.perf.ops.models import model_for
from chipwise.perf.plan.parallel import Network, groups
from chipwise.perf.predict import predict
from chipwise.perf.step.serve import (
    CUSTOM_ALL_REDUCE_MAX_BYTES,
    DECODE_STEP_OVERHEAD_S,
    ServeModel,
    kv_dtype_for,
)
from chipwise.workload.ir import Inference, Workload
from chipwise.workload.presets import load_preset

H100 = chip("h100-sxm")
LLAMA8 = load_preset("llama3-8b")


def _serve(precision: str = "bf16") -> ServeModel:
    return ServeModel(LLAMA8, H100, precision, model_for(H100), Network(H100))


def test_decode_of_one_request_is_bounded_below_by_reading_the_weights() -> None:
    p = _serve().serve(Plan(), batch=1, input_len=128, output_len=128)
    weights_s = p.memory.weights_bytes / H100.hbm_bytes_per_s
    assert weights_s < p.tpot_s < 2 * weights_s + DECODE_STEP_OVERHEAD_S


def test_longer_context_and_bigger_batch_cost_more_per_token() -> None:
    s = _serve()
    short = s.serve(Plan(), batch=8, input_len=512, output_len=128)
    long = s.serve(Plan(), batch=8, input_len=8192, output_len=128)
    assert long.tpot_s > short.tpot_s and long.ttft_s > short.ttft_s
    assert long.memory.kv_cache_bytes > short.memory.kv_cache_bytes


def test_batching_raises_throughput() -> None:
    s = _serve()
    one = s.serve(Plan(), batch=1, input_len=512, output_len=256)
    many = s.serve(Plan(), batch=32, input_len=512, output_len=256)
    assert many.output_tokens_per_s > 10 * one.output_tokens_per_s


def test_tensor_parallel_cuts_time_per_token() -> None:
    s = _serve()
    tp1 = s.serve(Plan(), batch=4, input_len=512, output_len=128)
    tp8 = s.serve(Plan(tp=8), batch=4, input_len=512, output_len=128)
    assert tp8.tpot_s < tp1.tpot_s


def test_serving_plans_reject_training_axes() -> None:
    with pytest.raises(PlanError, match="serving plans"):
        _serve().serve(Plan(fsdp=2), batch=1, input_len=8, output_len=8)


def test_fp8_serving_caches_keys_and_values_in_fp8() -> None:
    assert kv_dtype_for("fp8") == "fp8" and kv_dtype_for("bf16") == "bf16"
    bf16 = _serve().serve(Plan(), batch=8, input_len=2048, output_len=128)
    fp8 = _serve("fp8").serve(Plan(), batch=8, input_len=2048, output_len=128)
    assert fp8.memory.kv_cache_bytes == bf16.memory.kv_cache_bytes / 2


def test_predict_plans_serving_and_reports_fit() -> None:
    w = Workload(model=load_preset("llama3-70b"), phase=Inference(batch=16))
    p = predict(w, H100, 8)
    assert p.fits and p.plan.chips == 8  # type: ignore[union-attr]


def test_expert_parallel_serving_reads_every_local_expert_whole() -> None:
    """Under expert parallelism folded over the tensor-parallel ranks (vLLM's
    --enable-expert-parallel) each chip holds E / ep whole experts: a decode step that touches
    nearly all of them reads all of its share of the expert weights, not a tp-th of it."""
    mixtral = load_preset("mixtral-8x7b")
    s = ServeModel(mixtral, H100, "bf16", model_for(H100), Network(H100))
    plan = Plan(tp=4, ep=4)
    p = s.serve(plan, batch=64, input_len=128, output_len=128)
    weights_s = p.memory.weights_bytes / H100.hbm_bytes_per_s
    assert p.tpot_s > weights_s


def test_a_tpu_engine_step_pays_for_its_token_bucket() -> None:
    """XLA serving engines pad a step's tokens to the next bucket (16, 32, 64, ...), so on a
    TPU a compute-bound step of 1025 tokens costs what one of 2048 does; a GPU runs the exact
    count."""
    from chipwise.perf.step.serve import EngineStepTimer

    v6e = chip("tpu-v6e")
    tpu = EngineStepTimer(ServeModel(LLAMA8, v6e, "bf16", model_for(v6e), Network(v6e)),
                          Plan(), "bf16")  # fmt: skip
    assert tpu.padded_tokens(33) == 64 and tpu.padded_tokens(3) == 16
    assert tpu.device_s(0, 1, 1025, 1025) > tpu.device_s(0, 1, 1024, 1024) * 1.5
    gpu = EngineStepTimer(_serve(), Plan(), "bf16")
    assert gpu.padded_tokens(33) == 33


def test_rccl_small_all_reduces_on_mi300x_cost_their_measured_floor() -> None:
    # AZ-MI300X: an RCCL all-reduce of 1 KB over 8 MI300X takes 44.8 us, 32 MB 255 us
    mi300x = chip("mi300x")
    net = Network(mi300x)
    g = groups(Plan(tp=8), mi300x)["tp"]
    assert net.time_s("all_reduce", 1024, g) == pytest.approx(44.8e-6, rel=0.05)
    assert net.time_s("all_reduce", 32 * 2**20, g) == pytest.approx(255e-6, rel=0.05)


@pytest.mark.parametrize("cid", ["mi300x", "h800"])
def test_serving_bypasses_the_collective_library_up_to_the_custom_all_reduce_size(
    cid: str,
) -> None:
    # where no measured all-reduce ships (data/kernels/allreduce.csv): below 8 MiB the
    # engine's custom all-reduce pays the fabric's latency (the kind default), from 8 MiB on
    # (vLLM's ``inp_size < self.max_size``) the library's: on MI300X RCCL's ~45 us floor, on
    # an NVLink GPU the same 2 us steps either way
    c = chip(cid)
    serve = ServeModel(LLAMA8, c, "bf16", model_for(c), Network(c))
    g = groups(Plan(tp=8), c)["tp"]
    small, large = CUSTOM_ALL_REDUCE_MAX_BYTES - 16, CUSTOM_ALL_REDUCE_MAX_BYTES
    fabric = Network(c, efficiency_for(c).with_values(source="test", collective_latency_s=2e-6))
    assert serve._tp_all_reduce_s(small, g) == pytest.approx(fabric.time_s("all_reduce", small, g))
    assert serve._tp_all_reduce_s(large, g) == pytest.approx(
        Network(c).time_s("all_reduce", large, g)
    )
    gap = serve._tp_all_reduce_s(large, g) - serve._tp_all_reduce_s(small, g)
    if cid == "mi300x":
        assert gap > 30e-6  # RCCL's floor returns beyond the custom kernel's limit
    else:
        assert gap < 1e-6


def test_llama3_70b_serves_on_four_l40s_over_pcie() -> None:
    """TP 4 over PCIe inside one server (AWS g6e): decode reads a quarter of the weights and
    pays 2 all-reduces per layer, each vLLM's custom all-reduce as measured on 4 L40S."""
    l40s = chip("l40s")
    s = ServeModel(load_preset("llama3-70b"), l40s, "fp8", model_for(l40s), Network(l40s))
    p = s.serve(Plan(tp=4), batch=1, input_len=512, output_len=128)
    weights_s = p.memory.weights_bytes / l40s.hbm_bytes_per_s
    all_reduces_s = p.decode.communication_s
    one = measured_all_reduce_s("l40s", "vllm", 4, 8192)  # one token, 8192 wide
    assert one is not None and one > 10e-6  # PCIe peer copies, not NVLink's few us
    assert all_reduces_s == pytest.approx(80 * 2 * one)
    assert weights_s + all_reduces_s < p.tpot_s < 2 * (weights_s + all_reduces_s) + 0.01


def test_a_tp_all_reduce_takes_the_engine_s_measured_kernel_time() -> None:
    # 8 x H100, 256 decode tokens of Llama-3-8B (4096 wide, bf16): 2 MiB, 1 Mi elements;
    # TensorRT-LLM's all-reduce measured 35.5 us there (AIConfigurator 0.12.0), ~3x what a
    # latency + bandwidth model of NVLink gives
    plan = Plan(tp=8)
    g = groups(plan, H100)["tp"]
    n_bytes = 256 * 4096 * 2.0
    trt = ServeModel(LLAMA8, H100, "bf16", model_for(H100), Network(H100), engine="trtllm")
    assert trt._tp_all_reduce_s(n_bytes, g) == pytest.approx(35.5e-6, rel=0.02)
    vllm = ServeModel(LLAMA8, H100, "bf16", model_for(H100), Network(H100), engine="vllm")
    assert vllm._tp_all_reduce_s(n_bytes, g) != trt._tp_all_reduce_s(n_bytes, g)
    # an engine with no measurement on this chip keeps the collective model
    js = ServeModel(LLAMA8, H100, "bf16", model_for(H100), Network(H100), engine="jetstream")
    assert js._tp_all_reduce_s(n_bytes, g) < 0.5 * trt._tp_all_reduce_s(n_bytes, g)


def test_serving_nccl_collectives_take_their_measured_time_inside_one_domain() -> None:
    s = ServeModel(LLAMA8, H100, "bf16", model_for(H100), Network(H100))
    inside = groups(Plan(tp=8), H100)["tp"]
    n_bytes = 4 * 2**20
    measured = measured_nccl_s("h100-sxm", "all_gather", 8, n_bytes / 2)
    assert measured is not None
    assert s._collective_s("all_gather", n_bytes, inside) == pytest.approx(measured)
    # a group that leaves the NVLink domain keeps the fabric model
    across = groups(Plan(tp=8, dp=4), H100)["dp"]
    assert across.crosses_domains
    assert s._collective_s("all_gather", n_bytes, across) == pytest.approx(
        Network(H100).time_s("all_gather", n_bytes, across)
    )


def test_a_graphed_collective_drops_the_host_launched_floor_of_the_nccl_table() -> None:
    """Inside a CUDA graph a small NCCL collective pays its ring steps, not nccl-tests'
    host launch (the intercept of the table's floors over group sizes); a large one keeps
    its measured bandwidth cost."""
    b200 = chip("b200")
    s = ServeModel(LLAMA8, b200, "bf16", model_for(b200), Network(b200))
    group = groups(Plan(tp=4), b200)["tp"]
    launch = measured_nccl_launch_s("b200", "all_gather", 4)
    assert launch is not None
    small = 64 * 1024.0
    eager = s._collective_s("all_gather", small, group)
    graphed = s._collective_s("all_gather", small, group, graphed=True)
    assert graphed == pytest.approx(eager - launch)
    assert graphed < 0.5 * eager
    large = 64 * 2.0**20
    big_eager = s._collective_s("all_gather", large, group)
    big_graphed = s._collective_s("all_gather", large, group, graphed=True)
    assert big_graphed == pytest.approx(big_eager - launch)
    assert big_graphed > 0.9 * big_eager


def test_an_nvl72_instance_of_eight_pays_the_hgx_measured_collectives() -> None:
    # GB200's own NCCL table stops at one 4-GPU tray; 8 ranks in the rack's NVLink domain
    # take B200's measured curve (same die and NVLink 5), not the faster alpha-beta model
    gb200 = chip("gb200")
    s = ServeModel(LLAMA8, gb200, "bf16", model_for(gb200), Network(gb200))
    inside = groups(Plan(tp=8), gb200)["tp"]
    assert not inside.crosses_domains
    n_bytes = 32 * 2**20
    b200 = measured_nccl_s("b200", "reduce_scatter", 8, n_bytes / 2)
    assert b200 is not None
    assert s._collective_s("reduce_scatter", n_bytes, inside) == pytest.approx(b200)
    assert Network(gb200).time_s("reduce_scatter", n_bytes, inside) < 0.8 * b200
