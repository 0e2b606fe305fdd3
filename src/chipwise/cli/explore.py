"""``chipwise explore [GRID]``: a grid of questions, one row per point, on every core or Ray.

Writes into ``--out`` (default ``explore-out/``): ``points.csv``, ``points.parquet`` (with
pyarrow, the ``[explore]`` extra), ``summary.html`` (with plotly, the ``[web]`` extra) and
``.cache/`` (finished points; run the same command again after an interrupt and only the
missing points are computed). ``--json`` prints ``{schema_version, points, computed,
cached, runner, statuses, files}``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from chipwise.cli.app import app
from chipwise.cli.defaults import DEFAULT_MAX_POINTS
from chipwise.cli.output import err_console, print_json, progress_bar, quiet_option, show_progress
from chipwise.limits import MAX_WORKERS
from chipwise.units import parse_quantity

if TYPE_CHECKING:
    from chipwise.explore import ExploreRun, Grid

JSON_SCHEMA_VERSION = 1
CACHE_FOLDER = ".cache"


def _ints(option: str, values: list[str]) -> list[int]:
    """``--count 1,2,4 --count 8`` -> [1, 2, 4, 8]."""
    from chipwise.explore import ExploreError

    out: list[int] = []
    for text in values:
        for part in text.split(","):
            if not part.strip():
                continue
            try:
                out.append(int(part))
            except ValueError:
                raise ExploreError(f"{option} {part!r} is not a whole number") from None
    return out


def _words(values: list[str]) -> list[str]:
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _quantity(option: str, text: str | None) -> float | None:
    from chipwise.explore import ExploreError

    if text is None:
        return None
    try:
        return parse_quantity(text)
    except ValueError:
        raise ExploreError(
            f"{option} {text!r} is not a number; write e.g. 1e9, 300B or 1M"
        ) from None


@app.command("explore")
def explore_command(
    grid_file: Path | None = typer.Argument(
        None,
        metavar="[GRID]",
        help="A grid TOML file (keys: see docs/explore.md). Options below add to or replace "
        "its axes.",
    ),
    workloads: list[str] = typer.Option([], "--workload", "-w", help="Workload(s); repeatable."),
    chips: list[str] = typer.Option(
        [],
        "--chip",
        help="Chip id, alias or derived chip (h100-sxm:hbm_bandwidth*1.5); repeatable. "
        "Replaces the grid file's chips.",
    ),
    chip_files: list[Path] = typer.Option(
        [], "--chip-file", help="A hypothetical chip TOML file; repeatable."
    ),
    counts: list[str] = typer.Option([], "--count", help="Chip counts, e.g. 1,2,4,8."),
    precisions: list[str] = typer.Option([], "--precision", help="e.g. bf16,fp8."),
    phases: list[str] = typer.Option([], "--phase", help="train and/or infer."),
    seq_len: list[str] = typer.Option([], "--seq-len", help="Train: tokens per sequence."),
    global_batch: list[str] = typer.Option([], "--global-batch", help="Train: sequences/step."),
    batch: list[str] = typer.Option([], "--batch", help="Infer: requests in a static batch."),
    loads: list[str] = typer.Option(
        [],
        "--load",
        help="Infer: batch, concurrency=N, rps=R or max_throughput; repeatable. Default: batch.",
    ),
    input_len: list[str] = typer.Option([], "--input-len", help="Infer: prompt tokens."),
    output_len: list[str] = typer.Option([], "--output-len", help="Infer: generated tokens."),
    tokens: str | None = typer.Option(None, "--tokens", help="Train: tokens of the priced run."),
    requests_per_day: str | None = typer.Option(
        None, "--requests-per-day", help="Infer: the priced daily load."
    ),
    ttft_slo_s: float | None = typer.Option(None, "--ttft-slo-s", help="Infer: TTFT target."),
    tpot_slo_s: float | None = typer.Option(None, "--tpot-slo-s", help="Infer: TPOT target."),
    cloud: str | None = typer.Option(None, "--cloud", help="gcp, aws, azure or any."),
    pricing: str | None = typer.Option(
        None, "--pricing", help="on-demand, spot, committed-1y, committed-3y or any."
    ),
    out: Path = typer.Option(
        Path("explore-out"), "--out", "-o", help="Folder for the table, summary and cache."
    ),
    workers: int = typer.Option(
        0,
        "--workers",
        min=0,
        max=MAX_WORKERS,
        help="Processes on this machine. Default (0): every core (one for a small grid).",
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        help="Run on Ray: 'auto' (this machine's cluster), an address (ray://head:10001) or "
        "'local' (start one here, on 127.0.0.1). Needs the [ray] extra.",
    ),
    max_points: int = typer.Option(
        DEFAULT_MAX_POINTS, "--max-points", min=1, help="Refuse a larger grid."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Compute every point again."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary of the run."),
    quiet: bool = quiet_option(),
) -> None:
    """Predict and price every point of a grid; write one tidy table and an HTML summary."""
    from chipwise.explore import ExploreError, run_grid

    grid = _grid(grid_file, locals())
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ExploreError(f"cannot create --out {out}: {err.strerror}") from err
    cache = None if no_cache else out / CACHE_FOLDER
    with progress_bar(show_progress(quiet=quiet, as_json=as_json), "points") as bar:
        task = bar.add_task("exploring", total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            run = run_grid(
                grid,
                workers=workers or None,
                ray=ray,
                cache_dir=cache,
                max_points=max_points,
                progress=tick,
            )
        except KeyboardInterrupt:
            where = f"; run the same command again to resume from {cache}" if cache else ""
            err_console.print(f"interrupted{where}", soft_wrap=True, highlight=False)
            raise typer.Exit(130) from None
    files = _write(run, out, quiet=quiet or as_json)
    statuses = Counter(str(r["status"]) for r in run.table)
    if as_json:
        print_json(
            {
                "schema_version": JSON_SCHEMA_VERSION,
                "points": len(run.table),
                "computed": run.computed,
                "cached": run.cached,
                "runner": run.runner,
                "statuses": dict(sorted(statuses.items())),
                "files": [str(f) for f in files],
            }
        )
        return
    if not quiet:
        split = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        print(
            f"{len(run.table)} points ({split}); computed {run.computed}, from cache "
            f"{run.cached} ({run.runner})"
        )
        for f in files:
            print(f"wrote {f}")


def _grid(grid_file: Path | None, opts: dict[str, Any]) -> Grid:
    """The grid file's keys, with every option that was given replacing its key."""
    from chipwise.explore import ExploreError, grid_from, load_grid

    if grid_file is not None:
        base = load_grid(grid_file)
        data: dict[str, Any] = base.spec.model_dump()
        base_dir = base.base_dir
    else:
        data, base_dir = {}, Path.cwd()
    given: dict[str, Any] = {
        "workloads": _words(opts["workloads"]),
        "chips": [c.strip() for c in opts["chips"] if c.strip()],
        "counts": _ints("--count", opts["counts"]),
        "precisions": _words(opts["precisions"]),
        "phases": _words(opts["phases"]),
        "seq_len": _ints("--seq-len", opts["seq_len"]),
        "global_batch": _ints("--global-batch", opts["global_batch"]),
        "batch": _ints("--batch", opts["batch"]),
        "loads": _words(opts["loads"]),
        "input_len": _ints("--input-len", opts["input_len"]),
        "output_len": _ints("--output-len", opts["output_len"]),
        "tokens": _quantity("--tokens", opts["tokens"]),
        "requests_per_day": _quantity("--requests-per-day", opts["requests_per_day"]),
        "ttft_slo_s": opts["ttft_slo_s"],
        "tpot_slo_s": opts["tpot_slo_s"],
        "cloud": opts["cloud"],
        "pricing": opts["pricing"],
    }
    data.update({k: v for k, v in given.items() if v not in (None, [])})
    if opts["chip_files"]:
        # files named on the command line are relative to where the command runs
        cwd_files = [str(Path(p).resolve()) for p in opts["chip_files"]]
        data["chip_files"] = [*data.get("chip_files", []), *cwd_files]
    if "workloads" not in data:
        raise ExploreError(
            "no workloads: give a grid file or --workload (e.g. chipwise explore -w llama3-8b "
            "--chip h100 --chip v5p --count 1,2,4,8)"
        )
    return grid_from(data, base_dir, where="grid" if grid_file is None else str(grid_file))


def _write(run: ExploreRun, out: Path, *, quiet: bool) -> list[Path]:
    from chipwise.explore import ExploreError
    from chipwise.explore.table import EXPLORE_EXTRA_HINT

    files = [run.table.write_csv(out / "points.csv")]
    try:
        files.append(run.table.write_parquet(out / "points.parquet"))
    except ExploreError as err:
        if EXPLORE_EXTRA_HINT not in str(err):
            raise
        if not quiet:
            err_console.print(f"no Parquet: {err}", soft_wrap=True, highlight=False, markup=False)
    from chipwise.report.charts import ReportError
    from chipwise.report.explore import write_explore_html

    try:
        files.append(write_explore_html(run.table, out / "summary.html"))
    except ReportError as err:
        if "plotly" not in str(err):
            raise
        if not quiet:
            err_console.print(
                f"no HTML summary: {err}", soft_wrap=True, highlight=False, markup=False
            )
    return files
