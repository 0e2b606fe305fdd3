"""Every data file the code reads ships in the wheel (a wheel install gives the same figures)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from chipwise.validate import (
    confidence_path,
    load_cases,
    own_measurements_paths,
    public_cases_path,
)

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _wheel_files() -> set[str]:
    wheel = pytest.importorskip("hatchling.builders.wheel")
    builder = wheel.WheelBuilder(str(ROOT))
    return {f.distribution_path for f in builder.recurse_included_files()}


def _packaged(path: Path) -> str:
    return path.resolve().relative_to(SRC).as_posix()


def test_every_non_python_file_under_the_package_is_in_the_wheel() -> None:
    files = _wheel_files()
    data = [
        p for p in (SRC / "chipwise").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]  # fmt: skip
    assert data, "no package data found under src/chipwise"
    missing = sorted(_packaged(p) for p in data if _packaged(p) not in files)
    assert not missing, f"package data left out of the wheel: {missing}"


def test_the_files_the_code_reads_are_package_data_in_the_wheel() -> None:
    files = _wheel_files()
    read = [confidence_path(), public_cases_path(), *own_measurements_paths()]
    read += [c.base_dir / c.workload for c in load_cases() if c.workload.endswith(".json")]
    read += [c.base_dir / c.lengths for c in load_cases() if c.lengths]
    read += [Path(str(resources.files("chipwise.perf").joinpath("data", "efficiency.toml")))]
    for path in read:
        assert path.is_file(), path
        assert _packaged(path) in files, f"{path} is read by the code but not in the wheel"
