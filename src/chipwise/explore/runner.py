"""Run a grid where the work is: this process, a pool over the local cores, or Ray.

``run_grid`` resolves the grid's chips (catalog, derived, files), refuses a grid larger than
``max_points``, reads finished points from the cache, and hands the rest out as tasks (one
per workload x chip x precision x phase x settings, its points one per chip count) to

* ``workers=1``: this process;
* ``workers=N``: a pool of N processes (``chipwise.pool``: forked from a fork server that
  has imported chipwise once, so starting a worker costs no import);
* ``ray="auto" | ADDRESS | "local"``: a Ray cluster (the ``[ray]`` extra): "auto" joins the
  cluster this machine belongs to, an address (``ray://head:10001`` or ``head:6379``) joins
  that one, "local" starts one on this machine bound to 127.0.0.1; a Ray session the caller
  already started is used as it is.

Each task runs ``evaluate.evaluate``, a pure function of the task, so every runner gives
the same rows bit for bit. Rows are cached as tasks finish: stop the run at any time and
run it again to compute only what is missing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chipwise.explore.cache import PointCache, chip_fingerprint, point_key, workload_fingerprint
from chipwise.explore.evaluate import Row, Task, evaluate
from chipwise.explore.grid import DEFAULT_MAX_POINTS, ExploreError, Grid
from chipwise.explore.table import ExploreTable
from chipwise.hardware import (
    UserChip,
    default_catalog,
    derive_chip,
    load_chip_file,
    with_user_chips,
)
from chipwise.limits import MAX_WORKERS
from chipwise.pool import Progress, default_workers, run_tasks
from chipwise.workload import load_workload_model

# With workers=None (every core) a grid with fewer points than this to compute runs in this
# process: a spawned worker first imports chipwise and reads the catalog (about 2 s on one
# core), which a serving point (about 0.02-0.05 s, benchmarks/explore.py) never pays back.
MIN_POINTS_FOR_POOL = 200
RAY_EXTRA_HINT = "pip install 'chipwise[ray]'"


@dataclass(frozen=True, slots=True, kw_only=True)
class ExploreRun:
    """The table and how it was made: points computed now and read from the cache."""

    table: ExploreTable
    computed: int
    cached: int
    runner: str  # "serial" | "pool of N" | "ray"


def resolve_chips(grid: Grid) -> tuple[UserChip, ...]:
    """The grid's chips in order: named ones (catalog or derived), then chip files."""
    catalog = default_catalog()
    found: dict[str, UserChip] = {}
    for name in grid.spec.chips:
        if ":" in name:
            u = derive_chip(name, catalog)
        else:
            c = catalog.chip(name)
            u = UserChip(
                chip=c, offers=catalog.offers_for(c.id), purchase=catalog.purchase_for(c.id)
            )
        found.setdefault(u.chip.id, u)
    files = [load_chip_file(grid.base_dir / f) for f in grid.spec.chip_files]
    with_user_chips(catalog, files)  # a file chip may not take a catalog chip's id or alias
    for u in files:
        if u.chip.id in found:
            raise ExploreError(
                f"chip {u.chip.id!r} is in the grid twice; give each file its own id"
            )
        found[u.chip.id] = u
    return tuple(found.values())


def _workload_source(name: str, base: Path) -> str:
    """A config path relative to the grid file; a zoo id as is."""
    candidate = base / name
    return str(candidate) if candidate.is_file() else name


def plan_tasks(grid: Grid, chips: Sequence[UserChip]) -> list[Task]:
    """The grid's points grouped into tasks (the counts of one question share a task)."""
    by_id = {u.chip.id: u for u in chips}
    settings = grid.settings
    sources = {w: _workload_source(w, grid.base_dir) for w in grid.spec.workloads}
    tasks: list[Task] = []
    group: list[Any] = []
    per_group = len(grid.spec.counts)
    for point in grid.points(list(by_id)):
        group.append(point)
        if len(group) == per_group:
            tasks.append(
                Task(
                    points=tuple(group),
                    chip=by_id[point.chip],
                    workload_source=sources[point.workload],
                    settings=settings,
                )
            )
            group = []
    return tasks


def _keys(tasks: Sequence[Task]) -> dict[int, str]:
    chip_fp: dict[str, str] = {}
    work_fp: dict[str, str] = {}
    out: dict[int, str] = {}
    for t in tasks:
        cid = t.chip.chip.id
        if cid not in chip_fp:
            chip_fp[cid] = chip_fingerprint(t.chip)
        if t.workload_source not in work_fp:
            work_fp[t.workload_source] = workload_fingerprint(t.workload_source)
        for p in t.points:
            out[p.index] = point_key(p, chip_fp[cid], work_fp[t.workload_source], t.settings)
    return out


def run_grid(
    grid: Grid,
    *,
    workers: int | None = None,
    ray: str | None = None,
    cache_dir: Path | None = None,
    max_points: int = DEFAULT_MAX_POINTS,
    progress: Progress | None = None,
) -> ExploreRun:
    """Every point of ``grid`` as a row (see the module docstring for the runners).

    Raises:
        ExploreError: more points than ``max_points``; ray missing; a bad cache folder.
        ChipwiseError: an unknown workload or chip, a bad chip file (before any work).
    """
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise ExploreError(f"--workers must be in 1..{MAX_WORKERS:,}, got {workers}")
    chips = resolve_chips(grid)
    total = grid.size(len(chips))
    if total > max_points:
        raise ExploreError(
            f"the grid has {total:,} points, over --max-points {max_points:,}; narrow an axis "
            f"or raise --max-points"
        )
    for source in {_workload_source(w, grid.base_dir) for w in grid.spec.workloads}:
        load_workload_model(source)  # an unknown workload fails now, not in every row
    tasks = plan_tasks(grid, chips)
    keys = _keys(tasks)
    cache = PointCache(cache_dir) if cache_dir is not None else None
    rows: dict[int, Row] = {}
    try:
        if cache is not None:
            hit = cache.get_many(keys.values())
            rows = {i: hit[k] for i, k in keys.items() if k in hit}
        cached = len(rows)
        todo = [_without(t, rows) for t in tasks]
        todo = [t for t in todo if t.points]
        done = cached
        if progress is not None:
            progress(done, total)

        def finished(result: list[tuple[int, Row]]) -> None:
            nonlocal done
            rows.update(result)
            if cache is not None:
                cache.put_many((keys[i], r) for i, r in result)
            done += len(result)
            if progress is not None:
                progress(done, total)

        if ray is not None:
            label = "ray"
            _run_ray(todo, ray, finished)
        elif not todo:
            label = "cache"
        else:
            n = _pool_size(workers, todo)
            label = "serial" if n == 1 else f"pool of {n}"
            run_tasks(evaluate, todo, n, finished, preload="chipwise.explore.evaluate")
    finally:
        if cache is not None:
            cache.close()
    table = ExploreTable(tuple(rows[i] for i in sorted(rows)))
    return ExploreRun(table=table, computed=total - cached, cached=cached, runner=label)


def _pool_size(workers: int | None, todo: Sequence[Task]) -> int:
    """Processes to use: as asked, or (None) every core unless the work is small."""
    if workers is None:
        points = sum(len(t.points) for t in todo)
        workers = 1 if points < MIN_POINTS_FOR_POOL else default_workers()
    return max(1, min(workers, len(todo)))


def _without(task: Task, rows: dict[int, Row]) -> Task:
    left = tuple(p for p in task.points if p.index not in rows)
    if len(left) == len(task.points):
        return task
    return Task(points=left, chip=task.chip, workload_source=task.workload_source,
                settings=task.settings)  # fmt: skip


def _run_ray(
    tasks: Sequence[Task], address: str, finished: Callable[[list[tuple[int, Row]]], None]
) -> None:
    ray = import_ray(loopback=address == "local")
    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(
                _node_ip_address="127.0.0.1",
                include_dashboard=False,
                logging_level=logging.WARNING,
            )
        else:
            try:
                ray.init(address=address, logging_level=logging.WARNING)
            except ConnectionError as err:
                raise ExploreError(
                    f"--ray {address}: no Ray cluster there ({err}); start one ('ray start "
                    "--head') or use --ray local"
                ) from err
        started = True
    pending: list[Any] = []
    try:
        remote = ray.remote(num_cpus=1)(evaluate)
        pending = [remote.remote(t) for t in tasks]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                finished(ray.get(ref))
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        raise
    finally:
        if started:
            ray.shutdown()


# Ray picks the machine's network address as its node address, and its servers listen there.
# This switch (ray/_private/ray_constants.py, ENABLE_RAY_CLUSTER; read when ray is imported)
# makes a one-machine Ray use the loopback address instead, so "--ray local" listens on
# 127.0.0.1 only (tests/explore/test_ray.py checks it with 'ss').
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def import_ray(*, loopback: bool) -> Any:
    if loopback:
        os.environ[LOOPBACK_ENV] = "0"
    try:
        import ray
    except ImportError as err:
        raise ExploreError(f"--ray needs ray, which is not installed; {RAY_EXTRA_HINT}") from err
    if loopback and not ray.is_initialized():
        constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
        if constants is not None and hasattr(constants, "ENABLE_RAY_CLUSTER"):
            constants.ENABLE_RAY_CLUSTER = False  # ray was imported before the switch was set
    return ray
