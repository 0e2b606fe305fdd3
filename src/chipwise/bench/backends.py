"""Run one benchmark case on PyTorch, JAX or numpy and return its timed runs (seconds).

Each backend builds the case's buffers once, runs ``warmup`` untimed calls, then times
``repeats`` calls (see ``micro.py`` for what is counted). The frameworks are imported here,
lazily, when a backend is made.

- PyTorch on CUDA or ROCm: CUDA events around each call, after zeroing a buffer larger than
  any catalog GPU's last-level cache so every call starts cold; ``torch.cuda.synchronize``
  before reading the events. fp32 GEMMs run with ``float32_matmul_precision("highest")`` (true
  FP32), ``tf32`` with ``"high"``. All-reduce across local GPUs uses ``torch.cuda.nccl``
  (single-process NCCL; no process group to spawn), timed on the host with every device
  synchronised.
- JAX (TPU, GPU): jitted functions, ``jax.block_until_ready`` around each call, host timing
  (dispatch included, a few microseconds). fp32 matmuls at ``precision="highest"`` (on TPUs the
  default would be one bf16 pass). All-reduce is ``psum`` under ``shard_map`` over a 1-D mesh
  of the local devices.
- CPU: PyTorch, else numpy; ``time.perf_counter`` around synchronous calls.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from chipwise.bench.cases import Case
from chipwise.bench.devices import DeviceInfo
from chipwise.errors import MeasurementError
from chipwise.units import MiB

# Larger than the last-level cache of every catalog GPU (H100 50 MB L2, B200 126 MB L2,
# MI300X 256 MB Infinity Cache; AMD CDNA3 white paper), so zeroing it evicts a case's data.
CACHE_FLUSH_BYTES = 512 * MiB

Fn = Callable[[], Any]


class Backend(ABC):
    """Times cases on one device through one library."""

    @abstractmethod
    def unsupported(self, case: Case) -> str | None:
        """Why ``case`` cannot run here, or ``None`` if it can."""

    @abstractmethod
    def time_case(self, case: Case, *, warmup: int, repeats: int) -> list[float]:
        """Seconds of each of ``repeats`` timed calls of ``case``."""


def _host_times(fn: Fn, sync: Callable[[Any], None], warmup: int, repeats: int) -> list[float]:
    for _ in range(warmup):
        sync(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sync(fn())
        times.append(time.perf_counter() - start)
    return times


def _no_sync(_: Any) -> None:
    return None


class TorchBackend(Backend):
    """PyTorch on one CUDA/ROCm GPU (plus its peers, for all-reduce) or on the CPU."""

    def __init__(self, device: DeviceInfo) -> None:
        import torch

        self._torch: Any = torch
        self._cuda = device.kind == "gpu"
        self._count = device.count
        self._dev = torch.device("cuda", 0) if self._cuda else torch.device("cpu")
        self._flush: Any = None
        self._dtypes = {
            "fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32,
            "bf16": torch.bfloat16, "fp16": torch.float16,
        }  # fmt: skip

    def unsupported(self, case: Case) -> str | None:
        if case.dtype == "tf32" and not self._cuda:
            return "tf32 is a GPU tensor-core mode"
        if case.benchmark == "allreduce" and not (self._cuda and self._count > 1):
            return "all-reduce needs two or more GPUs"
        return None

    def _randn(self, *shape: int, dtype: str, device: Any = None) -> Any:
        torch = self._torch
        return torch.randn(*shape, dtype=self._dtypes[dtype], device=device or self._dev)

    def _make(self, case: Case) -> Fn:
        torch = self._torch
        dims, dtype = case.dims, case.dtype
        if case.benchmark == "gemm":
            m, n, k = dims
            a, b = self._randn(m, k, dtype=dtype), self._randn(k, n, dtype=dtype)
            c = torch.empty(m, n, dtype=self._dtypes[dtype], device=self._dev)
            return lambda: torch.matmul(a, b, out=c)
        if case.benchmark == "copy":
            src, dst = self._randn(dims[0], dtype=dtype), self._randn(dims[0], dtype=dtype)
            return lambda: dst.copy_(src)
        if case.benchmark == "elementwise":
            a, b, c, d = (self._randn(dims[0], dtype=dtype) for _ in range(4))
            return lambda: torch.addcmul(c, a, b, out=d)  # d = c + a * b, one kernel
        if case.benchmark == "reduction":
            a = self._randn(dims[0], dtype=dtype)
            return lambda: torch.sum(a)
        if case.benchmark == "attention":
            bsz, heads, seq, dh = dims
            q, k, v = (self._randn(bsz, heads, seq, dh, dtype=dtype) for _ in range(3))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            return lambda: sdpa(q, k, v)
        if case.benchmark == "allreduce":
            devices, n = dims
            bufs = [
                self._randn(n, dtype=dtype, device=torch.device("cuda", i)) for i in range(devices)
            ]
            if not torch.cuda.nccl.is_available(bufs):
                raise RuntimeError("NCCL is not available in this PyTorch build")
            return lambda: torch.cuda.nccl.all_reduce(bufs)
        raise MeasurementError(f"torch backend has no benchmark {case.benchmark!r}")

    def _precision(self, dtype: str) -> AbstractContextManager[None]:
        torch = self._torch
        wanted = {"fp32": "highest", "tf32": "high"}.get(dtype)
        if wanted is None:
            return nullcontext()

        class _Precision:
            def __enter__(self) -> None:
                self.old = torch.get_float32_matmul_precision()
                torch.set_float32_matmul_precision(wanted)

            def __exit__(self, *exc: object) -> None:
                torch.set_float32_matmul_precision(self.old)

        return _Precision()

    def _sync_all(self, _: Any) -> None:
        for i in range(self._count):
            self._torch.cuda.synchronize(i)

    def _event_times(self, fn: Fn, warmup: int, repeats: int) -> list[float]:
        torch = self._torch
        if self._flush is None:
            self._flush = torch.empty(int(CACHE_FLUSH_BYTES), dtype=torch.uint8, device=self._dev)
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        pairs = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(repeats)
        ]
        for start, end in pairs:
            self._flush.zero_()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in pairs]  # ms -> s

    def time_case(self, case: Case, *, warmup: int, repeats: int) -> list[float]:
        fn = self._make(case)
        with self._precision(case.dtype):
            if case.benchmark == "allreduce":
                return _host_times(fn, self._sync_all, warmup, repeats)
            if self._cuda:
                return self._event_times(fn, warmup, repeats)
            return _host_times(fn, _no_sync, warmup, repeats)


class JaxBackend(Backend):
    """JAX on the first local TPU or GPU (all local devices, for all-reduce)."""

    def __init__(self, device: DeviceInfo) -> None:
        import jax
        import jax.numpy as jnp

        self._jax: Any = jax
        self._jnp: Any = jnp
        self._devices = jax.devices()
        self._platform = self._devices[0].platform
        self._dtypes = {
            "fp64": jnp.float64, "fp32": jnp.float32, "tf32": jnp.float32,
            "bf16": jnp.bfloat16, "fp16": jnp.float16,
        }  # fmt: skip

    def unsupported(self, case: Case) -> str | None:
        if case.dtype == "tf32" and self._platform != "gpu":
            return "tf32 exists only on GPUs"
        if case.dtype == "fp64" and not self._jax.config.read("jax_enable_x64"):
            return "JAX runs fp64 only with JAX_ENABLE_X64=1"
        if case.benchmark == "allreduce" and len(self._devices) < 2:
            return "all-reduce needs two or more devices"
        return None

    def _randn(self, *shape: int, dtype: str) -> Any:
        jax = self._jax
        x = jax.random.normal(jax.random.key(0), shape, dtype=self._dtypes[dtype])
        return jax.device_put(x, self._devices[0])

    def _make(self, case: Case) -> Fn:
        jax, jnp = self._jax, self._jnp
        dims, dtype = case.dims, case.dtype
        if case.benchmark == "gemm":
            m, n, k = dims
            a, b = self._randn(m, k, dtype=dtype), self._randn(k, n, dtype=dtype)
            precision = {"fp32": "highest", "tf32": "tensorfloat32"}.get(dtype)
            mm = jax.jit(lambda x, y: jnp.matmul(x, y, precision=precision))
            return lambda: mm(a, b)
        if case.benchmark == "copy":
            src = self._randn(dims[0], dtype=dtype)
            cp = jax.jit(jnp.copy)  # compiles to one HLO copy into a fresh buffer
            return lambda: cp(src)
        if case.benchmark == "elementwise":
            a, b, c = (self._randn(dims[0], dtype=dtype) for _ in range(3))
            fma = jax.jit(lambda x, y, z: x * y + z)  # XLA fuses into one kernel
            return lambda: fma(a, b, c)
        if case.benchmark == "reduction":
            a = self._randn(dims[0], dtype=dtype)
            total = jax.jit(jnp.sum)
            return lambda: total(a)
        if case.benchmark == "attention":
            bsz, heads, seq, dh = dims
            # jax.nn.dot_product_attention takes (B, S, H, Dh)
            q, k, v = (self._randn(bsz, seq, heads, dh, dtype=dtype) for _ in range(3))
            attn = jax.jit(jax.nn.dot_product_attention)
            return lambda: attn(q, k, v)
        if case.benchmark == "allreduce":
            return self._allreduce(case)
        raise MeasurementError(f"jax backend has no benchmark {case.benchmark!r}")

    def _allreduce(self, case: Case) -> Fn:
        jax, jnp = self._jax, self._jnp
        NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec

        devices, n = case.dims
        mesh = jax.make_mesh((devices,), ("i",), devices=self._devices[:devices])
        x = jax.device_put(
            jnp.ones((devices * n,), dtype=self._dtypes[case.dtype]), NamedSharding(mesh, P("i"))
        )
        psum = jax.jit(
            jax.shard_map(
                lambda shard: jax.lax.psum(shard, "i"), mesh=mesh, in_specs=P("i"),
                out_specs=P("i"),
            )
        )  # fmt: skip
        return lambda: psum(x)

    def time_case(self, case: Case, *, warmup: int, repeats: int) -> list[float]:
        fn = self._make(case)
        # At least one untimed call: the first one compiles.
        return _host_times(fn, self._jax.block_until_ready, max(warmup, 1), repeats)


class NumpyBackend(Backend):
    """numpy on the CPU, when PyTorch is not installed."""

    def __init__(self) -> None:
        import numpy

        self._np: Any = numpy
        self._dtypes = {"fp64": numpy.float64, "fp32": numpy.float32, "fp16": numpy.float16}

    def unsupported(self, case: Case) -> str | None:
        if case.dtype not in self._dtypes:
            return f"numpy has no {case.dtype}"
        if case.benchmark in ("attention", "allreduce"):
            return f"numpy has no {case.benchmark} kernel; install PyTorch"
        return None

    def _randn(self, *shape: int, dtype: str) -> Any:
        rng = self._np.random.default_rng(0)
        return rng.standard_normal(shape, dtype=self._np.float32).astype(self._dtypes[dtype])

    def _make(self, case: Case) -> Fn:
        np = self._np
        dims, dtype = case.dims, case.dtype
        if case.benchmark == "gemm":
            m, n, k = dims
            a, b = self._randn(m, k, dtype=dtype), self._randn(k, n, dtype=dtype)
            c = np.empty((m, n), dtype=self._dtypes[dtype])
            return lambda: np.matmul(a, b, out=c)
        src, dst = self._randn(dims[0], dtype=dtype), self._randn(dims[0], dtype=dtype)
        if case.benchmark == "copy":
            return lambda: np.copyto(dst, src)
        if case.benchmark == "elementwise":
            a, b, c = src, self._randn(dims[0], dtype=dtype), self._randn(dims[0], dtype=dtype)

            def fma() -> Any:  # two passes in numpy; counted as the fused op (micro.py)
                np.multiply(a, b, out=dst)
                return np.add(dst, c, out=dst)

            return fma
        if case.benchmark == "reduction":
            return lambda: src.sum()
        raise MeasurementError(f"numpy backend has no benchmark {case.benchmark!r}")

    def time_case(self, case: Case, *, warmup: int, repeats: int) -> list[float]:
        return _host_times(self._make(case), _no_sync, warmup, repeats)


def backend_for(device: DeviceInfo) -> Backend:
    """The backend that drives ``device`` through ``device.library``."""
    if device.library == "torch":
        return TorchBackend(device)
    if device.library == "jax":
        return JaxBackend(device)
    return NumpyBackend()
