"""The scan never opens a FIFO, device or socket, notes folders it cannot list, and refuses
a path that does not exist (issue 14)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from chipwise.compat import scan as scan_module
from chipwise.compat import scan_project
from chipwise.errors import ScanError

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


@needs_fifo
def test_a_fifo_named_requirements_txt_is_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n")
    os.mkfifo(tmp_path / "requirements.txt")  # nobody writes: opening it to read would block
    report = scan_project(tmp_path)
    assert report.frameworks == ("pytorch",)
    assert any("FIFO" in n and "requirements.txt" in n for n in report.notes)


@needs_fifo
def test_a_fifo_given_as_the_path_is_an_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "requirements.txt")
    with pytest.raises(ScanError, match="not a regular file"):
        scan_project(tmp_path / "requirements.txt")


@needs_fifo
def test_a_fifo_included_by_a_requirements_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-r more.txt\ntorch\n")
    os.mkfifo(tmp_path / "more.txt")
    report = scan_project(tmp_path)
    assert any("more.txt not found" in n for n in report.notes)


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScanError, match="no such file or directory"):
        scan_project(tmp_path / "nope")


def test_an_unreadable_folder_is_skipped_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text("import jax\n")
    real_walk = os.walk

    def walk(top: str, onerror: object = None, followlinks: bool = False) -> Iterator[object]:
        assert callable(onerror)
        onerror(PermissionError(13, "Permission denied", str(Path(top) / "secret")))
        yield from real_walk(top, followlinks=followlinks)

    monkeypatch.setattr(scan_module.os, "walk", walk)
    report = scan_project(tmp_path)
    assert report.frameworks == ("jax",)
    assert "secret: not readable (Permission denied); skipped" in report.notes


def test_the_walk_stops_after_max_entries(tmp_path: Path) -> None:
    from chipwise.compat.scan import ScanLimits

    for i in range(30):
        (tmp_path / f"data-{i}.bin").write_text("x")  # not read, but walked
    (tmp_path / "z.py").write_text("import torch\n")
    report = scan_project(tmp_path, limits=ScanLimits(max_entries=10))
    assert any(n.startswith("stopped after visiting 10 entries") for n in report.notes)


def test_reading_stops_at_max_total_bytes(tmp_path: Path) -> None:
    from chipwise.compat.scan import ScanLimits

    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("import torch\n" + "#" * 100)
    report = scan_project(tmp_path, limits=ScanLimits(max_total_bytes=250))
    assert report.files_scanned == 3
    assert any("more file(s) not read" in n for n in report.notes)
