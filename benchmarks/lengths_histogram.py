"""Turn a dataset's per-sample lengths into a ``--lengths`` histogram (package data).

    python benchmarks/lengths_histogram.py SAMPLES.csv OUT.csv --fixed-output 294
    python benchmarks/lengths_histogram.py SAMPLES.csv OUT.csv --cell 32
    python benchmarks/lengths_histogram.py SAMPLES.csv OUT.csv --fixed-output 1278 --cell 128

``SAMPLES.csv`` has one row per sample with columns ``input_length,output_length`` (as the
extractions cited in ``src/chipwise/validate/data/lengths/README.md`` do). ``--fixed-output N``
keeps every distinct input length with its count and sets each row's output to ``N`` (the
published mean of the model's generations, when the set's output column is not what the model
generates); ``--cell W`` bins the joint (input, output) pairs into ``W`` x ``W``-token cells, each
row at its cell's mean lengths (rounded) with its sample count; both together bin the inputs into
``W``-token cells at a fixed output (a set whose outputs are not published: gpt-oss-120b).
Prints the sample and histogram means and standard deviations so the README can state them.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path


def read_samples(path: Path) -> list[tuple[int, int]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [(int(r["input_length"]), int(r["output_length"])) for r in csv.DictReader(fh)]


def histogram(
    samples: list[tuple[int, int]], *, fixed_output: int = 0, cell: int = 0
) -> list[tuple[int, int, int]]:
    groups: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for i, o in samples:
        key = (i // cell if cell else i, 0) if fixed_output else (i // cell, o // cell)
        groups[key].append((i, o))
    rows = []
    for members in groups.values():
        mean_in = round(statistics.fmean(i for i, _ in members))
        mean_out = fixed_output or round(statistics.fmean(o for _, o in members))
        rows.append((mean_in, mean_out, len(members)))
    return sorted(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--fixed-output", type=int, default=0)
    parser.add_argument("--cell", type=int, default=0)
    args = parser.parse_args()
    if not (args.fixed_output or args.cell):
        parser.error("give --fixed-output, --cell or both")
    samples = read_samples(args.samples)
    rows = histogram(samples, fixed_output=args.fixed_output, cell=args.cell)
    with args.out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["input_len", "output_len", "count"])
        writer.writerows(rows)
    for name, k in (("input", 0), ("output", 1)):
        vals = [s[k] for s in samples]
        n = sum(r[2] for r in rows)
        hist_mean = sum(r[k] * r[2] for r in rows) / n
        print(
            f"{name}: samples mean {statistics.fmean(vals):.2f} std {statistics.pstdev(vals):.2f} "
            f"min {min(vals)} max {max(vals)}; histogram mean {hist_mean:.2f} ({len(rows)} rows)"
        )


if __name__ == "__main__":
    main()
