"""``chipwise bench``, ``bench list``, ``bench compare``, ``calibrate``, ``profile``.

Measure the local device, keep the results in the measurement store (SQLite), fit the
performance model's efficiency parameters to them, and time a real model against the
prediction.

JSON (``--json``), ``schema_version`` 1; fields are only ever added within a version::

    bench          {"schema_version", "run_id", "db", "saved_to", "device", "measurements",
                    "notes"}
                   device = {"name", "kind", "vendor", "library", "library_version",
                             "driver_version", "host", "count", "memory_bytes", "chip_id"}
                   db = the store written, null with --no-store or when the store failed
                   after measuring; saved_to = then the JSON file holding the run (exit 2)
    bench list     {"schema_version", "measurements"}
    MEASUREMENT =  {"id", ...every column of bench.store.Measurement}
    bench compare  {"schema_version", "calibrated", "n", "median_abs_error",
                    "p90_abs_error", "rows", "skipped"}
                   row = {"measurement_id", "chip_id", "benchmark", "shape", "dtype",
                          "measured_s", "predicted_s", "error", "bound"}
    calibrate      {"schema_version", "run_id", "db", "device_name", "chip_id", "values",
                    "efficiency", "measured", "notes"}
                   values = [{"field", "value", "n_points", "note"}]
    profile        {"schema_version", "spec", "device", "chip_id", "dtype", "step_times_s",
                    "measured_step_s", "predicted_step_s", "predicted_on", "error",
                    "graph_flops", "graph_ops", "notes"}

``--db`` and ``--json`` may also come before a ``bench`` subcommand (``chipwise bench --db
X list``); the options of the run itself (``--quick``, ``--device``, ...) may not.

Nothing measured is lost: ``bench`` opens the store and takes its write lock before it
measures (a corrupt, newer or locked store is a one-line error at once), and if the store
fails after measuring, the run is written to ``chipwise-bench-<run>.json`` (the current
directory, else the temporary one) and the error line names that file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.table import Table
from typer._click.exceptions import UsageError

from chipwise.cli.app import app
from chipwise.cli.defaults import BENCHMARKS, DEVICE_REQUESTS
from chipwise.cli.output import (
    console,
    err_console,
    print_json,
    progress_bar,
    quiet_option,
    show_progress,
    spinner,
)
from chipwise.errors import MeasurementError
from chipwise.limits import MAX_PROFILE_STEPS
from chipwise.units import format_rate, format_seconds

if TYPE_CHECKING:
    from chipwise.bench.calibrate import Calibration
    from chipwise.bench.cases import Case
    from chipwise.bench.micro import BenchResult
    from chipwise.bench.store import Measurement

bench_app = typer.Typer(
    help=(
        "Measure this machine's GPU, TPU or CPU (GEMM, memory bandwidth, attention, "
        "all-reduce) and keep the results in the measurement store."
    ),
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(bench_app, name="bench")

DB_HELP = "Measurement store (SQLite). Default: $CHIPWISE_DB, else the user data dir."


def _split(text: str | None, known: tuple[str, ...], what: str) -> tuple[str, ...] | None:
    if text is None:
        return None
    items = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    bad = [i for i in items if i not in known]
    if bad or not items:
        raise MeasurementError(f"unknown {what} {bad[0] if bad else text!r}; choose from "
                               f"{', '.join(known)} (comma-separated)")  # fmt: skip
    return items


def _peak_fraction(m: Measurement) -> float | None:
    """Achieved / catalog peak: FLOP/s for GEMM and attention, bandwidth for memory ops."""
    from chipwise.hardware import default_catalog

    if m.chip_id is None:
        return None
    chip = default_catalog().chip(m.chip_id)
    if m.benchmark in ("gemm", "attention"):
        if not chip.supports(m.dtype):
            return None
        return m.achieved_flops_per_s / chip.peak_flops_per_s(m.dtype)
    if m.benchmark in ("copy", "elementwise", "reduction"):
        return m.achieved_bytes_per_s / chip.hbm_bytes_per_s
    if m.benchmark == "allreduce":
        return m.achieved_bytes_per_s / chip.scale_up.bytes_per_s_per_chip
    return None


def _compact_table() -> Table:
    """One space between columns and no outer border: the tables fit 80 columns."""
    return Table(box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False)


def measurements_table(rows: tuple[Measurement, ...], *, stored: bool) -> Table:
    """Measurements as a rich table (rates SI-prefixed, %peak only for catalog chips).
    Stored rows show their id (and their device, when there are several); fresh ones their
    fastest run too."""
    with_device = stored and len({m.device_name for m in rows}) > 1
    fractions = [_peak_fraction(m) for m in rows]
    with_peak = any(f is not None for f in fractions)
    table = _compact_table()
    if stored:
        table.add_column("id", justify="right", no_wrap=True)
    if with_device:
        table.add_column("device", max_width=12, no_wrap=True)
    table.add_column("benchmark", no_wrap=True)
    table.add_column("shape", overflow="fold", min_width=8)
    for name in ("dtype", "median", *(() if stored else ("min",)), "FLOP/s", "bytes/s"):
        table.add_column(name, justify="left" if name == "dtype" else "right", no_wrap=True)
    if with_peak:
        table.add_column("%peak", justify="right", no_wrap=True)
    for m, fraction in zip(rows, fractions, strict=True):
        times = [format_seconds(m.time_s)]
        if not stored:
            times.append(format_seconds(m.time_s_min))
        cells = [
            m.benchmark,
            m.shape,
            m.dtype,
            *times,
            format_rate(m.achieved_flops_per_s) if m.flops else "",
            format_rate(m.achieved_bytes_per_s, "B/s"),
        ]
        if with_peak:
            cells.append(f"{fraction:.0%}" if fraction is not None else "")
        if with_device:
            cells = [m.chip_id or m.device_name, *cells]
        if stored:
            cells = [str(m.id), *cells]
        table.add_row(*cells)
    return table


def _device_dict(result: BenchResult) -> dict[str, Any]:
    d = result.device
    return {
        "name": d.name, "kind": d.kind, "vendor": d.vendor, "library": d.library,
        "library_version": d.library_version, "driver_version": d.driver_version,
        "host": d.host, "count": d.count, "memory_bytes": d.memory_bytes, "chip_id": d.chip_id,
    }  # fmt: skip


# Options of the run itself ('chipwise bench'); with a subcommand they would be ignored, so
# they are refused. --db and --json also work before a subcommand ('bench --db X list').
_RUN_OPTIONS = (
    ("--quick", "quick", False), ("--device", "device", "auto"), ("--dtypes", "dtypes", None),
    ("--only", "only", None), ("--quiet", "quiet", False), ("--no-store", "no_store", False),
)  # fmt: skip


@bench_app.callback()
def bench(
    ctx: typer.Context,
    quick: bool = typer.Option(False, "--quick", help="Tiny sizes only: a smoke test in seconds."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP + " Also for list/compare."),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON (schema_version 1). Also for list/compare."
    ),
    device: str = typer.Option(
        "auto", "--device", help=f"Which device: {' | '.join(DEVICE_REQUESTS)}."
    ),
    dtypes: str | None = typer.Option(
        None,
        "--dtypes",
        help="GEMM/attention dtypes, comma-separated (fp64 fp32 tf32 bf16 fp16). Default: "
        "bf16,fp32 on GPUs and TPUs, fp32 on a CPU.",
    ),
    only: str | None = typer.Option(
        None,
        "--only",
        help=f"Only these benchmarks, comma-separated ({' '.join(BENCHMARKS)}). Default: all.",
    ),
    quiet: bool = quiet_option(),
    no_store: bool = typer.Option(
        False, "--no-store", help="Print the results without writing them to the store."
    ),
) -> None:
    """Run microbenchmarks on the local device and store the results."""
    if ctx.invoked_subcommand is not None:
        values = {"quick": quick, "device": device, "dtypes": dtypes, "only": only,
                  "quiet": quiet, "no_store": no_store}  # fmt: skip
        given = [flag for flag, name, default in _RUN_OPTIONS if values[name] != default]
        if given:
            raise UsageError(
                f"{given[0]} is an option of 'chipwise bench' (running benchmarks), not of "
                f"'chipwise bench {ctx.invoked_subcommand}'; drop it",
                ctx,
            )
        obj = ctx.ensure_object(dict)
        obj["bench_db"], obj["bench_json"] = db, as_json
        return
    # imported here, not above: 'bench list --help' runs this callback too
    from chipwise.bench import store
    from chipwise.bench.devices import detect_device
    from chipwise.bench.micro import BenchConfig, run_benchmarks

    config = BenchConfig(
        quick=quick,
        dtypes=_split(dtypes, ("fp64", "fp32", "tf32", "bf16", "fp16"), "dtype"),
        benchmarks=_split(only, BENCHMARKS, "benchmark") or BENCHMARKS,
    )
    path = store.resolve_db(db)
    if not no_store:
        store.check_store(path)  # before measuring: a bad store must not cost a run
    dev = detect_device(device)
    if not (as_json or quiet):
        err_console.print(f"benchmarking {dev.label}", soft_wrap=True, highlight=False)
    with progress_bar(show_progress(quiet=quiet, as_json=as_json)) as progress:
        task = progress.add_task("bench", total=None)

        def on_case(case: Case, index: int, total: int) -> None:
            progress.update(task, description=case.label, completed=index, total=total)

        result = run_benchmarks(dev, config, on_case=on_case)
    failed: MeasurementError | None = None
    saved: Path | None = None
    if not no_store:
        try:
            store.add_measurements(path, result.measurements)
        except MeasurementError as err:  # the store broke while we measured: keep the run
            failed = err
            saved = store.save_fallback(result.measurements, run_id=result.run_id, reason=str(err))
    if as_json:
        print_json(
            {
                "schema_version": store.SCHEMA_VERSION,
                "run_id": result.run_id,
                "db": None if no_store or failed else str(path),
                "saved_to": str(saved) if saved else None,
                "device": _device_dict(result),
                "measurements": [store.measurement_to_dict(m) for m in result.measurements],
                "notes": list(result.notes),
            }
        )
        _raise_if_not_stored(failed, saved, result.run_id)
        return
    console.print(result.device.label, soft_wrap=True, highlight=False)
    console.print(measurements_table(result.measurements, stored=False))
    for note in result.notes:
        console.print(f"note: {note}", soft_wrap=True)
    where = "not stored (--no-store)" if no_store else f"stored in {path}"
    if failed:
        where = f"saved in {saved}"
    console.print(
        f"{len(result.measurements)} measurements, run {result.run_id}, {where}", soft_wrap=True
    )
    _raise_if_not_stored(failed, saved, result.run_id)


def _raise_if_not_stored(failed: MeasurementError | None, saved: Path | None, run_id: str) -> None:
    """After printing the results: a store that failed is still an error (exit 2), and the
    line names the file that holds the run."""
    if failed is not None:
        raise MeasurementError(
            f"{failed}; the results of run {run_id} are saved in {saved} (the same JSON as "
            "'chipwise bench --json')"
        )


def _group_db(ctx: typer.Context, db: Path | None) -> Path | None:
    """This subcommand's --db, else the one given to 'bench' itself; two different is an
    error rather than a silent choice."""
    group_db = (ctx.obj or {}).get("bench_db")
    if db is not None and group_db is not None and Path(db) != Path(group_db):
        raise UsageError(
            f"--db given twice ({group_db} before the subcommand, {db} after); give it once",
            ctx,
        )
    return db if db is not None else group_db


def _group_json(ctx: typer.Context, as_json: bool) -> bool:
    return as_json or bool((ctx.obj or {}).get("bench_json"))


@bench_app.command("list")
def list_measurements(
    ctx: typer.Context,
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
    device: str | None = typer.Option(
        None, "--device", help="Only devices whose name contains this, or a chip id (h100)."
    ),
    benchmark: str | None = typer.Option(
        None, "--benchmark", help=f"Only this benchmark: {' | '.join(BENCHMARKS)}."
    ),
    run_id: str | None = typer.Option(None, "--run", help="Only this run id."),
) -> None:
    """List stored measurements."""
    from chipwise.bench import store

    db, as_json = _group_db(ctx, db), _group_json(ctx, as_json)
    rows = store.list_measurements(db, device=device, benchmark=benchmark, run_id=run_id)
    if as_json:
        print_json(store.export_json(rows))
        return
    if not rows:
        console.print(
            f"no measurements in {store.resolve_db(db)}; run 'chipwise bench'", soft_wrap=True
        )
        return
    console.print(measurements_table(rows, stored=True))
    runs = len({m.run_id for m in rows})
    devices = ", ".join(sorted({m.chip_id or m.device_name for m in rows}))
    console.print(
        f"{len(rows)} measurements from {runs} run(s) on {devices}, in {store.resolve_db(db)}",
        soft_wrap=True,
    )


@bench_app.command("compare")
def compare(
    ctx: typer.Context,
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    chip: str | None = typer.Option(None, "--chip", help="Only this chip (id or alias)."),
    benchmark: str | None = typer.Option(
        None, "--benchmark", help=f"Only this benchmark: {' | '.join(BENCHMARKS)}."
    ),
    calibrated: bool = typer.Option(
        False, "--calibrated", help="Predict with the calibrated efficiencies (in-sample)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
) -> None:
    """Compare stored measurements of catalog chips with the model's predictions."""
    from chipwise.bench import store
    from chipwise.bench.compare import compare_measured, comparison_to_dict

    db, as_json = _group_db(ctx, db), _group_json(ctx, as_json)
    result = compare_measured(db, chip_id=chip, benchmark=benchmark, calibrated=calibrated)
    if as_json:
        print_json(comparison_to_dict(result))
        return
    if not result.rows:
        console.print(
            f"no measurements of catalog chips in {store.resolve_db(db)}; run 'chipwise "
            "bench' on a GPU or TPU (a CPU has no catalog entry to compare with)",
            soft_wrap=True,
        )
        for note in result.skipped:
            console.print(f"skipped: {note}", soft_wrap=True)
        return
    table = _compact_table()
    for name in ("chip", "benchmark", "shape", "dtype"):
        table.add_column(name, no_wrap=True)
    for name in ("measured", "predicted", "error"):
        table.add_column(name, justify="right")
    table.add_column("bound")
    for r in result.rows:
        table.add_row(r.chip_id, r.benchmark, r.shape, r.dtype, format_seconds(r.measured_s),
                      format_seconds(r.predicted_s), f"{r.error:+.0%}", r.bound)  # fmt: skip
    console.print(table)
    kind = "calibrated" if calibrated else "packaged"
    console.print(
        f"{len(result.rows)} rows, {kind} efficiencies: median |error| "
        f"{result.median_abs_error:.1%}, p90 {result.p90_abs_error:.1%}",
        soft_wrap=True,
    )
    for note in result.skipped:
        console.print(f"skipped: {note}", soft_wrap=True)


def _calibration_dict(cal: Calibration, db: Path, saved: bool) -> dict[str, Any]:
    from chipwise.bench import store
    from chipwise.perf import EFFICIENCY_PARAMETERS

    eff = cal.efficiency
    return {
        "schema_version": store.SCHEMA_VERSION,
        "run_id": cal.run_id,
        "db": str(db) if saved else None,
        "device_name": cal.device_name,
        "chip_id": cal.chip_id,
        "values": [
            {"field": v.field, "value": v.value, "n_points": v.n_points, "note": v.note}
            for v in cal.values
        ],
        "efficiency": None if eff is None else {p: getattr(eff, p) for p in EFFICIENCY_PARAMETERS},
        "measured": {
            "gemm_flops_per_s": dict(cal.measured.gemm_flops_per_s),
            "attention_flops_per_s": dict(cal.measured.attention_flops_per_s),
            "bytes_per_s": cal.measured.bytes_per_s,
            "launch_overhead_s": cal.measured.launch_overhead_s,
        },
        "notes": list(cal.notes),
    }


@app.command("calibrate")
def calibrate_command(
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    chip: str | None = typer.Option(
        None, "--chip", help="Calibrate this catalog chip (default: the latest measured device)."
    ),
    device: str | None = typer.Option(
        None, "--device", help="Or: the measured device whose name contains this."
    ),
    no_save: bool = typer.Option(
        False, "--no-save", help="Fit and print, without storing the calibration."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
) -> None:
    """Fit the performance model's efficiency parameters to stored measurements."""
    from chipwise.bench import store
    from chipwise.bench.calibrate import calibrate, save_calibration
    from chipwise.hardware import default_catalog
    from chipwise.perf import EFFICIENCY_PARAMETERS, efficiency_for

    cal = calibrate(db, chip_id=chip, device=device)
    path = store.resolve_db(db)
    if not no_save:
        save_calibration(path, cal)
    if as_json:
        print_json(_calibration_dict(cal, path, not no_save))
        return
    packaged = efficiency_for(default_catalog().chip(cal.chip_id)) if cal.chip_id else None
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("field", no_wrap=True)
    table.add_column("fitted", justify="right")
    if packaged is not None:
        table.add_column("packaged", justify="right")
    table.add_column("n", justify="right")
    table.add_column("how")
    for v in cal.values:
        cells = [v.field, f"{v.value:.4g}"]
        if packaged is not None:
            cells.append(
                f"{getattr(packaged, v.field):.4g}" if v.field in EFFICIENCY_PARAMETERS else ""
            )
        table.add_row(*cells, str(v.n_points), v.note)
    target = cal.chip_id or "not in the catalog: described by its measurements"
    console.print(f"{cal.device_name} ({target})", soft_wrap=True, highlight=False)
    console.print(table)
    for note in cal.notes:
        console.print(f"note: {note}", soft_wrap=True)
    where = "not stored (--no-save)" if no_save else f"stored in {path}"
    console.print(f"calibration {cal.run_id}, {where}", soft_wrap=True)


def parse_factory_args(args: list[str]) -> dict[str, int | float | bool | str]:
    """``["n_layer=12", "dropout=0.1", "bias=false"]`` -> keyword arguments (ints, floats and
    true/false are converted; anything else stays text)."""
    out: dict[str, int | float | bool | str] = {}
    for arg in args:
        key, sep, raw = arg.partition("=")
        if not sep or not key.strip().isidentifier():
            raise MeasurementError(f"--arg {arg!r}: write KEY=VALUE, e.g. --arg n_layer=12")
        value: int | float | bool | str = raw
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        else:
            for convert in (int, float):
                try:
                    value = convert(raw)
                    break
                except ValueError:
                    continue
        out[key.strip()] = value
    return out


@app.command("profile")
def profile_command(
    spec: str = typer.Argument(
        ..., metavar="MODULE:FACTORY", help="'pkg.module:build' or 'path/file.py:build'."
    ),
    trust_code: bool = typer.Option(
        False, "--trust-code", help="Allow importing (running) the factory's code. Required."
    ),
    device: str = typer.Option("auto", "--device", help="auto | cuda | cpu (PyTorch)."),
    steps: int = typer.Option(
        3,
        "--steps",
        min=1,
        max=MAX_PROFILE_STEPS,
        help="Timed training steps (the median is reported).",
    ),
    warmup: int = typer.Option(
        1, "--warmup", min=0, max=MAX_PROFILE_STEPS, help="Untimed steps before the timed ones."
    ),
    dtype: str | None = typer.Option(
        None, "--dtype", help="Cast the model to fp32 | bf16 | fp16. Default: as built."
    ),
    args: list[str] = typer.Option(
        [], "--arg", help="A factory keyword argument, KEY=VALUE (repeat), e.g. n_layer=12."
    ),
    db: Path | None = typer.Option(
        None, "--db", help=DB_HELP + " Its calibration of this device, if any, is used."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
    quiet: bool = quiet_option(),
) -> None:
    """Time real training steps of a PyTorch model here and compare with the prediction."""
    from chipwise.bench import store
    from chipwise.bench.profile import profile_factory

    kwargs = parse_factory_args(args)
    with spinner(show_progress(quiet=quiet, as_json=as_json), f"profiling {spec}"):
        r = profile_factory(spec, trust_code=trust_code, device=device, steps=steps,
                            warmup=warmup, dtype=dtype, db=db,
                            factory_kwargs=kwargs)  # fmt: skip
    if as_json:
        print_json(
            {
                "schema_version": store.SCHEMA_VERSION,
                "spec": r.spec,
                "device": r.device.name,
                "chip_id": r.device.chip_id,
                "dtype": r.dtype,
                "step_times_s": list(r.step_times_s),
                "measured_step_s": r.measured_step_s,
                "predicted_step_s": r.predicted_step_s,
                "predicted_on": r.predicted_on,
                "error": r.error,
                "graph_flops": r.graph_flops,
                "graph_ops": r.graph_ops,
                "notes": list(r.notes),
            }
        )
        return
    lines = [
        f"{r.spec} on {r.device.label}, {r.dtype}",
        f"measured step:  {format_seconds(r.measured_step_s)} (median of {len(r.step_times_s)})",
        f"predicted step: {format_seconds(r.predicted_step_s)} on {r.predicted_on}, "
        f"{r.graph_ops} ops, {r.graph_flops:.3g} FLOP",
        f"error:          {r.error:+.0%} (predicted / measured - 1)",
    ]
    for line in lines:
        console.print(line, soft_wrap=True, highlight=False)
