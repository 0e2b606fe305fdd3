"""The public API is ``chipwise.__all__``, pinned: a change to it is a deliberate one."""

from __future__ import annotations

import chipwise

PUBLIC = [
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


def test_all_is_the_pinned_sorted_public_surface() -> None:
    assert chipwise.__all__ == PUBLIC
    assert sorted(chipwise.__all__, key=lambda n: (not n[0].isupper(), n)) == chipwise.__all__


def test_every_exported_name_exists_and_nothing_public_is_unlisted() -> None:
    for name in chipwise.__all__:
        assert hasattr(chipwise, name), name
    modules = {"advise", "api", "cli", "compat", "cost", "errors", "explore", "hardware",
               "limits", "perf", "pool", "report", "units", "validate", "workload",
               "bench"}  # fmt: skip
    public = {n for n in dir(chipwise) if not n.startswith("_")}
    unlisted = public - set(chipwise.__all__) - modules
    assert not unlisted, f"public names missing from __all__: {sorted(unlisted)}"
