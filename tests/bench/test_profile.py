"""``profile``: real training steps of a tiny model on the CPU, against a calibration."""

from pathlib import Path

import pytest

from chipwise.bench import store
from chipwise.bench.devices import detect_device
from chipwise.bench.profile import profile_factory
from chipwise.bench.store import CalibrationRow
from chipwise.errors import ExtractionError, MeasurementError, WorkloadError

TINY = """
import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)), (torch.empty(4, 32),)


class WithInputs(nn.Linear):
    def example_inputs(self):
        return (torch.empty(2, 16),)


def build_method():
    return WithInputs(16, 4)


def build_nothing():
    return 42
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_model.py"
    path.write_text(TINY)
    return path


def calibrate_cpu_by_hand(db: Path) -> None:
    """A synthetic calibration of this machine's CPU (no benchmark run needed)."""
    name = detect_device("cpu").name
    values = {"measured.gemm_flops_per_s.fp32": 1e10, "measured.bytes_per_s": 1e10,
              "launch_overhead_s": 1e-5}  # fmt: skip
    store.add_calibration(
        db,
        [CalibrationRow(run_id="cal-1", timestamp="t", chip_id=None, device_name=name,
                        device_kind="cpu", field=f, value=v, n_points=3)
         for f, v in values.items()],
    )  # fmt: skip


def test_without_trust_code_nothing_is_imported(tiny: Path, db: Path) -> None:
    spec = f"{tiny}:build"
    with pytest.raises(WorkloadError) as info:
        profile_factory(spec, trust_code=False, db=db)
    assert str(info.value) == f"importing {spec!r} runs its code; pass --trust-code"


def test_a_tiny_model_trains_on_the_cpu_and_is_compared(tiny: Path, db: Path) -> None:
    pytest.importorskip("torch")
    calibrate_cpu_by_hand(db)
    r = profile_factory(f"{tiny}:build", trust_code=True, device="cpu", steps=2, db=db)
    assert len(r.step_times_s) == 2 and r.measured_step_s > 0
    assert r.dtype == "fp32"
    assert r.predicted_on.startswith("measured ")
    # matmuls: forward 2 B (32x64 + 64x8); backward both weight grads, and the input grad of
    # the second layer only (the model's input needs none); B = 4. Plus element-wise work.
    forward = 2 * 4 * (32 * 64 + 64 * 8)
    assert r.graph_flops >= forward + forward + 2 * 4 * 64 * 8
    # every op pays the 10 us overhead: the prediction is at least ops x overhead
    assert r.predicted_step_s >= r.graph_ops * 1e-5
    assert r.error == pytest.approx(r.predicted_step_s / r.measured_step_s - 1)


def test_a_module_with_example_inputs_works_too(tiny: Path, db: Path) -> None:
    pytest.importorskip("torch")
    calibrate_cpu_by_hand(db)
    r = profile_factory(f"{tiny}:build_method", trust_code=True, device="cpu", steps=1, db=db)
    assert r.measured_step_s > 0


def test_a_factory_returning_no_module_is_an_extraction_error(tiny: Path, db: Path) -> None:
    pytest.importorskip("torch")
    with pytest.raises(ExtractionError, match="returned int"):
        profile_factory(f"{tiny}:build_nothing", trust_code=True, device="cpu", db=db)


def test_an_uncalibrated_cpu_says_to_bench_and_calibrate_first(tiny: Path, db: Path) -> None:
    pytest.importorskip("torch")
    with pytest.raises(MeasurementError, match="'chipwise calibrate' first"):
        profile_factory(f"{tiny}:build", trust_code=True, device="cpu", db=db)


def test_a_bf16_run_needs_a_bf16_measurement(tiny: Path, db: Path) -> None:
    pytest.importorskip("torch")
    calibrate_cpu_by_hand(db)
    with pytest.raises(Exception, match="--dtypes bf16"):
        profile_factory(f"{tiny}:build", trust_code=True, device="cpu", dtype="bf16", db=db)
