"""Speed benchmark: how long ``predict`` and a full planner search take.

    python benchmarks/speed.py [--repeat 3]

Target (the project brief): a full planner search for a 405B model on 1024 chips in under
1 s on 2 cores. Each case is timed cold (first call in a fresh process pays the catalog
load and per-shape op timings) and warm (best of ``--repeat``; new StepModel caches each
time, the catalog already loaded).
"""

from __future__ import annotations

import argparse
import time

from chipwise.hardware import chip as find_chip
from chipwise.perf import parse_plan, predict
from chipwise.workload.ir import Inference, Training, Workload
from chipwise.workload.presets import load_preset

CASES = (
    ("planner: llama3-405b train on 1024 x h100", "llama3-405b", "h100", 1024, None, "train"),
    ("planner: llama3-405b train on 1024 x v5p", "llama3-405b", "v5p", 1024, None, "train"),
    ("planner: llama3-70b train on 256 x v6e", "llama3-70b", "v6e", 256, None, "train"),
    ("planner: deepseek-v3 train on 512 x h100", "deepseek-v3", "h100", 512, None, "train"),
    ("predict: llama3-8b train, fixed plan", "llama3-8b", "h100", 8,
     "fsdp=8,microbatch=1,recompute=selective", "train"),
    ("planner: llama3-70b serve on 8 x h100", "llama3-70b", "h100", 8, None, "infer"),
)  # fmt: skip


def run(model: str, chip: str, chips: int, plan: str | None, phase: str) -> str:
    spec = load_preset(model)
    ph = Training(seq_len=8192, global_batch=2048) if phase == "train" else Inference(batch=64)
    pred = predict(Workload(model=spec, phase=ph), find_chip(chip), chips, "bf16",
                   parse_plan(plan) if plan else None, allow_unfit=True)  # fmt: skip
    return str(pred.plan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':48s} {'cold s':>8s} {'warm s':>8s}  plan")
    for label, *case in CASES:
        t0 = time.perf_counter()
        plan = run(*case)  # type: ignore[arg-type]
        cold = time.perf_counter() - t0
        warm = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            run(*case)  # type: ignore[arg-type]
            warm = min(warm, time.perf_counter() - t0)
        print(f"{label:48s} {cold:8.3f} {warm:8.3f}  {plan}")


if __name__ == "__main__":
    main()
