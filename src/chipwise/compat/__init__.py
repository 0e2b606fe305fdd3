"""Will it run there: scan a project (without running it) for NVIDIA, AMD, Intel and TPU.

report = scan_project("path/to/project")
report.verdict("google-tpu")        # 'runs' | 'runs-with-changes' | 'does-not-run'
report.platform("google-tpu").issues  # what to change: porting path, effort, file:line
"""

from chipwise.compat.knowledge import (
    PLATFORM_NAMES,
    PLATFORMS,
    Effort,
    Knowledge,
    Platform,
    Rule,
    Status,
    Verdict,
    default_knowledge,
    load_knowledge,
)
from chipwise.compat.render import JSON_SCHEMA_VERSION, render_report, report_to_dict
from chipwise.compat.result import Finding, Impact, Issue, PlatformVerdict, ScanReport
from chipwise.compat.scan import ScanLimits, scan_project

__all__ = [
    "JSON_SCHEMA_VERSION",
    "PLATFORMS",
    "PLATFORM_NAMES",
    "Effort",
    "Finding",
    "Impact",
    "Issue",
    "Knowledge",
    "Platform",
    "PlatformVerdict",
    "Rule",
    "ScanLimits",
    "ScanReport",
    "Status",
    "Verdict",
    "default_knowledge",
    "load_knowledge",
    "render_report",
    "report_to_dict",
    "scan_project",
]
