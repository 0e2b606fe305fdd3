"""Microbenchmarks: which cases to run on a device, and turning timings into measurements.

Shape legend: M, N, K = GEMM dims ((M x K) @ (K x N)); n = elements of a 1-D buffer;
B = batch, H = heads, S = sequence length, Dh = head dim; d = local devices.

Counting conventions (what ``flops`` and ``n_bytes`` of a ``Measurement`` mean):

=========== ====================== ========================================================
benchmark   flops                  n_bytes (logical bytes the op must move)
=========== ====================== ========================================================
gemm        2 M N K                (M K + K N + M N) x dtype bytes
copy        0                      2 n x dtype bytes: read + write, the STREAM convention
elementwise 2 n  (d = a * b + c)   4 n x dtype bytes: three reads, one write
reduction   n    (sum)             n x dtype bytes (the scalar written is ignored)
attention   4 B H S^2 Dh           4 B H S Dh x dtype bytes (q, k, v read, o written);
                                   non-causal, forward only: QK^T and PV, 2 S^2 Dh each
allreduce   0                      n x dtype bytes, the buffer on each device; the achieved
                                   rate is the NCCL *bus* bandwidth, 2 (d-1)/d x bytes / s
=========== ====================== ========================================================

A numpy CPU run computes ``a * b + c`` in two passes but is still counted as above, so the
achieved rate is comparable across libraries (it is the *useful* bandwidth).

Memory benchmarks use fp32 buffers whatever ``--dtypes`` says: bandwidth does not depend on
the element type. Timing: warm-up runs first (they also compile, under JAX), then ``repeats``
timed runs; the median is stored, and the minimum too. On CUDA/ROCm each run is timed with
CUDA events after writing a buffer larger than the L2 cache, so no run starts with its data
cached; elsewhere with ``time.perf_counter`` around the call and a device synchronisation.
"""

from __future__ import annotations

import datetime as dt
import statistics
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chipwise.bench.backends import backend_for
from chipwise.bench.cases import Case
from chipwise.bench.devices import DeviceInfo
from chipwise.bench.store import BENCHMARKS, Measurement
from chipwise.errors import MeasurementError
from chipwise.units import dtype_bytes

BENCH_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16")
MEMORY_DTYPE = "fp32"  # buffers of the copy / elementwise / reduction / all-reduce cases

# Sweeps. GPUs and TPUs get square GEMMs from 256 (launch-bound) to 8192 (compute-bound on
# every catalog chip) and buffers from 16 KiB (launch-bound: fixes the overhead in the
# calibration fit) to 1 GiB (far beyond any L2 or TPU CMEM); a CPU gets sizes that finish
# in seconds. --quick is tiny, for smoke tests.
GEMM_SIZES = {
    ("accelerator", False): (256, 512, 1024, 2048, 4096, 8192),
    ("accelerator", True): (256, 1024),
    ("cpu", False): (64, 128, 256, 512, 1024),
    ("cpu", True): (32, 64),
}
MEMORY_ELEMENTS = {  # fp32 elements per buffer
    ("accelerator", False): (2**12, 2**15, 2**18, 2**20, 2**22, 2**24, 2**26, 2**28),
    ("accelerator", True): (2**18, 2**22),
    ("cpu", False): (2**10, 2**12, 2**14, 2**16, 2**18, 2**20, 2**22, 2**24),
    # 4 KiB (launch-bound) and 4 MiB (~1 ms): 1024x apart, so noisy 2-core CI runners
    # still see the time grow with size (2**14 was inside the noise; calibrate then failed).
    ("cpu", True): (2**10, 2**20),
}
ATTENTION_SHAPES = {  # (B, H, S, Dh)
    ("accelerator", False): ((8, 16, 1024, 128), (4, 16, 4096, 128)),
    ("accelerator", True): ((1, 8, 256, 64),),
    ("cpu", False): ((1, 8, 512, 64),),
    ("cpu", True): ((1, 2, 64, 32),),
}
# (warm-up runs, timed runs). 30 timed runs put the median within a few percent on GPUs.
REPEATS = {
    ("accelerator", False): (5, 30),
    ("accelerator", True): (2, 5),
    ("cpu", False): (2, 10),
    ("cpu", True): (1, 3),
}
DEFAULT_DTYPES = {"accelerator": ("bf16", "fp32"), "cpu": ("fp32",)}


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """What to run: sizes (full or ``quick``), dtypes (``None``: the device's default), which
    benchmarks, and optional overrides of the warm-up and timed run counts."""

    quick: bool = False
    dtypes: tuple[str, ...] | None = None
    benchmarks: tuple[str, ...] = BENCHMARKS
    warmup: int | None = None
    repeats: int | None = None

    def __post_init__(self) -> None:
        unknown = [b for b in self.benchmarks if b not in BENCHMARKS]
        if unknown:
            raise MeasurementError(
                f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHMARKS)}"
            )
        bad = [d for d in self.dtypes or () if d not in BENCH_DTYPES]
        if bad:
            raise MeasurementError(
                f"unknown dtype {bad[0]!r} for benchmarks; choose from {', '.join(BENCH_DTYPES)}"
            )
        if (self.warmup is not None and self.warmup < 0) or (
            self.repeats is not None and self.repeats < 1
        ):
            raise MeasurementError("warm-up runs must be >= 0 and timed runs >= 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """Seconds of one case: median and fastest of ``repeats`` timed runs."""

    median_s: float
    min_s: float
    repeats: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchResult:
    """A benchmark run: its device, the measurements, and what was skipped and why."""

    run_id: str
    device: DeviceInfo
    measurements: tuple[Measurement, ...]
    notes: tuple[str, ...] = ()


def _scale(device: DeviceInfo) -> str:
    return "cpu" if device.kind == "cpu" else "accelerator"


def gemm_case(m: int, n: int, k: int, dtype: str) -> Case:
    return Case(
        benchmark="gemm",
        dtype=dtype,
        dims=(m, n, k),
        flops=2.0 * m * n * k,
        n_bytes=(m * k + k * n + m * n) * dtype_bytes(dtype),
    )


def memory_case(benchmark: str, n: int, dtype: str = MEMORY_DTYPE) -> Case:
    """A copy, elementwise or reduction case over buffers of ``n`` elements."""
    eb = dtype_bytes(dtype)
    work = {"copy": (0.0, 2 * n * eb), "elementwise": (2.0 * n, 4 * n * eb),
            "reduction": (float(n), n * eb)}  # fmt: skip
    flops, n_bytes = work[benchmark]
    return Case(benchmark=benchmark, dtype=dtype, dims=(n,), flops=flops, n_bytes=n_bytes)


def attention_case(b: int, h: int, s: int, dh: int, dtype: str) -> Case:
    return Case(
        benchmark="attention",
        dtype=dtype,
        dims=(b, h, s, dh),
        flops=4.0 * b * h * s * s * dh,
        n_bytes=4.0 * b * h * s * dh * dtype_bytes(dtype),
    )


def allreduce_case(devices: int, n: int, dtype: str = MEMORY_DTYPE) -> Case:
    return Case(
        benchmark="allreduce",
        dtype=dtype,
        dims=(devices, n),
        flops=0.0,
        n_bytes=n * dtype_bytes(dtype),
    )


def bus_bytes(case: Case) -> float:
    """NCCL bus-bandwidth convention for all-reduce: 2 (d-1)/d x buffer bytes."""
    d = case.dims[0]
    return 2.0 * (d - 1) / d * case.n_bytes


def plan_cases(device: DeviceInfo, config: BenchConfig) -> tuple[tuple[Case, ...], tuple[str, ...]]:
    """The cases to run on ``device`` under ``config``, and notes on what is left out."""
    scale = _scale(device)
    key = (scale, config.quick)
    dtypes = config.dtypes or DEFAULT_DTYPES[scale]
    cases: list[Case] = []
    notes: list[str] = []
    for benchmark in config.benchmarks:
        if benchmark == "gemm":
            cases += [gemm_case(s, s, s, dt_) for dt_ in dtypes for s in GEMM_SIZES[key]]
        elif benchmark in ("copy", "elementwise", "reduction"):
            cases += [memory_case(benchmark, n) for n in MEMORY_ELEMENTS[key]]
        elif benchmark == "attention":
            cases += [attention_case(*shape, dt_) for dt_ in dtypes for shape in
                      ATTENTION_SHAPES[key]]  # fmt: skip
        elif benchmark == "allreduce":
            if device.count > 1:
                cases += [allreduce_case(device.count, n) for n in MEMORY_ELEMENTS[key]]
            else:
                notes.append(f"allreduce skipped: one {device.kind} device visible (needs 2+)")
    return tuple(cases), tuple(notes)


def summarise(times_s: Sequence[float]) -> Timing:
    """Median and minimum of timed runs."""
    if not times_s or min(times_s) <= 0:
        raise MeasurementError(f"timed runs must be positive, got {list(times_s)}")
    return Timing(median_s=statistics.median(times_s), min_s=min(times_s), repeats=len(times_s))


def to_measurement(
    case: Case, timing: Timing, device: DeviceInfo, *, run_id: str, timestamp: str
) -> Measurement:
    """A store row for ``case`` timed as ``timing`` on ``device``."""
    moved = bus_bytes(case) if case.benchmark == "allreduce" else case.n_bytes
    return Measurement(
        run_id=run_id,
        timestamp=timestamp,
        device_name=device.name,
        device_kind=device.kind,
        vendor=device.vendor,
        driver_version=device.driver_version,
        library=device.library,
        library_version=device.library_version,
        host=device.host,
        benchmark=case.benchmark,
        shape=case.shape,
        dtype=case.dtype,
        n_bytes=case.n_bytes,
        flops=case.flops,
        time_s=timing.median_s,
        time_s_min=timing.min_s,
        repeats=timing.repeats,
        achieved_flops_per_s=case.flops / timing.median_s,
        achieved_bytes_per_s=moved / timing.median_s,
        chip_id=device.chip_id,
    )


def new_run_id(now: dt.datetime) -> str:
    """``20250101T120000-1a2b3c4d``: sortable by time, unique by the random suffix."""
    return f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


OnCase = Callable[[Case, int, int], None]  # (case about to run, its index, number of cases)


def run_benchmarks(
    device: DeviceInfo, config: BenchConfig | None = None, *, on_case: OnCase | None = None
) -> BenchResult:
    """Run every planned case on ``device`` and return the measurements (not stored).

    A case the device cannot run (out of memory, a dtype the library lacks there) is skipped
    with a note rather than ending the run.
    """
    config = config or BenchConfig()
    cases, notes = plan_cases(device, config)
    warmup, repeats = REPEATS[(_scale(device), config.quick)]
    warmup = config.warmup if config.warmup is not None else warmup
    repeats = config.repeats if config.repeats is not None else repeats
    backend = backend_for(device)
    run_id = new_run_id(utc_now())
    measurements: list[Measurement] = []
    skipped = list(notes)
    for i, case in enumerate(cases):
        if on_case is not None:
            on_case(case, i, len(cases))
        reason = backend.unsupported(case)
        if reason:
            skipped.append(f"{case.label} skipped: {reason}")
            continue
        try:
            times = backend.time_case(case, warmup=warmup, repeats=repeats)
        except (RuntimeError, MemoryError) as err:  # OOM, a kernel missing for this dtype
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            skipped.append(f"{case.label} failed: {first[:160]}")
            continue
        stamp = utc_now().isoformat(timespec="seconds")
        measurements.append(
            to_measurement(case, summarise(times), device, run_id=run_id, timestamp=stamp)
        )
    return BenchResult(
        run_id=run_id, device=device, measurements=tuple(measurements), notes=tuple(skipped)
    )
