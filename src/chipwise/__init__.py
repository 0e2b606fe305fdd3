"""chipwise: GPU or TPU, which chip, how many, at what cost, for an ML workload.

The public API re-exports the pieces a user needs; everything else is internal.
"""

from chipwise._version import __version__
from chipwise.errors import (
    CatalogError,
    ChipwiseError,
    DoesNotFitError,
    ExtractionError,
    PlanError,
    ScanError,
    UnknownChipError,
    UnsupportedOpError,
    WorkloadError,
)
from chipwise.explore import explore
from chipwise.hardware import Chip, chip, chips, default_catalog

__all__ = [
    "CatalogError",
    "Chip",
    "ChipwiseError",
    "DoesNotFitError",
    "ExtractionError",
    "PlanError",
    "ScanError",
    "UnknownChipError",
    "UnsupportedOpError",
    "WorkloadError",
    "__version__",
    "chip",
    "chips",
    "default_catalog",
    "explore",
]
