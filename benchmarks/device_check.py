"""Device check: measure this machine's GPU (or TPU), calibrate, and compare with the model.

Run on a machine with an accelerator, from the repository root (no install needed)::

    python benchmarks/device_check.py            # about a minute on an H100/H200
    python benchmarks/device_check.py --pytest   # also the GPU-only unit tests

Steps, each through the real CLI (``python -c 'from chipwise.cli import main; main()'``)
into a fresh store under ``--out`` (default: a temporary directory):

1. ``chipwise bench --only gemm,copy,elementwise,reduction,attention --json``: the full sweep
   (square GEMMs 256..8192 in bf16 and fp32, buffers 16 KiB..1 GiB, attention);
2. ``chipwise calibrate --json``: fitted efficiency parameters next to the packaged ones;
3. ``chipwise bench compare`` with the packaged, then the calibrated efficiencies (the second
   is in-sample: it shows how well the model's *form* fits, not its predictive power);
4. ``chipwise profile`` of the GPT-2-like example (GPT-2 small in bf16 on a GPU, tiny fp32
   on a CPU): five real training steps against the predicted step time;
5. with ``--pytest``: ``pytest tests/bench -k cuda`` (the tests skipped without a GPU).

It prints the figures that matter (best GEMM TFLOP/s and fraction of peak, copy bandwidth,
fitted vs packaged fractions, median and p90 prediction error) and exits non-zero if a step
fails. Every step has a time limit; the whole check stays under 5 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from chipwise.cli import main; main()"]
STEP_TIMEOUT_S = {"bench": 180, "calibrate": 30, "compare": 30, "profile": 60, "pytest": 60}


def run(step: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one CLI step, echoing its stderr; raises SystemExit on failure."""
    start = time.perf_counter()
    print(f"\n== {step}: chipwise {' '.join(args)}", flush=True)
    try:
        proc = subprocess.run(
            [*CLI, *args], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=STEP_TIMEOUT_S[step.split()[0]],
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{step}: timed out after {STEP_TIMEOUT_S[step.split()[0]]} s") from None
    print(f"   ({time.perf_counter() - start:.1f} s, exit {proc.returncode})", flush=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:])
        print(proc.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"{step} failed with exit code {proc.returncode}")
    return proc


def best(rows: list[dict[str, Any]], benchmark: str, dtype: str | None, key: str) -> dict[str, Any]:
    chosen = [r for r in rows if r["benchmark"] == benchmark and dtype in (None, r["dtype"])]
    return max(chosen, key=lambda r: r[key]) if chosen else {}


def summarise_bench(doc: dict[str, Any]) -> None:
    from chipwise.hardware import default_catalog

    device = doc["device"]
    print(f"device: {device['name']} x{device['count']} -> catalog {device['chip_id']}")
    print(f"        {device['library']} {device['library_version']}, {device['driver_version']}")
    chip = default_catalog().chip(device["chip_id"]) if device["chip_id"] else None
    rows = doc["measurements"]
    for dtype in ("bf16", "fp32"):
        r = best(rows, "gemm", dtype, "achieved_flops_per_s")
        if r:
            rate = r["achieved_flops_per_s"]
            frac = f" = {rate / chip.peak_flops_per_s(dtype):.1%} of peak" if chip else ""
            print(f"best {dtype} GEMM: {rate / 1e12:.1f} TFLOP/s at {r['shape']}{frac}")
    for kind in ("copy", "elementwise", "reduction"):
        r = best(rows, kind, None, "achieved_bytes_per_s")
        if r:
            bw = r["achieved_bytes_per_s"]
            frac = f" = {bw / chip.hbm_bytes_per_s:.1%} of HBM" if chip else ""
            print(f"best {kind}: {bw / 1e12:.2f} TB/s at {r['shape']} elements{frac}")
    r = best(rows, "attention", "bf16", "achieved_flops_per_s")
    if r:
        print(f"best bf16 attention: {r['achieved_flops_per_s'] / 1e12:.1f} TFLOP/s ({r['shape']})")
    for note in doc["notes"]:
        print(f"note: {note}")


def summarise_calibration(doc: dict[str, Any]) -> None:
    from chipwise.hardware import default_catalog
    from chipwise.perf import efficiency_for

    packaged = efficiency_for(default_catalog().chip(doc["chip_id"])) if doc["chip_id"] else None
    for v in doc["values"]:
        was = ""
        if packaged is not None and hasattr(packaged, v["field"]):
            was = f" (packaged {getattr(packaged, v['field']):.4g})"
        print(f"{v['field']:38s} {v['value']:.4g}{was}  n={v['n_points']}  {v['note']}")
    for note in doc["notes"]:
        print(f"note: {note}")


def summarise_compare(doc: dict[str, Any], label: str) -> None:
    if not doc["n"]:
        print(f"{label}: no rows (device not in the catalog?)")
        return
    print(f"{label}: n={doc['n']} median |error| {doc['median_abs_error']:.1%}, "
          f"p90 {doc['p90_abs_error']:.1%}")  # fmt: skip
    by_kind: dict[str, list[float]] = {}
    for r in doc["rows"]:
        by_kind.setdefault(r["benchmark"], []).append(r["error"])
    for kind, errors in by_kind.items():
        worst = max(errors, key=abs)
        print(f"   {kind:12s} n={len(errors):2d}  errors {', '.join(f'{e:+.0%}' for e in errors)}"
              f"  (worst {worst:+.0%})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="Folder for the store.")
    parser.add_argument("--device", default="auto", help="auto | cuda | tpu")
    parser.add_argument("--pytest", action="store_true", help="Also run the GPU unit tests.")
    parser.add_argument("--skip-profile", action="store_true")
    opts = parser.parse_args()
    out = opts.out or Path(tempfile.mkdtemp(prefix="chipwise-device-check-"))
    out.mkdir(parents=True, exist_ok=True)
    db = out / "device.sqlite"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT),
                                                      env.get("PYTHONPATH", "")]))  # fmt: skip
    env["CHIPWISE_DB"] = str(db)
    sys.path[:0] = [str(ROOT / "src")]
    start = time.perf_counter()

    only = "gemm,copy,elementwise,reduction,attention"
    bench = run("bench", ["bench", "--device", opts.device, "--only", only, "--json",
                          "--db", str(db)], env)  # fmt: skip
    bench_doc = json.loads(bench.stdout)
    (out / "bench.json").write_text(bench.stdout)
    summarise_bench(bench_doc)

    cal = run("calibrate", ["calibrate", "--db", str(db), "--json"], env)
    (out / "calibrate.json").write_text(cal.stdout)
    summarise_calibration(json.loads(cal.stdout))

    for label, extra in (("packaged", []), ("calibrated (in-sample)", ["--calibrated"])):
        cmp = run(f"compare {label}", ["bench", "compare", "--db", str(db), "--json", *extra], env)
        (out / f"compare-{label.split()[0]}.json").write_text(cmp.stdout)
        summarise_compare(json.loads(cmp.stdout), label)

    if not opts.skip_profile and bench_doc["device"]["library"] == "torch":
        on_cpu = bench_doc["device"]["kind"] == "cpu"
        dtype = "fp32" if on_cpu else "bf16"
        # GPT-2 small (124M parameters) at 8 x 1024 tokens: ~6 TFLOP per step, compute-bound
        # on a GPU; the default tiny sizes on a CPU.
        sizes = [] if on_cpu else ["n_layer=12", "d=768", "n_head=12", "vocab=50304",
                                   "seq=1024", "batch=8"]  # fmt: skip
        args = [a for kv in sizes for a in ("--arg", kv)]
        prof = run("profile", ["profile", "chipwise.workload.examples.gpt2_like:build",
                               "--trust-code", "--device", opts.device, "--dtype", dtype,
                               "--steps", "5", "--db", str(db), "--json", *args], env)  # fmt: skip
        p = json.loads(prof.stdout)
        measured_ms, predicted_ms = p["measured_step_s"] * 1e3, p["predicted_step_s"] * 1e3
        print(f"gpt2_like {' '.join(sizes) or '(tiny)'} {dtype} training step: measured "
              f"{measured_ms:.2f} ms, predicted {predicted_ms:.2f} ms on {p['predicted_on']} "
              f"({p['error']:+.0%}); {p['graph_flops']:.3g} FLOP per step")  # fmt: skip

    if opts.pytest:
        print("\n== pytest tests/bench -k cuda", flush=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "tests/bench", "-k", "cuda", "-p",
             "no:cacheprovider"], cwd=ROOT, env=env, timeout=STEP_TIMEOUT_S["pytest"],
        )  # fmt: skip
        if proc.returncode != 0:
            return proc.returncode

    print(f"\ndevice check done in {time.perf_counter() - start:.0f} s; files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
