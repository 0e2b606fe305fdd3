"""Device check, serving and MoE shapes: time the GEMMs a serving step and an MoE layer run.

Run on a CUDA machine from the repository root (no install needed), about a minute::

    python benchmarks/device_shapes.py [--out DIR]

``device_check.py`` times square GEMMs; a serving step runs skinny ones (M = the batch's
tokens, N x K = a layer's weight) and an MoE layer runs one small GEMM per expert. This times,
with CUDA events (replaying a CUDA graph, and eagerly) and weights rotated through more
memory than the L2 holds:

1. bf16 GEMMs of Llama-3-8B and -70B layer shapes at M = 1 .. 8192;
2. the same in fp8 (``torch._scaled_mm``, per-tensor scales, bf16 out), M >= 16;
3. MoE experts in bf16 at 1 .. 4096 tokens per expert: ``torch._grouped_mm`` (one grouped
   kernel, as fused-MoE kernels run them) and a loop of one ``torch.mm`` per expert (as
   Transformer Engine's GroupedLinear issues them);

4. decode attention (``scaled_dot_product_attention``, one query per sequence);

and prints each next to the model's time for the same work on the catalog chip
(``perf.predict_primitive`` for a GEMM; ``model_for(chip).op_time`` for the experts, on the
training path and on a fused-MoE engine's), with the error ``predicted / measured - 1``.
Writes ``shapes.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

# (name, N, K): a layer's weight at tensor parallelism 1 (config.json of each model)
DENSE_SHAPES = [
    ("llama8b-qkv", 6144, 4096), ("llama8b-o", 4096, 4096),
    ("llama8b-gateup", 28672, 4096), ("llama8b-down", 4096, 14336),
    ("llama70b-qkv", 10240, 8192), ("llama70b-o", 8192, 8192),
    ("llama70b-gateup", 57344, 8192), ("llama70b-down", 8192, 28672),
]  # fmt: skip
M_VALUES = [1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
# (name, experts on this GPU, N, K): gate-up and down of one expert
EXPERT_SHAPES = [
    ("dsv3-gateup", 32, 4096, 7168), ("dsv3-down", 32, 7168, 2048),
    ("qwen3-30b-gateup", 128, 1536, 2048), ("qwen3-30b-down", 128, 2048, 768),
    ("mixtral-gateup", 8, 28672, 4096), ("mixtral-down", 8, 4096, 14336),
    ("gptoss-gateup", 32, 5760, 2880), ("gptoss-down", 32, 2880, 2880),
]  # fmt: skip
TOKENS_PER_EXPERT = [1, 4, 16, 64, 256, 1024, 4096]
ROTATE_BYTES = 512 * 2**20  # weights cycled through 512 MiB: far more than the 50-60 MB L2


def time_ms(torch: Any, fns: list[Any], repeats: int = 20) -> tuple[float, float]:
    """Median milliseconds of one call, cycling through ``fns`` (each on other buffers): as
    replayed from a CUDA graph (as serving engines run decode steps: no host dispatch between
    kernels), and launched eagerly from Python (host dispatch can starve a short kernel)."""
    for f in fns[:3]:
        f()
    torch.cuda.synchronize()

    def events(run: Any) -> float:
        times = []
        for _ in range(3):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / repeats)
        return statistics.median(times)

    def eager() -> None:
        for i in range(repeats):
            fns[i % len(fns)]()

    eager_ms = events(eager)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            eager()
    except RuntimeError as exc:  # a kernel that cannot be captured: the eager time stands
        print(f"CUDA graph capture failed ({str(exc).splitlines()[0]}); eager time used")
        return eager_ms, eager_ms
    graph.replay()
    graph_ms = events(graph.replay)
    del graph
    return graph_ms, eager_ms


def copies(weight_bytes: float) -> int:
    return max(2, min(64, int(ROTATE_BYTES // max(weight_bytes, 1))))


def dense_rows(torch: Any, chip: Any, fp8: bool) -> list[dict[str, Any]]:
    from chipwise.perf import predict_primitive
    from chipwise.workload.ir import Primitive

    rows = []
    dev = "cuda"
    for name, n, k in DENSE_SHAPES:
        nw = copies(n * k * (1 if fp8 else 2))
        if fp8:
            ws = [torch.randn(n, k, device=dev).to(torch.float8_e4m3fn) for _ in range(nw)]
        else:
            ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) for _ in range(nw)]
        one = torch.ones((), device=dev, dtype=torch.float32)
        for m in M_VALUES:
            if fp8 and m % 16:
                continue
            if fp8:
                a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
                mm = partial(torch._scaled_mm, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                fns = [partial(mm, a, w.t()) for w in ws]
            else:
                a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                fns = [partial(torch.mm, a, w.t()) for w in ws]
            ms, eager_ms = time_ms(torch, fns)
            dtype = "fp8" if fp8 else "bf16"
            p = predict_primitive(Primitive(kind="matmul", mnk=(m, n, k), dtype=dtype), chip)
            rows.append({"kind": f"gemm-{dtype}", "shape": name, "m": m, "n": n, "k": k,
                         "measured_ms": ms, "eager_ms": eager_ms,
                         "predicted_ms": p.time_s * 1e3, "bound": p.bound,
                         "tflops": 2 * m * n * k / ms / 1e9})  # fmt: skip
        del ws
        torch.cuda.empty_cache()
    return rows


def _per_expert(torch: Any, parts: Any, w: Any) -> None:
    for i, p in enumerate(parts):
        torch.mm(p, w[i].t())


def expert_rows(torch: Any, chip: Any) -> list[dict[str, Any]]:
    from chipwise.perf import model_for
    from chipwise.workload.ir import Op, OpKind

    training, fused = model_for(chip), model_for(chip).for_engine("vllm")
    rows = []
    dev = "cuda"
    grouped_ok = hasattr(torch, "_grouped_mm")
    for name, e, n, k in EXPERT_SHAPES:
        nw = copies(e * n * k * 2)
        ws = [torch.randn(e, n, k, device=dev, dtype=torch.bfloat16) for _ in range(nw)]
        for t in TOKENS_PER_EXPERT:
            a = torch.randn(e * t, k, device=dev, dtype=torch.bfloat16)
            offs = torch.arange(t, e * t + 1, t, device=dev, dtype=torch.int32)
            parts = a.split(t)
            flops = 2.0 * e * t * n * k
            b = 2.0 * e * (t * k + n * k)
            op = dict(name=name, kind=OpKind.MATMUL, dtype="bf16", flops=flops, bytes_read=b,
                      bytes_written=2.0 * e * t * n, mnk=(t, n, k), batch=e)  # fmt: skip
            pred_train = training.op_time(Op(**op, grouped=True)).seconds * 1e3
            pred_fused = fused.op_time(Op(**op)).seconds * 1e3
            base = {"shape": name, "experts": e, "tokens_per_expert": t, "n": n, "k": k,
                    "predicted_training_ms": pred_train,
                    "predicted_fused_ms": pred_fused}  # fmt: skip
            loop = [partial(_per_expert, torch, parts, w) for w in ws]
            ms, eager_ms = time_ms(torch, loop, repeats=10)
            rows.append({**base, "kind": "experts-mm-loop", "measured_ms": ms,
                         "eager_ms": eager_ms,
                         "tflops": flops / ms / 1e9})  # fmt: skip
            if grouped_ok:
                try:
                    fns = [partial(torch._grouped_mm, a, w.transpose(-2, -1), offs=offs)
                           for w in ws]  # fmt: skip
                    ms, eager_ms = time_ms(torch, fns)
                    rows.append({**base, "kind": "experts-grouped_mm", "measured_ms": ms,
                                 "eager_ms": eager_ms,
                                 "tflops": flops / ms / 1e9})  # fmt: skip
                except RuntimeError as exc:  # shape or arch the kernel does not take
                    print(f"grouped_mm {name} t={t}: {str(exc).splitlines()[0]}")
                    grouped_ok = False
        del ws
        torch.cuda.empty_cache()
    return rows


def decode_attention_rows(torch: Any, chip: Any) -> list[dict[str, Any]]:
    """One query token per sequence against its KV cache (Llama-3-70B heads: 64 query, 8 KV,
    128 wide): the achieved KV read bandwidth next to the packaged decode-attention share."""
    from chipwise.perf import efficiency_for

    sdpa = torch.nn.functional.scaled_dot_product_attention
    share = efficiency_for(chip).decode_attention_fraction()
    rows = []
    for batch in (1, 16, 64, 256):
        for ctx in (1024, 8192):
            kv_bytes = 2 * batch * 8 * ctx * 128 * 2
            nw = copies(kv_bytes)
            q = torch.randn(batch, 64, 1, 128, device="cuda", dtype=torch.bfloat16)
            kvs = [torch.randn(2, batch, 8, ctx, 128, device="cuda", dtype=torch.bfloat16)
                   for _ in range(nw)]  # fmt: skip
            fns = [partial(sdpa, q, kv[0], kv[1], enable_gqa=True) for kv in kvs]
            ms, eager_ms = time_ms(torch, fns)
            rows.append({"kind": "decode-attention", "batch": batch, "context": ctx,
                         "measured_ms": ms, "eager_ms": eager_ms,
                         "hbm_share": kv_bytes / (ms / 1e3) / chip.hbm_bytes_per_s,
                         "model_hbm_share": share})  # fmt: skip
            del kvs
    torch.cuda.empty_cache()
    return rows


def report(rows: list[dict[str, Any]], pred_key: str, label: str) -> None:
    errs = [r[pred_key] / r["measured_ms"] - 1 for r in rows]
    if not errs:
        return
    abs_e = sorted(abs(x) for x in errs)
    p90 = abs_e[min(len(abs_e) - 1, int(0.9 * len(abs_e)))]
    print(f"{label}: n={len(errs)} median |error| {statistics.median(abs_e):.1%}, p90 {p90:.1%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="Folder for shapes.json.")
    parser.add_argument("--chip", default="h200", help="Catalog chip to predict for.")
    opts = parser.parse_args()
    import torch

    from chipwise.hardware import default_catalog

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time")
        return 1
    chip = default_catalog().chip(opts.chip)
    print(f"{torch.cuda.get_device_name()} (torch {torch.__version__}) vs catalog {chip.id}")
    start = time.perf_counter()
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(), "chip": chip.id,
                           "torch": torch.__version__, "rows": []}  # fmt: skip
    for fp8 in (False, True):
        try:
            rows = dense_rows(torch, chip, fp8)
        except (RuntimeError, AttributeError) as exc:
            print(f"{'fp8' if fp8 else 'bf16'} GEMMs failed: {str(exc).splitlines()[0]}")
            continue
        doc["rows"] += rows
        for r in rows:
            print(f"{r['kind']:10s} {r['shape']:16s} M={r['m']:5d} {r['measured_ms']:8.4f} ms "
                  f"{r['tflops']:7.1f} TF/s (eager {r['eager_ms']:8.4f})  "
                  f"model {r['predicted_ms']:8.4f} ms "
                  f"({r['predicted_ms'] / r['measured_ms'] - 1:+.0%}, {r['bound']})")  # fmt: skip
        report(rows, "predicted_ms", f"{rows[0]['kind']} vs model")
    rows = expert_rows(torch, chip)
    doc["rows"] += rows
    for r in rows:
        print(f"{r['kind']:18s} {r['shape']:16s} E={r['experts']:3d} t={r['tokens_per_expert']:5d} "
              f"{r['measured_ms']:8.4f} ms {r['tflops']:7.1f} TF/s (eager {r['eager_ms']:7.4f}) "
              f"training "
              f"{r['predicted_training_ms'] / r['measured_ms'] - 1:+.0%}, fused model "
              f"{r['predicted_fused_ms'] / r['measured_ms'] - 1:+.0%}")  # fmt: skip
    for kind in ("experts-mm-loop", "experts-grouped_mm"):
        sel = [r for r in rows if r["kind"] == kind]
        report(sel, "predicted_training_ms", f"{kind} vs training-path model")
        report(sel, "predicted_fused_ms", f"{kind} vs fused-MoE model")
    try:
        rows = decode_attention_rows(torch, chip)
    except (RuntimeError, TypeError) as exc:
        print(f"decode attention failed: {str(exc).splitlines()[0]}")
        rows = []
    doc["rows"] += rows
    for r in rows:
        print(f"decode attn B={r['batch']:3d} ctx={r['context']:5d} {r['measured_ms']:8.4f} ms "
              f"(eager {r['eager_ms']:7.4f}): KV read at {r['hbm_share']:.0%} of HBM "
              f"(model {r['model_hbm_share']:.0%})")  # fmt: skip
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "shapes.json").write_text(json.dumps(doc, indent=1))
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
