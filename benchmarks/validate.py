"""Accuracy benchmark: every published measurement, predicted vs measured.

    python benchmarks/validate.py [--kind train|infer|microbench] [--json]
    python benchmarks/validate.py --fit-sustained
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
predicted out of sample. It prints the values to put in the TOML; it writes nothing.

``--write-confidence`` predicts every row and writes the confidence table ``advise`` quotes
(default: the package's ``validate/data/confidence.json``); run it after any model or
measurement change (``tests/validate/test_confidence.py`` fails until you do).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console

from chipwise.cli.output import print_json
from chipwise.cli.validate import report_table, report_to_dict
from chipwise.hardware.chip import Chip
from chipwise.perf import Efficiency, efficiency_for
from chipwise.validate import (
    Case,
    Report,
    Result,
    confidence_entries,
    confidence_json,
    confidence_path,
    confidence_table,
    load_cases,
    run_validation,
)

FIT_ROUNDS = 4
CONFIDENCE_SOURCE = "python benchmarks/validate.py --write-confidence"


def sustained_group(chip: Chip) -> str:
    """The chip group that shares one sustained_tensor_fraction (see efficiency.toml)."""
    if chip.kind == "tpu":
        return "tpu-mxu256" if (chip.matrix_unit_dim or 128) >= 256 else "tpu-mxu128"
    return "gpu"


def _with(values: dict[str, float]) -> Callable[[Chip], Efficiency | None]:
    def eff(chip: Chip) -> Efficiency | None:
        f = values.get(sustained_group(chip))
        base = efficiency_for(chip)
        return base if f is None else dataclasses.replace(base, sustained_tensor_fraction=f)

    return eff


def _ratios(report: Report) -> dict[str, list[float]]:
    from chipwise.hardware.catalog import chip as find_chip

    out: dict[str, list[float]] = {}
    for r in report.results:
        if r.predicted and r.case.phase == "train":
            g = sustained_group(find_chip(r.case.chip))
            out.setdefault(g, []).append(r.case.value / r.predicted)
    return out


def fit(cases: Sequence[Case]) -> dict[str, float]:
    """Fixed point of f <- f x median(measured / predicted) per group, over ``cases``."""
    from chipwise.hardware.catalog import chip as find_chip

    values: dict[str, float] = {}
    for c in cases:
        ch = find_chip(c.chip)
        values.setdefault(sustained_group(ch), efficiency_for(ch).sustained_tensor_fraction)
    for _ in range(FIT_ROUNDS):
        ratios = _ratios(run_validation("train", cases, efficiency=_with(values)))
        values = {g: min(1.0, values[g] * float(np.median(r))) for g, r in ratios.items()}
    return {g: round(v, 3) for g, v in values.items()}


def _stats(report: Report) -> str:
    s = report.stats("train")
    return (
        "no rows"
        if s is None
        else f"{s.rows} rows, median {s.median_abs_error:.1%}, p90 {s.p90_abs_error:.1%}"
    )


def publication(case: Case) -> str:
    """The publication a row comes from: the repository (not the commit) or the paper; the
    shared cases file is one."""
    if case.source.startswith("github:"):
        return case.source.split("@", 1)[0]
    return case.source.split()[0] if case.source.startswith("url:") else case.source


def fit_sustained() -> None:
    cases = tuple(c for c in load_cases() if c.phase == "train" and c.usable)
    every = fit(cases)
    print("fitted on all training rows:", every)
    print("  in-sample:", _stats(run_validation("train", cases, efficiency=_with(every))))
    print("leave one publication out (fitted on the rest -> the rows left out):")
    held: list[Result] = []
    for pub in sorted({publication(c) for c in cases}):
        test = tuple(c for c in cases if publication(c) == pub)
        values = fit(tuple(c for c in cases if publication(c) != pub))
        report = run_validation("train", test, efficiency=_with(values))
        held.extend(report.results)
        errors = [r.error for r in report.results if r.error is not None]
        bias = f"median error {float(np.median(errors)):+.1%}" if errors else "no rows"
        print(f"  {pub}: {values}; {_stats(report)}, {bias}")
    print("  all rows out of sample:", _stats(Report(results=tuple(held))))


def write_confidence(path: Path) -> None:
    """Predict every row and write the confidence table to ``path``."""
    entries = confidence_entries(run_validation())
    table = confidence_table(entries, source=CONFIDENCE_SOURCE)
    path.write_text(confidence_json(table), encoding="utf-8")
    print(f"wrote {len(entries)} entries to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("train", "infer", "microbench"), default=None)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--fit-sustained", action="store_true", help="refit and cross-check")
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
    report = run_validation(args.kind)
    if args.json:
        print_json(report_to_dict(report))
    else:
        Console(width=200).print(report_table(report))


if __name__ == "__main__":
    main()
