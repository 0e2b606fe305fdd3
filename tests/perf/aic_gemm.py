"""Measured dense GEMM kernel times (NVIDIA AIConfigurator's kernel database, extracted to
``tests/perf/data/aiconfigurator-gemm-*.csv``): what the measured-GEMM tests compare."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

Row = tuple[int, int, int, float]  # (m, n, k, seconds)


def read_gemm_tables(path: Path) -> dict[tuple[str, str], list[Row]]:
    """(chip, engine) -> [(m, n, k, seconds)] of an extracted kernel table ('#' lines are
    its header notes)."""
    out: dict[tuple[str, str], list[Row]] = defaultdict(list)
    with path.open() as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            key = (r["chip"], r["engine"])
            out[key].append((int(r["m"]), int(r["n"]), int(r["k"]), float(r["latency_ms"]) * 1e-3))
    return out
