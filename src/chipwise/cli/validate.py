"""``chipwise validate``: predicted vs published measurements, every row, with error stats.

JSON (``--json``): ``{"schema_version": 1, "rows": [{id, workload, phase, chip, chips,
precision, metric, measured, predicted, error, plan, fits, why, source}], "summary":
{group: {rows, median_abs_error, p90_abs_error}}}`` with groups all, train, train-gpu,
train-tpu, infer, microbench (those that have rows). Rows that cannot be predicted have
``predicted`` and ``error`` null and say ``why``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from chipwise.cli.app import app
from chipwise.cli.output import console, print_json
from chipwise.perf.validation import Report, Result, run_validation

JSON_SCHEMA_VERSION = 1


class KindChoice(StrEnum):
    train = "train"
    infer = "infer"
    microbench = "microbench"


def result_to_dict(r: Result) -> dict[str, Any]:
    c = r.case
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
    }


def report_to_dict(report: Report) -> dict[str, Any]:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "rows": [result_to_dict(r) for r in report.results],
        "summary": {
            g: {
                "rows": s.rows,
                "median_abs_error": s.median_abs_error,
                "p90_abs_error": s.p90_abs_error,
            }
            for g, s in report.summary().items()
        },
    }


def _num(x: float) -> str:
    return f"{x:.4g}"


def short_plan(text: str) -> str:
    """``dp=1,fsdp=256,tp=1,...,recompute=full`` -> ``fsdp=256 mb=1 full``: the axes above 1."""
    if not text:
        return ""
    parts = dict(p.split("=", 1) for p in text.split(","))
    axes = [f"{k}={v}" for k, v in parts.items() if k not in ("microbatch", "recompute")
            and v != "1"]  # fmt: skip
    return " ".join([*axes, f"mb={parts.get('microbatch', '1')}", parts.get("recompute", "")])


def _workload(text: str) -> str:
    name = text.rsplit("/", 1)[-1]
    return name[:-5] if name.endswith(".json") else name


def report_table(report: Report) -> Group:
    """Every row (predicted ones first, in file order), then unusable rows and the summary."""
    table = Table(title="chipwise validate: predicted vs measured")
    for col in ("id", "workload", "chip", "n", "metric", "measured", "predicted", "error"):
        table.add_column(col, justify="right" if col in ("n", "measured", "predicted") else "left")
    table.add_column("plan (fits)")
    skipped: list[Result] = []
    for r in report.results:
        if r.predicted is None:
            skipped.append(r)
            continue
        err = r.error or 0.0
        style = "red" if abs(err) > 0.25 else ("yellow" if abs(err) > 0.10 else "")
        fits = "" if r.fits is None else (" fits" if r.fits else " NO FIT")
        table.add_row(
            r.case.id, _workload(r.case.workload), r.case.chip, str(r.case.chips),
            r.case.metric, _num(r.case.value), _num(r.predicted),
            Text(f"{err:+.1%}", style=style), f"{short_plan(r.plan)}{fits}",
        )  # fmt: skip
    parts: list[Any] = [table]
    if skipped:
        parts.append(Text("Rows not predicted:", style="bold"))
        for r in skipped:
            parts.append(Text(f"  {r.case.id} ({r.case.workload} on {r.case.chip}): {r.why}"))
    lines = ["Absolute error (median / 90th percentile):"]
    for g, s in report.summary().items():
        lines.append(
            f"  {g:11s} {s.rows:3d} rows  {s.median_abs_error:6.1%}  {s.p90_abs_error:6.1%}"
        )
    parts.append(Text("\n".join(lines)))
    return Group(*parts)


@app.command("validate")
def validate_command(
    kind: KindChoice | None = typer.Option(None, "--kind", help="Only this kind of row."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Predict every published measurement and show the error of each, and its spread."""
    report = run_validation(kind.value if kind else None)
    if as_json:
        print_json(report_to_dict(report))
    else:
        # a report of many columns: never squeeze it below 160 columns (pipes default to 80)
        Console(width=max(console.width, 160)).print(report_table(report))
