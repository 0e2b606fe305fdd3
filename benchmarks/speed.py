"""Speed benchmark: how long ``predict`` and a full planner search take.

    python benchmarks/speed.py [--repeat 3]

Targets (the project brief and issue 11): a full planner search for a 405B model on 1024
chips in under 1 s on 2 cores; for a 405B dense model and for DeepSeek-V3 on 16,384 chips
(each at the batch such a run uses) under 2 s; the default 405B ``advise`` (all chips, every
count up to each chip's largest recorded job) under 10 s. Each case is timed cold (first
call in a fresh process pays the catalog load and per-shape op timings) and warm (best of
``--repeat``; new StepModel caches each time, the catalog already loaded); ``cpu s`` is the
warm run's process CPU time, which a machine shared with other jobs does not inflate.
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
    # at scale, with the batch such runs use: Llama 3 405B's 16M tokens (2048 x 8192),
    # DeepSeek-V3's 15,360 x 4,096 (rounded to 16,384 so it divides the ranks)
    ("planner: llama3-405b train on 16384 x h100", "llama3-405b", "h100", 16384, None, "train"),
    ("planner: llama3-405b train on 16384 x v6e", "llama3-405b", "v6e", 16384, None, "train"),
    ("planner: deepseek-v3 train on 16384 x h100", "deepseek-v3", "h100", 16384, None,
     "train-moe"),
    ("advise: llama3-405b 15T tokens, gcp, jax", "llama3-405b", "", 0, None, "advise"),
)  # fmt: skip


def run(model: str, chip: str, chips: int, plan: str | None, phase: str) -> str:
    spec = load_preset(model)
    if phase == "advise":
        return _advise(model)
    if phase == "train-moe":
        ph: Training | Inference = Training(seq_len=4096, global_batch=16384)
    elif phase == "train":
        ph = Training(seq_len=8192, global_batch=2048)
    else:
        ph = Inference(batch=64)
    pred = predict(Workload(model=spec, phase=ph), find_chip(chip), chips, "bf16",
                   parse_plan(plan) if plan else None, allow_unfit=True)  # fmt: skip
    return str(pred.plan)


def _advise(model: str) -> str:
    """What ``chipwise advise MODEL --phase train --tokens 15T --cloud gcp --framework jax``
    plans (the CLI's defaults for everything else)."""
    from chipwise.advise import AdviseRequest, recommend
    from chipwise.advise.defaults import training_batch

    spec = load_preset(model)
    batch, note = training_batch(spec, 15e12, 4096, None)
    wl = Workload(model=spec, phase=Training(seq_len=4096, global_batch=batch))
    req = AdviseRequest(workload=wl, tokens=15e12, cloud="gcp", framework="jax", batch_note=note)
    rec = recommend(req)
    return f"pick {rec.pick.chip.id} x{rec.pick.total_chips}" if rec.pick else "no pick"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':48s} {'cold s':>8s} {'warm s':>8s} {'cpu s':>8s}  plan")
    for label, *case in CASES:
        t0 = time.perf_counter()
        plan = run(*case)  # type: ignore[arg-type]
        cold = time.perf_counter() - t0
        warm = cpu = float("inf")
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            run(*case)  # type: ignore[arg-type]
            warm = min(warm, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
        print(f"{label:48s} {cold:8.3f} {warm:8.3f} {cpu:8.3f}  {plan}")


if __name__ == "__main__":
    main()
