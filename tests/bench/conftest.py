"""Shared helpers for the bench tests: a measurement factory and a throwaway store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chipwise.bench.store import Measurement

BASE = Measurement(
    run_id="run-a",
    timestamp="2025-01-01T00:00:00+00:00",
    device_name="NVIDIA H100 80GB HBM3",
    device_kind="gpu",
    vendor="nvidia",
    driver_version="cuda 12.4",
    library="torch",
    library_version="2.5.1",
    host="node-1",
    benchmark="gemm",
    shape="4096x4096x4096",
    dtype="bf16",
    n_bytes=3 * 4096 * 4096 * 2,
    flops=2 * 4096**3,
    time_s=2e-4,
    time_s_min=1.9e-4,
    repeats=30,
    achieved_flops_per_s=2 * 4096**3 / 2e-4,
    achieved_bytes_per_s=3 * 4096 * 4096 * 2 / 2e-4,
    chip_id="h100-sxm",
)


def make(**overrides: Any) -> Measurement:
    """A valid measurement with ``overrides`` applied (rates are not recomputed)."""
    return replace(BASE, **overrides)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh store path; CHIPWISE_DB points elsewhere so a default path is never used."""
    monkeypatch.setenv("CHIPWISE_DB", str(tmp_path / "default-must-not-be-used.sqlite"))
    yield tmp_path / "store.sqlite"
