"""Scanning reads files; it never imports, executes or builds anything in the project.

Every fixture ``.py`` file first writes ``$CHIPWISE_SCAN_MARKER`` and then raises
``SystemExit``. The scan must leave no marker, raise nothing, and trigger no exec,
subprocess or import of a fixture module (checked with an audit hook).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chipwise.compat import scan_project

FIXTURES = Path(__file__).parent / "fixtures"
PROJECTS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
FIXTURE_MODULES = {p.stem for p in FIXTURES.rglob("*.py")}
_events: list[tuple[str, str]] = []
_recording = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _recording:
        return
    if event == "exec":
        code = args[0]
        _events.append((event, getattr(code, "co_filename", repr(code))))
    elif event in {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"}:
        _events.append((event, repr(args[:1])))
    elif event == "import" and str(args[0]).split(".")[0] in FIXTURE_MODULES:
        _events.append((event, str(args[0])))


sys.addaudithook(_audit)  # hooks cannot be removed; _recording keeps it inert elsewhere


def test_the_fixture_guard_would_detect_execution(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    done = subprocess.run(
        [sys.executable, str(FIXTURES / "cuda_ext" / "setup.py")],
        env={"CHIPWISE_SCAN_MARKER": str(marker)},
        capture_output=True,
        check=False,
    )
    assert done.returncode != 0
    assert marker.read_text() == "ran"


@pytest.mark.parametrize("project", PROJECTS)
def test_scanning_executes_nothing(
    project: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    global _recording
    marker = tmp_path / "marker"
    monkeypatch.setenv("CHIPWISE_SCAN_MARKER", str(marker))
    _events.clear()
    _recording = True
    try:
        report = scan_project(FIXTURES / project)
    finally:
        _recording = False
    assert report.findings
    assert not marker.exists()
    assert [e for e in _events if str(FIXTURES) in e[1] or e[0] != "exec"] == []
