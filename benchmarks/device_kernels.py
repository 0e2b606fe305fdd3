"""Device check, small kernels: what one short kernel of a decode step costs on this GPU.

Run on a CUDA machine from the repository root (torch only; no install needed), ~1 minute::

    python benchmarks/device_kernels.py [--out DIR]

A decode step of a served model runs tens of kernels per layer on a few rows each (norms,
residual adds, activation and fp8 quantisation, router softmax and top-k, small
projections). The engine step model prices each as its roofline time plus
``launch_overhead_s`` (3 us on GPUs: UVA's ~334k asynchronous launches/s). This times those
ops at 1..256 tokens as replayed from a CUDA graph (as engines run decode steps), counts the
kernels each launches (``torch.profiler``), and prints time per op and per kernel, so the
floor a short kernel pays inside a graph is measured rather than assumed. Writes
``kernels.json`` under ``--out``. Nothing is fitted to it here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOKENS = [1, 8, 64, 256]
D_MODEL = 7168  # DeepSeek-V3 hidden size
D_FFN = 2048  # one DeepSeek-V3 routed expert's intermediate size
N_EXPERTS, TOP_K = 256, 8
REPEATS = 50  # copies of an op captured in one graph: the per-op time is their mean


def graph_us(torch: Any, fn: Callable[[], Any]) -> float:
    """Median microseconds of one ``fn`` call, replayed from a CUDA graph of REPEATS calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(REPEATS):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / REPEATS)
    del graph
    return statistics.median(times)


def kernels(torch: Any, fn: Callable[[], Any]) -> int:
    """CUDA kernels one eager ``fn`` call launches (torch.profiler's device events)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [
        e.name
        for e in prof.events()
        if getattr(e, "device_type", None) is not None and "cuda" in str(e.device_type).lower()
    ]
    return max(1, len([n for n in names if not n.startswith(("Memcpy", "Memset"))]))


def ops(torch: Any, t: int) -> dict[str, tuple[Callable[[], Any], float]]:
    """The ops of a decode layer at ``t`` tokens, each with the bytes it must move."""
    dev, bf16 = "cuda", torch.bfloat16
    x = torch.randn(t, D_MODEL, device=dev, dtype=bf16)
    r = torch.randn(t, D_MODEL, device=dev, dtype=bf16)
    w_norm = torch.ones(D_MODEL, device=dev, dtype=bf16)
    gate_up = torch.randn(t, 2 * D_FFN, device=dev, dtype=bf16)
    logits = torch.randn(t, N_EXPERTS, device=dev, dtype=torch.float32)
    w_kv = torch.randn(576, D_MODEL, device=dev, dtype=bf16)  # MLA kv_a projection
    one = torch.ones(1, device=dev)
    tiny = torch.zeros(1, device=dev)
    row = t * D_MODEL * 2

    def fp8_quant() -> Any:  # per-token dynamic fp8 quantisation, as torch runs it
        scale = x.abs().amax(dim=1, keepdim=True).float() / 448.0
        return (x / scale).to(torch.float8_e4m3fn)

    def silu_mul() -> Any:
        a, b = gate_up.chunk(2, dim=1)
        return torch.nn.functional.silu(a) * b

    def route() -> Any:
        return torch.topk(torch.softmax(logits, dim=1), TOP_K, dim=1)

    return {
        "empty (1-element add)": (lambda: tiny.add_(one), 8.0),
        "residual add": (lambda: torch.add(x, r), 3 * row),
        "rms_norm": (lambda: torch.nn.functional.rms_norm(x, (D_MODEL,), w_norm), 2 * row),
        "silu * mul": (silu_mul, 1.5 * t * 2 * D_FFN * 2),
        "router softmax + top-k": (route, t * N_EXPERTS * 8),
        "fp8 per-token quant": (fp8_quant, 1.5 * row),
        "kv_a proj (bf16 GEMM)": (lambda: torch.mm(x, w_kv.t()), 576 * D_MODEL * 2 + row),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="where kernels.json goes")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time", file=sys.stderr)
        return 1
    name = torch.cuda.get_device_name()
    print(f"{name} (torch {torch.__version__})")
    rows = []
    for t in TOKENS:
        for op, (fn, nbytes) in ops(torch, t).items():
            us = graph_us(torch, fn)
            n = kernels(torch, fn)
            rows.append({"op": op, "tokens": t, "us": us, "kernels": n, "bytes": nbytes,
                         "us_per_kernel": us / n})  # fmt: skip
            print(f"T={t:4d} {op:24s} {us:7.2f} us  {n} kernel(s)  {us / n:6.2f} us/kernel  "
                  f"{nbytes / 1e6:8.3f} MB")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "kernels.json").write_text(json.dumps({"device": name, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
