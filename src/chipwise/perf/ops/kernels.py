"""Measured kernel times, used instead of the model for the shapes they cover.

A submitter that ships its tuned kernel table has measured the kernel it runs for each
shape on its own chip; that time replaces the model's idealised library (``gpu.plan_gemm``)
for exactly those (chip, dtype, N, K). Files: ``data/kernels/<chip>-<dtype>-gemm.csv``,
columns m, n, k, us, ``#`` lines citing where they come from. Legend: M = tokens (rows),
N = output features, K = input features. An engine's table measured on a full M x N x K grid
(``data/kernels/<engine>-<dtype>-gemm.csv``, columns chip, m, n, k, us: TensorRT-LLM's NVFP4
linears on Blackwell) is interpolated between its points (``measured_grid_gemm_s``).

Serving engines' tensor-parallel all-reduces (``data/kernels/allreduce.csv``: chip, engine,
GPUs, message size in bf16 elements, microseconds) likewise: their one-kernel all-reduces
over peer memory have a latency floor and a mid-size regime (two-shot, pipeline fill) that
a latency-plus-bandwidth collective model misses by 2-3x at 0.25-8 MiB; NCCL's own
collectives (``data/kernels/nccl.csv``: nccl-tests all-gather, reduce-scatter, all-reduce and
all-to-all by chip, GPUs and size) the same way, for the serving steps that call them.
"""

from __future__ import annotations

import bisect
import csv
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TypeVar

from chipwise.units import MEGA

K = TypeVar("K", bound=tuple[object, ...])


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


def _sorted_points(
    name: str, key_of: Callable[[dict[str, str]], K], x_column: str
) -> dict[K, tuple[tuple[int, ...], tuple[float, ...]]]:
    """A packaged ``data/kernels`` CSV (``#`` lines cite its source) as, per ``key_of(row)``,
    its ``x_column`` values ascending and their times in seconds (the ``us`` column)."""
    path = resources.files("chipwise.perf").joinpath("data", "kernels", name)
    points: dict[K, list[tuple[int, float]]] = {}
    with path.open() as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            points.setdefault(key_of(row), []).append((int(row[x_column]), float(row["us"]) / MEGA))
    return {
        key: (tuple(x for x, _ in sorted(p)), tuple(t for _, t in sorted(p)))
        for key, p in points.items()
    }


@functools.cache
def _table(chip_id: str, dtype: str) -> dict[tuple[int, int], KernelCurve]:
    """The packaged table of ``chip_id`` at ``dtype`` by (N, K); empty where none ships."""
    name = f"{chip_id}-{dtype}-gemm.csv"
    if not resources.files("chipwise.perf").joinpath("data", "kernels", name).is_file():
        return {}
    points = _sorted_points(name, lambda row: (int(row["n"]), int(row["k"])), "m")
    return {key: KernelCurve(m=m, seconds=t) for key, (m, t) in points.items()}


def measured_gemm_s(chip_id: str, dtype: str, m: int, n: int, k: int) -> float | None:
    """Measured time of one (m x k) @ (k x n) GEMM on ``chip_id`` at ``dtype``, or None where
    no measurement of that (N, K) ships."""
    curve = _table(chip_id, dtype).get((n, k))
    return None if curve is None or m < 1 else curve.at(m)


def _axis(xs: tuple[int, ...], x: float) -> tuple[tuple[tuple[int, float], ...], float]:
    """One grid axis's bracketing points of ``x`` as (index, weight) pairs for a linear
    interpolation, and a scale for ``x`` past the axis: below its first point that point's
    time (a latency floor), past its last that time times x / last (more full waves or a
    longer stream of the same kernel)."""
    if x <= xs[0]:
        return ((0, 1.0),), 1.0
    if x >= xs[-1]:
        return ((len(xs) - 1, 1.0),), x / xs[-1]
    i = bisect.bisect_left(xs, x)
    w = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
    return ((i - 1, 1.0 - w), (i, w)), 1.0


@dataclass(frozen=True, slots=True)
class GemmGrid:
    """A GEMM kernel's measured times on a full M x N x K grid (ascending axes; seconds by
    (i, j, l) index of m, n, k)."""

    m: tuple[int, ...]
    n: tuple[int, ...]
    k: tuple[int, ...]
    seconds: dict[tuple[int, int, int], float]

    def at(self, m: int, n: int, k: int) -> float:
        """Trilinear interpolation between the grid's points (the time of a GEMM at a fixed
        tile plan is linear in each of M, N and K between waves), with ``_axis``'s floor
        below and scaling past each axis."""
        (am, sm), (an, sn), (ak, sk) = _axis(self.m, m), _axis(self.n, n), _axis(self.k, k)
        t = sum(
            wi * wj * wk * self.seconds[i, j, h] for i, wi in am for j, wj in an for h, wk in ak
        )
        return t * sm * sn * sk


@functools.cache
def _grid_table(engine: str, dtype: str) -> dict[str, GemmGrid]:
    """The packaged grid table ``data/kernels/<engine>-<dtype>-gemm.csv`` (columns chip, m,
    n, k, us) by chip; empty where none ships."""
    name = f"{engine}-{dtype}-gemm.csv"
    if not resources.files("chipwise.perf").joinpath("data", "kernels", name).is_file():
        return {}
    curves = _sorted_points(name, lambda row: (row["chip"], int(row["n"]), int(row["k"])), "m")
    rows: dict[str, dict[tuple[int, int, int], float]] = {}
    for (chip, n, k), (ms, ts) in curves.items():
        rows.setdefault(chip, {}).update(((m, n, k), t) for m, t in zip(ms, ts, strict=True))
    out = {}
    for chip, points in rows.items():
        axes = [tuple(sorted({p[d] for p in points})) for d in range(3)]
        index = [{x: i for i, x in enumerate(axis)} for axis in axes]
        seconds = {(index[0][m], index[1][n], index[2][k]): t for (m, n, k), t in points.items()}
        out[chip] = GemmGrid(m=axes[0], n=axes[1], k=axes[2], seconds=seconds)
    return out


def measured_grid_gemm_s(
    chip_id: str, engine: str, dtype: str, m: int, n: int, k: int
) -> float | None:
    """Measured time of ``engine``'s (m x k) @ (k x n) GEMM at ``dtype`` on ``chip_id``,
    interpolated in the engine's kernel grid (``GemmGrid.at``), or None where no grid of
    that chip ships (TensorRT-LLM's NVFP4 GEMMs on Blackwell: trtllm-fp4-gemm.csv)."""
    grid = _grid_table(engine, dtype).get(chip_id)
    return None if grid is None or m < 1 else grid.at(m, n, k)


@dataclass(frozen=True, slots=True)
class SizeCurve:
    """One collective's measured times over message sizes (elements), ascending."""

    elements: tuple[int, ...]
    seconds: tuple[float, ...]

    def at(self, elements: float) -> float:
        """The time at ``elements``: the smallest size's time below it (the latency floor),
        log-log interpolation between measured sizes, and past the largest size that time
        scaled by the size (bandwidth-bound)."""
        xs, ys = self.elements, self.seconds
        if elements <= xs[0]:
            return ys[0]
        if elements >= xs[-1]:
            return ys[-1] * elements / xs[-1]
        i = bisect.bisect_left(xs, elements)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        w = math.log(elements / x0) / math.log(x1 / x0)
        return float(y0 * (y1 / y0) ** w)


@functools.cache
def _size_table(name: str, what: str) -> dict[tuple[str, str, int], SizeCurve]:
    """A packaged size table (columns chip, ``what``, gpus, elements, us) by (chip, ``what``,
    GPUs)."""
    points = _sorted_points(
        name, lambda row: (row["chip"], row[what], int(row["gpus"])), "elements"
    )
    return {key: SizeCurve(elements=x, seconds=t) for key, (x, t) in points.items()}


# An NVL72 GPU whose NCCL table ships only for the GPUs of one compute tray (AIConfigurator's
# gb200 / gb300 collections: 2 and 4 GPUs) takes, for a larger group inside the rack's NVLink
# domain (an 8-rank attention-DP instance), its HGX twin's measured curve of that size: the
# same GPU (B200 / B300 die) on the same NVLink 5 (18 links, 900 GB/s each way per GPU, every
# GPU one switch hop from every other). Where both were measured (2 and 4 GPUs, every op and
# size of nccl.csv, 336 points) gb200/b200 and gb300/b300 agree to a median ratio of 1.02,
# 96 % of points within 10 %. Without it the fabric's alpha-beta model timed NVIDIA's GB200 /
# GB300 DeepSeek-R1 instances' MoE all-gather + reduce-scatter at half the twin's measured
# time (4.9 against 9.8 ms a step at 320 sequences a rank). The engines' own all-reduce
# (allreduce.csv) likewise: AIConfigurator times TensorRT-LLM's on 2 and 4 GB200s / GB300s
# only, and where an NVL72 group of 8 was measured (vLLM's all-reduce on GB300, 8 GPUs over
# two trays) it runs 1.01-1.05x B300's at 2-128 Mi elements (0.6x at 128-512 Ki, 1.7-1.9x
# at 32 Ki and below, the second tray's latency); without the twin an 8-GPU TensorRT-LLM
# group took the fabric's alpha-beta model, 17 us for a 7 MB all-reduce (213 tokens of
# Llama-3.1-405B) that B200 measured at 51 us.
NCCL_FABRIC_TWIN = {"gb200": "b200", "gb300": "b300"}


def measured_all_reduce_s(chip_id: str, engine: str, gpus: int, elements: float) -> float | None:
    """Measured time of ``engine``'s all-reduce of ``elements`` bf16 values over ``gpus`` GPUs
    of ``chip_id`` in one NVLink domain (a group size its own table lacks: its
    ``NCCL_FABRIC_TWIN``'s, as for NCCL), or None where no measurement ships."""
    found = _own_or_twin(_size_table("allreduce.csv", "engine"), chip_id, engine, gpus)
    return None if found is None or elements <= 0 else found[1].at(elements)


def measured_nccl_s(chip_id: str, op: str, gpus: int, elements: float) -> float | None:
    """Measured time of NCCL's ``op`` (all_gather, reduce_scatter, all_reduce, all_to_all)
    over a whole buffer of ``elements`` 16-bit values on ``gpus`` GPUs of ``chip_id`` in one
    NVLink domain (nccl-tests' size convention; a group size its own table lacks: its
    ``NCCL_FABRIC_TWIN``'s), or None where no measurement ships."""
    found = _own_or_twin(_size_table("nccl.csv", "op"), chip_id, op, gpus)
    return None if found is None or elements <= 0 else found[1].at(elements)


def measured_nccl_launch_s(chip_id: str, op: str, gpus: int) -> float | None:
    """The share of ``measured_nccl_s``'s small-message floor over ``gpus`` GPUs that no
    ring step explains: the intercept at zero steps of the least-squares line through the
    floors of the table that curve comes from (its own or its ``NCCL_FABRIC_TWIN``'s)
    against the ring's ``gpus - 1`` steps, over every group size it measured. nccl-tests
    launches each call from the host, so this is the launch and NCCL's per-call
    bookkeeping, the slope the step's own latency (B200 all-gather: 7.6 us + 1.2 us a step
    over 2, 4 and 8 GPUs). None where no curve ships or its table has one size only."""
    table = _size_table("nccl.csv", "op")
    found = _own_or_twin(table, chip_id, op, gpus)
    if found is None:
        return None
    points = [
        (float(n - 1), curve.seconds[0])
        for (c, o, n), curve in table.items()
        if c == found[0] and o == op
    ]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - slope * mx


def _own_or_twin(
    table: dict[tuple[str, str, int], SizeCurve], chip_id: str, what: str, gpus: int
) -> tuple[str, SizeCurve] | None:
    """(the chip whose curve it is, the curve) of ``what`` over ``gpus`` GPUs in a size
    ``table``: ``chip_id``'s own, else its ``NCCL_FABRIC_TWIN``'s; None where neither ships."""
    for source in (chip_id, NCCL_FABRIC_TWIN.get(chip_id, chip_id)):
        curve = table.get((source, what, gpus))
        if curve is not None:
            return source, curve
    return None


__all__ = [
    "NCCL_FABRIC_TWIN",
    "GemmGrid",
    "KernelCurve",
    "SizeCurve",
    "measured_all_reduce_s",
    "measured_gemm_s",
    "measured_grid_gemm_s",
    "measured_nccl_launch_s",
    "measured_nccl_s",
]
