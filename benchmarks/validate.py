"""Accuracy benchmark: every published measurement, predicted vs measured.

    python benchmarks/validate.py [--kind train|infer|microbench] [--json]

Prints every row (predicted ones with their error, the rest with why they were not
predicted) and the median and 90th-percentile absolute error overall, for training on
GPUs and on TPUs. Data: ``cases-public.csv`` from ``$CHIPWISE_VALIDATION_DIR`` (default
``../shared/validation`` next to the repository) plus ``src/chipwise/perf/data/
measurements.csv``. The same as ``chipwise validate``.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from chipwise.cli.output import print_json
from chipwise.cli.validate import report_table, report_to_dict
from chipwise.perf.validation import run_validation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("train", "infer", "microbench"), default=None)
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    report = run_validation(args.kind)
    if args.json:
        print_json(report_to_dict(report))
    else:
        Console(width=200).print(report_table(report))


if __name__ == "__main__":
    main()
