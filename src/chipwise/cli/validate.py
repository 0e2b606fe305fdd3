"""``chipwise validate``: predicted vs published measurements, every row, with error stats.

JSON (``--json``): ``{"schema_version": 1, "rows": [{id, workload, phase, chip, chips,
precision, metric, measured, predicted, error, plan, fits, why, source, in_sample,
lopo_predicted}], "summary": {group: {rows, median_abs_error, p90_abs_error}},
"out_of_sample": {group: {...}}, "lopo": {"source", "date"}}``. ``summary`` scores every
row as shipped (groups all, train, train-gpu, train-tpu, train-1024+, train-moe,
finetune, infer, microbench, those that have rows); ``out_of_sample`` the data-driven groups of
``chipwise.validate.score_groups`` on the rows no constant used, the training rows
leave-one-publication-out. ``in_sample`` lists the constants read off or fitted to a row
(``validate/data/in_sample.toml``). Rows that cannot be predicted have ``predicted`` and
``error`` null and say ``why``.

The summary puts the out-of-sample figure first and the as-shipped one beside it; a ``*``
after a row's error marks it in-sample. The leave-one-publication-out predictions come from
the shipped confidence table (``benchmarks/validate.py --write-confidence``; a test keeps it
current); ``--lopo`` recomputes them (refits for every publication: about 20 s of CPU).

The table shows id, workload, chip, n, measured, predicted and error, readable at 80
columns; ``--wide`` adds the metric, the plan (and whether it fits) and the row's notes.
``--measured [--db PATH] [--calibrated]`` compares the local measurement store instead
(``bench.compare.compare_measured``; its JSON is ``bench compare --json``'s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from chipwise.cli.app import app
from chipwise.cli.output import (
    console,
    print_json,
    progress_bar,
    quiet_option,
    show_progress,
    spinner,
)
from chipwise.errors import ChipwiseError
from chipwise.limits import MAX_WORKERS
from chipwise.pool import default_workers
from chipwise.units import format_seconds

if TYPE_CHECKING:
    from chipwise.bench.compare import Comparison
    from chipwise.validate import GroupScore, Report, Result, Stats

JSON_SCHEMA_VERSION = 1


class ValidateOptionError(ChipwiseError):
    """Contradictory ``chipwise validate`` options."""


class KindChoice(StrEnum):
    train = "train"
    finetune = "finetune"
    infer = "infer"
    microbench = "microbench"


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """Training rows predicted leave-one-publication-out, and where they come from."""

    results: Mapping[str, Result]
    source: str  # "confidence table" | "computed"
    date: str


def shipped_lopo(report: Report) -> Held:
    """The out-of-sample training predictions stored in the shipped confidence table."""
    from chipwise.validate import load_confidence

    try:
        table = load_confidence()
    except ChipwiseError:
        return Held(results={}, source="none (the confidence table is missing)", date="")
    return Held(results=table.lopo_results(report), source="confidence table", date=table.date)


def computed_lopo(report: Report) -> Held:
    """Refit for every publication now (``--lopo``)."""
    from chipwise.validate import leave_one_publication_out

    lopo = leave_one_publication_out(r.case for r in report.results)
    return Held(
        results={r.case.id: r for r in lopo.results},
        source="computed",
        date=date.today().isoformat(),
    )


def result_to_dict(r: Result, held: Mapping[str, Result] | None = None) -> dict[str, Any]:
    from chipwise.validate import in_sample_of

    c = r.case
    lopo = (held or {}).get(c.id)
    return {
        "id": c.id,
        "workload": c.workload,
        "phase": c.phase,
        "chip": c.chip,
        "chips": c.chips,
        "precision": c.precision,
        "metric": c.metric,
        "measured": c.value,
        "predicted": r.predicted,
        "error": r.error,
        "plan": r.plan or None,
        "fits": r.fits,
        "why": r.why or None,
        "source": c.source,
        "in_sample": list(in_sample_of(c.id)),
        "lopo_predicted": None if lopo is None else lopo.predicted,
    }


def _stats_dict(s: Stats) -> dict[str, Any]:
    return {
        "rows": s.rows,
        "median_abs_error": s.median_abs_error,
        "p90_abs_error": s.p90_abs_error,
    }


def report_to_dict(report: Report, held: Held | None = None) -> dict[str, Any]:
    from chipwise.validate import score_groups

    held = held or shipped_lopo(report)
    scores = score_groups(report, held.results)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "rows": [result_to_dict(r, held.results) for r in report.results],
        "summary": {g: _stats_dict(s) for g, s in report.summary().items()},
        "out_of_sample": {
            sc.group: _stats_dict(sc.out_of_sample) for sc in scores if sc.out_of_sample
        },
        "lopo": {"source": held.source, "date": held.date},
    }


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _num(x: float) -> str:
    """Four significant digits, SI-prefixed above 1000: 36260 -> 36.26k, 2.9e12 -> 2.900T."""
    for scale, prefix in _SI:
        if abs(x) >= scale:
            return f"{x / scale:.4g}{prefix}"
    return f"{x:.4g}"


def short_plan(text: str) -> str:
    """``dp=1,fsdp=256,tp=1,...,recompute=full`` -> ``fsdp=256 mb=1 full``: the axes above 1."""
    from chipwise.perf import PLAN_SWITCHES

    if not text:
        return ""
    parts = dict(p.split("=", 1) for p in text.split(","))
    axes = [f"{k}={v}" for k, v in parts.items() if k not in ("microbatch", "recompute")
            and (v != "1" or k in PLAN_SWITCHES)]  # fmt: skip
    return " ".join([*axes, f"mb={parts.get('microbatch', '1')}", parts.get("recompute", "")])


def _workload(text: str) -> str:
    name = text.rsplit("/", 1)[-1]
    return name[:-5] if name.endswith(".json") else name


def _table(title: str) -> Table:
    """A compact table: one space between columns, no outer border (fits 80 columns)."""
    return Table(
        title=title, box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, show_edge=False
    )


def _note(text: str, limit: int = 90) -> str:
    """The first sentence of a row's notes, cut at ``limit`` characters."""
    first = text.split(". ", 1)[0].strip()
    return first if len(first) <= limit else first[: limit - 1] + "\u2026"


def report_table(report: Report, *, wide: bool = False, held: Held | None = None) -> Group:
    """Every row (predicted ones first, in file order), then unusable rows and the summary.

    The default columns fit 80 columns; ``wide`` adds metric, plan (fits) and notes."""
    from chipwise.validate import in_sample_of, score_groups

    table = _table("chipwise validate: predicted vs measured")
    table.add_column("id", no_wrap=True)
    table.add_column("workload", overflow="fold", min_width=12)
    table.add_column("chip", no_wrap=True)
    for col in ("n", "measured", "predicted", "error"):
        table.add_column(col, justify="right", no_wrap=True)
    if wide:
        table.add_column("metric", no_wrap=True)
        table.add_column("plan (fits)", overflow="fold")
        table.add_column("notes", overflow="fold")
    skipped: list[Result] = []
    for r in report.results:
        if r.predicted is None:
            skipped.append(r)
            continue
        err = r.error or 0.0
        style = "red" if abs(err) > 0.25 else ("yellow" if abs(err) > 0.10 else "")
        mark = "*" if in_sample_of(r.case.id) else ""
        cells: list[str | Text] = [
            r.case.id, _workload(r.case.workload), r.case.chip, str(r.case.chips),
            _num(r.case.value), _num(r.predicted), Text(f"{err:+.1%}{mark}", style=style),
        ]  # fmt: skip
        if wide:
            fits = "" if r.fits is None else (" fits" if r.fits else " NO FIT")
            cells += [r.case.metric, f"{short_plan(r.plan)}{fits}", _note(r.case.notes)]
        table.add_row(*cells)
    parts: list[Any] = [table]
    if skipped:
        parts.append(Text("Rows not predicted:", style="bold"))
        for r in skipped:
            # the reason in full with --wide (and in --json); its first 160 characters here
            why = (
                r.why
                if wide or len(r.why) <= SKIP_WHY_CHARS
                else r.why[: SKIP_WHY_CHARS - 1] + "\u2026"
            )
            parts.append(Text(f"  {r.case.id} ({r.case.workload} on {r.case.chip}): {why}"))
    held = held or shipped_lopo(report)
    parts.append(summary_text(score_groups(report, held.results), held))
    return Group(*parts)


def _score(s: Stats | None) -> str:
    if s is None:
        return f"{'-':>4s} {'-':>6s} {'-':>6s}"
    return f"{s.rows:4d} {s.median_abs_error:6.1%} {s.p90_abs_error:6.1%}"


def summary_text(scores: tuple[GroupScore, ...], held: Held) -> Text:
    """Out of sample first (the accuracy to quote), as shipped beside it (fits 80 columns)."""
    lines = [
        "Absolute error (median / 90th percentile):",
        f"  {'':16s} {'out of sample':^18s} | {'as shipped':^18s}",
        f"  {'group':16s} {'rows':>4s} {'median':>6s} {'p90':>6s} | "
        f"{'rows':>4s} {'median':>6s} {'p90':>6s}  in-sample",
    ]
    for sc in scores:
        n = f"{sc.in_sample_rows:9d}" if sc.in_sample_rows else ""
        lines.append(f"  {sc.group:16s} {_score(sc.out_of_sample)} | {_score(sc.as_shipped)}  {n}")
    when = f" of {held.date}" if held.date else ""
    lines += [
        "Out of sample: training rows leave-one-publication-out (the fitted",
        "sustained_tensor_fraction refitted without the row's publication;",
        f"{held.source}{when}; --lopo recomputes); other rows only where no",
        "constant was read off them. * in-sample: a constant was read off or",
        "fitted to the row (validate/data/in_sample.toml).",
    ]
    return Text("\n".join(line.rstrip() for line in lines))


def measured_table(result: Comparison, db: Path | None) -> Group:
    """``validate --measured``: each stored measurement against the model, then the spread."""
    from chipwise.bench.store import resolve_db

    kind = "calibrated" if result.calibrated else "packaged"
    if not result.rows:
        parts: list[Any] = [
            Text(
                f"no measurements of catalog chips in {resolve_db(db)}; run 'chipwise bench' "
                "on a GPU or TPU (a CPU has no catalog entry to compare with)"
            )
        ]
    else:
        table = _table(f"chipwise validate --measured ({kind} efficiencies)")
        for col in ("chip", "benchmark", "shape", "dtype"):
            table.add_column(col, overflow="fold")
        for col in ("measured", "predicted", "error"):
            table.add_column(col, justify="right", no_wrap=True)
        for r in result.rows:
            style = "red" if abs(r.error) > 0.25 else ("yellow" if abs(r.error) > 0.10 else "")
            table.add_row(
                r.chip_id, r.benchmark, r.shape, r.dtype, format_seconds(r.measured_s),
                format_seconds(r.predicted_s), Text(f"{r.error:+.1%}", style=style),
            )  # fmt: skip
        parts = [
            table,
            Text(
                "Absolute error (median / 90th percentile):\n"
                f"  measured    {len(result.rows):3d} rows  {result.median_abs_error:6.1%}  "
                f"{result.p90_abs_error:6.1%}"
            ),
        ]
    parts += [Text(f"skipped: {note}") for note in result.skipped]
    return Group(*parts)


DB_HELP = (
    "Measurement store (SQLite) for --measured. Default: $CHIPWISE_DB, else the user data dir."
)
WIDE_MIN_COLUMNS = 200  # --wide never squeezes its plan and notes below this
SKIP_WHY_CHARS = 160  # a row not predicted: this much of its reason without --wide


@app.command("validate")
def validate_command(
    kind: KindChoice | None = typer.Option(
        None, "--kind", help="Only this kind of row. Default: all."
    ),
    phase: KindChoice | None = typer.Option(
        None,
        "--phase",
        help="Only rows of this phase (the same as --kind; 'infer' also scores throughput, "
        "TTFT and TPOT, and each vendor, apart).",
    ),
    wide: bool = typer.Option(
        False, "--wide", help="Also show metric, plan and notes (at least 200 columns)."
    ),
    measured: bool = typer.Option(
        False, "--measured", help="Compare the local measurement store ('chipwise bench')."
    ),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    calibrated: bool = typer.Option(
        False, "--calibrated", help="With --measured: use the calibrated efficiencies."
    ),
    lopo: bool = typer.Option(
        False, "--lopo", help="Recompute the leave-one-publication-out figures (~20 s CPU)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON (schema_version 1, see the module doc)."
    ),
    workers: int = typer.Option(
        0,
        "--workers",
        min=0,
        max=MAX_WORKERS,
        help="Processes on this machine. Default (0): every core.",
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Predict every published measurement and show the error of each, and its spread."""
    from chipwise.bench.compare import compare_measured, comparison_to_dict
    from chipwise.validate import load_cases, run_validation

    if kind is not None and phase is not None and kind != phase:
        raise ValidateOptionError(
            f"--kind {kind.value} and --phase {phase.value} disagree: give one of them"
        )
    kind = kind or phase
    if measured:
        result = compare_measured(db, calibrated=calibrated)
        if as_json:
            print_json(comparison_to_dict(result))
        else:
            console.print(measured_table(result, db))
        return
    cases = [c for c in load_cases() if kind is None or c.phase == kind.value]
    with progress_bar(show_progress(quiet=quiet, as_json=as_json), "rows") as bar:
        task = bar.add_task("predicting", total=len(cases))

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = run_validation(cases=cases, workers=workers or default_workers(), progress=tick)
    if lopo:
        with spinner(
            show_progress(quiet=quiet, as_json=as_json),
            "refitting sustained_tensor_fraction without each publication",
        ):
            held = computed_lopo(report)
    else:
        held = shipped_lopo(report)
    if as_json:
        print_json(report_to_dict(report, held))
    elif wide:
        Console(width=max(console.width, WIDE_MIN_COLUMNS)).print(
            report_table(report, wide=True, held=held)
        )
    else:
        console.print(report_table(report, held=held))
