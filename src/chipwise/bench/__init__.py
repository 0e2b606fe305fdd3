"""Measure for real: microbenchmarks, a SQLite measurement store, calibration, profiling.

    devices.py    find the local GPU / TPU / CPU and its catalog chip id
    micro.py      what to run and how it is counted; backends.py runs it (torch, JAX, numpy)
    store.py      the SQLite store (measurements, calibrations)
    calibrate.py  fit ``perf.efficiency.Efficiency`` parameters to stored measurements
    compare.py    stored measurements vs the model's predictions
    profile.py    real training steps of a PyTorch factory vs the predicted step time

PyTorch and JAX are imported only when a benchmark or profile runs.
"""

from chipwise.bench.calibrate import (
    Calibration,
    MeasuredDevice,
    MeasuredModel,
    calibrate,
    calibrated_efficiency,
    load_calibration,
    save_calibration,
)
from chipwise.bench.compare import Comparison, ComparisonRow, compare_measured
from chipwise.bench.devices import DeviceInfo, chip_id_for_device_name, detect_device
from chipwise.bench.micro import BenchConfig, BenchResult, run_benchmarks
from chipwise.bench.profile import ProfileResult, profile_factory
from chipwise.bench.store import (
    Measurement,
    add_measurements,
    default_db_path,
    export_json,
    list_measurements,
)

__all__ = [
    "BenchConfig",
    "BenchResult",
    "Calibration",
    "Comparison",
    "ComparisonRow",
    "DeviceInfo",
    "MeasuredDevice",
    "MeasuredModel",
    "Measurement",
    "ProfileResult",
    "add_measurements",
    "calibrate",
    "calibrated_efficiency",
    "chip_id_for_device_name",
    "compare_measured",
    "default_db_path",
    "detect_device",
    "export_json",
    "list_measurements",
    "load_calibration",
    "profile_factory",
    "run_benchmarks",
    "save_calibration",
]
