"""The exception tree. Every error a user can cause is a ``ChipwiseError``.

    ChipwiseError
     ├── CatalogError            bad catalog data file
     │    └── UnknownChipError   a chip id or alias that resolves to nothing
     ├── WorkloadError           a workload that cannot be read
     │    ├── UnsupportedOpError an op the chosen chip or model cannot run
     │    └── ExtractionError    a model file or module that failed to import
     ├── PlanError               a parallelism plan that is malformed or impossible
     │    └── DoesNotFitError    no plan fits in memory (carries the bytes)
     ├── ScanError               a project that cannot be scanned
     └── MeasurementError        a benchmark or measurement store problem

The CLI catches ``ChipwiseError``, prints its message on one line and exits with code 2.
A message names the bad value and the fix.
"""

from __future__ import annotations


class ChipwiseError(Exception):
    """Base class of every error chipwise raises on bad input."""


class CatalogError(ChipwiseError):
    """A hardware or offer data file is malformed."""


class UnknownChipError(CatalogError):
    """A chip id or alias resolves to no catalog entry."""


class WorkloadError(ChipwiseError):
    """A workload cannot be built from its source."""


class UnsupportedOpError(WorkloadError):
    """An op (or dtype) that the chip cannot run at all, e.g. fp64 on a TPU."""


class ExtractionError(WorkloadError):
    """An importer (torch, jax, onnx, HF config) failed to read a model."""


class PlanError(ChipwiseError):
    """A parallelism plan is malformed or inconsistent with the chip count."""


class DoesNotFitError(PlanError):
    """No plan fits the workload in the chips' memory."""

    def __init__(self, message: str, *, needed_bytes: float = 0.0, capacity_bytes: float = 0.0):
        super().__init__(message)
        self.needed_bytes = needed_bytes
        self.capacity_bytes = capacity_bytes


class ScanError(ChipwiseError):
    """A project path cannot be scanned."""


class MeasurementError(ChipwiseError):
    """A benchmark could not run, or the measurement store is unreadable."""
