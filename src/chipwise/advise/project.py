"""Turn a compatibility scan (``chipwise.compat``) into the facts the advisor cites."""

from __future__ import annotations

from pathlib import Path

from chipwise.advise.request import Finding, Platform, ProjectFacts
from chipwise.compat import ScanReport, scan_project


def facts_from_report(report: ScanReport) -> ProjectFacts:
    """Keep what the situations need: frameworks, verdicts, CUDA-only code and its ports."""
    findings: list[Finding] = []
    for f in report.findings:
        for impact in f.impacts:
            if not impact.counts or impact.verdict == "runs":
                continue
            findings.append(
                Finding(
                    name=f.title,
                    where=f.location,
                    key=f.key,
                    platform=impact.platform,
                    verdict=impact.verdict,
                    porting=impact.porting,
                    effort=impact.effort or "",
                )
            )
    verdicts: dict[Platform, str] = {p.platform: p.verdict for p in report.platforms}
    cuda = tuple(dict.fromkeys((*report.uses_cuda_specific_libs, *report.custom_kernels)))
    return ProjectFacts(
        path=report.root,
        frameworks=report.frameworks,
        verdicts=verdicts,
        findings=tuple(findings),
        cuda_specific=cuda,
        needs_fp64=report.needs_fp64,
        needs_graphics=report.needs_graphics,
    )


def scan_facts(path: Path) -> ProjectFacts:
    """Scan ``path`` (read only, never executed) and return the advisor's facts."""
    return facts_from_report(scan_project(path))
