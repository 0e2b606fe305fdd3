"""Explore: many questions at once, over workloads x chips (catalog or hypothetical) x counts
x precisions x phases x batch settings, on this machine's cores or a Ray cluster.

* ``explore(grid)`` -> a pandas DataFrame (or an ``ExploreTable`` without pandas): one row
  per point with every predicted figure, the plan and the price (``evaluate.COLUMNS``).
* ``run_grid(grid, workers=, ray=, cache_dir=)`` -> ``ExploreRun`` (the table and how many
  points were computed or read back from the cache).
* ``load_grid(path)`` / ``grid_from(mapping)`` -> ``Grid`` (the TOML format is in
  ``grid.py``).

``chipwise.explore`` (the attribute of the top-level package) is the function, so import this
package's modules with ``from chipwise.explore import runner`` or ``from
chipwise.explore.runner import run_grid``, not ``import chipwise.explore.runner as r``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chipwise.explore.evaluate import COLUMN_NAMES, COLUMNS, Row
from chipwise.explore.grid import (
    DEFAULT_MAX_POINTS,
    ExploreError,
    Grid,
    GridFile,
    Point,
    grid_from,
    load_grid,
)
from chipwise.explore.runner import ExploreRun, run_grid
from chipwise.explore.table import ExploreTable
from chipwise.pool import Progress, default_workers


def explore(
    grid: Grid | Mapping[str, Any] | str | Path,
    *,
    workers: int | None = None,
    ray: str | None = None,
    cache_dir: str | Path | None = None,
    max_points: int = DEFAULT_MAX_POINTS,
    progress: Progress | None = None,
) -> Any:
    """Run ``grid`` and return its table: a ``pandas.DataFrame`` when pandas is installed,
    else the ``ExploreTable`` (rows as dicts).

    Args:
        grid: a ``Grid``, a mapping with the grid file's keys (``{"workloads": [...],
            "chips": [...], "counts": [...]}``), or the path of a grid TOML file.
        workers: processes on this machine (1: this process; None: every core, unless the
            grid is small enough that starting processes would cost more than it saves).
        ray: "auto", a cluster address, or "local" to run on Ray instead (``[ray]`` extra).
        cache_dir: keep finished points here and read them back on the next call.
        max_points: refuse a larger grid.
        progress: called with (points done, points in the grid) as tasks finish.
    """
    if isinstance(grid, str | Path):
        parsed = load_grid(Path(grid))
    elif isinstance(grid, Grid):
        parsed = grid
    else:
        parsed = grid_from(dict(grid))
    run = run_grid(
        parsed,
        workers=workers,
        ray=ray,
        cache_dir=None if cache_dir is None else Path(cache_dir),
        max_points=max_points,
        progress=progress,
    )
    try:
        import pandas  # noqa: F401
    except ImportError:
        return run.table
    return run.table.to_pandas()


__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "DEFAULT_MAX_POINTS",
    "ExploreError",
    "ExploreRun",
    "ExploreTable",
    "Grid",
    "GridFile",
    "Point",
    "Row",
    "default_workers",
    "explore",
    "grid_from",
    "load_grid",
    "run_grid",
]
