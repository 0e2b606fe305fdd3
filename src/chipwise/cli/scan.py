"""``chipwise scan PATH``: which platforms a project runs on, read without running it."""

from __future__ import annotations

import typer

from chipwise.cli.app import app
from chipwise.cli.output import console, print_json


@app.command("scan")
def scan(
    path: str = typer.Argument(..., metavar="PATH", help="Project folder (or one file) to read."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Every finding, porting note and flag (default: a screen)."
    ),
) -> None:
    """Check a project's dependencies, imports and kernels against NVIDIA, AMD, Intel and TPU.

    Reads files only: nothing in the project is imported, executed or built.
    """
    from chipwise.compat import render_report, report_to_dict, scan_project

    report = scan_project(path)
    if as_json:
        print_json(report_to_dict(report))
        return
    console.print(render_report(report, verbose=verbose))
