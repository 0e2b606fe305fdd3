"""chipwise: GPU or TPU, which chip, how many, at what cost, for an ML workload.

The public API re-exports the pieces a user needs; everything else is internal:

    import chipwise
    chipwise.predict("llama3-8b", chip="h100", chips=8)     # one chip type, one count
    chipwise.advise("llama3-70b", tokens=2e12)              # every chip, ranked
    chipwise.chip("v5p"), chipwise.load_workload("llama3-70b", phase="infer")

``tests/test_exported_members.py`` pins ``__all__``: adding or removing a name is deliberate.
The names load on first use (PEP 562), so ``import chipwise`` and the CLI's start-up
(``chipwise --help``) do not pay for the models, the catalog and numpy.
"""

# (the standard library under private names: every public name of this module is in __all__)
import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

from chipwise._version import __version__

if _typing.TYPE_CHECKING:
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

# Each public name, by the module it is read from on first use.
_EXPORTS = {
    "chipwise.advise": ("AdviseOptions", "AdviseRequest", "Recommendation"),
    "chipwise.api": ("advise", "load_workload", "predict"),
    "chipwise.errors": (
        "CatalogError", "ChipwiseError", "DoesNotFitError", "ExtractionError", "PlanError",
        "ScanError", "UnknownChipError", "UnsupportedOpError", "WorkloadError",
    ),
    "chipwise.explore": ("explore",),
    "chipwise.hardware": ("Chip", "chip", "chips", "default_catalog"),
    "chipwise.perf": (
        "InferPrediction", "Plan", "Prediction", "Predictor", "PrimitivePrediction",
        "TrainPrediction",
    ),
    "chipwise.workload.ir": ("Inference", "Training", "Workload"),
}  # fmt: skip
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

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


def __getattr__(name: str) -> _typing.Any:
    """A public name, imported from its module on first use and kept."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(_types.ModuleType):
    """Keeps ``chipwise.advise`` and ``chipwise.explore`` the public functions: the import
    system binds a subpackage on its parent when it first loads it, and these two share their
    subpackage's name (the eager imports this file used to make bound the functions last)."""

    def __setattr__(self, name: str, value: _typing.Any) -> None:
        if name in ("advise", "explore") and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
