"""Render a ``ScanReport``: rich tables for people, a stable dict for ``--json``.

JSON schema (``schema_version`` 1; fields are only ever added within a version)::

    {"schema_version": 1, "root", "files_scanned", "dependency_files": [..],
     "platforms": [{"platform", "name", "verdict", "effort",
                    "issues": [{"key", "title", "status", "verdict", "why", "porting",
                                "effort", "locations": ["file:line", ..]}],
                    "notes": [..]}],
     "findings": [{"kind", "key", "title", "subject", "via", "file", "line", "evidence",
                   "why", "optional", "condition", "tpu_path",
                   "impacts": [{"platform", "status", "verdict", "counts", "porting",
                                "effort"}]}],
     "frameworks": [..], "uses_cuda_specific_libs": [..], "custom_kernels": [..],
     "needs_fp64", "needs_graphics", "tpu_ready_signals": [..],
     "unclassified_packages": [..], "notes": [..], "knowledge_last_checked"}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from chipwise.compat.knowledge import PLATFORMS
from chipwise.compat.result import PlatformVerdict, ScanReport

JSON_SCHEMA_VERSION = 1

VERDICT_STYLE = {"runs": "green", "runs-with-changes": "yellow", "does-not-run": "red"}
_SHORT = {"nvidia-cuda": "NV", "amd-rocm": "AMD", "intel-xpu": "XPU", "google-tpu": "TPU"}


def report_to_dict(report: ScanReport) -> dict[str, Any]:
    """A JSON-ready dict of the whole report, ``schema_version`` first."""
    return {"schema_version": JSON_SCHEMA_VERSION, **dataclasses.asdict(report)}


def summary_table(report: ScanReport) -> Table:
    """One row per platform: verdict, effort, how many issues."""
    table = Table(title=f"chipwise scan: {report.root}", title_justify="left")
    for col in ("platform", "verdict", "effort", "issues"):
        table.add_column(col)
    for p in report.platforms:
        table.add_row(
            p.name,
            Text(p.verdict, style=VERDICT_STYLE[p.verdict]),
            p.effort or "—",
            ", ".join(i.title for i in p.issues) or "—",
        )
    return table


def platform_table(p: PlatformVerdict) -> Table:
    """The issues behind one platform's verdict, with porting path, effort and places."""
    title = Text.assemble(f"{p.name}: ", (p.verdict, VERDICT_STYLE[p.verdict]))
    table = Table(title=title, title_justify="left")
    for col in ("what", "status", "porting path", "effort", "where"):
        table.add_column(col, overflow="fold")
    for i in p.issues:
        where = ", ".join(i.locations[:3]) + (
            f" (+{len(i.locations) - 3})" if len(i.locations) > 3 else ""
        )
        table.add_row(i.title, i.status, i.porting, i.effort or "—", where)
    return table


def findings_table(report: ScanReport) -> Table:
    """Every finding with its place and its status on each platform."""
    table = Table(title="findings", title_justify="left")
    for col in ("where", "what", *(_SHORT[p] for p in PLATFORMS), "why"):
        table.add_column(col, overflow="fold")
    for f in report.findings:
        what = f.subject if f.subject == f.title else f"{f.title} ({f.subject})"
        if f.optional:
            what += f" [optional: {f.condition}]"
        cells = [
            Text(f.impact(p).status, style=VERDICT_STYLE[f.impact(p).verdict]) for p in PLATFORMS
        ]
        table.add_row(f.location, Text(what), *cells, f.why)
    return table


_WORDS = {"runs": "runs", "runs-with-changes": "runs with changes", "does-not-run": "does not run"}
# Places shown per package in the short report (``--verbose`` shows every one).
SHORT_PLACES = 2


def _first_clause(porting: str) -> str:
    """'hipify (torch's BuildExtension ...); fix ...' -> 'hipify': the step, not its notes."""
    cut = len(porting)
    for sep in (" (", "; ", ". "):
        i = porting.find(sep)
        if 0 < i < cut:
            cut = i
    return porting[:cut].strip()


def _places(locations: tuple[str, ...]) -> str:
    shown = ", ".join(locations[:SHORT_PLACES])
    more = len(locations) - SHORT_PLACES
    return shown + (f" +{more} more" if more > 0 else "")


def short_report(report: ScanReport) -> RenderableType:
    """The answer on one screen: a line per platform, then each package or kernel ONCE with
    what it needs on every platform where it does not run as is."""
    files = f"{report.files_scanned} file{'s' if report.files_scanned != 1 else ''}"
    fw = ", ".join(report.frameworks) or "no ML framework found"
    parts: list[RenderableType] = [
        Text(f"chipwise scan: {report.root} ({files}; {fw})", style="bold")
    ]
    width = max((len(p.name) for p in report.platforms), default=0)
    for p in report.platforms:
        line = Text(f"  {p.name:<{width}}  ")
        line.append(_WORDS[p.verdict], style=VERDICT_STYLE[p.verdict])
        if p.issues:
            line.append(f" ({p.effort or 'unknown'} effort): ")
            line.append(", ".join(i.title for i in p.issues))
        parts.append(line)
    # every issue once, with its port on each platform
    by_key: dict[str, tuple[str, set[str], list[str]]] = {}
    for p in report.platforms:
        for i in p.issues:
            title, places, ports = by_key.setdefault(i.key, (i.title, set(), []))
            places.update(i.locations)
            effort = f" ({i.effort})" if i.effort else ""
            ports.append(f"{p.name}: {_first_clause(i.porting) or 'rewrite'}{effort}")
    if by_key:
        parts.append(Text("What to change (each once; --verbose for details):", style="bold"))
        for title, places, ports in by_key.values():
            parts.append(Text(f"  {title} at {_places(tuple(sorted(places)))}"))
            for port in ports:
                parts.append(Text(f"    {port}"))
    if report.unclassified_packages:
        names = report.unclassified_packages
        shown = ", ".join(names[:5]) + (f" +{len(names) - 5} more" if len(names) > 5 else "")
        parts.append(
            Text(f"Not in chipwise's package list, assumed portable: {shown}", style="dim")
        )
    parts.append(Text("--verbose for every finding and note, --json for all fields.", style="dim"))
    return Group(*parts)


def render_report(report: ScanReport, *, verbose: bool = False) -> RenderableType:
    """The short answer, or (``verbose``) the summary, one table per platform with issues,
    the findings list, flags and notes."""
    if not verbose:
        return short_report(report)
    parts: list[RenderableType] = [summary_table(report)]
    parts += [platform_table(p) for p in report.platforms if p.issues]
    for p in report.platforms:
        for note in p.notes:
            parts.append(Text(f"{p.name}: {note}", style="dim"))
    if report.findings:
        parts.append(findings_table(report))
    flags = [
        f"frameworks: {', '.join(report.frameworks) or 'none'}",
        f"CUDA-specific libraries: {', '.join(report.uses_cuda_specific_libs) or 'none'}",
        f"custom kernels: {', '.join(report.custom_kernels) or 'none'}",
        f"needs fp64: {'yes' if report.needs_fp64 else 'no'}",
        f"needs graphics: {'yes' if report.needs_graphics else 'no'}",
        f"TPU-ready signals: {', '.join(report.tpu_ready_signals) or 'none'}",
    ]
    parts.append(Text("; ".join(flags)))
    if report.unclassified_packages:
        parts.append(
            Text(
                f"not in the knowledge file (assumed portable): "
                f"{', '.join(report.unclassified_packages)}",
                style="dim",
            )
        )
    for note in report.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    parts.append(
        Text(
            f"{report.files_scanned} files read; knowledge last checked "
            f"{report.knowledge_last_checked}",
            style="dim",
        )
    )
    return Group(*parts)
