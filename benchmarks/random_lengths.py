"""Length histogram of a ``--dataset-name random`` benchmark run (package data).

    python benchmarks/random_lengths.py 1024 1024 0.8
    python benchmarks/random_lengths.py 1024 8192 0.8 --out DIR

InferenceMAX (SemiAnalysis, now InferenceX) drives its servers with ``benchmark_serving.py`` of
``kimbochen/bench_serving`` (``benchmarks/benchmark_lib.sh``), ``--dataset-name random
--random-input-len ISL --random-output-len OSL --random-range-ratio R --ignore-eos``. Its
``sample_random_requests`` draws each request's input and output lengths independently as
``np.random.randint(int(L * R), L + 1)``: uniform integers on ``[int(L * R), L]``, and
``--ignore-eos`` makes every request generate its drawn output length.

This writes that joint distribution as a ``--lengths`` histogram: each axis's integer range cut
into ``BINS`` (16) equal-width bins (integer ``k`` of ``n`` in the range goes to bin
``k * BINS // n``), one row per (input bin, output bin) at the bins' mean lengths (rounded half
up) with count = the number of integer pairs in the cell. Nothing is sampled, so the file is
exact up to the binning; its means equal the distribution's within half a token.

The file is named ``inferencemax-random-<ISL>-<OSL>-r<R>.csv`` in
``src/chipwise/validate/data/lengths/`` (``--out`` to write elsewhere).
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

BINS = 16
LENGTHS_DIR = Path(__file__).resolve().parent.parent / "src/chipwise/validate/data/lengths"
# Lengths an InferenceMAX run states (tokens); far above any sweep's 8,192.
MAX_LEN = 1 << 20


def mean_length(length: int, ratio: float) -> int:
    """The mean of one axis's uniform integers on ``[int(length * ratio), length]``, rounded
    half up: what a row states as its ``input_len`` / ``output_len``."""
    return math.floor((int(length * ratio) + length) / 2 + 0.5)


def axis_bins(length: int, ratio: float, bins: int = BINS) -> list[tuple[int, int]]:
    """(rounded mean, number of integers) of each equal-width bin of ``[int(L * R), L]``."""
    if not 1 <= length <= MAX_LEN:
        raise ValueError(f"length {length} outside 1..{MAX_LEN}")
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"range ratio {ratio} outside 0..1")
    lo = int(length * ratio)
    n = length - lo + 1
    per = min(bins, n)
    out = []
    for b in range(per):
        # the offsets k from lo with k * per // n == b: ceil(b n / per) <= k < ceil((b+1) n / per)
        first = -(-b * n // per)
        last = -(-(b + 1) * n // per) - 1
        count = last - first + 1
        mean = lo + (first + last) / 2
        out.append((math.floor(mean + 0.5), count))
    return out


def histogram(isl: int, osl: int, ratio: float, bins: int = BINS) -> list[tuple[int, int, int]]:
    """``(input_len, output_len, count)`` rows of the joint uniform (input, output) grid."""
    return [
        (i, o, ci * co)
        for i, ci in axis_bins(isl, ratio, bins)
        for o, co in axis_bins(osl, ratio, bins)
    ]


def file_name(isl: int, osl: int, ratio: float) -> str:
    return f"inferencemax-random-{isl}-{osl}-r{ratio:g}.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("isl", type=int)
    parser.add_argument("osl", type=int)
    parser.add_argument("ratio", type=float)
    parser.add_argument("--out", type=Path, default=LENGTHS_DIR)
    args = parser.parse_args()
    rows = histogram(args.isl, args.osl, args.ratio)
    path = args.out / file_name(args.isl, args.osl, args.ratio)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["input_len", "output_len", "count"])
        writer.writerows(rows)
    total = sum(c for *_, c in rows)
    mean_in = sum(i * c for i, _, c in rows) / total
    mean_out = sum(o * c for _, o, c in rows) / total
    print(f"{path}: {len(rows)} rows, {total} pairs, means {mean_in:.2f} / {mean_out:.2f}")


if __name__ == "__main__":
    main()
