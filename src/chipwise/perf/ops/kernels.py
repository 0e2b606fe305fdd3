"""Measured GEMM kernel times, used instead of the tile model for the shapes they cover.

A submitter that ships its tuned kernel table has measured the kernel it runs for each
shape on its own chip; that time replaces the model's idealised library (``gpu.plan_gemm``)
for exactly those (chip, dtype, N, K). Files: ``data/kernels/<chip>-<dtype>-gemm.csv``,
columns m, n, k, us, ``#`` lines citing where they come from. Legend: M = tokens (rows),
N = output features, K = input features.
"""

from __future__ import annotations

import bisect
import csv
import functools
from dataclasses import dataclass
from importlib import resources

from chipwise.units import MEGA


@dataclass(frozen=True, slots=True)
class KernelCurve:
    """One (N, K) GEMM's measured times over the tuned M values, ascending."""

    m: tuple[int, ...]
    seconds: tuple[float, ...]

    def at(self, m: int) -> float:
        """The time at ``m`` rows: the kernel tuned at the smallest tabulated M >= m (a
        tuned kernel's tiles cover every row count up to its M, and vLLM pads a batch to
        its CUDA-graph size); past the largest M, that time scaled by m / M (full waves)."""
        i = bisect.bisect_left(self.m, m)
        if i < len(self.m):
            return self.seconds[i]
        return self.seconds[-1] * m / self.m[-1]


@functools.cache
def _table(chip_id: str, dtype: str) -> dict[tuple[int, int], KernelCurve]:
    """The packaged table of ``chip_id`` at ``dtype`` by (N, K); empty where none ships."""
    path = resources.files("chipwise.perf").joinpath(
        "data", "kernels", f"{chip_id}-{dtype}-gemm.csv"
    )
    if not path.is_file():
        return {}
    points: dict[tuple[int, int], list[tuple[int, float]]] = {}
    with path.open() as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            key = (int(row["n"]), int(row["k"]))
            points.setdefault(key, []).append((int(row["m"]), float(row["us"]) / MEGA))
    return {
        key: KernelCurve(m=tuple(m for m, _ in sorted(p)), seconds=tuple(s for _, s in sorted(p)))
        for key, p in points.items()
    }


def measured_gemm_s(chip_id: str, dtype: str, m: int, n: int, k: int) -> float | None:
    """Measured time of one (m x k) @ (k x n) GEMM on ``chip_id`` at ``dtype``, or None where
    no measurement of that (N, K) ships."""
    curve = _table(chip_id, dtype).get((n, k))
    return None if curve is None or m < 1 else curve.at(m)


__all__ = ["KernelCurve", "measured_gemm_s"]
