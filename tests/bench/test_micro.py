from dataclasses import replace

import pytest

from chipwise.bench.devices import DeviceInfo, detect_device
from chipwise.bench.micro import (
    GEMM_SIZES,
    BenchConfig,
    allreduce_case,
    attention_case,
    bus_bytes,
    gemm_case,
    memory_case,
    plan_cases,
    run_benchmarks,
    summarise,
    to_measurement,
)
from chipwise.errors import MeasurementError

CPU = DeviceInfo(
    name="Test CPU", kind="cpu", vendor="intel", library="torch", library_version="0",
    driver_version="", host="h", count=1, memory_bytes=None, chip_id=None,
)  # fmt: skip
EIGHT_GPUS = replace(CPU, name="NVIDIA H100 80GB HBM3", kind="gpu", count=8, chip_id="h100-sxm")


@pytest.mark.parametrize(
    ("case", "flops", "n_bytes"),
    [
        (gemm_case(4, 5, 6, "bf16"), 2 * 4 * 5 * 6, (4 * 6 + 6 * 5 + 4 * 5) * 2),
        (memory_case("copy", 10), 0, 2 * 10 * 4),  # STREAM: read + write
        (memory_case("elementwise", 10), 2 * 10, 4 * 10 * 4),  # a*b+c: 3 reads, 1 write
        (memory_case("reduction", 10), 10, 10 * 4),
        (attention_case(1, 2, 3, 4, "bf16"), 4 * 1 * 2 * 3 * 3 * 4, 4 * 1 * 2 * 3 * 4 * 2),
        (allreduce_case(4, 1000), 0, 4000),
    ],
)
def test_cases_count_work_by_the_documented_conventions(case, flops, n_bytes) -> None:  # type: ignore[no-untyped-def]
    assert case.flops == flops
    assert case.n_bytes == n_bytes


def test_allreduce_bus_bytes_follow_nccl() -> None:
    assert bus_bytes(allreduce_case(4, 1000)) == pytest.approx(2 * 3 / 4 * 4000)
    assert bus_bytes(allreduce_case(2, 1000)) == pytest.approx(4000)


def test_a_measurement_divides_work_by_the_median() -> None:
    timing = summarise([3e-3, 1e-3, 2e-3, 10e-3])
    assert (timing.median_s, timing.min_s, timing.repeats) == (2.5e-3, 1e-3, 4)
    m = to_measurement(gemm_case(100, 100, 100, "fp32"), timing, CPU, run_id="r", timestamp="t")
    assert m.achieved_flops_per_s == pytest.approx(2e6 / 2.5e-3)
    assert m.achieved_bytes_per_s == pytest.approx(3 * 100 * 100 * 4 / 2.5e-3)
    ar = to_measurement(allreduce_case(4, 1000), timing, EIGHT_GPUS, run_id="r", timestamp="t")
    assert ar.achieved_bytes_per_s == pytest.approx(6000 / 2.5e-3)  # bus bandwidth
    assert ar.chip_id == "h100-sxm"


def test_a_timing_of_nothing_is_an_error() -> None:
    with pytest.raises(MeasurementError):
        summarise([])


def test_one_device_skips_allreduce_with_a_note() -> None:
    cases, notes = plan_cases(CPU, BenchConfig(quick=True))
    assert not any(c.benchmark == "allreduce" for c in cases)
    assert any("allreduce skipped" in n for n in notes)


def test_a_gpu_plan_sweeps_square_gemms_per_dtype_and_allreduces_over_all_devices() -> None:
    cases, notes = plan_cases(EIGHT_GPUS, BenchConfig())
    gemms = [c for c in cases if c.benchmark == "gemm"]
    assert {c.dtype for c in gemms} == {"bf16", "fp32"}
    assert sorted({c.dims[0] for c in gemms}) == list(GEMM_SIZES[("accelerator", False)])
    assert max(c.dims[0] for c in gemms) == 8192
    assert {c.dims[0] for c in cases if c.benchmark == "allreduce"} == {8}
    assert notes == ()


def test_only_and_dtypes_narrow_the_plan() -> None:
    cases, _ = plan_cases(EIGHT_GPUS, BenchConfig(quick=True, dtypes=("fp16",),
                                                  benchmarks=("gemm", "copy")))  # fmt: skip
    assert {c.benchmark for c in cases} == {"gemm", "copy"}
    assert {c.dtype for c in cases if c.benchmark == "gemm"} == {"fp16"}


@pytest.mark.parametrize(
    "kwargs", [{"dtypes": ("fp128",)}, {"benchmarks": ("matmul",)}, {"repeats": 0}]
)
def test_a_bad_config_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(MeasurementError):
        BenchConfig(**kwargs)  # type: ignore[arg-type]


def _check_run(device: DeviceInfo, config: BenchConfig) -> None:
    planned, _ = plan_cases(device, config)
    seen: list[tuple[str, int]] = []
    result = run_benchmarks(device, config, on_case=lambda c, i, n: seen.append((c.label, n)))
    assert [label for label, _ in seen] == [c.label for c in planned]
    assert result.measurements
    done = {(m.benchmark, m.shape, m.dtype) for m in result.measurements}
    skipped = [n for n in result.notes if "skipped" in n or "failed" in n]
    assert len(done) + len(skipped) >= len(planned)
    for m in result.measurements:
        assert m.run_id == result.run_id
        assert 0 < m.time_s_min <= m.time_s
        assert m.achieved_bytes_per_s > 0
        assert m.device_name == device.name


def test_torch_cpu_runs_every_quick_case() -> None:
    pytest.importorskip("torch")
    device = detect_device("cpu")
    assert device.library == "torch"
    _check_run(device, BenchConfig(quick=True, dtypes=("fp32", "bf16"), repeats=2))


def test_numpy_cpu_runs_what_numpy_can_and_notes_the_rest() -> None:
    device = replace(detect_device("cpu"), library="numpy")
    result = run_benchmarks(device, BenchConfig(quick=True, dtypes=("fp32", "bf16"), repeats=2))
    assert {m.benchmark for m in result.measurements} == {"gemm", "copy", "elementwise",
                                                          "reduction"}  # fmt: skip
    assert any("bf16 skipped: numpy has no bf16" in n for n in result.notes)
    assert any("attention" in n and "install PyTorch" in n for n in result.notes)


def test_jax_runs_the_quick_cases_on_its_default_device() -> None:
    pytest.importorskip("jax")
    device = replace(detect_device("cpu"), library="jax")
    _check_run(device, BenchConfig(quick=True, benchmarks=("gemm", "copy"), repeats=2))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA or ROCm GPU")
def test_cuda_quick_run_uses_events_and_names_the_gpu() -> None:
    device = detect_device("cuda")
    assert device.kind == "gpu" and device.library == "torch"
    assert device.driver_version.startswith(("cuda", "hip"))
    _check_run(device, BenchConfig(quick=True, dtypes=("bf16", "fp32", "tf32")))
