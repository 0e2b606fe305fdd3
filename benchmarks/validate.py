"""Accuracy benchmark: every published measurement, predicted vs measured.

    python benchmarks/validate.py [--kind train|infer|microbench] [--json]
    python benchmarks/validate.py --fit-sustained
    python benchmarks/validate.py --fit-moe-host
    python benchmarks/validate.py --moe-host-gaps
    python benchmarks/validate.py --write-confidence [PATH]

Prints every row (predicted ones with their error, the rest with why they were not
predicted) and the median and 90th-percentile absolute error overall, for training on
GPUs and on TPUs. Data: the package's ``validate/data/public/cases-public.csv``
plus ``validate/data/measurements.csv``. The same as ``chipwise validate``.

``--fit-sustained`` refits ``sustained_tensor_fraction`` (data/efficiency.toml) for its three
chip groups (GPUs and GEMM ASICs; TPUs with 128-wide MXUs; TPUs with 256-wide MXUs) as the
median measured/predicted ratio of each group's training rows, iterated to a fixed point,
and cross-checks it by leaving one publication out at a time (the shared cases file counts
as one): fitted on the others, the error on the rows left out, then over all rows so
predicted out of sample (``chipwise.validate.lopo`` does the work). It prints the values to
put in the TOML; it writes nothing.

``--fit-moe-host`` refits ``MOE_LAUNCH_HOST_S`` and ``MOE_GRAPHED_HOST_S`` (perf/step/train.py,
the latter for plans that CUDA-graph the attention, attn_graph=1): on each row that
``validate/data/in_sample.toml`` lists for it, the step predicted without the host term is
compared with the measured one, the gap divided by the MoE-layer passes of the busiest
stage (micro-batches plus the bubble's share, times its MoE layers) and, for
``MOE_LAUNCH_HOST_S``, by the kernels such a layer launches; it prints the median and each
row's gap. It writes nothing.

``--moe-host-gaps`` prints the same per-layer gap (the host term set to zero) for every GPU
MoE training row on a Megatron plan (ep > 1, fsdp = 1), in sample or not, with its local
experts (E / ep), micro-batch and all-to-all overlap: the evidence any reshaping of the host
term (per expert, per dispatcher, per chip) has to explain. It writes nothing.

``--write-confidence`` predicts every row and writes the confidence table ``advise`` quotes
(default: the package's ``validate/data/confidence.json``); run it after any model or
measurement change (``tests/validate/test_confidence.py`` fails until you do).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from rich.console import Console

from chipwise.cli.output import print_json
from chipwise.cli.validate import report_table, report_to_dict
from chipwise.pool import default_workers
from chipwise.validate import (
    Report,
    SustainedFit,
    all_entries,
    confidence_json,
    confidence_path,
    confidence_table,
    load_cases,
    run_validation,
)
from chipwise.validate.run import Case
from chipwise.workload.ir import TransformerSpec

CONFIDENCE_SOURCE = "python benchmarks/validate.py --write-confidence"


def _stats(report: Report) -> str:
    s = report.stats("train")
    return (
        "no rows"
        if s is None
        else f"{s.rows} rows, median {s.median_abs_error:.1%}, p90 {s.p90_abs_error:.1%}"
    )


def fit_sustained() -> None:
    """Print the fit on every training row and the leave-one-publication-out cross-check
    (``chipwise.validate.lopo``)."""
    fitter = SustainedFit(load_cases())
    lopo = fitter.leave_one_publication_out()
    every = lopo.fitted_all
    print("fitted on all training rows:", every)
    in_sample = Report(
        results=tuple(fitter.predict(c, every.get(fitter.group_of(c))) for c in fitter.cases)
    )
    print("  in-sample:", _stats(in_sample))
    print("leave one publication out (fitted on the rest -> the rows left out):")
    for h in lopo.held_out:
        report = Report(results=h.results)
        errors = [r.error for r in h.results if r.error is not None]
        bias = f"median error {float(np.median(errors)):+.1%}" if errors else "no rows"
        print(f"  {h.publication}: {h.fitted}; {_stats(report)}, {bias}")
    print("  all rows out of sample:", _stats(Report(results=lopo.results)))


def _moe_layer_gap(case: Case) -> tuple[float, str, int] | None:
    """The gap between measured and modelled step time of a MoE training row, per MoE-layer
    pass of the busiest stage, with the row's plan and local experts (E / ep); None when
    the row is not predicted or not a MoE model. The caller zeroes the host term."""
    from chipwise.perf import parse_plan
    from chipwise.perf.plan.memory import stage_layer_kinds
    from chipwise.perf.plan.parallel import layers_per_stage
    from chipwise.validate import load_model
    from chipwise.validate.run import run_case

    result = run_case(case)
    if result.predicted is None:
        return None
    spec = load_model(case.workload, case.base_dir, case.precision)
    if not isinstance(spec, TransformerSpec) or not spec.n_experts:
        return None
    plan = parse_plan(result.plan)
    tokens = (case.global_batch or 1) * (case.seq_len or 4096) / case.chips
    m = (case.global_batch or 1) // plan.data_parallel // plan.microbatch
    layers = layers_per_stage(spec.n_layers, plan.pp, plan.vp)
    moe = sum(n for is_moe, _, n in stage_layer_kinds(spec, layers, plan.pp) if is_moe)
    passes = (m + (plan.pp - 1) / plan.vp) * moe
    gap = (tokens / case.value - tokens / result.predicted) / passes
    return gap, result.plan, spec.n_experts // plan.ep


def _moe_layer_launches(case: Case) -> float:
    """Kernels one MoE layer of ``case``'s busiest stage launches per micro-batch: how much
    a probe host time per launch moves the per-layer gap (the caller zeroes the host term;
    the row's plan is fixed, so only the host term moves)."""
    from unittest import mock

    from chipwise.perf.step import train

    probe = 1e-6
    base = _moe_layer_gap(case)
    with mock.patch.object(train, "MOE_LAUNCH_HOST_S", probe):
        probed = _moe_layer_gap(case)
    assert base is not None and probed is not None, case.id
    return (base[0] - probed[0]) / probe


HOST_CONSTANTS = ("MOE_LAUNCH_HOST_S", "MOE_GRAPHED_HOST_S")


def fit_moe_host() -> None:
    """Print the median gap over the rows each host constant is fitted to: per MoE-layer
    kernel launch (``MOE_LAUNCH_HOST_S``), per MoE layer (``MOE_GRAPHED_HOST_S``, plans
    with attn_graph=1)."""
    from unittest import mock

    from chipwise.perf.step import train
    from chipwise.validate import in_sample_constants

    cases = {c.id: c for c in load_cases()}
    for name in HOST_CONSTANTS:
        rows = next(c.rows for c in in_sample_constants() if c.name == name)
        gaps = []
        with mock.patch.multiple(train, **dict.fromkeys(HOST_CONSTANTS, 0.0)):
            for row in rows:
                found = _moe_layer_gap(cases[row])
                assert found is not None, row
                gap, plan, _ = found
                if name == "MOE_LAUNCH_HOST_S":
                    launches = _moe_layer_launches(cases[row])
                    gaps.append(gap / launches)
                    print(f"  {row}: {gap * 1e3:.2f} ms per MoE layer pass, {launches:.0f} "
                          f"launches ({plan})")  # fmt: skip
                    continue
                gaps.append(gap)
                print(f"  {row}: {gap * 1e3:.2f} ms per MoE layer pass ({plan})")
        print(f"{name} = {float(np.median(gaps)):.2e}  # median of {len(gaps)} rows")


def moe_host_gaps() -> None:
    """Print the per-MoE-layer gap (no host term) of every GPU MoE training row on a
    Megatron plan (ep > 1, fsdp = 1), marking the rows MOE_LAUNCH_HOST_S is fitted to."""
    from unittest import mock

    from chipwise.perf import parse_plan
    from chipwise.perf.step import train
    from chipwise.validate import in_sample_constants

    fitted = set(next(c.rows for c in in_sample_constants() if c.name == "MOE_LAUNCH_HOST_S"))
    with mock.patch.multiple(train, **dict.fromkeys(HOST_CONSTANTS, 0.0)):
        for case in load_cases():
            if case.phase != "train" or case.chip.startswith("tpu"):
                continue
            found = _moe_layer_gap(case)
            if found is None:
                continue
            gap, text, local = found
            plan = parse_plan(text)
            if plan.ep <= 1 or plan.fsdp > 1:
                continue
            mark = " (fitted)" if case.id in fitted else ""
            print(
                f"  {case.id:8s} {case.chip:9s} {Path(case.workload).stem[:16]:16s} "
                f"{case.precision:5s} local experts {local:3d}  gap {gap * 1e3:6.2f} ms  "
                f"({text}){mark}"
            )


def write_confidence(path: Path) -> None:
    """Predict every row (and the training rows leave-one-publication-out) and write the
    confidence table to ``path``."""
    report = run_validation(workers=default_workers())
    lopo = SustainedFit(load_cases()).leave_one_publication_out()
    entries = all_entries(report, lopo)
    table = confidence_table(entries, source=CONFIDENCE_SOURCE, lopo=lopo)
    path.write_text(confidence_json(table), encoding="utf-8")
    print(f"wrote {len(entries)} entries to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("train", "infer", "microbench"), default=None)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--fit-sustained", action="store_true", help="refit and cross-check")
    parser.add_argument("--fit-moe-host", action="store_true", help="refit the MoE host terms")
    parser.add_argument(
        "--moe-host-gaps", action="store_true", help="per-layer gap of every GPU MoE row"
    )
    parser.add_argument(
        "--write-confidence", nargs="?", const=str(confidence_path()), default=None,
        metavar="PATH", help="write the confidence table advise reads (default: package data)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.write_confidence:
        write_confidence(Path(args.write_confidence))
        return
    if args.fit_sustained:
        fit_sustained()
        return
    if args.fit_moe_host:
        fit_moe_host()
        return
    if args.moe_host_gaps:
        moe_host_gaps()
        return
    report = run_validation(args.kind, workers=default_workers())
    if args.json:
        print_json(report_to_dict(report))
    else:
        Console(width=200).print(report_table(report))


if __name__ == "__main__":
    main()
