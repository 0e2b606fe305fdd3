"""Speed benchmark: points per second of ``chipwise explore`` at 1 and 2 workers and on Ray.

    python benchmarks/explore.py [--no-ray] [--phase infer|train]

Issue 16: a 2,000-point grid (10 workloads x 20 chips x 10 chip counts) finishes, resumes
after an interrupt without recomputing finished points, and writes Parquet and HTML. In one
run this script

1. runs the grid in this process, in a pool of 2 processes, and on a local Ray started on
   127.0.0.1 with 2 CPUs (the ``[ray]`` extra; skipped without it), each without a cache,
   and prints points/s for each and the ratios to one worker; the three tables must be equal;
2. runs it with a cache, stopped (as Ctrl-C would) once half the points are done, then again:
   prints how many points the second run computed (the other half) and read back;
3. runs ``chipwise explore`` (the CLI) over the now complete cache and lists the files it
   wrote (``points.parquet`` needs the ``[explore]`` extra, ``summary.html`` the ``[web]``).

The grid is serving by default (``--phase train`` plans training instead, roughly 10x slower
per point). Points/s depends on the machine and its load: compare ratios, not absolutes, and read
them with the load average printed first (on a shared machine with no idle core a second
worker cannot help).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chipwise.explore import Grid, grid_from, run_grid

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ["gpt2", "bert-large", "t5-large", "gptj-6b", "llama2-7b", "llama3-8b",
             "mistral-7b", "gemma3-12b", "llama2-13b", "mixtral-8x7b"]  # fmt: skip
CHIPS = ["a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie", "h200-sxm", "b200",
         "l4", "l40s", "mi300x", "mi325x", "gaudi3", "tpu-v4", "tpu-v5e", "tpu-v5p",
         "tpu-v6e", "trainium2", "h100-sxm:hbm_bandwidth*1.5", "h100-sxm:hbm_bandwidth*2",
         "h100-sxm:bf16_flops*2", "tpu-v5e:memory=32GB"]  # fmt: skip
COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]


def make_grid(phase: str) -> Grid:
    spec = {"workloads": WORKLOADS, "chips": CHIPS, "counts": COUNTS, "phases": [phase]}
    if phase == "train":
        spec.update(seq_len=[2048], global_batch=[512])
    return grid_from(spec)


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished child processes (pool workers)."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(label: str, grid: Grid, **kwargs: object) -> tuple[float, tuple[object, ...]]:
    """Run the grid; print wall seconds, points/s and CPU seconds (in this process only: pool
    workers are forked by a fork server and Ray's by its raylet, not children of this
    process, so theirs is not counted: 'n/a')."""
    cpu, start = _cpu_s(), time.perf_counter()
    run = run_grid(grid, max_points=10_000, **kwargs)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    rate = len(run.table) / seconds
    used = f"{_cpu_s() - cpu:.1f}" if run.runner == "serial" else "n/a"
    print(f"{label:<22} {len(run.table):>6} points  {seconds:7.1f} s  {rate:7.1f} points/s  "
          f"CPU {used} s")  # fmt: skip
    return rate, run.table.rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray case")
    parser.add_argument("--phase", choices=["infer", "train"], default="infer")
    args = parser.parse_args()
    grid = make_grid(args.phase)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"grid: {len(WORKLOADS)} workloads x {len(CHIPS)} chips x {len(COUNTS)} counts "
          f"({args.phase}) = {grid.size(len(CHIPS)):,} points")  # fmt: skip
    one, rows = timed("1 worker", grid, workers=1)
    two, rows2 = timed("2 workers (pool)", grid, workers=2)
    same = rows2 == rows
    ray_rate = None
    if not args.no_ray and importlib.util.find_spec("ray") is not None:
        from chipwise.explore.runner import import_ray

        ray = import_ray(loopback=True)
        ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2,
                 logging_level="WARNING")  # fmt: skip
        try:
            ray_rate, rows3 = timed("ray (local, 2 CPUs)", grid, ray="auto")
        finally:
            ray.shutdown()
        same = same and rows3 == rows
    elif not args.no_ray:
        print("ray: not installed (pip install 'chipwise[ray]'); skipped")
    ratios = f"2 workers / 1 = {two / one:.2f}"
    if ray_rate is not None:
        ratios += f", ray / 1 = {ray_rate / one:.2f}"
    print(f"ratios: {ratios}; tables identical: {same}")

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "out" / ".cache"

        def stop_half(done: int, total: int) -> None:
            if done >= total // 2:
                raise KeyboardInterrupt

        with contextlib.suppress(KeyboardInterrupt):  # as Ctrl-C would stop it
            run_grid(grid, workers=2, cache_dir=cache, progress=stop_half)
        start = time.perf_counter()
        resumed = run_grid(grid, workers=2, cache_dir=cache)
        print(f"resume after an interrupt at half: computed {resumed.computed}, from cache "
              f"{resumed.cached} ({time.perf_counter() - start:.1f} s)")  # fmt: skip
        start = time.perf_counter()
        again = run_grid(grid, workers=2, cache_dir=cache)
        print(f"second run: computed {again.computed}, from cache {again.cached} "
              f"({time.perf_counter() - start:.1f} s)")  # fmt: skip
        grid_file = Path(tmp) / "grid.toml"
        grid_file.write_text(_toml(grid), encoding="utf-8")
        start = time.perf_counter()
        cli = subprocess.run(
            [sys.executable, "-c", "from chipwise.cli import main; main()", "explore",
             str(grid_file), "-o", str(Path(tmp) / "out"), "--workers", "2"],
            capture_output=True, text=True, check=False, cwd=ROOT,
        )  # fmt: skip
        print(f"chipwise explore (CLI, from the cache): exit {cli.returncode}, "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        for line in (cli.stdout + cli.stderr).splitlines():
            print(f"  {line}")
        for f in sorted(p for p in (Path(tmp) / "out").iterdir() if p.is_file()):
            print(f"  {f.name}: {f.stat().st_size / 1e6:.1f} MB")
    return 0 if same and again.computed == 0 and cli.returncode == 0 else 1


def _toml(grid: Grid) -> str:
    s = grid.spec
    quoted = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"  # noqa: E731
    return (
        f"workloads = {quoted(s.workloads)}\nchips = {quoted(s.chips)}\n"
        f"counts = {list(s.counts)}\nphases = {quoted(s.phases)}\n"
        f"seq_len = {list(s.seq_len)}\nglobal_batch = {list(s.global_batch)}\n"
    )


if __name__ == "__main__":
    sys.exit(main())
