"""chipwise: GPU or TPU, which chip, how many, at what cost, for an ML workload.

The public API re-exports the pieces a user needs; everything else is internal:

    import chipwise
    chipwise.predict("llama3-8b", chip="h100", chips=8)     # one chip type, one count
    chipwise.advise("llama3-70b", tokens=2e12)              # every chip, ranked
    chipwise.chip("v5p"), chipwise.load_workload("llama3-70b", phase="infer")

``tests/test_exported_members.py`` pins ``__all__``: adding or removing a name is deliberate.
"""

from chipwise._version import __version__
from chipwise.advise import AdviseOptions, AdviseRequest, Recommendation
from chipwise.api import advise, load_workload, predict
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
from chipwise.perf import (
    InferPrediction,
    Plan,
    Prediction,
    Predictor,
    PrimitivePrediction,
    TrainPrediction,
)
from chipwise.workload.ir import Inference, Training, Workload

__all__ = [
    "AdviseOptions",
    "AdviseRequest",
    "CatalogError",
    "Chip",
    "ChipwiseError",
    "DoesNotFitError",
    "ExtractionError",
    "InferPrediction",
    "Inference",
    "Plan",
    "PlanError",
    "Prediction",
    "Predictor",
    "PrimitivePrediction",
    "Recommendation",
    "ScanError",
    "TrainPrediction",
    "Training",
    "UnknownChipError",
    "UnsupportedOpError",
    "Workload",
    "WorkloadError",
    "__version__",
    "advise",
    "chip",
    "chips",
    "default_catalog",
    "explore",
    "load_workload",
    "predict",
]
